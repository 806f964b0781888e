"""The API worker of ``bench_launch.py``, run by each measured interpreter (ours, TorchX 0.7.0).

``python _launch_api.py ROUNDS [NAMESPACE [k8s-only]]`` prints one JSON line of samples (seconds):
``api`` (``get_runner()`` + ``run`` of one ``python -c pass`` replica on local_cwd +
``wait(wait_interval=0.1)``), ``api_first`` (the same, the process's first launch: it pays
the scheduler's lazy imports and finds no warm supervisor), ``bare`` (``Popen`` + ``wait`` of
the same command), ``many`` and ``many_bare`` (the same with 128 replicas and a loop of 128
``Popen``), and with a namespace
``k8s`` (``utils.echo`` on kubernetes in plain mode, run + wait(0.1) in a warm runner; with
``k8s-only``, nothing else: ``bench_launch.py`` times the local rows before the cluster starts). The
first round of each kind warms imports and caches and is not counted. Each timed call starts
``PAUSE`` seconds after the previous one ended, so that the processes the previous one left
ending (a supervisor writing its last state, reaping 128 replicas) or starting (the warm
supervisor a launch leaves for the next) do not land in the next figure.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

IMAGE = "torchx-flow/python:3.11"
REPLICAS = 128
PAUSE = 0.2  # before each timed launch: what the previous one started has settled


def api_worker(rounds: int, k8s: str, local: bool = True) -> None:
    """In the measured interpreter: one-replica launches, 128-replica launches (and k8s ones)."""
    from torchx.runner import get_runner
    from torchx.specs import AppDef, Resource, Role

    def app(n: int) -> AppDef:
        role = Role("r", "", entrypoint=sys.executable, args=["-c", "pass"], num_replicas=n)
        role.resource = Resource(cpu=1, gpu=0, memMB=64)
        return AppDef("bench", [role])

    def launch(n: int) -> float:
        time.sleep(PAUSE)
        start = time.perf_counter()
        with get_runner() as runner:
            status = runner.wait(runner.run(app(n), "local_cwd"), wait_interval=0.1)
            assert status is not None and status.state.name == "SUCCEEDED", status
        return time.perf_counter() - start

    def bare(n: int) -> float:
        time.sleep(PAUSE)
        start = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", "pass"]) for _ in range(n)]
        for proc in procs:
            proc.wait()
        return time.perf_counter() - start

    out: dict[str, list[float]] = {"api": [], "bare": [], "many": [], "many_bare": [], "k8s": []}
    for i in range(rounds + 1 if local else 0):  # the first round warms imports and caches
        found = {"bare": bare(1), "api": launch(1)}
        if i:
            for key, value in found.items():
                out[key].append(value)
        else:  # this process's first launch: no warm spare supervisor waits yet
            out["api_first"] = [found["api"]]
    for i in range(max(rounds // 3, 1) + 1 if local else 0):
        found = {"many_bare": bare(REPLICAS), "many": launch(REPLICAS)}
        if i:
            for key, value in found.items():
                out[key].append(value)
    if k8s:
        cfg = {"mode": "plain", "namespace": k8s, "validate_spec": False}
        with get_runner() as runner:
            for i in range(rounds + 1):
                start = time.perf_counter()
                handle = runner.run_component(
                    "utils.echo", ["--image", IMAGE], "kubernetes", cfg=cfg, workspace=None
                )
                status = runner.wait(handle, wait_interval=0.1)
                assert status is not None and status.state.name == "SUCCEEDED", status
                if i:
                    out["k8s"].append(time.perf_counter() - start)
    print(json.dumps(out))


if __name__ == "__main__":
    api_worker(
        int(sys.argv[1]),
        sys.argv[2] if len(sys.argv) > 2 else "",
        local=sys.argv[3:4] != ["k8s-only"],
    )
