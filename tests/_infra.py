"""Finds the local Docker engine and Kubernetes cluster that ``scripts/infra`` starts.

Tests marked ``docker`` or ``k8s`` need them. Where one is missing the test is skipped with the
reason, except in CI (``CI=true``), where a missing engine or cluster is a failure: CI starts both
(``scripts/infra/up.sh``), so their absence there is a broken build, not an optional extra.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import NoReturn

REPO = Path(__file__).resolve().parents[1]


def cache_dir() -> Path:
    """The directory scripts/infra/common.sh keeps builds in (``TORCHX_FLOW_CACHE``)."""
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "torchx-flow"
    return Path(os.environ.get("TORCHX_FLOW_CACHE") or default)


def run_dir() -> Path:
    """The directory of the running services' sockets, pid files and logs (``TORCHX_FLOW_RUN``)."""
    return Path(os.environ.get("TORCHX_FLOW_RUN") or cache_dir() / "run")


def in_ci() -> bool:
    """True under CI, where missing infrastructure fails instead of skipping."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing(what: str, why: str) -> NoReturn:
    """Ends the running test for lack of ``what``: a skip with ``why``, in CI a failure.

    Args:
        what: what the test needs, as in "CI needs {what}" (e.g. ``"docker-compose"``).
        why: why it is not there and how to get it (the skip reason).
    """
    import pytest

    if in_ci():
        pytest.fail(f"CI needs {what}: {why}", pytrace=False)
    pytest.skip(why)


def _docker_candidates() -> list[str]:
    hosts = []
    if os.environ.get("DOCKER_HOST"):
        hosts.append(os.environ["DOCKER_HOST"])
    hosts.append(f"unix://{run_dir() / 'docker' / 'docker.sock'}")
    hosts.append("unix:///var/run/docker.sock")
    return hosts


@functools.cache
def docker_host() -> tuple[str | None, str]:
    """Returns ``(DOCKER_HOST, "")`` of a reachable engine, or ``(None, why not)``."""
    try:
        import docker
    except ImportError:
        return None, "the docker SDK is not installed (pip install 'torchx-flow[docker]')"
    for host in _docker_candidates():
        try:
            client = docker.DockerClient(base_url=host, timeout=3)
            try:
                client.ping()
            finally:
                client.close()
            return host, ""
        except Exception:  # any failure means "not this one"
            continue
    tried = ", ".join(_docker_candidates())
    return None, f"no Docker engine reachable (tried {tried}); start one: scripts/infra/up.sh"


DEFAULT_REGISTRY = "127.0.0.1:5123"


@functools.cache
def registry() -> tuple[str | None, str]:
    """Returns ``(host:port, "")`` of the local image registry (scripts/infra/registry.sh), or ``(None, why)``.

    ``TORCHX_FLOW_REGISTRY`` (printed by ``scripts/infra/up.sh``) overrides the default address.
    """
    import urllib.error
    import urllib.request

    addr = os.environ.get("TORCHX_FLOW_REGISTRY") or DEFAULT_REGISTRY
    try:
        with urllib.request.urlopen(f"http://{addr}/v2/", timeout=3) as resp:
            resp.read()
    except (OSError, urllib.error.URLError) as e:
        return None, (
            f"no local image registry at {addr} ({type(e).__name__});"
            " start one: scripts/infra/registry.sh start (or scripts/infra/up.sh)"
        )
    return addr, ""


def kubeconfig_path() -> Path:
    """Where scripts/infra/k8s-current.sh writes the local cluster's kubeconfig (1.35, Kueue)."""
    return Path(
        os.environ.get("TORCHX_FLOW_K8S_CURRENT_KUBECONFIG")
        or run_dir() / "k8s-current" / "kubeconfig"
    )


@functools.cache
def k8s_cluster() -> tuple[str | None, str]:
    """Returns ``(kubeconfig path, "")`` of the local cluster with a Ready node, or ``(None, why)``."""
    return _ready_cluster(kubeconfig_path())


def _ready_cluster(path: Path) -> tuple[str | None, str]:
    if not path.is_file():
        return None, f"no local Kubernetes cluster ({path} missing); start one: scripts/infra/up.sh"
    try:
        from kubernetes import client, config
    except ImportError:
        return (
            None,
            "the kubernetes client is not installed (pip install 'torchx-flow[kubernetes]')",
        )
    try:
        api = client.CoreV1Api(config.new_client_from_config(config_file=str(path)))
        nodes = api.list_node(_request_timeout=5).items
    except Exception as e:  # any failure: not usable
        return None, f"local Kubernetes cluster at {path} not reachable: {type(e).__name__}"
    ready = [
        n.metadata.name
        for n in nodes
        if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
    ]
    if not ready:
        return None, f"local Kubernetes cluster at {path} has no Ready node"
    return str(path), ""


def slurm_conf_path() -> Path:
    """Where scripts/infra/slurm.sh writes the local Slurm's config (``SLURM_CONF``)."""
    return Path(
        os.environ.get("TORCHX_FLOW_SLURM_CONF") or cache_dir() / "slurm" / "etc" / "slurm.conf"
    )


@functools.cache
def slurm_conf() -> tuple[str | None, str]:
    """Returns ``(SLURM_CONF, "")`` of a local Slurm whose controller answers, or ``(None, why)``."""
    import shutil
    import subprocess

    path = slurm_conf_path()
    hint = "start it: scripts/infra/slurm.sh start (or scripts/infra/up.sh)"
    if shutil.which("scontrol") is None:
        return None, f"the Slurm commands are not installed; {hint}"
    if not path.is_file():
        return None, f"no local Slurm ({path} missing); {hint}"
    env = {**os.environ, "SLURM_CONF": str(path)}
    try:
        out = subprocess.run(
            ["scontrol", "ping"], env=env, capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"local Slurm at {path} not reachable: {type(e).__name__}; {hint}"
    if "is UP" not in out:
        return None, f"the local Slurm controller ({path}) does not answer; {hint}"
    return str(path), ""
