"""The example training pipeline in launcher mode: each step submits its TorchX app.

Same steps, resources and lineage as ``torchx_training.py`` (and ``dags/torchx_training.py``),
but every task is the ``torchx_launch`` launcher, which submits the app with the TorchX
scheduler ``scheduler`` (``kubernetes`` in a cluster, ``local_cwd`` locally), streams every
replica's log and outputs the app handle and tracker run id. This is the shape for
multi-node training: change ``-j 1x2`` to ``-j 2x4`` and run with ``scheduler=kubernetes``.
"""

# no `from __future__ import annotations`: KFP reads the pipeline function's real annotations
from kfp import dsl

from torchx_kfp import launcher_from_app


@dsl.pipeline(name="torchx-training-launcher", description=__doc__.splitlines()[0])
def torchx_training_launcher(
    examples: str = "/opt/torchx-flow/examples",
    workdir: str = "/tmp/torchx_training",
    tracker_dir: str = "/tmp/torchx_training/tracker",
    steps: str = "50",
    scheduler: str = "local_cwd",
) -> None:
    """Prepare -> train (DDP 1x2) -> evaluate through the TorchX launcher.

    ``steps`` is a string: inside a list argument kfp.local renders an integer pipeline input
    as ``50.0``, which ``train.py --steps`` rejects.
    """
    env = {"TORCHX_TRACKERS": "fsspec", "TORCHX_TRACKER_FSSPEC_CONFIG": tracker_dir}
    prepare = launcher_from_app(
        "utils.python",
        ["--name", "prepare_data", "--script", f"{examples}/pipeline/prepare.py", "--"]
        + ["--output-dir", f"{workdir}/data"],
        scheduler=scheduler,
        env=env,
    )
    train = launcher_from_app(
        "dist.ddp",
        ["-j", "1x2", "--name", "train", "--script", f"{examples}/train.py", "--"]
        + ["--steps", steps, "--output-dir", f"{workdir}/out"],
        resource="cpu.small",
        scheduler=scheduler,
        env=env,
        parent_run_id=prepare.outputs["tracker_run_id"],
    )
    launcher_from_app(
        "utils.python",
        ["--name", "evaluate", "--script", f"{examples}/pipeline/evaluate.py", "--"]
        + ["--checkpoint", f"{workdir}/out/{train.outputs['app_id']}/model.pt"]
        + ["--data", f"{workdir}/data/dataset.json", "--metrics-out", f"{workdir}/metrics.json"],
        scheduler=scheduler,
        env=env,
        parent_run_id=train.outputs["tracker_run_id"],
    )
