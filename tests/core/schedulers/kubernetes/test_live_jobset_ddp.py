"""``dist.ddp -j 2x2`` trains for real in JobSet mode on the current cluster, rank 0 by DNS.

Two pods, two workers each (world size 4): torchrun's c10d rendezvous is at
``$TORCHX_RANK0_HOST:29500``, which JobSet mode sets to rank 0's name under the JobSet's headless
Service (``<app>-<role>-0-0.<app>``), resolved by CoreDNS. The pods run
``torchx-flow/python:3.11`` with this venv (and its torch) and checkout mounted read-only
(``_k8s_live.mount_tokens``; the image with the venv on ``PATH`` is loaded into the cluster's
containerd for the test) and write the checkpoint to a host directory. The multi-GB torch image
is not needed: the venv's torch is the same 2.13.0.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _k8s_current import loaded_venv_image, module_client
from _k8s_live import docker_env, leftovers, mounts_arg, namespace, wait_until
from _support import run_torchx

from torchx.specs.api import is_terminal

pytestmark = [pytest.mark.k8s, pytest.mark.slow, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    pytest.importorskip("torch")
    yield from module_client()


def test_ddp_2x2_in_jobset_mode_reaches_rank0_by_its_dns_name(client: Any, tmp_path: Path) -> None:
    from kubernetes import client as k8s

    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    out = tmp_path / "out"
    out.mkdir()
    empty = tmp_path / "empty"  # the cwd: an empty workspace leaves the image as it is
    empty.mkdir()
    with namespace(client, "tx-jsddp") as ns, loaded_venv_image() as image:
        opts = f"mode=jobset,namespace={ns},reserved_millicpu=950,image_pull_policy=IfNotPresent"
        run = run_torchx(
            "run", "-s", "kubernetes", "--workspace", "", "-cfg", opts,
            "dist.ddp", "-j", "2x2", "--cpu", "1", "--memMB", "4096", "--image", image,
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

        # rank 0 is named through the JobSet's headless Service, nothing else
        def both_pods() -> list[Any]:
            found = k8s.CoreV1Api(client).list_namespaced_pod(
                ns, label_selector=f"app.kubernetes.io/instance={name}"
            )
            return found.items if len(found.items) == 2 else []

        pods = wait_until("both pods to be created", both_pods, 120)
        envs = [{e.name: e.value for e in p.spec.containers[0].env or []} for p in pods]
        (role,) = {p.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"] for p in pods}
        assert {e.get("TORCHX_RANK0_HOST") for e in envs} == {f"{name}-{role}-0-0.{name}"}

        def ended() -> bool:
            desc = sched.describe(app_id)
            return desc is not None and is_terminal(desc.state)

        # two pods import torch and run torchrun, then four workers do: minutes on a busy machine
        wait_until("the training to finish", ended, timeout=1000)
        status = run_torchx("status", handle).stdout
        logs = run_torchx("log", handle).stdout
        assert "SUCCEEDED" in status, status + logs
        assert (out / app_id / "model.pt").is_file(), logs
        assert "training on 4 workers, 30 steps" in logs, logs
        assert all(f"worker {r}/4 ready" in logs for r in range(4)), logs
        assert run_torchx("delete", handle).returncode == 0
        wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))
    assert os.listdir(out) == [f"{ns}:{name}"]
