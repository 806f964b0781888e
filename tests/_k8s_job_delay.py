"""The test-only Kubernetes Job delay (``tests/_hooks/k8s_job_delay/sitecustomize.py``).

A test that must kill a plain-mode submitter between two Job creations starts that submitter
with :func:`delay_env`: the hook folder first on ``PYTHONPATH`` and the hook's variables. The
Celery stack mounts :data:`HOOK_DIR` into its workers at :data:`CONTAINER_DIR` instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

HOOK_DIR = Path(__file__).resolve().parent / "_hooks" / "k8s_job_delay"
"""The folder holding the hook's ``sitecustomize.py``."""
CONTAINER_DIR = "/opt/torchx-flow/test-hooks/k8s_job_delay"
"""Where the Celery stack's workers find it."""


def hook_vars(delay: float, dag_id: str = "", folder: str = str(HOOK_DIR)) -> dict[str, str]:
    """The variables that switch the hook on in a process whose ``PYTHONPATH`` is ``folder``.

    Args:
        delay: seconds the submitter sleeps before each Job after the first.
        dag_id: only the Jobs of this Airflow DAG ("": every Job).
        folder: where the hook is, as the process sees it.
    """
    env = {"PYTHONPATH": folder, "TXFLOW_TEST_K8S_JOB_DELAY": f"{delay:g}"}
    if dag_id:
        env["TXFLOW_TEST_K8S_JOB_DELAY_DAG"] = dag_id
    return env


def delay_env(delay: float, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: ours) with the hook first on ``PYTHONPATH`` and switched on."""
    env = dict(os.environ if base is None else base)
    extra = hook_vars(delay)
    old = env.get("PYTHONPATH", "")
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (extra["PYTHONPATH"], old) if p)
    return env
