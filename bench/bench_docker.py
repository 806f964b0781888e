"""Benchmarks for local_docker; prints a table. Needs a Docker engine (scripts/infra/up.sh).

Targets are measured here, never asserted in tests.

Run with ``make bench`` (under scripts/infra/with-infra.sh) or ``.venv/bin/python
bench/bench_docker.py`` with DOCKER_HOST set. Rows:

* N = 1 and 16 replicas of ``true`` in the busybox image, submit to SUCCEEDED through
  ``DockerScheduler`` (submit, then ``describe``/``wait_for_change`` like ``Runner.wait``), next to
  a plain docker SDK loop that starts the same containers on its own network and waits for each
  (target: <= 1.2x); both include removing the containers and the network;
* image-workspace build of a small project (20 files) on top of the busybox image: first build
  (new content) and a second build of the same content (the engine's layer cache);
* cancel of a running replica that ignores SIGTERM (grace period 1 s): from ``cancel`` to its
  return with the app CANCELLED (SIGTERM, the grace period, then SIGKILL; target: < 30 s).

Every container, network and image created here is removed afterwards.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from tabulate import tabulate

BUSYBOX = "torchx-flow/busybox:latest"
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
LABEL = "torchx-flow.bench"


def timed(fn: Callable[[], object], repeat: int = REPEAT) -> float:
    """Median wall time of ``fn`` in seconds over ``repeat`` runs (after one warm-up)."""
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _scheduler_run(n: int) -> Callable[[], object]:
    from torchx.schedulers.docker_scheduler import create_scheduler
    from torchx.specs.api import AppDef, Resource, Role, is_terminal

    sched = create_scheduler("bench", grace_period=1)
    role = Role("r", BUSYBOX, entrypoint="true", num_replicas=n, resource=Resource(1, 0, 64))

    def run() -> object:
        app_id = sched.submit(AppDef("bench", roles=[role]), {})
        try:
            while not is_terminal((desc := sched.describe(app_id)) and desc.state):
                sched.wait_for_change(app_id, 10)
            assert desc is not None and desc.state.name == "SUCCEEDED", desc
        finally:
            sched.delete(app_id)
        return None

    return run


def _sdk_loop(n: int) -> Callable[[], object]:
    import docker

    client = docker.from_env()

    def run() -> object:
        tag = uuid.uuid4().hex[:12]
        net = client.networks.create(f"bench-{tag}", driver="bridge", labels={LABEL: tag})
        containers = []
        try:
            for i in range(n):
                containers.append(
                    client.containers.run(
                        BUSYBOX,
                        ["true"],
                        name=f"bench-{tag}-{i}",
                        hostname=f"bench-{tag}-{i}",
                        network=net.name,
                        labels={LABEL: tag},
                        nano_cpus=10**9,
                        mem_limit="64m",
                        detach=True,
                    )
                )
            for c in containers:
                assert c.wait()["StatusCode"] == 0
        finally:
            for c in containers:
                c.remove(force=True)
            net.remove()
        return None

    return run


def bench_replicas(rows: list[list[object]]) -> None:
    for n in (1, 16):
        ours = timed(_scheduler_run(n))
        plain = timed(_sdk_loop(n))
        rows.append(
            [f"{n} replica(s) to SUCCEEDED", f"{ours:.2f} s", f"{plain:.2f} s",
             f"{ours / plain:.2f}x", "<= 1.2x"]
        )  # fmt: skip


def bench_workspace(rows: list[list[object]]) -> None:
    from torchx.specs.api import Role, Workspace
    from torchx.workspace.docker_workspace import DockerWorkspaceMixin

    class Builder(DockerWorkspaceMixin):
        pass

    builder = Builder()
    built: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        for i in range(20):
            (project / f"mod_{i}.py").write_text(f"X = {i!r}  # {uuid.uuid4().hex}\n" * 50)

        def build() -> float:
            role = Role("r", BUSYBOX, workspace=Workspace({str(project): ""}))
            start = time.perf_counter()
            builder.build_workspaces([role], {"quiet": True})
            built.add(role.image)
            return time.perf_counter() - start

        try:
            first = build()
            cached = statistics.median(build() for _ in range(REPEAT))
        finally:
            engine = builder._workspace_engine()
            for image in built:
                engine.remove_image(image)
    rows.append(["workspace build, 20 files: first", f"{first:.2f} s", "", "", ""])
    rows.append(["workspace build, 20 files: cached", f"{cached:.2f} s", "", "", ""])


def _cancel_stubborn() -> float:
    """Seconds ``cancel`` takes on a running replica that ignores SIGTERM (grace period 1 s)."""
    from torchx.schedulers.docker_scheduler import create_scheduler
    from torchx.specs.api import AppDef, AppState, Resource, Role

    sched = create_scheduler("bench", grace_period=1)
    script = "trap 'echo term' TERM; while true; do sleep 0.2; done"
    role = Role("t", BUSYBOX, entrypoint="sh", args=["-c", script], resource=Resource(1, 0, 64))
    app_id = sched.submit(AppDef("stubborn", roles=[role]), {})
    try:
        while (desc := sched.describe(app_id)) is None or desc.state != AppState.RUNNING:
            sched.wait_for_change(app_id, 1)
        start = time.perf_counter()
        sched.cancel(app_id)
        took = time.perf_counter() - start
        desc = sched.describe(app_id)
        assert desc is not None and desc.state == AppState.CANCELLED, desc
        return took
    finally:
        sched.delete(app_id)


def bench_cancel(rows: list[list[object]]) -> None:
    took = statistics.median(_cancel_stubborn() for _ in range(REPEAT))
    rows.append(["cancel, replica ignoring SIGTERM (grace 1 s)", f"{took:.2f} s", "", "", "< 30 s"])


def main() -> int:
    try:
        import docker

        docker.from_env(timeout=5).ping()
    except Exception as e:  # no SDK or no engine: say so and skip
        print(f"bench_docker: skipped, no Docker engine ({type(e).__name__}: {e})")
        return 0
    rows: list[list[object]] = []
    bench_replicas(rows)
    bench_workspace(rows)
    bench_cancel(rows)
    print(tabulate(rows, headers=["local_docker", "torchx", "docker SDK loop", "ratio", "target"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
