"""Example KFP pipeline: prepare data -> train with DDP (1 node x 2 workers) -> evaluate.

The KFP twin of ``dags/torchx_training.py``: the same three TorchX components, resources and
tracker lineage, each step one KFP container task made by ``torchx_kfp.container_from_app``.
Data goes from step to step as KFP artifacts (stored under the run's pipeline root, shown in
the KFP UI), never through a path only one machine has:

- ``prepare_data``: ``utils.python`` runs ``<examples>/pipeline/prepare.py``, which writes the
  dataset manifest into its ``Output[Dataset]`` ``dataset`` (a directory);
- ``train``: ``dist.ddp -j 1x2`` runs ``<examples>/train.py`` on the named resource
  ``cpu.small``; the checkpoint goes into its ``Output[Model]`` ``model``
  (``<model>/<train app id>/model.pt``); its tracker parent is the prepare step's run;
- ``evaluate``: ``utils.python`` runs ``<examples>/pipeline/evaluate.py`` on the ``model`` and
  ``dataset`` input artifacts and writes ``{mse, checkpoint}`` into its ``Output[Metrics]``
  ``metrics``.

Every step records on the fsspec tracker at ``tracker_dir`` (on a cluster: a bucket URL such as
``s3://bucket/tracker``, or a path on a shared volume). Every task runs ``IMAGE``, which holds
Python, torchx-flow[examples,kfp] and the examples at ``/opt/torchx-flow/examples``
(``scripts/infra/torch-image.sh`` builds it; push it to a registry your cluster pulls from).
Compile: ``python -m kfp.cli.__main__ dsl compile --py pipelines/torchx_training.py ...`` or
``kfp.compiler.Compiler().compile(torchx_training, "torchx_training.yaml")``.
"""

# no `from __future__ import annotations`: KFP reads the pipeline function's real annotations
from kfp import dsl
from kfp.dsl import Dataset, Metrics, Model

from torchx_kfp import container_from_app, output_path

IMAGE = "torchx-flow/torch:2.13.0"
"""torch + torchx-flow + examples/ (scripts/infra/torch-image.sh builds it)."""
TRACKER_ENV = "TORCHX_TRACKERS"
TRACKER_CONFIG_ENV = "TORCHX_TRACKER_FSSPEC_CONFIG"


# [START torchx_training_pipeline]
@dsl.pipeline(name="torchx-training", description=__doc__.splitlines()[0])
def torchx_training(
    examples: str = "/opt/torchx-flow/examples",
    tracker_dir: str = "/tmp/torchx_training/tracker",
    steps: int = 50,
) -> None:
    """Prepare -> train (DDP 1x2) -> evaluate, data as artifacts, linked for tracker lineage."""
    env = {TRACKER_ENV: "fsspec", TRACKER_CONFIG_ENV: tracker_dir}
    prepare = container_from_app(
        "utils.python",
        ["--name", "prepare_data", "--script", f"{examples}/pipeline/prepare.py", "--"]
        + ["--output-dir", output_path("dataset")],
        outputs={"dataset": Dataset},
        image=IMAGE,
        env=env,
    )
    train = container_from_app(
        "dist.ddp",
        ["-j", "1x2", "--name", "train", "--script", f"{examples}/train.py", "--"]
        + ["--steps", steps, "--output-dir", output_path("model")],
        outputs={"model": Model},
        image=IMAGE,
        resource="cpu.small",
        env=env,
        parent_run_id=prepare.outputs["tracker_run_id"],
    )
    container_from_app(
        "utils.python",
        ["--name", "evaluate", "--script", f"{examples}/pipeline/evaluate.py", "--"]
        + ["--checkpoint", f"{train.outputs['model']}/{train.outputs['app_id']}/model.pt"]
        + ["--data", f"{prepare.outputs['dataset']}/dataset.json"]
        + ["--metrics-out", output_path("metrics")],
        outputs={"metrics": Metrics},
        image=IMAGE,
        env=env,
        parent_run_id=train.outputs["tracker_run_id"],
    )


# [END torchx_training_pipeline]
