"""Secrets stay in Airflow on Slurm (issue 25): a ``TorchXOperator`` task on the local Slurm
whose worker holds Airflow's secrets starts a job whose batch script and replica hold none.

Real Airflow (``dag.test()`` in a child process: the task runs in that process, which holds
the secrets) and the real local Slurm. The replicas run on this machine (the local Slurm's
nodes are loopback names), so the test reads ``/proc/<pid>/environ`` of the replica and of
the batch script that started it while the replica waits for a marker file. Failures name
variables only, never values.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from _airflow_support import airflow_home_env, dag_argv, write_dag

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("airflow") is None,
        reason="apache-airflow is not installed (pip install -e '.[airflow]')",
    ),
    pytest.mark.slurm,
    pytest.mark.slow,
    pytest.mark.timeout(400),
]

SECRETS = {
    "AIRFLOW__CORE__FERNET_KEY": "ZmVybmV0LXBhc3MtNzctMDAwMDAwMDAwMDAwMDAwMDA=",
    "AIRFLOW__API_AUTH__JWT_SECRET": "jwt-pass-77",
    "AIRFLOW_CONN_X": "postgres://u:conn-pass-77@h/db",
    "AIRFLOW__CELERY__BROKER_URL": "redis://:broker-pass-77@redis:6379/0",
    "AIRFLOW__CELERY__RESULT_BACKEND": "db+postgresql://u:result-pass-77@pg/airflow",
}
# waits until the file argv[1] exists (iter(int, 1) never ends: any() stops at the file)
WAIT = (
    "import os, sys, time; "
    "any(os.path.exists(sys.argv[1]) or time.sleep(0.2) for _ in iter(int, 1))"
)


def _pids_with(text: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if text.encode() in cmd and int(pid) != os.getpid():
            found.append(int(pid))
    return found


def _cmd(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _cwd_has(pid: int, text: str) -> bool:
    try:
        return text in os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (e.decode(errors="replace").partition("=") for e in raw.split(b"\0") if b"=" in e)
    return {k: v for k, _, v in pairs}


def _replica_and_script(marker: str, proc: subprocess.Popen[bytes], log: Path) -> tuple[int, int]:
    """The replica's pid (``python -c WAIT .../marker``) and its batch script's (``slurm_script``
    run in the job directory ``.../marker``), once both run; fails if the task ends first."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()[-3000:]
        replicas = [p for p in _pids_with(marker) if b"srun" not in _cmd(p)]
        replicas = [p for p in replicas if b"-c\0" + WAIT.encode() in _cmd(p)]
        scripts = [p for p in _pids_with("slurm_script") if _cwd_has(p, marker)]
        if replicas and scripts:
            return replicas[0], scripts[0]
        time.sleep(0.3)
    raise AssertionError(f"no replica/batch script of {marker} started:\n{log.read_text()[-3000:]}")


def _leaked(pid: int) -> list[str]:
    """The NAMES of the secrets in the process' environment (by name or by value)."""
    env = _environ(pid)
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    by_name = [name for name in SECRETS if name in env]
    by_value = [name for name, value in SECRETS.items() if value.encode() in raw]
    return sorted(set(by_name + by_value))


def test_slurm_job_of_a_task_holds_none_of_the_workers_airflow_secrets(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    marker = f"txf-{uuid.uuid4().hex}"
    job_dir = tmp_path / marker
    done = tmp_path / f"{marker}.done"
    env = airflow_home_env(tmp_path, tmp_path_factory, **SECRETS)
    body = f"""
    with DAG("slurm_secrets", schedule=None, start_date=datetime(2024, 1, 1)):
        TorchXOperator(
            task_id="wait",
            component="utils.python",
            component_args=["-c", {WAIT!r}, {str(done)!r}],
            scheduler="slurm",
            scheduler_cfg={{"job_dir": {str(job_dir)!r}}},
            env={{"ROLE_VAR": "from-task"}},
            poll_interval=1,
            retries=0,
        )
    """
    dag_file = write_dag(env, body, "slurm_secrets_dag.py")
    log = tmp_path / "dag.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            dag_argv(dag_file, "slurm_secrets"), env=env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        replica, script = _replica_and_script(marker, proc, log)
        # the worker (the task runs in the dag.test process) holds every secret
        assert _leaked(proc.pid) == sorted(SECRETS)
        found = {"replica": _leaked(replica), "batch script": _leaked(script)}
        replica_env = _environ(replica)
        assert replica_env.get("ROLE_VAR") == "from-task"  # the task's env reached it
        assert replica_env.get("SLURM_JOB_ID")  # it is the Slurm job's step
    finally:
        done.touch()  # the replica ends on its own
        try:
            proc.wait(timeout=180)
        finally:
            proc.kill()
    assert found == {"replica": [], "batch script": []}  # names only
    output = log.read_text()
    summary = json.loads(output.strip().splitlines()[-1])
    assert summary["tasks"]["wait"]["state"] == "success", output[-3000:]
    assert summary["tasks"]["wait"]["xcom"]["return_value"]["app_handle"].startswith("slurm://")
