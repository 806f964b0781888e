"""Run DAGs locally on an isolated Airflow home with the embedded SQLite database.

The public helpers for running a DAG outside a deployment (used by
``scripts/airflow-dags-test.sh``, ``scripts/pipeline-run.sh``, the tests and the benchmark;
handy for DAG authors too):

- :func:`airflow_env`: the environment variables of an isolated Airflow home on SQLite;
- :func:`prepare_home`: creates such a home with a migrated database (optionally copied from a
  migrated template) and returns its environment;
- :func:`dag_test_argv`: the command that runs one DAG with ``dag.test()`` in a child process;
- :func:`run_dag_test` and :func:`retry_task`: what that child process runs.

Importing this module does not import Airflow: Airflow reads its configuration when first
imported, so every Airflow step runs in a child process started with the environment above.

Command line (with the environment of :func:`prepare_home`)::

    python -m torchx_airflow.local test DAG_FILE DAG_ID
        [--logical-date ISO] [--conf JSON] [--connections FILE]
    python -m torchx_airflow.local retry DAG_FILE DAG_ID TASK_ID --logical-date ISO

runs ``dag.test()`` (or the next try of one task of an existing run) in that process and
prints one JSON line: the run state and, per task, its state, try number, duration and XComs.
Its in-process Execution API serves the Task SDK's own API version only (3 s less CPU per
run; :mod:`torchx_airflow._local_api`).

Example::

    import os, subprocess
    from pathlib import Path
    from torchx_airflow.local import dag_test_argv, prepare_home

    env = {**os.environ, **prepare_home(Path("/tmp/airflow-home"))}
    argv = dag_test_argv(Path("dags/my_dag.py"), "my_dag", conf={"steps": 10})
    summary = subprocess.run(argv, env=env, capture_output=True, text=True).stdout
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Optional

from filelock import FileLock

from torchx_airflow._local_api import serve_newest_version_only

__all__ = ["airflow_env", "dag_test_argv", "prepare_home", "retry_task", "run_dag_test"]

_DB = "airflow.db"


def airflow_env(home: Path, dags_folder: Optional[Path] = None) -> dict[str, str]:
    """Returns the environment variables of an isolated Airflow home on SQLite.

    Args:
        home: the Airflow home (database, logs, config).
        dags_folder: the DAG folder (default: ``home/dags``).
    """
    dags = dags_folder or home / "dags"
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / _DB}",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_HOST": "127.0.0.1",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__CORE__LAZY_LOAD_PLUGINS": "True",
    }


def dag_test_argv(
    dag_file: Path,
    dag_id: str,
    conf: Optional[Mapping[str, Any]] = None,
    logical_date: Optional[str] = None,
) -> list[str]:
    """The command that runs :func:`run_dag_test` in a child process (``python -m ... test``).

    Run it with the environment of :func:`prepare_home`; its last stdout line is the summary.

    Args:
        dag_file: the DAG file.
        dag_id: the DAG id.
        conf: the run's ``conf`` (DAG params).
        logical_date: the run's logical date (ISO 8601); default: now.
    """
    argv = [sys.executable, "-m", "torchx_airflow.local", "test", str(dag_file), dag_id]
    if conf:
        argv += ["--conf", json.dumps(dict(conf))]
    if logical_date:
        argv += ["--logical-date", logical_date]
    return argv


def _migrate(home: Path) -> None:
    env = {**os.environ, **airflow_env(home)}
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def prepare_home(home: Path, template: Optional[Path] = None) -> dict[str, str]:
    """Creates ``home`` with a migrated database and returns its environment variables.

    With ``template``, the database is migrated once into ``template`` (guarded by a file
    lock) and copied, which takes milliseconds instead of seconds.

    Args:
        home: the Airflow home to create.
        template: a directory that caches a migrated database.
    """
    (home / "dags").mkdir(parents=True, exist_ok=True)
    if (home / _DB).exists():
        return airflow_env(home)
    if template is None:
        _migrate(home)
        return airflow_env(home)

    template.mkdir(parents=True, exist_ok=True)
    with FileLock(str(template / "migrate.lock")):
        if not (template / _DB).exists():
            _migrate(template)
    shutil.copyfile(template / _DB, home / _DB)
    return airflow_env(home)


def _value(state: Any) -> Optional[str]:
    return None if state is None else str(getattr(state, "value", state))


def _summary(dag_run: Any) -> dict[str, Any]:
    from airflow.models.xcom import XComModel  # lazy: Airflow reads its config at import
    from airflow.utils.session import create_session  # lazy: Airflow reads its config at import

    tasks: dict[str, Any] = {}
    with create_session() as session:
        for ti in dag_run.get_task_instances(session=session):
            rows = session.query(XComModel).filter_by(
                dag_id=ti.dag_id, run_id=ti.run_id, task_id=ti.task_id, map_index=ti.map_index
            )
            xcoms = {row.key: XComModel.deserialize_value(row) for row in rows}
            tasks[ti.task_id] = {
                "state": _value(ti.state),
                "try_number": ti.try_number,
                "duration": ti.duration,
                "xcom": xcoms,
            }
    return {"run_id": dag_run.run_id, "state": _value(dag_run.state), "tasks": tasks}


def run_dag_test(
    dag_file: Path,
    dag_id: str,
    logical_date: Optional[datetime] = None,
    conf: Optional[Mapping[str, Any]] = None,
    connections: Optional[Path] = None,
) -> dict[str, Any]:
    """Runs ``dag.test()`` for one DAG of ``dag_file`` (in this process) and summarises it.

    The Airflow environment (see :func:`airflow_env`) must be set before Airflow is imported.
    Passing the same ``logical_date`` again re-runs the same DAG run: its task instances are
    cleared and their next try starts, as a retry would.

    Args:
        dag_file: the DAG file.
        dag_id: the DAG id.
        logical_date: the run's logical date (also its ``run_after``); default: now.
        conf: the run's ``conf`` (DAG params).
        connections: a JSON/YAML connections file.

    Returns:
        ``{"run_id", "state", "tasks": {task_id: {"state", "try_number", "duration", "xcom"}}}``.
    """
    from airflow.dag_processing.dagbag import DagBag  # lazy: Airflow reads its config at import

    bag = DagBag(dag_folder=str(dag_file))
    if dag_id not in bag.dags:
        raise SystemExit(f"DAG `{dag_id}` not found in {dag_file}: {bag.import_errors}")
    when = logical_date or datetime.now(tz=UTC)
    run = bag.dags[dag_id].test(
        run_after=when,
        logical_date=when,
        run_conf=dict(conf or {}),
        conn_file_path=str(connections) if connections else None,
    )
    return _summary(run)


def retry_task(dag_file: Path, dag_id: str, task_id: str, logical_date: datetime) -> dict[str, Any]:
    """Runs the next try of one task of an existing DAG run, as the scheduler would on a retry.

    Use it after a run whose worker died (e.g. killed with SIGKILL): ``dag.test()`` cannot
    do this, because it replaces the DAG run of a logical date (and its task state store).

    Args:
        dag_file: the DAG file.
        dag_id: the DAG id.
        task_id: the task to run again.
        logical_date: the logical date of the existing DAG run.

    Returns:
        The run's summary (see :func:`run_dag_test`).
    """
    from airflow.dag_processing.dagbag import DagBag  # lazy: Airflow reads its config at import
    from airflow.models.dagrun import DagRun  # lazy: Airflow reads its config at import
    from airflow.sdk.definitions.dag import _run_task  # lazy: Airflow reads its config at import
    from airflow.utils.session import create_session  # lazy: Airflow reads its config at import

    dag = DagBag(dag_folder=str(dag_file)).dags[dag_id]
    with create_session() as session:
        run = session.query(DagRun).filter_by(dag_id=dag_id, logical_date=logical_date).one()
        ti = run.get_task_instance(task_id, session=session)
        if ti is None:
            raise SystemExit(f"task `{task_id}` has no instance in run {run.run_id}")
        ti.try_number += 1
        session.merge(ti)
        session.commit()
        session.refresh(ti)
        session.expunge(ti)
    _run_task(ti=ti, task=dag.get_task(task_id), run_triggerer=True)
    with create_session() as session:
        run = session.query(DagRun).filter_by(dag_id=dag_id, logical_date=logical_date).one()
        session.expunge(run)
    return _summary(run)


def _main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m torchx_airflow.local")
    sub = parser.add_subparsers(dest="cmd", required=True)
    test = sub.add_parser("test", help="run dag.test() and print a JSON summary")
    test.add_argument("dag_file", type=Path)
    test.add_argument("dag_id")
    test.add_argument("--logical-date", type=datetime.fromisoformat)
    test.add_argument("--conf", type=json.loads, default={})
    test.add_argument("--connections", type=Path)
    retry = sub.add_parser("retry", help="run the next try of a task of an existing run")
    retry.add_argument("dag_file", type=Path)
    retry.add_argument("dag_id")
    retry.add_argument("task_id")
    retry.add_argument("--logical-date", type=datetime.fromisoformat, required=True)
    args = parser.parse_args(argv)
    serve_newest_version_only()
    if args.cmd == "retry":
        summary = retry_task(args.dag_file, args.dag_id, args.task_id, args.logical_date)
    else:
        summary = run_dag_test(
            args.dag_file, args.dag_id, args.logical_date, args.conf, args.connections
        )
    print(json.dumps(summary, default=str), flush=True)


if __name__ == "__main__":
    _main()
