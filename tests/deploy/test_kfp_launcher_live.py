"""A KFP launcher task as a pod on the current cluster (1.35), under deploy/kfp-launcher-rbac.yaml.

The pod runs the launcher component's real container command (``sh -ec`` ... ``exec python3 -m
kfp.dsl.executor_main``, built by ``_kfp_launcher.launcher_argv`` as the KFP launcher would)
as the manifest's service account with in-cluster config, and submits its app with the
kubernetes scheduler in plain mode (rank 0 by its DNS name under the app's headless Service,
resolved by CoreDNS). Any call the Role does not allow fails the launcher (and the test).

Real, as on a production cluster: RBAC; the ServiceAccount admission plugin, which mounts the
account's projected, bound token and the cluster's CA (``kube-root-ca.crt``) at
``/var/run/secrets/kubernetes.io/serviceaccount``; the in-cluster client verifying the API
server's certificate against that CA; CoreDNS; the kubelet's SIGTERM to the container's PID 1
(sent here through the cluster's containerd, the call the kubelet's StopContainer makes).

Made up for this one-node cluster:

- the ``kubernetes`` Service has no endpoints and the API server listens on 127.0.0.1 only, so
  the launcher pod uses the host network and ``KUBERNETES_SERVICE_HOST/PORT`` name that address
  (its certificate names 127.0.0.1 too);
- the launcher and the app's pods run ``torchx-flow/python:3.11`` with this venv first on
  ``PATH`` (loaded into the cluster's containerd for the module), the checkout, the venv and
  its base interpreter mounted read-only at their host paths (``_k8s_live.mount_tokens``),
  instead of an image with torchx-flow and torch installed; the DDP app runs the checkout's
  ``examples/train.py``;
- the claim is bound to a hostPath volume (one node), made by the test.

Everything lives in a fresh namespace, deleted afterwards.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml
from _k8s_current import ctr, loaded_venv_image, module_client
from _k8s_live import bind_mounts, leftovers, mounts_arg, namespace, wait_until

pytestmark = [pytest.mark.k8s, pytest.mark.slow, pytest.mark.timeout(900)]

pytest.importorskip("kfp")

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "deploy" / "kfp-launcher-rbac.yaml"
ACCOUNT = "torchx-launcher"
DATA = "/mnt/torchx"
TRACKER_SECRET = "tracker-creds"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    yield from module_client()


@pytest.fixture(scope="module")
def image(client: Any) -> Iterator[str]:
    """The venv image in the cluster's containerd, for the launcher and the app's pods."""
    with loaded_venv_image() as tag:
        yield tag


def apply_rbac(client: Any, ns: str) -> None:
    """Creates the manifest's objects in ``ns``.

    No token Secret: since 1.24 the ServiceAccount admission plugin projects a bound token
    into each pod that names the account.
    """
    from kubernetes import utils

    for doc in yaml.safe_load_all(MANIFEST.read_text()):
        doc["metadata"]["namespace"] = ns
        for subject in doc.get("subjects", []):
            subject["namespace"] = ns
        utils.create_from_dict(client, doc, namespace=ns)


def launcher_pod(name: str, image: str, values: dict[str, Any]) -> dict[str, Any]:
    """The launcher task's pod: the component's command, the account, host network."""
    from _kfp_launcher import launcher_argv

    from torchx_kfp import launcher_component

    server = urlparse(yaml.safe_load(Path(os.environ["KUBECONFIG"]).read_text())["clusters"][0]["cluster"]["server"])  # fmt: skip
    env = {
        "KUBERNETES_SERVICE_HOST": str(server.hostname),
        "KUBERNETES_SERVICE_PORT": str(server.port),
    }
    mounts = bind_mounts()
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "serviceAccountName": ACCOUNT,
            "restartPolicy": "Never",
            "hostNetwork": True,
            "containers": [
                {
                    "name": "launcher",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": launcher_argv(launcher_component(image), values, "/tmp/outputs"),
                    "env": [{"name": k, "value": v} for k, v in env.items()],
                    "resources": {"requests": {"cpu": "50m"}},
                    "volumeMounts": [
                        {"name": f"host{i}", "mountPath": m.dst_path, "readOnly": True}
                        for i, m in enumerate(mounts)
                    ],
                }
            ],
            "volumes": [
                {"name": f"host{i}", "hostPath": {"path": m.src_path}} for i, m in enumerate(mounts)
            ],
        },
    }
    for var in values.get("secret_env", []):  # what use_secret_as_env puts in the task's pod
        ref = {"secretKeyRef": {"name": TRACKER_SECRET, "key": var.lower()}}
        pod["spec"]["containers"][0]["env"].append({"name": var, "valueFrom": ref})
    if values.get("pvc"):  # what kfp-kubernetes' mount_pvc puts in the task's pod
        pod["spec"]["volumes"].append(
            {"name": "data", "persistentVolumeClaim": {"claimName": values["pvc"]}}
        )
        pod["spec"]["containers"][0]["volumeMounts"].append(
            {"name": "data", "mountPath": values["pvc_mount_path"]}
        )
    return pod


def task_values(ns: str, component: str, args: list[str]) -> dict[str, Any]:
    """The launcher task's inputs: ``component args`` on kubernetes, plain mode, in ``ns``."""
    cfg = f"namespace={ns},mode=plain,rank0_address=dns,reserved_millicpu=950"
    return {
        "component": component,
        "args": args,
        "app": "",
        "overrides": {},
        "params": {},
        "env": {},
        "scheduler": "kubernetes",
        "scheduler_cfg": cfg,
    }


def pod_log(client: Any, ns: str, name: str) -> str:
    from kubernetes import client as k8s

    return str(k8s.CoreV1Api(client).read_namespaced_pod_log(name, ns))


def phase(client: Any, ns: str, name: str) -> str:
    from kubernetes import client as k8s

    return str(k8s.CoreV1Api(client).read_namespaced_pod(name, ns).status.phase)


def start(client: Any, ns: str, pod: dict[str, Any]) -> str:
    from kubernetes import utils

    utils.create_from_dict(client, pod, namespace=ns)
    return str(pod["metadata"]["name"])


@contextmanager
def claim(client: Any, ns: str, host_dir: Path) -> Iterator[str]:
    """A ReadWriteMany claim in ``ns`` bound to a hostPath volume on ``host_dir`` (one node)."""
    from kubernetes import client as k8s
    from kubernetes import utils

    volume = f"{ns}-data"
    host_dir.chmod(0o777)
    utils.create_from_dict(
        client,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": volume},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "hostPath": {"path": str(host_dir)},
            },
        },
    )
    try:
        pvc = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": volume,
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        utils.create_from_dict(client, pvc, namespace=ns)
        yield "data"
    finally:
        k8s.CoreV1Api(client).delete_persistent_volume(volume)


def test_launcher_pod_runs_ddp_2x1_under_the_rbac_manifest(
    client: Any, image: str, tmp_path: Path
) -> None:
    """In-cluster, as ``torchx-launcher``: submit dist.ddp -j 2x1, stream both replicas, succeed;
    the task's claim (``pvc=``) is mounted in the app's pods, which write the checkpoint there."""
    from kubernetes import client as k8s

    args = ["-j", "2x1", "--cpu", "1", "--memMB", "1024", "--image", image, "--name", "train"]
    args += ["--mounts", mounts_arg(), "--script", str(REPO / "examples" / "train.py")]
    args += ["--", "--steps", "5", "--output-dir", f"{DATA}/out"]
    data = tmp_path / "data"
    data.mkdir()
    with namespace(client, "tx-kfp-rbac") as ns, claim(client, ns, data) as pvc:
        apply_rbac(client, ns)
        values = {**task_values(ns, "dist.ddp", args), "pvc": pvc, "pvc_mount_path": DATA}
        name = start(client, ns, launcher_pod("launcher", image, values))
        # the admission plugin gave the pod the account's token (a projected volume, not ours)
        admitted = k8s.CoreV1Api(client).read_namespaced_pod(name, ns).spec
        tokens = [v.name for v in admitted.volumes if v.projected is not None]
        mounted = {m.mount_path for m in admitted.containers[0].volume_mounts}
        assert tokens and SA_DIR in mounted, admitted
        ended = wait_until(
            "the launcher pod to end",
            lambda: phase(client, ns, name) in ("Succeeded", "Failed") and phase(client, ns, name),
            timeout=840,
        )
        log = pod_log(client, ns, name)
        assert ended == "Succeeded", log[-3000:]
        assert "launched TorchX app kubernetes://" in log, log
        # both pods took part, each line prefixed by its pod; c10d hands out the ranks in the
        # order the pods join, so either pod may be rank 0
        ready = set(re.findall(r"\[train/(\d)\] \[0\]:worker (\d)/2 ready", log))
        assert {pod for pod, _ in ready} == {"0", "1"}, log
        assert {rank for _, rank in ready} == {"0", "1"}, log
        assert "training on 2 workers, 5 steps" in log, log
        assert "SUCCEEDED" in log, log
        app_name = log.split("launched TorchX app ", 1)[1].split()[0].rsplit(":", 1)[1]
        assert list((data / "out").glob(f"*{app_name}/model.pt")), log  # via the claim
        # rank 1 named rank 0 by its DNS name under the app's headless Service (CoreDNS)
        found = k8s.CoreV1Api(client).list_namespaced_pod(
            ns, label_selector=f"app.kubernetes.io/instance={app_name}"
        )
        envs = [{e.name: e.value for e in p.spec.containers[0].env or []} for p in found.items]
        hosts = {e.get("TORCHX_RANK0_HOST", "") for e in envs} - {"localhost"}
        assert len(hosts) == 1 and hosts.pop().endswith(f".{app_name}.{ns}.svc"), envs


def _container(client: Any, ns: str, pod: str) -> str:
    """The containerd id of the launcher pod's running container, else ``""``."""
    from kubernetes import client as k8s

    status = k8s.CoreV1Api(client).read_namespaced_pod(pod, ns).status
    found = [s for s in status.container_statuses or [] if s.name == "launcher"]
    if not found or found[0].state.running is None or not found[0].container_id:
        return ""
    runtime, _, cid = found[0].container_id.partition("://")
    assert runtime == "containerd", found[0].container_id
    return cid


def _sigterm(container: str) -> None:
    """SIGTERM to ``container``'s PID 1 through the cluster's containerd: what the kubelet's
    StopContainer (CRI) asks containerd to do first."""
    ctr("tasks", "kill", "--signal", "SIGTERM", container, check=True)


def _exit_code(client: Any, ns: str, pod: str) -> int | None:
    """The launcher container's exit code once it has ended, else ``None``."""
    from kubernetes import client as k8s

    status = k8s.CoreV1Api(client).read_namespaced_pod(pod, ns).status
    found = [s for s in status.container_statuses or [] if s.name == "launcher"]
    ended = found[0].state.terminated if found else None
    return None if ended is None else int(ended.exit_code)


def test_sigterm_to_the_launcher_cancels_its_app(client: Any, image: str) -> None:
    """SIGTERM to the launcher container's PID 1 (the kubelet's way) cancels the app.

    The launcher's env holds a secret's key (``secrets=``); both replicas print it (waited
    for before the signal): the launcher passed it on to the app.
    """
    from kubernetes import client as k8s

    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    args = ["--image", image, "--num_replicas", "2", "--cpu", "1", "--memMB", "1024"]
    # PID 1 a shell that ends on SIGTERM (utils.sh's ``sh -c`` execs it; a PID 1 without a
    # handler ignores SIGTERM: the cancelled pods waited out their 30 s grace period)
    script = "trap 'exit 143' TERM; echo \"token=$TX_TOKEN\"; sleep 600 & wait"
    args += ["exec", "sh", "-c", script]
    with namespace(client, "tx-kfp-cancel") as ns:
        apply_rbac(client, ns)
        body = k8s.V1Secret(metadata=k8s.V1ObjectMeta(name=TRACKER_SECRET))
        body.string_data = {"tx_token": "s3cret-value"}
        k8s.CoreV1Api(client).create_namespaced_secret(ns, body)
        values = {**task_values(ns, "utils.sh", args), "secret_env": ["TX_TOKEN"]}
        name = start(client, ns, launcher_pod("launcher", image, values))
        sched = create_scheduler("test", client=client)

        def running_app() -> str:
            log = pod_log(client, ns, name) if phase(client, ns, name) != "Pending" else ""
            lines = [x for x in log.splitlines() if x.startswith("launched TorchX app ")]
            # both replicas run (and have printed the secret's value, streamed by the launcher)
            tokens = all(f"[sh/{i}] token=s3cret-value" in log for i in (0, 1))
            if not lines or not tokens:
                return ""
            app_id = lines[0].split()[-1].rsplit("/", 1)[-1]
            desc = sched.describe(app_id)
            return app_id if desc is not None and desc.state.name == "RUNNING" else ""

        app_id = wait_until("the app to run", running_app, timeout=600)
        _sigterm(wait_until("the launcher's container", lambda: _container(client, ns, name)))
        # restartPolicy Never: the pod ends, the kubelet keeps the container's exit code and log
        ended = wait_until(
            "the launcher pod to end",
            lambda: phase(client, ns, name) in ("Succeeded", "Failed") and phase(client, ns, name),
            timeout=120,
        )
        code = _exit_code(client, ns, name)
        log = pod_log(client, ns, name)
        assert code == 143, f"exit code {code} (137: SIGTERM never reached python)\n{log}"
        assert ended == "Failed", log
        assert "task terminated: cancelling TorchX app" in log, log
        desc = sched.describe(app_id)
        assert desc is not None and desc.state.name == "CANCELLED", desc
        app_name = app_id.split(":", 1)[1]
        wait_until(
            "the app's pods to go",
            lambda: "pods" not in leftovers(client, ns, app_name) or time.sleep(1),
            timeout=120,
        )
