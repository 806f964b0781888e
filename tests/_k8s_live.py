"""Helpers of the tests that run real pods on the local cluster (``scripts/infra/k8s-current.sh``).

What the live tests rely on, stated once:

- pods run the local image ``torchx-flow/python:3.11`` (tag not ``latest``, so the kubelet never
  tries to pull it) with this checkout (sources and ``.venv``) and the interpreter the venv was
  made from mounted read-only at their host paths, so ``.venv/bin/python`` works in the pod;
- the cluster has CoreDNS: multi-replica apps reach rank 0 by its DNS name (``rank0_address=dns``,
  the app's headless Service), as in production; tests/_k8s_current.py holds the helpers for
  the cluster's containerd (image loads), Kueue and JobSet;
- each test module works in its own namespace, deleted (with everything in it) afterwards.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import _support
from _infra import REPO

IMAGE = "torchx-flow/python:3.11"
VENV_BIN = str(Path(sys.executable).parent)
PULL_ERRORS = ("ErrImagePull", "ImagePullBackOff")
"""The kubelet's reasons for a container whose image cannot be pulled (first try, backoff)."""


def says_pull_error(text: str | None) -> bool:
    """Whether ``text`` (a status message, a CLI's output) names a pull error."""
    return any(reason in (text or "") for reason in PULL_ERRORS)


def docker_env() -> dict[str, str]:
    """The environment for the ``docker`` CLI: this machine's engine (scripts/infra)."""
    out = subprocess.run(
        [str(REPO / "scripts" / "infra" / "docker-engine.sh"), "env"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return {**os.environ, "DOCKER_HOST": out.split("=", 1)[1]}


@contextmanager
def venv_image() -> Iterator[str]:
    """A local image: ``IMAGE`` with this venv's ``bin`` first on ``PATH``; removed on exit.

    Pods that run ``python`` or ``torchrun`` (``utils.python``, ``dist.ddp``) get this venv's
    (with :func:`mount_tokens` mounted). Its tag is unique to the caller, and never ``latest``.
    """
    digest = hashlib.sha1(sys.prefix.encode()).hexdigest()[:8]
    tag = f"torchx-flow/k8s-live-venv:{digest}-{uuid.uuid4().hex[:6]}"
    path = f"{VENV_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    dockerfile = f"FROM {IMAGE}\nENV PATH={path}\n"
    env = docker_env()
    subprocess.run(
        ["docker", "build", "-q", "-t", tag, "-"],
        input=dockerfile,
        text=True,
        env=env,
        check=True,
        capture_output=True,
    )
    try:
        yield tag
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], env=env, capture_output=True)


def api_client() -> Any:
    """A ``kubernetes.client.ApiClient`` for the cluster in ``$KUBECONFIG`` (set by the marker)."""
    from kubernetes import config

    return config.new_client_from_config(config_file=os.environ["KUBECONFIG"])


def mount_tokens(*extra: str) -> list[str]:
    """Mount tokens (``parse_mounts`` form) for the checkout and the venv's interpreter, read-only.

    Args:
        extra: more tokens appended (e.g. a writable output directory).
    """
    dirs = [REPO]
    venv = Path(sys.prefix)
    if not venv.is_relative_to(REPO):
        dirs.append(venv)
    base = Path(sys.base_prefix)
    if base != Path("/usr"):  # the image has its own /usr (with the same Python minor version)
        dirs.append(base)
    tokens: list[str] = []
    for d in dirs:
        tokens += ["type=bind", f"src={d}", f"dst={d}", "readonly"]
    return [*tokens, *extra]


def mounts_arg(*extra: str) -> str:
    """:func:`mount_tokens` as one ``--mounts`` value (comma-joined)."""
    return ",".join(mount_tokens(*extra))


def bind_mounts(*extra: str) -> list[Any]:
    """``BindMount`` objects for :func:`mount_tokens`."""
    from torchx.specs import parse_mounts

    return parse_mounts(mount_tokens(*extra))


def wait_until(what: str, check: Callable[[], Any], timeout: float = 180) -> Any:
    """Poll ``check`` every 0.25 s until it returns a truthy value; fail with ``what`` after.

    :func:`_support.wait_until` with this module's argument order. Not a timed assertion:
    ``timeout`` only bounds a hung test.
    """
    return _support.wait_until(check, timeout, what)


@contextmanager
def namespace(client: Any, prefix: str = "tx-live") -> Iterator[str]:
    """A fresh namespace, deleted with its objects on exit."""
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(client)
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
    try:
        yield name
    finally:
        batch = k8s.BatchV1Api(client)
        for job in batch.list_namespaced_job(name).items:
            try:  # a controller (JobSet's) may delete its Jobs between the list and here
                batch.delete_namespaced_job(
                    job.metadata.name, name, propagation_policy="Background", grace_period_seconds=0
                )
            except k8s.ApiException as e:
                if e.status != 404:
                    raise
        core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
        core.delete_namespace(name)


def leftovers(client: Any, ns: str, app_name: str) -> dict[str, list[str]]:
    """The Jobs, pods and Services of app ``app_name`` (by its instance label) still in ``ns``."""
    from kubernetes import client as k8s

    selector = f"app.kubernetes.io/instance={app_name}"
    core, batch = k8s.CoreV1Api(client), k8s.BatchV1Api(client)
    found = {
        "jobs": [
            j.metadata.name for j in batch.list_namespaced_job(ns, label_selector=selector).items
        ],
        "pods": [
            p.metadata.name for p in core.list_namespaced_pod(ns, label_selector=selector).items
        ],
        "services": [
            s.metadata.name for s in core.list_namespaced_service(ns, label_selector=selector).items
        ],
    }
    return {k: v for k, v in found.items() if v}
