"""The example training pipeline in launcher mode: each step submits its TorchX app.

Same steps, resources and lineage as ``torchx_training.py`` (and ``dags/torchx_training.py``),
but every task is the ``torchx_launch`` launcher, which submits the app with the TorchX
scheduler ``scheduler`` (``kubernetes`` in a cluster, ``local_cwd`` locally), streams every
replica's log and outputs the app handle and tracker run id. This is the shape for
multi-node training: change ``-j 1x2`` to ``-j 2x4`` and run with ``scheduler=kubernetes``.

Data goes from step to step over the PersistentVolumeClaim ``pvc`` (ReadWriteMany, e.g.
``deploy/torchx-training-pvc.yaml``), mounted at ``/mnt/torchx`` in every launcher pod (and, with
the kubernetes scheduler, in every pod of every app), where ``workdir`` points: nothing goes
through a host path. Runs execute as the ``torchx-launcher`` service account
(``deploy/kfp-launcher-rbac.yaml``); every task and app runs ``IMAGE``.
"""

# no `from __future__ import annotations`: KFP reads the pipeline function's real annotations
from kfp import dsl

from torchx_kfp import launcher_from_app

IMAGE = "torchx-flow/torch:2.13.0"
"""torch + torchx-flow + examples/ (scripts/infra/torch-image.sh builds it)."""
DATA = "/mnt/torchx"
"""Where the shared claim is mounted."""


@dsl.pipeline(name="torchx-training-launcher", description=__doc__.splitlines()[0])
def torchx_training_launcher(
    examples: str = "/opt/torchx-flow/examples",
    workdir: str = DATA,
    tracker_dir: str = f"{DATA}/tracker",
    steps: str = "50",
    scheduler: str = "local_cwd",
    pvc: str = "torchx-training-data",
) -> None:
    """Prepare -> train (DDP 1x2) -> evaluate through the TorchX launcher.

    ``steps`` is a string: inside a list argument kfp.local renders an integer pipeline input
    as ``50.0``, which ``train.py --steps`` rejects. ``workdir`` and ``tracker_dir`` are on the
    claim ``pvc``; change them only for a local run without it (kfp.local ignores the mount).
    """
    env = {"TORCHX_TRACKERS": "fsspec", "TORCHX_TRACKER_FSSPEC_CONFIG": tracker_dir}
    common = dict(
        scheduler=scheduler,
        env=env,
        launcher_image=IMAGE,
        image=IMAGE,
        pvc=pvc,
        pvc_mount_path=DATA,
    )
    prepare = launcher_from_app(
        "utils.python",
        ["--name", "prepare_data", "--script", f"{examples}/pipeline/prepare.py", "--"]
        + ["--output-dir", f"{workdir}/data"],
        **common,
    )
    train = launcher_from_app(
        "dist.ddp",
        ["-j", "1x2", "--name", "train", "--script", f"{examples}/train.py", "--"]
        + ["--steps", steps, "--output-dir", f"{workdir}/out"],
        resource="cpu.small",
        parent_run_id=prepare.outputs["tracker_run_id"],
        **common,
    )
    launcher_from_app(
        "utils.python",
        ["--name", "evaluate", "--script", f"{examples}/pipeline/evaluate.py", "--"]
        + ["--checkpoint", f"{workdir}/out/{train.outputs['app_id']}/model.pt"]
        + ["--data", f"{workdir}/data/dataset.json", "--metrics-out", f"{workdir}/metrics.json"],
        parent_run_id=train.outputs["tracker_run_id"],
        **common,
    )
