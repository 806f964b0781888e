"""Benchmarks of the KFP adapter (numbers only; nothing here asserts a speed).

1. Compile time of a 50-step pipeline whose steps come from AppDefs (``container_from_app``)
   vs the same 50 steps written as hand-made ``@dsl.container_component``s with the same
   image, command, args and resources (goal: AppDefs <= 1.2x hand-made). Also shown: steps
   from a component name (``utils.echo``), which probes the component's parameters.
2. Time per step of a one-step pipeline (``container_from_app`` vs a hand-made container
   component doing the same echo) under kfp.local's DockerRunner and under the tests'
   backend-rules runner (``tests/_kfp_backend_run.py``: the KFP backend's placeholder rules,
   one container per task); skipped without a Docker engine.

    python bench/bench_kfp.py [--steps 50] [--repeat 5] [--local-runs 3] [--no-docker]

``--no-docker`` runs part 1 only.
"""

# no `from __future__ import annotations`: KFP reads the pipeline functions' annotations
import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tabulate import tabulate

IMAGE = "torchx-flow/busybox:latest"


def app(i: int) -> Any:
    import torchx.specs as specs

    return specs.AppDef(
        name=f"step{i}",
        roles=[
            specs.Role(
                name=f"step{i}",
                image=IMAGE,
                entrypoint="echo",
                args=["step", str(i)],
                env={"STEP": str(i)},
                resource=specs.Resource(cpu=1, gpu=0, memMB=512),
            )
        ],
    )


def hand_made(i: int) -> Any:
    from kfp import dsl

    def step() -> dsl.ContainerSpec:
        return dsl.ContainerSpec(image=IMAGE, command=["echo"], args=["step", str(i)])

    step.__name__ = f"step{i}"
    return dsl.container_component(step)


def hand_made_equivalent(i: int) -> Any:
    """A hand-made component with what container_from_app adds: run-id inputs and outputs,
    parent input, written the way the KFP backend resolves them (no Concat)."""
    from kfp import dsl

    from torchx_kfp._compile.spec import WRAPPER

    def step(  # type: ignore[no-untyped-def]
        parent_run_id: str,
        pipeline_job_uuid: str,
        pipeline_task_name: str,
        pipeline_task_uuid: str,
        app_id: dsl.OutputPath(str),  # type: ignore[valid-type]
        tracker_run_id: dsl.OutputPath(str),  # type: ignore[valid-type]
    ):
        job = f"TORCHX_JOB_ID=kfp://{pipeline_job_uuid}/{pipeline_task_name}-{pipeline_task_uuid}"
        parent = f"TORCHX_PARENT_RUN_ID={parent_run_id}"
        return dsl.ContainerSpec(
            image=IMAGE,
            command=["sh", "-c", WRAPPER, "torchx-kfp", app_id, tracker_run_id, job, parent, "--"]
            + ["echo"],
            args=["step", str(i)],
        )

    step.__name__ = f"step{i}"
    return dsl.container_component(step)


def hand_task_equivalent(i: int) -> Any:
    from kfp import dsl, kubernetes

    task = hand_made_equivalent(i)(
        parent_run_id="",
        pipeline_job_uuid=dsl.PIPELINE_JOB_ID_PLACEHOLDER,
        pipeline_task_name=dsl.PIPELINE_TASK_NAME_PLACEHOLDER,
        pipeline_task_uuid=dsl.PIPELINE_TASK_ID_PLACEHOLDER,
    )
    task.set_cpu_request("1000m").set_cpu_limit("1000m")
    task.set_memory_request("512M").set_memory_limit("512M")
    task.set_env_variable("STEP", str(i))
    task.set_caching_options(False)
    kubernetes.empty_dir_mount(task, volume_name="dshm", mount_path="/dev/shm", medium="Memory")
    return task


def pipeline_of(make_task: Callable[[int], Any], steps: int) -> Any:
    from kfp import dsl

    @dsl.pipeline(name="bench")
    def bench() -> None:
        previous = None
        for i in range(steps):
            task = make_task(i)
            if previous is not None:
                task.after(previous)
            previous = task

    return bench


def hand_task(i: int) -> Any:
    task = hand_made(i)()
    task.set_cpu_request("1000m").set_cpu_limit("1000m")
    task.set_memory_request("512M").set_memory_limit("512M")
    task.set_env_variable("STEP", str(i))
    task.set_caching_options(False)
    return task


def appdef_task(i: int) -> Any:
    from torchx_kfp import container_from_app

    return container_from_app(app(i))


def component_task(i: int) -> Any:
    from torchx_kfp import container_from_app

    return container_from_app("utils.echo", image=IMAGE, msg=f"step {i}")


def time_compile(make_task: Callable[[int], Any], steps: int, repeat: int) -> tuple[float, float]:
    """Median seconds of a whole compile and of building the pipeline alone (no YAML)."""
    from kfp import compiler

    times, builds = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            start = time.perf_counter()
            compiler.Compiler().compile(pipeline_of(make_task, steps), f"{tmp}/p.yaml")
            times.append(time.perf_counter() - start)
            start = time.perf_counter()
            pipeline_of(make_task, steps)  # tasks and the pipeline spec, before KFP's YAML
            builds.append(time.perf_counter() - start)
    return statistics.median(times), statistics.median(builds)


def bench_compile(steps: int, repeat: int) -> None:
    time_compile(hand_task, 2, 1)  # warm imports
    time_compile(appdef_task, 2, 1)
    hand, hand_build = time_compile(hand_task_equivalent, steps, repeat)
    rows = [
        [
            "hand-made, same features (run-id outputs, /dev/shm)",
            f"{hand * 1000:.0f}",
            f"{hand_build * 1000:.0f}",
            "1.00x",
        ]
    ]
    for label, fn in (
        ("hand-made, minimal (image, command, args, env, resources)", hand_task),
        ("container_from_app(AppDef)", appdef_task),
        ("container_from_app('utils.echo')", component_task),
    ):
        t, build = time_compile(fn, steps, repeat)
        rows.append([label, f"{t * 1000:.0f}", f"{build * 1000:.0f}", f"{t / hand:.2f}x"])
    print(f"\nCompile time of a {steps}-step pipeline (median of {repeat})")
    print("(the rest of a compile: KFP writing the spec as YAML, PyYAML's pure-Python emitter)")
    print(tabulate(rows, headers=["steps from", "ms", "ms before YAML", "vs hand-made"]))


def docker_host() -> str:
    host = os.environ.get("DOCKER_HOST") or (
        f"unix://{Path.home()}/.cache/torchx-flow/run/docker/docker.sock"
    )
    try:
        import docker

        client = docker.DockerClient(base_url=host, timeout=3)
        client.ping()
        client.close()
    except Exception as e:  # no engine: the section is skipped
        print(f"\nkfp.local per step: skipped (no Docker engine at {host}: {type(e).__name__})")
        return ""
    return host


def bench_local(runs: int) -> None:
    from kfp import dsl, local

    from torchx_kfp import container_from_app
    from torchx_kfp.local import venv_docker_runner

    host = docker_host()
    if not host:
        return
    os.environ["DOCKER_HOST"] = host

    @dsl.pipeline(name="one-hand")
    def one_hand() -> None:
        hand_made(0)()

    @dsl.pipeline(name="one-torchx")
    def one_torchx() -> None:
        container_from_app(app(0))

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        local.init(runner=venv_docker_runner(), pipeline_root=f"{tmp}/root")
        for label, pipe in (("hand-made component", one_hand), ("container_from_app", one_torchx)):
            pipe()  # warm
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                pipe()
                times.append(time.perf_counter() - start)
            rules = backend_rules_seconds(pipe, runs, Path(tmp), host)
            rows.append([label, f"{statistics.median(times):.2f}", f"{rules:.2f}"])
    print(f"\nOne step (median of {runs}), seconds")
    print(tabulate(rows, headers=["step", "kfp.local DockerRunner", "backend-rules runner"]))


def backend_rules_seconds(pipe: Any, runs: int, tmp: Path, host: str) -> float:
    """Median seconds of the pipeline under tests/_kfp_backend_run.py (compile excluded)."""
    import docker
    import yaml
    from kfp import compiler

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from _kfp_backend_run import BackendRun

    compiler.Compiler().compile(pipe, str(tmp / "rules.yaml"))
    ir = next(yaml.safe_load_all((tmp / "rules.yaml").read_text()))
    client = docker.DockerClient(base_url=host)
    times = []
    try:
        for k in range(runs + 1):  # the first run warms up
            start = time.perf_counter()
            BackendRun(ir, client, tmp / f"rules{k}").run({})
            times.append(time.perf_counter() - start)
    finally:
        client.close()
    return statistics.median(times[1:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--local-runs", type=int, default=3)
    parser.add_argument("--no-docker", action="store_true", help="compile time only")
    args = parser.parse_args()
    import contextlib
    import io

    bench_compile(args.steps, args.repeat)
    if args.no_docker:
        return 0
    import logging
    import warnings

    warnings.simplefilter("ignore")  # kfp.local: "resources have no effect locally"
    logging.disable(logging.INFO)  # kfp.local's per-task log lines
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bench_local(args.local_runs)
    keep = [line for line in out.getvalue().splitlines() if line and not line.startswith(" ")]
    print("\n".join(line for line in keep if "image" not in line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
