"""DAGs of the Celery stack's fault tests and bench, on the ``torchx`` connection's cluster.

tests/dags/test_dags_celery.py and bench/bench_airflow_celery.py put this file next to the
example DAG (dags/torchx_training.py) in the stack's DAG folder (``TORCHX_FLOW_DAGS``); dags/'s
own ``.airflowignore`` keeps it out of every other DAG folder made of dags/ (see dags/README.md).
It imports anywhere: the pipeline is found in ``$TORCHX_FLOW_PIPELINES`` (the stack's mount),
else in this repository's ``pipelines/``.

- ``torchx_training_ddp``: the example pipeline (pipelines/pipeline.yaml) with ``train`` as a
  2-replica DDP app (``dist.ddp -j 2x1``: one pod per replica);
- ``torchx_train``: that ``train`` step alone (the faults that kill a worker or the triggerer
  while it runs; with the param ``hold_file``, the app lasts until the test touches that
  file); ``torchx_train_deferred``: the same, deferrable; ``torchx_train_half``: the same on
  the ``torchx_half_created`` connection (the stack's with a short submission margin; the test
  makes the workers' submitter sleep between this DAG's Job creations with a
  test-only hook, tests/_k8s_job_delay.py);
- ``torchx_timeout``: ``utils.sh sleep 600`` with a 20 s ``execution_timeout`` and no retry;
  ``torchx_timeout_deferred``: the same, deferrable (the deferral times out);
- ``torchx_trigger_fault``: ``utils.sh sleep 600``, deferrable, on the ``torchx_trigger_fault``
  connection (the test gives the triggerer one whose cluster is unreachable, the workers the
  stack's);
- ``torchx_echo``: ``utils.echo``, the bench's unit of work; ``torchx_sleep_deferred``:
  ``utils.sh sleep {{ params.seconds }}``, deferrable (the bench's deferred apps);
- the bench's baselines, without TorchX: ``bash_echo`` (a ``BashOperator`` ``echo``: Airflow's
  own cost of a task on this stack) and ``airflow_defer`` (a task that defers to Airflow's
  ``TimeDeltaTrigger`` for ``{{ params.seconds }}``: Airflow's own cost of a deferral).

Every step gets Airflow's default retries of the stack (``TASK_RETRIES``, 1 there), so a task
whose worker died runs again on the other worker.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.providers.standard.operators.bash import BashOperator
from airflow.providers.standard.triggers.temporal import TimeDeltaTrigger
from airflow.sdk import DAG, BaseOperator

from torchx.workflow import Param, load_pipeline
from torchx_airflow import TorchXOperator, dag_from_pipeline

PIPELINES = os.environ.get("TORCHX_FLOW_PIPELINES") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pipelines"
)
START = datetime(2025, 1, 1)
_DEFAULTS = {"retry_delay": timedelta(seconds=2)}
# ``sleep 600`` as a pod's PID 1 that ends at once on SIGTERM (utils.sh's ``sh -c`` execs the
# inner shell; a bare ``sleep`` ignores SIGTERM there: a cancelled pod waited out its grace period)
_SLEEP_600 = ["exec", "sh", "-c", "trap 'exit 143' TERM; sleep 600 & wait"]


def _ddp_pipeline(*only: str):  # type: ignore[no-untyped-def]
    """The example pipeline, ``train`` with 2 replicas of 1 worker; only the steps ``only``.

    Param ``hold_file`` (default: none) keeps the training's workers waiting after the last step
    until that file exists (``examples/train.py --hold-file``): a fault test makes the app last
    exactly as long as its scenario needs, on a loaded machine too, and then touches the file.
    """
    pipeline = load_pipeline(os.path.join(PIPELINES, "pipeline.yaml"))
    pipeline.params["hold_file"] = Param(
        default="", description="the training waits after its last step until this file exists"
    )
    train = pipeline.steps["train"]
    train.args = ["2x1" if a == "1x2" else a for a in train.args]
    train.args += ["--hold-file", "{{ params.hold_file }}"]
    if only:
        pipeline.steps = {name: pipeline.steps[name] for name in only}
        train.depends_on = [d for d in train.depends_on if d in only]
    return pipeline


training_ddp = dag_from_pipeline(
    _ddp_pipeline(), dag_id="torchx_training_ddp", default_args=_DEFAULTS, tags=["torchx"]
)
train = dag_from_pipeline(
    _ddp_pipeline("train"), dag_id="torchx_train", default_args=_DEFAULTS, tags=["torchx"]
)
train_deferred = dag_from_pipeline(
    _ddp_pipeline("train"),
    dag_id="torchx_train_deferred",
    default_args={**_DEFAULTS, "deferrable": True},
    tags=["torchx"],
)
train_half = dag_from_pipeline(
    _ddp_pipeline("train"),
    dag_id="torchx_train_half",
    default_args=_DEFAULTS,
    task_kwargs={"*": {"torchx_conn_id": "torchx_half_created"}},
    tags=["torchx"],
)

for _dag_id, _kwargs in (
    ("torchx_timeout", {"execution_timeout": timedelta(seconds=20)}),
    ("torchx_timeout_deferred", {"execution_timeout": timedelta(seconds=20), "deferrable": True}),
    (
        "torchx_trigger_fault",
        {"torchx_conn_id": "torchx_trigger_fault", "deferrable": True, "transient_timeout": 20},
    ),
):
    with DAG(_dag_id, schedule=None, start_date=START, catchup=False, tags=["torchx"]):
        TorchXOperator(
            task_id="sleep",
            component="utils.sh",
            component_args=_SLEEP_600,
            scheduler="kubernetes",
            retries=0,
            **_kwargs,
        )

with DAG("torchx_echo", schedule=None, start_date=START, catchup=False, tags=["torchx"]):
    TorchXOperator(
        task_id="echo",
        component="utils.echo",
        component_args=["--msg", "hello from {{ run_id }}"],
        scheduler="kubernetes",
        poll_interval=1.0,
        retries=0,
    )

with DAG(
    "torchx_sleep_deferred",
    schedule=None,
    start_date=START,
    catchup=False,
    params={"seconds": 30},
    tags=["torchx"],
):
    TorchXOperator(
        task_id="sleep",
        component="utils.sh",
        component_args=["sleep", "{{ params.seconds }}"],
        scheduler="kubernetes",
        deferrable=True,
        retries=0,
    )


class _Defer(BaseOperator):
    """Defers to Airflow's ``TimeDeltaTrigger`` for ``seconds`` (templated), then succeeds."""

    template_fields = ("seconds",)

    def __init__(self, *, seconds: str, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(**kwargs)
        self.seconds = seconds

    def execute(self, context) -> None:  # type: ignore[no-untyped-def]
        delta = timedelta(seconds=float(self.seconds))
        self.defer(trigger=TimeDeltaTrigger(delta), method_name="done")

    def done(self, context, event=None) -> None:  # type: ignore[no-untyped-def]
        """Resumes after the trigger fired."""


with DAG("bash_echo", schedule=None, start_date=START, catchup=False, tags=["baseline"]):
    BashOperator(task_id="echo", bash_command="echo hello from {{ run_id }}", retries=0)

with DAG(
    "airflow_defer",
    schedule=None,
    start_date=START,
    catchup=False,
    params={"seconds": 30},
    tags=["baseline"],
):
    _Defer(task_id="sleep", seconds="{{ params.seconds }}", retries=0)
