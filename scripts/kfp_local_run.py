"""Compiles pipelines/torchx_training.py to KFP IR YAML and runs the compiled file with kfp.local.

Container steps run under kfp.local's DockerRunner when a Docker engine is reachable
(DOCKER_HOST; this venv is mounted into torchx-flow/torch:2.13.0); otherwise the launcher
twin (pipelines/torchx_training_launcher.py) runs under the SubprocessRunner on local_cwd.
kfp.local's executor output goes to ``<workdir>/kfp-local.log`` (its path is printed); the
terminal gets one line per task and a summary line (and the end of the log if the run failed).
Usage: python scripts/kfp_local_run.py [--steps N] [--workdir DIR]
"""

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from _kfp_log import output_to, summary_lines, task_names

REPO = Path(__file__).resolve().parents[1]


def compile_pipeline(name: str, out_dir: Path) -> Path:
    """Compiles ``pipelines/<name>.py`` to ``<out_dir>/<name>.yaml`` and returns the path."""
    from kfp import compiler

    spec = importlib.util.spec_from_file_location(name, REPO / "pipelines" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = out_dir / f"{name}.yaml"
    compiler.Compiler().compile(getattr(module, name), str(path))
    print(f"== compiled pipelines/{name}.py -> {path}", flush=True)
    return path


def docker_reachable() -> str:
    """Returns "" when DOCKER_HOST serves torchx-flow/torch:2.13.0, else why not."""
    host = os.environ.get("DOCKER_HOST", "")
    if not host:
        return "DOCKER_HOST is not set"
    try:
        import docker

        client = docker.DockerClient(base_url=host, timeout=3)
        client.ping()
        client.images.get("torchx-flow/torch:2.13.0")
        client.close()
    except Exception as e:  # any failure: no usable engine
        return f"{type(e).__name__}: {e}"
    return ""


def main() -> int:
    """Compiles, runs and prints the summary line; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--workdir", default="")
    args = parser.parse_args()
    from kfp import components, local

    from torchx_kfp.local import venv_docker_runner

    work = Path(args.workdir or tempfile.mkdtemp(prefix="torchx-kfp-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    why = docker_reachable()
    name = "torchx_training" if not why else "torchx_training_launcher"
    compiled = components.load_component_from_file(str(compile_pipeline(name, work)))
    run_args = dict(examples=str(REPO / "examples"), tracker_dir=str(work / "run" / "tracker"))
    (work / "run" / "tracker").mkdir(parents=True, exist_ok=True)
    if why:
        print(f"== no Docker engine ({why}): running the launcher pipeline on local_cwd")
        local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(work / "root"))
        run_args.update(steps=str(args.steps), scheduler="local_cwd", workdir=str(work / "run"))
        mode = "SubprocessRunner, launcher steps on local_cwd"
    else:
        runner = venv_docker_runner(read_only=[str(REPO)], read_write=[str(work)])
        local.init(runner=runner, pipeline_root=str(work / "root"))
        run_args.update(steps=args.steps)
        mode = "DockerRunner, container steps in torchx-flow/torch:2.13.0, data as artifacts"
    log = work / "kfp-local.log"
    print(f"== kfp.local run ({mode}); its full log: {log}", flush=True)
    start = time.monotonic()
    error = None
    with output_to(log):
        try:
            compiled(**run_args)
        except Exception as e:  # kfp.local raises when a task fails: reported below
            error = e
    took = time.monotonic() - start
    print("\n".join(summary_lines(log, error is not None, task_names(compiled))), flush=True)
    if error is not None:
        print(f"kfp-local-run: {name} FAILED in {took:.1f} s ({mode}): {error}; log: {log}")
        return 1
    metrics_files = [work / "run" / "metrics.json", *(work / "root").glob("*/evaluate/metrics")]
    metrics = json.loads(next(p for p in metrics_files if p.is_file()).read_text())
    print(
        f"kfp-local-run: {name} SUCCEEDED in {took:.1f} s ({mode}): checkpoint"
        f" {metrics['checkpoint']}, mse {metrics['mse']:.4f}, tracker {work / 'run' / 'tracker'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
