"""Kueue's admission reason reaches every front-end while an app waits (the current cluster).

A ClusterQueue has quota for one app (250m CPU, 64Mi). A holder app takes it; then four
front-ends each launch an app into the same LocalQueue, all at once, as their real processes:
``torchx run --wait``, an Airflow task in the worker (``dag.test()``), an Airflow task deferred
to its trigger (run in line by ``dag.test()``), and the KFP launcher's container command. Each
app waits PENDING with Kueue's message; each front-end's log shows it. Once every log has it,
the holder is cancelled: the waiting apps are admitted one after another and all succeed.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from _k8s_current import BUSYBOX, local_queue, module_client
from _k8s_live import namespace, wait_until

from torchx.specs.api import AppDef, AppState, Resource, Role, is_terminal

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("airflow") is None or importlib.util.find_spec("kfp") is None,
        reason="needs apache-airflow and kfp (pip install -e '.[airflow,kfp]')",
    ),
    pytest.mark.k8s,
    pytest.mark.slow,
    pytest.mark.timeout(900),
]

# every app requests 1 CPU, 1024 MB less these: 250m and 32Mi, so the queue holds exactly one
RESERVED = "reserved_millicpu=750,reserved_memmb=992"
WAITING = "waiting for Kueue admission in queue lq"


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    yield from module_client()


@pytest.fixture(scope="module")
def ns(client: Any) -> Iterator[str]:
    with namespace(client, "tx-kfront") as name:
        yield name


@pytest.fixture(scope="module")
def queue(client: Any, ns: str) -> Iterator[str]:
    with local_queue(client, ns) as name:
        yield name


def opts(ns: str, queue: str) -> str:
    return f"mode=jobset,namespace={ns},queue={queue},image_pull_policy=IfNotPresent,{RESERVED}"


AIRFLOW_DAG = """
with DAG("{dag_id}", schedule=None, start_date=datetime(2024, 1, 1)):
    TorchXOperator(
        task_id="job",
        component="utils.echo",
        component_args=["--image", "{image}", "--msg", "{dag_id} ran"],
        scheduler="kubernetes",
        scheduler_cfg="{opts}",
        poll_interval=1,
        deferrable={deferrable},
    )
"""


def airflow_run(
    tmp_path: Path, factory: Any, cfg: str, deferrable: bool
) -> tuple[list[str], dict[str, str]]:
    """The ``dag.test()`` command of a one-task DAG and its environment (home in ``tmp_path``)."""
    from _airflow_support import airflow_home_env, dag_argv, write_dag

    dag_id = "kueue_deferred" if deferrable else "kueue_worker"
    env = airflow_home_env(tmp_path / dag_id, factory)
    body = AIRFLOW_DAG.format(dag_id=dag_id, image=BUSYBOX, opts=cfg, deferrable=deferrable)
    dag_file = write_dag(env, body, name=f"{dag_id}.py")
    return dag_argv(dag_file, dag_id), env


class FrontEnd:
    """One front-end process, its output in a file."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.name, self.log = name, log
        self._out: IO[str] = log.open("w")
        self.proc = subprocess.Popen(argv, env=env, stdout=self._out, stderr=subprocess.STDOUT)

    def text(self) -> str:
        return self.log.read_text()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._out.close()


def kfp_launcher(cfg: str, out_dir: Path) -> list[str]:
    """The KFP launcher task's container command (``sh -ec`` ... ``torchx_launch``)."""
    from _kfp_launcher import launcher_argv

    from torchx_kfp import launcher_component

    out_dir.mkdir()
    values = {
        "component": "utils.echo",
        "args": ["--image", BUSYBOX, "--msg", "kfp ran"],
        "app": "",
        "overrides": {},
        "params": {},
        "env": {},
        "scheduler": "kubernetes",
        "scheduler_cfg": cfg,
    }
    return launcher_argv(launcher_component(), values, str(out_dir))


def test_every_front_end_shows_kueues_reason_then_runs(
    client: Any, ns: str, queue: str, tmp_path: Path, tmp_path_factory: Any
) -> None:
    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    sched = create_scheduler("test", client=client)
    cfg = opts(ns, queue)
    holder_role = Role(
        "holder", BUSYBOX, entrypoint="sleep", args=["600"], resource=Resource(1, 0, 1024)
    )
    holder = sched.submit(AppDef("holder", [holder_role]), sched.run_opts().cfg_from_str(cfg))
    wait_until(
        "the holder to be admitted and run",
        lambda: sched.describe(holder).state == AppState.RUNNING,
        180,
    )
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    base = {**os.environ, "PATH": path}
    worker_cmd, worker_env = airflow_run(tmp_path, tmp_path_factory, cfg, deferrable=False)
    deferred_cmd, deferred_env = airflow_run(tmp_path, tmp_path_factory, cfg, deferrable=True)
    cli = [sys.executable, "-m", "torchx.cli.main", "run", "-s", "kubernetes", "--wait"]
    run_cmd = [*cli, "--workspace", "", "-cfg", cfg, "utils.echo", "--image", BUSYBOX]
    ends: list[FrontEnd] = []
    try:
        for name, argv, env in (
            ("torchx run --wait", [*run_cmd, "--msg", "cli ran"], base),
            ("airflow worker", worker_cmd, {**base, **worker_env}),
            ("airflow deferred", deferred_cmd, {**base, **deferred_env}),
            ("kfp launcher", kfp_launcher(cfg, tmp_path / "kfp-out"), base),
        ):
            ends.append(FrontEnd(name, argv, env, tmp_path / f"{name.replace(' ', '_')}.log"))

        def all_waiting() -> bool:
            for end in ends:
                assert end.proc.poll() is None, f"{end.name} ended early:\n{end.text()[-3000:]}"
            return all(WAITING in end.text() for end in ends)

        wait_until("every front-end to log Kueue's reason", all_waiting, 300)
        states = {a.app_id: a.state for a in sched.list({"namespace": ns})}
        assert len(states) == 5 and states.pop(holder) == AppState.RUNNING, states
        assert set(states.values()) == {AppState.PENDING}, states  # all held back by Kueue
        sched.cancel(holder)
        for end in ends:
            assert end.proc.wait(timeout=600) == 0, f"{end.name}:\n{end.text()[-3000:]}"
        texts = {end.name: end.text() for end in ends}
        assert "is PENDING: " + WAITING in texts["torchx run --wait"]
        for name in ("airflow worker", "airflow deferred", "kfp launcher"):
            line = next(x for x in texts[name].splitlines() if WAITING in x)
            assert " is PENDING: waiting for Kueue admission in queue lq: " in line, line
        assert "running trigger in line" in texts["airflow deferred"]
        assert "kueue_worker ran" in texts["airflow worker"]
        assert "kueue_deferred ran" in texts["airflow deferred"]
        assert "SUCCEEDED" in texts["kfp launcher"] and "kfp ran" in texts["kfp launcher"]
    finally:
        for end in ends:
            end.stop()
        if not is_terminal(sched.describe(holder).state):
            sched.cancel(holder)
