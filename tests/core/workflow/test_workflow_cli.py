"""``torchx pipeline`` as a real command: errors, dryrun, JSON progress, Ctrl-C, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _support import TORCHX, run_torchx

pytest.importorskip("pydantic", reason="pydantic is not installed (pip install -e '.[workflow]')")

from torchx.runner import get_runner
from torchx.specs import AppState

REPO = Path(__file__).resolve().parents[3]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_invalid_file_is_one_line_and_exit_1(tmp_path: Path) -> None:
    path = _write(tmp_path, "name: x\nsteps:\n  a:\n    component: utils.ech\n")
    proc = run_torchx("pipeline", "run", str(path))
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"torchx: error: {path}:4: step `a`: unknown component `utils.ech`"
        " (did you mean `utils.echo`?); `torchx builtins` lists them"
    ]
    proc = run_torchx("pipeline", "run", str(tmp_path / "nope.yaml"))
    assert (
        proc.returncode == 1 and "pipeline file" in proc.stderr and "Traceback" not in proc.stderr
    )


def test_bad_param_is_one_line(tmp_path: Path) -> None:
    proc = run_torchx(
        "pipeline", "dryrun", str(REPO / "pipelines" / "pipeline.yaml"), "-p", "stepz=3"
    )
    assert proc.returncode == 1
    assert "unknown parameter `stepz` (did you mean `steps`?)" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_dryrun_prints_every_step_request() -> None:
    proc = run_torchx(
        "pipeline", "dryrun", str(REPO / "pipelines" / "pipeline.yaml"), "-p", "steps=3"
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert [line for line in out.splitlines() if line.startswith("=== step")] == [
        "=== step prepare_data (local_cwd) ===",
        "=== step train (local_cwd) ===",
        "=== step evaluate (local_cwd) ===",
    ]
    assert "<steps.train.outputs.checkpoint>" in out
    assert out.strip().endswith("pipeline torchx_training: 3 steps valid")


def test_json_run_and_status(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        name: j
        params: {msg: hi}
        steps:
          a: {component: utils.echo, args: [--msg, "{{ params.msg }}"]}
          b: {component: utils.echo, args: [--msg, "{{ steps.a.app_id }}"]}
        """,
    )
    proc = run_torchx("pipeline", "run", str(path), "--json", "-p", "msg=yo")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[0]["event"] == "start" and events[0]["params"] == {"msg": "yo"}
    assert [(e["name"], e["state"]) for e in events if e["event"] == "step"] == [
        ("a", "RUNNING"),
        ("a", "SUCCEEDED"),
        ("b", "RUNNING"),
        ("b", "SUCCEEDED"),
    ]
    end = events[-1]
    assert end["event"] == "end" and end["state"] == "SUCCEEDED"
    status = run_torchx("pipeline", "status", end["run_id"])
    assert status.returncode == 0 and "pipeline j SUCCEEDED: 2 steps" in status.stdout


def test_ctrl_c_cancels_every_running_step(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        name: long
        steps:
          one: {component: utils.sh, args: [sleep, "60"]}
          two: {component: utils.sh, args: [sleep, "60"]}
          after: {component: utils.sh, args: ["true"], depends_on: [one]}
        """,
    )
    proc = subprocess.Popen(
        [TORCHX, "pipeline", "run", str(path), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    assert proc.stdout is not None
    handles = []
    try:
        for line in proc.stdout:
            event = json.loads(line)
            if event["event"] == "step" and event["state"] == "RUNNING":
                handles.append(event["app_handle"])
            if len(handles) == 2:
                break
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # it failed once (not reproduced since): say what the command printed if it fails again
    assert proc.returncode == 130, f"exit {proc.returncode}\nstdout:\n{rest}\nstderr:\n{err}"
    end = json.loads(rest.strip().splitlines()[-1])
    assert end["state"] == "CANCELLED"
    assert {n: s["state"] for n, s in end["steps"].items()} == {
        "one": "CANCELLED",
        "two": "CANCELLED",
        "after": "SKIPPED",
    }
    with get_runner() as runner:
        for handle in handles:
            status = runner.status(handle)
            assert status is not None and status.state == AppState.CANCELLED
    assert sys.executable


def test_resume_latest_run_from_the_cli(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    path = _write(
        tmp_path,
        f"""\
        name: gated
        steps:
          first: {{component: utils.echo, args: [--msg, one]}}
          second: {{component: utils.sh, args: [test, -f, "{gate}"], depends_on: [first]}}
        """,
    )
    failed = run_torchx("pipeline", "run", str(path))
    assert failed.returncode == 1
    assert "pipeline gated FAILED: 2 steps (first SUCCEEDED, second FAILED)" in failed.stdout
    assert "step second failed; its logs: torchx log local_cwd://torchx/" in failed.stderr
    gate.touch()
    resumed = run_torchx("pipeline", "run", str(path), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "(kept from the resumed run)" in resumed.stdout
    assert "pipeline gated SUCCEEDED: 2 steps" in resumed.stdout
    listed = run_torchx("pipeline", "list")
    assert len([line for line in listed.stdout.splitlines() if line.startswith("gated-")]) == 1
