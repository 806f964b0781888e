"""``torchx.runner.labels.placement``: where a scheduler's apps live, for re-attach decisions."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from torchx.runner.labels import placement


@pytest.fixture
def runner() -> Iterator[Any]:
    from torchx.runner import get_runner

    with get_runner() as r:
        yield r


def test_local_cwd_placement_is_the_host_name_and_boot_id_without_pid_namespace(
    runner: Any,
) -> None:
    where = placement(runner, "local_cwd")
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot_id = f.read().strip()
    assert re.fullmatch(r"[0-9a-f-]{36}", boot_id)
    assert where == f"host:{socket.gethostname()}/{boot_id}"
    # the PID namespace (what a container restart changes) is no part of it
    pid_ns = os.readlink("/proc/self/ns/pid")  # e.g. pid:[4026531836]
    assert re.search(r"\d+", pid_ns).group(0) not in where  # type: ignore[union-attr]
    assert placement(runner, "local_cwd", {"detach": True}) == where


def test_local_cwd_placement_is_the_same_from_another_process(runner: Any) -> None:
    # a fresh process (as a restarted worker would be) computes the same placement
    code = (
        "from torchx.runner import get_runner; from torchx.runner.labels import placement;"
        " r = get_runner(); print(placement(r, 'local_cwd')); r.close()"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == placement(runner, "local_cwd")


def test_cluster_schedulers_are_reachable_from_anywhere(runner: Any) -> None:
    assert placement(runner, "slurm") == ""


def test_importing_labels_imports_no_backend_sdk() -> None:
    code = (
        "import sys, torchx.runner.labels;"
        " print(sorted(m for m in ('docker', 'kubernetes') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.docker
def test_local_docker_placement_is_the_engine_id(runner: Any) -> None:
    import docker

    client = docker.from_env()
    try:
        engine_id = client.info()["ID"]
    finally:
        client.close()
    assert engine_id
    assert placement(runner, "local_docker") == f"docker:{engine_id}"
