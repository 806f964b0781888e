"""DAGs of the Celery stack's fault tests of issue 25 (tests/dags/test_dags_celery_faults.py).

The test puts this file next to torchx_celery.py in the stack's DAG folder. A run's conf names
files of the stack's work directory, a host directory every pod mounts at the same path:
``script`` (a Python script that waits until the file ``marker`` exists, saying so now and
then; the test writes the marker when it wants the app to end), ``marker``, and ``out`` (where
a replica writes its environment).

- ``torchx_proxied_train``: ``train``, a 2-replica DDP app (``dist.ddp -j 2x1``, one pod per
  replica) running the script, on the ``torchx_proxied`` connection (the test gives the workers
  and the triggerer one whose API server is a TCP proxy it controls); worker mode.
  ``torchx_proxied_train_deferred``: the same, deferrable.
- ``torchx_superseded``: the same ``train`` on the stack's connection, worker mode.
- ``torchx_keep_deadline``: ``wait``, one pod running the script, ``on_finish_action="keep"``
  and a 40 s ``execution_timeout``: the operator's own deadline ends try 1 while the app runs
  (no log streaming: see below); ``torchx_keep_deadline_deferred``: the same, deferrable.
- ``torchx_env_dump``: ``kubernetes`` (a pod) and ``local_cwd`` (a process of the worker, on the
  ``torchx_local`` connection) each write their replica's environment, and its parent
  process', as JSON to ``{out}/<scheduler>.json`` (``local_cwd``: ``local_out`` on the worker).

Every step has the stack's default of one Airflow retry (``TASK_RETRIES``).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import DAG

from torchx_airflow import TorchXOperator

START = datetime(2025, 1, 1)
_DEFAULTS = {"retry_delay": timedelta(seconds=2)}
_WAIT = ["{{ dag_run.conf['script'] }}", "--", "{{ dag_run.conf['marker'] }}"]

# a replica's environment and its parent's, as JSON to argv[1] (no Jinja braces in here)
ENV_DUMP = """
import json, os, sys
def env(pid):
    try:
        with open("/proc/%s/environ" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    pairs = (i.decode(errors="replace").partition("=") for i in raw.split(b"\\0") if i)
    return dict((k, v) for k, _, v in pairs)
def cmdline(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        return f.read().replace(b"\\0", b" ").decode(errors="replace")
ppid = os.getppid()
found = dict(self=env("self"), ppid=ppid, parent=None, parent_cmd="")
if ppid > 0:
    found.update(parent=env(ppid), parent_cmd=cmdline(ppid))
os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True)
with open(sys.argv[1], "w") as f:
    json.dump(found, f)
"""


def _train(**kwargs):  # type: ignore[no-untyped-def]
    """``train``: 2 replicas of the wait script under torchrun (``dist.ddp -j 2x1``)."""
    return TorchXOperator(
        task_id="train",
        component="dist.ddp",
        component_args=["-j", "2x1", "--script", *_WAIT],
        scheduler="kubernetes",
        resource="cpu.small",
        env={"OMP_NUM_THREADS": "1"},
        poll_interval=2.0,
        **kwargs,
    )


for _dag_id, _kwargs in (
    ("torchx_proxied_train", {"torchx_conn_id": "torchx_proxied"}),
    ("torchx_proxied_train_deferred", {"torchx_conn_id": "torchx_proxied", "deferrable": True}),
    ("torchx_superseded", {}),
):
    with DAG(_dag_id, schedule=None, start_date=START, default_args=_DEFAULTS, tags=["faults"]):
        _train(**_kwargs)

# the follow returns at the operator's own deadline and the task fails there (without log
# streams to finish first, which would let Airflow's own timeout strike first); deferred: the
# trigger's deadline
for _dag_id, _kwargs in (
    ("torchx_keep_deadline", {"stream_logs": False}),
    ("torchx_keep_deadline_deferred", {"deferrable": True}),
):
    with DAG(_dag_id, schedule=None, start_date=START, default_args=_DEFAULTS, tags=["faults"]):
        TorchXOperator(
            task_id="wait",
            component="utils.python",
            component_args=["--script", *_WAIT],
            scheduler="kubernetes",
            on_finish_action="keep",
            execution_timeout=timedelta(seconds=40),
            poll_interval=2.0,
            **_kwargs,
        )

with DAG(
    "torchx_env_dump",
    schedule=None,
    start_date=START,
    default_args={**_DEFAULTS, "retries": 0},
    tags=["faults"],
):
    TorchXOperator(
        task_id="kubernetes",
        component="utils.sh",
        component_args=["exec", "python", "-c", ENV_DUMP, "{{ dag_run.conf['out'] }}/k8s.json"],
        scheduler="kubernetes",
        poll_interval=2.0,
    )
    TorchXOperator(
        task_id="local_cwd",
        component="utils.sh",
        component_args=["exec", "python", "-c", ENV_DUMP, "{{ dag_run.conf['local_out'] }}"],
        scheduler="local_cwd",
        torchx_conn_id="torchx_local",
        poll_interval=1.0,
    )
