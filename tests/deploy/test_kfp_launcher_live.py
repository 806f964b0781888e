"""A KFP launcher task as a pod on the local cluster, under deploy/kfp-launcher-rbac.yaml.

The pod runs the launcher component's real container command (``sh -ec`` ... ``exec python3 -m
kfp.dsl.executor_main``, built by ``_kfp_launcher.launcher_argv`` as the KFP launcher would)
as the manifest's service account with in-cluster config, and submits its app with the
kubernetes scheduler in plain mode. Any call the Role does not allow fails the launcher (and
the test). What the local cluster lacks, made up the way the cluster would do it:

- the ServiceAccount admission plugin is off, so the account's token secret is mounted at
  ``/var/run/secrets/kubernetes.io/serviceaccount`` by hand (what the plugin does);
- the API server listens on 127.0.0.1 only and there is no kube-proxy, so the launcher pod
  uses the host network and ``KUBERNETES_SERVICE_HOST/PORT`` name that address;
- the launcher runs this checkout's sources (mounted read-only, ``PYTHONPATH``) in the image
  ``torchx-flow/torch:2.13.0`` (scripts/infra/torch-image.sh), which the app's pods run too.

Everything lives in a fresh namespace, deleted afterwards.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml
from _k8s_live import api_client, leftovers, namespace, wait_until

pytestmark = [pytest.mark.k8s, pytest.mark.slow, pytest.mark.timeout(900)]

pytest.importorskip("kfp")

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "deploy" / "kfp-launcher-rbac.yaml"
IMAGE = "torchx-flow/torch:2.13.0"
ACCOUNT = "torchx-launcher"
DATA = "/mnt/torchx"
TRACKER_SECRET = "tracker-creds"


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    api = api_client()
    yield api
    api.close()


def apply_rbac(client: Any, ns: str) -> str:
    """Creates the manifest's objects in ``ns``; returns the account's token secret."""
    from kubernetes import client as k8s
    from kubernetes import utils

    for doc in yaml.safe_load_all(MANIFEST.read_text()):
        doc["metadata"]["namespace"] = ns
        for subject in doc.get("subjects", []):
            subject["namespace"] = ns
        utils.create_from_dict(client, doc, namespace=ns)
    core = k8s.CoreV1Api(client)

    def token_secret() -> str:
        secrets = core.read_namespaced_service_account(ACCOUNT, ns).secrets or []
        return secrets[0].name if secrets else ""

    return str(wait_until("the service account's token", token_secret, timeout=60))


def launcher_pod(name: str, secret: str, values: dict[str, Any]) -> dict[str, Any]:
    """The launcher task's pod: the component's command, the account, its token, host network."""
    from _kfp_launcher import launcher_argv

    from torchx_kfp import launcher_component

    server = urlparse(yaml.safe_load(Path(os.environ["KUBECONFIG"]).read_text())["clusters"][0]["cluster"]["server"])  # fmt: skip
    env = {
        "PYTHONPATH": f"{REPO}/core:{REPO}/adapters",
        "KUBERNETES_SERVICE_HOST": str(server.hostname),
        "KUBERNETES_SERVICE_PORT": str(server.port),
    }
    sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount"
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
                    "image": IMAGE,
                    "imagePullPolicy": "Never",
                    "command": launcher_argv(launcher_component(IMAGE), values, "/tmp/outputs"),
                    "env": [{"name": k, "value": v} for k, v in env.items()],
                    "resources": {"requests": {"cpu": "50m"}},
                    "volumeMounts": [
                        {"name": "src", "mountPath": str(REPO), "readOnly": True},
                        {"name": "token", "mountPath": sa_dir, "readOnly": True},
                    ],
                }
            ],
            "volumes": [
                {"name": "src", "hostPath": {"path": str(REPO)}},
                {"name": "token", "secret": {"secretName": secret}},
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
    cfg = f"namespace={ns},mode=plain,rank0_address=pod_ip,reserved_millicpu=950"
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


def test_launcher_pod_runs_ddp_2x1_under_the_rbac_manifest(client: Any, tmp_path: Path) -> None:
    """In-cluster, as ``torchx-launcher``: submit dist.ddp -j 2x1, stream both replicas, succeed;
    the task's claim (``pvc=``) is mounted in the app's pods, which write the checkpoint there."""
    args = ["-j", "2x1", "--cpu", "1", "--memMB", "1024", "--image", IMAGE, "--name", "train"]
    args += ["--script", "/opt/torchx-flow/examples/train.py", "--", "--steps", "5"]
    args += ["--output-dir", f"{DATA}/out"]
    data = tmp_path / "data"
    data.mkdir()
    with namespace(client, "tx-kfp-rbac") as ns, claim(client, ns, data) as pvc:
        secret = apply_rbac(client, ns)
        values = {**task_values(ns, "dist.ddp", args), "pvc": pvc, "pvc_mount_path": DATA}
        name = start(client, ns, launcher_pod("launcher", secret, values))
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


def _container(ns: str, pod: str) -> str:
    """The Docker id of the launcher pod's container (the kubelet runs pods on this engine)."""
    out = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label=io.kubernetes.pod.namespace={ns}"]
        + ["--filter", f"label=io.kubernetes.pod.name={pod}"]
        + ["--filter", "label=io.kubernetes.container.name=launcher"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return out[0] if len(out) == 1 else ""


@pytest.mark.docker
def test_docker_stop_of_the_launcher_cancels_its_app(client: Any) -> None:
    """SIGTERM to the launcher container's PID 1 (the kubelet's way) cancels the app.

    The launcher's env holds a secret's key (``secrets=``); both replicas print it (waited
    for before the stop): the launcher passed it on to the app.
    """
    from kubernetes import client as k8s

    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    args = ["--image", IMAGE, "--num_replicas", "2", "--cpu", "1", "--memMB", "1024"]
    # PID 1 a shell that ends on SIGTERM (utils.sh's ``sh -c`` execs it; a PID 1 without a
    # handler ignores SIGTERM: the cancelled pods waited out their 30 s grace period)
    script = "trap 'exit 143' TERM; echo \"token=$TX_TOKEN\"; sleep 600 & wait"
    args += ["exec", "sh", "-c", script]
    with namespace(client, "tx-kfp-cancel") as ns:
        secret = apply_rbac(client, ns)
        body = k8s.V1Secret(metadata=k8s.V1ObjectMeta(name=TRACKER_SECRET))
        body.string_data = {"tx_token": "s3cret-value"}
        k8s.CoreV1Api(client).create_namespaced_secret(ns, body)
        values = {**task_values(ns, "utils.sh", args), "secret_env": ["TX_TOKEN"]}
        name = start(client, ns, launcher_pod("launcher", secret, values))
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
        container = wait_until("the launcher's container", lambda: _container(ns, name))
        subprocess.run(["docker", "stop", "-t", "30", container], check=True, capture_output=True)
        code = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.ExitCode}}", container],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        log = pod_log(client, ns, name)
        assert code == "143", f"exit code {code} (137: SIGTERM never reached python)\n{log}"
        assert "task terminated: cancelling TorchX app" in log, log
        desc = sched.describe(app_id)
        assert desc is not None and desc.state.name == "CANCELLED", desc
        app_name = app_id.split(":", 1)[1]
        wait_until(
            "the app's pods to go",
            lambda: "pods" not in leftovers(client, ns, app_name) or time.sleep(1),
            timeout=120,
        )
