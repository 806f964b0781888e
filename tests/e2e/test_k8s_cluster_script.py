"""``scripts/infra/k8s-cluster.sh``: its interface, and ``env`` on the running local cluster.

Starting and stopping are not exercised here: the cluster is shared by the whole test run (and
``make test`` starts and stops it around the suite through ``up.sh``/``down.sh``).
"""

from __future__ import annotations

import subprocess

import pytest
from _infra import REPO, kubeconfig_path

SCRIPT = REPO / "scripts" / "infra" / "k8s-cluster.sh"


def test_unknown_command_prints_usage() -> None:
    proc = subprocess.run([str(SCRIPT), "restart"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"usage: {SCRIPT} start|stop|env"


@pytest.mark.k8s
def test_env_prints_the_kubeconfig_of_the_running_cluster() -> None:
    proc = subprocess.run([str(SCRIPT), "env"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"KUBECONFIG={kubeconfig_path()}"
    # the kubeconfig holds an admin token: only its owner may read it
    assert kubeconfig_path().stat().st_mode & 0o077 == 0
