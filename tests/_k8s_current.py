"""Helpers of the tests on the current cluster (``scripts/infra/k8s-current.sh``: 1.35, Kueue, JobSet).

Pods there see only images loaded into the cluster's containerd (``k8s-current.sh load``);
``torchx-flow/busybox:latest`` and ``torchx-flow/python:3.11`` are loaded by the start script
or an earlier run, and since a ``:latest`` image is pulled by default, apps run with
``image_pull_policy=IfNotPresent``. Kueue objects get unique names and are deleted afterwards.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from _infra import REPO

KUEUE = ("kueue.x-k8s.io", "v1beta2")
BUSYBOX = "torchx-flow/busybox:latest"


def module_client() -> Iterator[Any]:
    """Body of a module-scoped ``client`` fixture: the current cluster's API client, else a skip.

    Sets ``KUBECONFIG`` to it for the module's later tests (and the processes they start).
    """
    import pytest

    pytest.importorskip("kubernetes")
    from _infra import k8s_cluster
    from kubernetes import config

    found, why = k8s_cluster()
    if found is None:
        pytest.skip(why)  # conftest turns this into a failure under CI=true
    saved = os.environ.get("KUBECONFIG")
    os.environ["KUBECONFIG"] = found
    api = config.new_client_from_config(config_file=found)
    try:
        yield api
    finally:
        api.close()
        if saved is None:
            os.environ.pop("KUBECONFIG", None)
        else:
            os.environ["KUBECONFIG"] = saved


def load_image(*images: str) -> None:
    """Copies ``images`` from the project's Docker engine into the cluster's containerd."""
    script = REPO / "scripts" / "infra" / "k8s-current.sh"
    subprocess.run([str(script), "load", *images], check=True, capture_output=True, timeout=900)


def ctr(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """``ctr ARGS`` against the cluster's containerd, in the kubelet's ``k8s.io`` namespace."""
    from _infra import run_dir

    sock = run_dir() / "k8s-current" / "containerd.sock"
    argv = ["ctr", "--address", str(sock), "-n", "k8s.io", *args]
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=120)


def unload_image(image: str) -> None:
    """Removes ``image`` from the cluster's containerd (what :func:`load_image` added)."""
    ctr("images", "rm", f"docker.io/{image}")


def cluster_queue(
    name: str, flavor: str, cpu: str = "250m", memory: str = "64Mi"
) -> dict[str, Any]:
    """A ClusterQueue with quota ``cpu``/``memory`` in one flavor, preempting lower priorities."""
    resources = [
        {"name": "cpu", "nominalQuota": cpu},
        {"name": "memory", "nominalQuota": memory},
    ]
    return {
        "apiVersion": "/".join(KUEUE),
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": flavor, "resources": resources}],
                }
            ],
        },
    }


@contextmanager
def local_queue(client: Any, ns: str, cpu: str = "250m", memory: str = "64Mi") -> Iterator[str]:
    """A LocalQueue ``lq`` in ``ns`` over a new ClusterQueue of quota ``cpu``/``memory``.

    Yields the LocalQueue's name; deletes it, the ClusterQueue and its ResourceFlavor on exit.
    """
    from kubernetes import client as k8s

    custom = k8s.CustomObjectsApi(client)
    tag = uuid.uuid4().hex[:6]
    flavor, cq = f"tx-flavor-{tag}", f"tx-cq-{tag}"
    flavor_body = {"apiVersion": "/".join(KUEUE), "kind": "ResourceFlavor"}
    custom.create_cluster_custom_object(
        *KUEUE, "resourceflavors", {**flavor_body, "metadata": {"name": flavor}}
    )
    try:
        custom.create_cluster_custom_object(
            *KUEUE, "clusterqueues", cluster_queue(cq, flavor, cpu, memory)
        )
        try:
            local = {
                "apiVersion": "/".join(KUEUE),
                "kind": "LocalQueue",
                "metadata": {"name": "lq", "namespace": ns},
                "spec": {"clusterQueue": cq},
            }
            custom.create_namespaced_custom_object(*KUEUE, ns, "localqueues", local)
            try:
                yield "lq"
            finally:
                custom.delete_namespaced_custom_object(*KUEUE, ns, "localqueues", "lq")
        finally:
            custom.delete_cluster_custom_object(*KUEUE, "clusterqueues", cq)
    finally:
        custom.delete_cluster_custom_object(*KUEUE, "resourceflavors", flavor)


@contextmanager
def loaded_venv_image() -> Iterator[str]:
    """``_k8s_live.venv_image`` (this venv first on ``PATH``) loaded into the cluster's containerd.

    Its base ``torchx-flow/python:3.11`` is already there, so the load copies one small layer;
    the image is removed from containerd and from the Docker engine on exit.
    """
    from _k8s_live import venv_image

    with venv_image() as tag:
        load_image(tag)
        try:
            yield tag
        finally:
            unload_image(tag)
