"""Example KFP pipeline: prepare data -> train with DDP (1 node x 2 workers) -> evaluate.

The KFP twin of ``dags/torchx_training.py``: the same three TorchX components, resources and
tracker lineage, each step one KFP container task made by ``torchx_kfp.container_from_app``:

- ``prepare_data``: ``utils.python`` runs ``<examples>/pipeline/prepare.py``;
- ``train``: ``dist.ddp -j 1x2`` runs ``<examples>/train.py`` on the named resource
  ``cpu.small``; its tracker parent is the prepare step's run (``parent_run_id``);
- ``evaluate``: ``utils.python`` runs ``<examples>/pipeline/evaluate.py`` on the checkpoint
  the train step saved (``<workdir>/out/<train app id>/model.pt``, the app id being the train
  task's ``app_id`` output) and writes ``<workdir>/metrics.json``.

Every step records on the fsspec tracker in ``tracker_dir``. The image must hold Python with
torchx-flow[examples] and the examples at ``examples`` (``scripts/kfp-local-run.sh`` runs it
under kfp.local's DockerRunner with this repo's venv mounted into ``torchx-flow/python:3.11``).
Compile: ``python -m kfp.cli.__main__ dsl compile --py pipelines/torchx_training.py ...`` or
``kfp.compiler.Compiler().compile(torchx_training, "torchx_training.yaml")``.
"""

# no `from __future__ import annotations`: KFP reads the pipeline function's real annotations
from kfp import dsl

from torchx_kfp import container_from_app

IMAGE = "torchx-flow/python:3.11"
TRACKER_ENV = "TORCHX_TRACKERS"
TRACKER_CONFIG_ENV = "TORCHX_TRACKER_FSSPEC_CONFIG"


# [START torchx_training_pipeline]
@dsl.pipeline(name="torchx-training", description=__doc__.splitlines()[0])
def torchx_training(
    examples: str = "/opt/torchx-flow/examples",
    workdir: str = "/tmp/torchx_training",
    tracker_dir: str = "/tmp/torchx_training/tracker",
    steps: int = 50,
) -> None:
    """Prepare -> train (DDP 1x2) -> evaluate, linked for tracker lineage."""
    env = {TRACKER_ENV: "fsspec", TRACKER_CONFIG_ENV: tracker_dir}
    prepare = container_from_app(
        "utils.python",
        ["--name", "prepare_data", "--script", f"{examples}/pipeline/prepare.py", "--"]
        + ["--output-dir", f"{workdir}/data"],
        image=IMAGE,
        env=env,
    )
    train = container_from_app(
        "dist.ddp",
        ["-j", "1x2", "--name", "train", "--script", f"{examples}/train.py", "--"]
        + ["--steps", steps, "--output-dir", f"{workdir}/out"],
        image=IMAGE,
        resource="cpu.small",
        env=env,
        parent_run_id=prepare.outputs["tracker_run_id"],
    )
    container_from_app(
        "utils.python",
        ["--name", "evaluate", "--script", f"{examples}/pipeline/evaluate.py", "--"]
        + ["--checkpoint", f"{workdir}/out/{train.outputs['app_id']}/model.pt"]
        + ["--data", f"{workdir}/data/dataset.json", "--metrics-out", f"{workdir}/metrics.json"],
        image=IMAGE,
        env=env,
        parent_run_id=train.outputs["tracker_run_id"],
    )


# [END torchx_training_pipeline]
