"""A 2-pod ``dist.ddp -j 2x1`` run of ``examples/train.py`` trains for real on the current cluster
(1.35), in plain mode.

Rank 1 reaches rank 0's c10d store by rank 0's DNS name under the app's headless Service (the
default ``rank0_address``, resolved by CoreDNS; JobSet mode: test_live_jobset_ddp.py). The pods
run ``torchx-flow/python:3.11`` with this venv (and its torch) and checkout mounted read-only
(the image with the venv on ``PATH`` is loaded into the cluster's containerd for the test) and
write the checkpoint to a host directory.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _k8s_current import loaded_venv_image, module_client
from _k8s_live import docker_env, leftovers, mounts_arg, namespace, wait_until
from _support import run_torchx

from torchx.schedulers.kubernetes_scheduler import create_scheduler
from torchx.specs.api import is_terminal

pytestmark = [pytest.mark.k8s, pytest.mark.slow, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    pytest.importorskip("torch")
    yield from module_client()


def test_ddp_2x1_trains_across_two_pods(client: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    empty = tmp_path / "empty"  # the cwd: an empty workspace leaves the image as it is
    empty.mkdir()
    with namespace(client, "tx-ddp") as ns, loaded_venv_image() as image:
        opts = f"mode=plain,namespace={ns},reserved_millicpu=950"
        run = run_torchx(
            "run", "-s", "kubernetes", "--workspace", "", "-cfg", opts,
            "dist.ddp", "-j", "2x1", "--cpu", "1", "--image", image,
            "--mounts", mounts_arg("type=bind", f"src={out}", f"dst={out}"),
            "--script", str(REPO / "examples" / "train.py"),
            "--", "--steps", "30", "--output-dir", str(out),
            env={"DOCKER_HOST": docker_env()["DOCKER_HOST"]}, cwd=empty,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        handle = run.stdout.strip().splitlines()[-1]
        app_id = handle.rsplit("/", 1)[-1]
        name = app_id.split(":", 1)[1]

        sched = create_scheduler("test", client=client)

        # rank 1 names rank 0 through the app's headless Service: a DNS name, not a pod IP
        def rank0_hosts() -> set[str]:
            from kubernetes import client as k8s

            found = k8s.CoreV1Api(client).list_namespaced_pod(
                ns, label_selector=f"app.kubernetes.io/instance={name}"
            )
            if len(found.items) != 2:
                return set()
            envs = [{e.name: e.value for e in p.spec.containers[0].env or []} for p in found.items]
            return {e.get("TORCHX_RANK0_HOST", "") for e in envs}

        hosts = wait_until("both pods to be created", rank0_hosts, 120)
        (peer_view,) = hosts - {"localhost"}  # rank 0 itself listens on localhost
        assert peer_view.endswith(f".{name}.{ns}.svc"), hosts

        def ended() -> bool:
            desc = sched.describe(app_id)
            time.sleep(1)  # the pods need the machine's CPUs more than this loop
            return desc is not None and is_terminal(desc.state)

        # two pods import torch and run torchrun, then two workers do: minutes on a busy machine
        wait_until("the training to finish", ended, timeout=840)
        status = run_torchx("status", handle).stdout
        logs = run_torchx("log", handle).stdout
        assert "SUCCEEDED" in status, status + logs
        # both pods took part: two nodes, one rank each (world size 2)
        # train.py names its output after TORCHX_JOB_ID: the app's handle
        assert (out / app_id / "model.pt").is_file(), logs
        assert "training on 2 workers, 30 steps" in logs, logs
        assert "worker 1/2 ready" in logs, logs
        assert run_torchx("delete", handle).returncode == 0
        wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))
    assert os.listdir(out) == [f"{ns}:{name}"]
