"""The operator's local app runs under the supervisor it prestarted, which holds no secret.

``TorchXOperator`` starts a ``local_cwd`` app's supervisor when its templates are rendered
(before Airflow's API calls, the connection read and the dry run), with the environment the
launch leaves it (``env_allow``, Airflow's secrets dropped). Real Airflow (``dag.test()`` in
a child process) and real processes: the replica prints its parent's (the supervisor's)
command line and environment from ``/proc``; a prestarted ("spare") supervisor is the one
started with ``--channel-fd``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from _airflow_support import airflow_home_env, dag_argv, run_logged, write_dag

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("airflow") is None,
        reason="apache-airflow is not installed (pip install -e '.[airflow]')",
    ),
    pytest.mark.slow,
]

SECRET = "prestart-pass-41"
# climbs from the replica's shell to its supervisor (the ancestor running torchx.schedulers
# code), then prints its command line on one line and its environment, a line each (no ``$$``:
# torchx's macros read it as an escaped ``$``)
SHOW_PARENT = (
    "p=$PPID; while [ $p -gt 1 ] && ! tr '\\0' ' ' < /proc/$p/cmdline | grep -q 'torchx[.]schedulers';"
    " do p=$(cut -d' ' -f4 /proc/$p/stat); done;"
    " printf 'parent-cmdline: '; tr '\\0' ' ' < /proc/$p/cmdline; echo;"
    " tr '\\0' '\\n' < /proc/$p/environ | sed 's/^/parent-env: /'"
)


@pytest.mark.parametrize(
    ("conn_allow", "spare"),
    [("", True), ("EXTRA_*", False)],
    ids=["prestarted", "connection-allows-more"],
)
def test_the_app_runs_under_the_prestarted_supervisor_without_secrets(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, conn_allow: str, spare: bool
) -> None:
    # a connection that allows more than the task does: the launch starts its own supervisor
    extra = f', "env_allow": ["{conn_allow}"]' if conn_allow else ""
    connection = f'{{"conn_type": "torchx", "extra": {{"scheduler": "local_cwd"{extra}}}}}'
    env = airflow_home_env(
        tmp_path,
        tmp_path_factory,
        AIRFLOW_CONN_TORCHX_DEFAULT=connection,
        AIRFLOW_CONN_OTHER=f"postgres://u:{SECRET}@h/db",
        FAKE_KEEP_ME="kept",
        EXTRA_SETTING="extra",
    )
    body = f"""
    with DAG("prestart", schedule=None, start_date=datetime(2024, 1, 1)):
        TorchXOperator(task_id="show", component="utils.sh", component_args=["sh", "-c", {SHOW_PARENT!r}],
                       env_allow=["FAKE_KEEP*"])
    """
    dag = write_dag(env, body, "prestart_dag.py")
    summary, output = run_logged(env, dag_argv(dag, "prestart"), tmp_path / "run.log")
    assert summary["tasks"]["show"]["state"] == "success", output[-3000:]
    cmdline = [line for line in output.splitlines() if "parent-cmdline:" in line]
    parent_env = [  # "<time> [info] [sh/0] parent-env: NAME=value [logger] loc=..."
        line.split("parent-env: ", 1)[1].rsplit(" [airflow.task", 1)[0].strip()
        for line in output.splitlines()
        if "parent-env: " in line
    ]
    assert cmdline and parent_env, output[-3000:]
    assert ("--channel-fd" in cmdline[0]) is spare, cmdline[0]
    assert "FAKE_KEEP_ME=kept" in parent_env
    assert ("EXTRA_SETTING=extra" in parent_env) is (not spare)
    assert not any(v.startswith("AIRFLOW_CONN_") for v in parent_env), parent_env
    assert SECRET not in "\n".join(parent_env)
