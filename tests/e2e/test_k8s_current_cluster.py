"""The current local cluster of ``scripts/infra/k8s-current.sh`` (Kubernetes 1.35, CoreDNS,
kube-proxy, Kueue, JobSet): what the Kubernetes tiers rely on when they run on it.

Marked ``k8s_current``: the cluster comes from ``scripts/infra/up.sh`` (or
``scripts/infra/k8s-current.sh start``); without it the tests skip, and fail under CI.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _infra import REPO

SCRIPT = REPO / "scripts" / "infra" / "k8s-current.sh"
IMAGE = "torchx-flow/busybox:latest"  # loaded into the cluster's containerd by the start script
WAIT = 180.0


@pytest.fixture
def api() -> Any:
    """A client of the current cluster (``KUBECONFIG`` set by the ``k8s_current`` marker)."""
    from kubernetes import config

    return config.new_client_from_config(config_file=os.environ["KUBECONFIG"])


@pytest.fixture
def namespace(api: Any) -> Iterator[str]:
    """A fresh namespace, deleted (with everything in it) after the test."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    name = f"current-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    deadline = time.monotonic() + 60
    while not _has_default_sa(core, name) and time.monotonic() < deadline:
        time.sleep(0.5)
    try:
        yield name
    finally:
        core.delete_namespace(name, propagation_policy="Foreground")


def _has_default_sa(core: Any, ns: str) -> bool:
    return any(
        sa.metadata.name == "default" for sa in core.list_namespaced_service_account(ns).items
    )


def _until(what: str, probe: Callable[[], Any], timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}; last seen: {last!r}")


def _pod(name: str, command: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "restartPolicy": "Never",
            "activeDeadlineSeconds": 120,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": IMAGE,
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", command],
                }
            ],
        },
    }


def _finished(core: Any, ns: str, name: str) -> str | None:
    phase = core.read_namespaced_pod(name, ns).status.phase
    return phase if phase in ("Succeeded", "Failed") else None


class TestCurrentCluster:
    pytestmark = [pytest.mark.k8s, pytest.mark.slow]

    def test_node_is_ready_on_the_pinned_release(self, api: Any) -> None:
        from kubernetes import client

        node = client.CoreV1Api(api).read_node("localhost")
        ready = [c.status for c in node.status.conditions if c.type == "Ready"]
        assert ready == ["True"]
        assert node.status.node_info.kubelet_version == "v1.35.4"
        assert node.status.node_info.container_runtime_version.startswith("containerd://")

    def test_pods_resolve_headless_and_reach_cluster_ip_services(
        self, api: Any, namespace: str
    ) -> None:
        from kubernetes import client

        core = client.CoreV1Api(api)
        serve = "mkdir -p /www && echo served-by-$(hostname) > /www/index.html && httpd -f -p 8080 -h /www"
        core.create_namespaced_pod(namespace, _pod("server", serve, {"app": "server"}))
        for name, cluster_ip in (("server-headless", "None"), ("server", None)):
            spec: dict[str, Any] = {"selector": {"app": "server"}, "ports": [{"port": 8080}]}
            if cluster_ip:
                spec["clusterIP"] = cluster_ip
            core.create_namespaced_service(namespace, {"metadata": {"name": name}, "spec": spec})
        pod_ip = _until(
            "the server pod's IP",
            lambda: core.read_namespaced_pod("server", namespace).status.pod_ip,
        )
        headless = f"server-headless.{namespace}.svc.cluster.local"
        # busybox-static's wget crashes on a static glibc: fetch with nc, by the resolved IP
        script = (
            f"until nslookup {headless} > /tmp/ns 2>&1 && grep -q {pod_ip} /tmp/ns; do sleep 1; done;"
            f" cat /tmp/ns; nslookup server.{namespace}.svc.cluster.local > /tmp/cip;"
            " ip=$(awk '/^Address: / {a = $2} END {print a}' /tmp/cip); echo cluster-ip=$ip;"
            ' until printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 2 $ip 8080; do sleep 1; done'
        )
        core.create_namespaced_pod(namespace, _pod("client", script))
        phase = _until("the client pod", lambda: _finished(core, namespace, "client"))
        log = core.read_namespaced_pod_log("client", namespace)
        assert phase == "Succeeded", log
        assert pod_ip in log
        cluster_ip = core.read_namespaced_service("server", namespace).spec.cluster_ip
        assert f"cluster-ip={cluster_ip}" in log
        assert "served-by-server" in log

    def test_kueue_admits_a_queued_job(self, api: Any, namespace: str) -> None:
        from kubernetes import client

        custom = client.CustomObjectsApi(api)
        batch = client.BatchV1Api(api)
        grp, ver = "kueue.x-k8s.io", "v1beta2"
        flavor, cq = f"{namespace}-flavor", f"{namespace}-cq"
        custom.create_cluster_custom_object(
            grp,
            ver,
            "resourceflavors",
            {"kind": "ResourceFlavor", "apiVersion": f"{grp}/{ver}", "metadata": {"name": flavor}},
        )
        resources = [
            {"name": "cpu", "nominalQuota": "1"},
            {"name": "memory", "nominalQuota": "1Gi"},
        ]
        cq_spec = {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [{"name": flavor, "resources": resources}],
                }
            ],
        }
        custom.create_cluster_custom_object(
            grp,
            ver,
            "clusterqueues",
            {
                "kind": "ClusterQueue",
                "apiVersion": f"{grp}/{ver}",
                "metadata": {"name": cq},
                "spec": cq_spec,
            },
        )
        try:
            custom.create_namespaced_custom_object(
                grp,
                ver,
                namespace,
                "localqueues",
                {
                    "kind": "LocalQueue",
                    "apiVersion": f"{grp}/{ver}",
                    "metadata": {"name": "lq"},
                    "spec": {"clusterQueue": cq},
                },
            )
            pod = _pod("x", "echo admitted")["spec"]
            pod["containers"][0]["resources"] = {"requests": {"cpu": "100m", "memory": "16Mi"}}
            job = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "queued", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
                "spec": {"suspend": True, "backoffLimit": 0, "template": {"spec": pod}},
            }
            batch.create_namespaced_job(namespace, job)
            done = _until(
                "the queued Job to complete",
                lambda: (batch.read_namespaced_job("queued", namespace).status.succeeded or 0) >= 1,
            )
            assert done
            workloads = custom.list_namespaced_custom_object(grp, ver, namespace, "workloads")[
                "items"
            ]
            assert len(workloads) == 1
            admission = workloads[0]["status"]["admission"]
            assert admission["clusterQueue"] == cq
        finally:
            custom.delete_cluster_custom_object(grp, ver, "clusterqueues", cq)
            custom.delete_cluster_custom_object(grp, ver, "resourceflavors", flavor)

    def test_jobset_runs_and_its_pods_resolve_each_other(self, api: Any, namespace: str) -> None:
        from kubernetes import client

        custom = client.CustomObjectsApi(api)
        core = client.CoreV1Api(api)
        # each pod looks up the other role's first pod through the JobSet's headless service
        # (busybox's nslookup does not apply the search list to a dotted name: ask for the FQDN)
        domain = f"pair.{namespace}.svc.cluster.local"
        peer = {"a": f"pair-b-0-0.{domain}", "b": f"pair-a-0-0.{domain}"}

        def role(name: str) -> dict[str, Any]:
            # a pod's name leaves the service once the pod has ended: each one stays up 15 s
            # after it found its peer, so that the peer, maybe still between two tries, finds
            # it too (without that, one CI run's pod b ended first and pod a never found it)
            script = f"until nslookup {peer[name]}; do sleep 1; done; sleep 15"
            spec = _pod("x", script)["spec"]
            return {
                "name": name,
                "replicas": 1,
                "template": {
                    "spec": {
                        "backoffLimit": 0,
                        "completions": 1,
                        "parallelism": 1,
                        "template": {"spec": spec},
                    }
                },
            }

        custom.create_namespaced_custom_object(
            "jobset.x-k8s.io",
            "v1alpha2",
            namespace,
            "jobsets",
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "metadata": {"name": "pair"},
                "spec": {"replicatedJobs": [role("a"), role("b")]},
            },
        )

        def completed() -> str | None:
            js = custom.get_namespaced_custom_object(
                "jobset.x-k8s.io", "v1alpha2", namespace, "jobsets", "pair"
            )
            for cond in js.get("status", {}).get("conditions", []):
                if cond["type"] in ("Completed", "Failed") and cond["status"] == "True":
                    return str(cond["type"])
            return None

        outcome = _until("the JobSet to finish", completed)
        pods = core.list_namespaced_pod(namespace).items
        logs = {
            p.metadata.name: core.read_namespaced_pod_log(p.metadata.name, namespace) for p in pods
        }
        assert outcome == "Completed", logs
        assert len(pods) == 2
        ips = {p.metadata.name.split("-")[1]: p.status.pod_ip for p in pods}
        for p in pods:
            other = "b" if p.metadata.name.startswith("pair-a") else "a"
            assert ips[other] in logs[p.metadata.name]


def test_unknown_command_prints_usage() -> None:
    proc = subprocess.run([str(SCRIPT), "restart"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"usage: {SCRIPT} start|stop|env|load IMAGE..."
