"""The local executor for real: local_cwd apps, parallel steps, failure policies, resume, lineage."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pydantic", reason="pydantic is not installed (pip install -e '.[workflow]')")

from torchx.runner import get_runner
from torchx.specs import AppState
from torchx.tracker.backend.fsspec import create
from torchx.workflow import Pipeline, Step, validate_pipeline
from torchx.workflow.executor import run_pipeline
from torchx.workflow.run import PipelineRun


def sh(script: str, **kw: object) -> Step:
    return Step(component="utils.sh", args=["--", "sh", "-c", script], **kw)  # type: ignore[arg-type]


def wait_for(path: Path) -> str:
    """A script that succeeds once ``path`` exists (fails after ~20 s)."""
    return f"for i in $(seq 400); do [ -f {path} ] && exit 0; sleep 0.05; done; exit 1"


def pipeline(**steps: Step) -> Pipeline:
    return validate_pipeline(Pipeline(name="t", steps=steps))


def test_independent_steps_run_at_the_same_time(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    # `waiter` only succeeds if `toucher` runs while it is still running
    p = pipeline(waiter=sh(wait_for(marker)), toucher=sh(f"touch {marker}"))
    run = run_pipeline(p, wait_interval=1)
    assert run.state == "SUCCEEDED", run.summary()
    assert [s.state for s in run.steps.values()] == ["SUCCEEDED", "SUCCEEDED"]
    assert PipelineRun.load(run.run_id).state == "SUCCEEDED"


def test_outputs_and_ids_flow_downstream(tmp_path: Path) -> None:
    p = pipeline(
        first=sh("true", outputs={"path": str(tmp_path / "{{ steps.first.app_id }}.bin")}),
        second=Step(
            component="utils.echo",
            args=["--msg", "got {{ steps.first.outputs.path }} from {{ steps.first.app_handle }}"],
        ),
    )
    run = run_pipeline(p, wait_interval=1)
    first, second = run.steps["first"], run.steps["second"]
    assert first.outputs == {"path": str(tmp_path / f"{first.app_id}.bin")}
    assert second.parent_run_id == first.app_handle
    with get_runner() as runner:
        logs = "".join(runner.log_lines(second.app_handle, "echo"))
    assert f"got {first.outputs['path']} from {first.app_handle}" in logs


def test_fail_fast_cancels_running_steps_and_skips_the_rest(tmp_path: Path) -> None:
    p = pipeline(
        sleeper=sh("sleep 60"),
        bad=sh("exit 3"),
        after=sh("true", depends_on=["bad"]),
    )
    run = run_pipeline(p, wait_interval=1)
    states = {n: s.state for n, s in run.steps.items()}
    assert states == {"sleeper": "CANCELLED", "bad": "FAILED", "after": "SKIPPED"}
    assert run.steps["bad"].msg == "exited with code 3"  # the follow layer's reason
    assert run.state == "FAILED"
    with get_runner() as runner:
        status = runner.status(run.steps["sleeper"].app_handle)
    assert status is not None and status.state == AppState.CANCELLED


def test_continue_on_failure_runs_what_does_not_depend_on_the_failure(tmp_path: Path) -> None:
    marker = tmp_path / "m"
    p = pipeline(
        bad=sh("exit 3"),
        after_bad=sh("true", depends_on=["bad"]),
        # runs past the failure of `bad`, then its downstream step runs too
        slow=sh(f"sleep 1; touch {marker}"),
        after_slow=sh(f"test -f {marker}", depends_on=["slow"]),
    )
    run = run_pipeline(p, fail_fast=False, wait_interval=1)
    states = {n: s.state for n, s in run.steps.items()}
    assert states == {
        "bad": "FAILED",
        "after_bad": "SKIPPED",
        "slow": "SUCCEEDED",
        "after_slow": "SUCCEEDED",
    }
    assert "upstream step `bad`" in run.steps["after_bad"].msg
    assert run.state == "FAILED"


def test_resume_reruns_from_the_first_failed_step(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    count = tmp_path / "count"
    p = pipeline(
        first=sh(f"echo x >> {count}"),
        second=sh(f"test -f {gate}", depends_on=["first"]),
        third=sh("true", depends_on=["second"]),
    )
    failed = run_pipeline(p, wait_interval=1)
    assert [s.state for s in failed.steps.values()] == ["SUCCEEDED", "FAILED", "SKIPPED"]
    gate.touch()
    resumed = run_pipeline(p, resume=failed.run_id, wait_interval=1)
    assert resumed.run_id == failed.run_id and resumed.state == "SUCCEEDED"
    assert resumed.steps["first"].reused
    assert resumed.steps["first"].app_handle == failed.steps["first"].app_handle
    assert count.read_text() == "x\n"  # the first step did not run again
    assert resumed.steps["second"].parent_run_id == failed.steps["first"].app_handle


def test_each_step_is_the_tracker_child_of_its_upstream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "tracker"
    monkeypatch.setenv("TORCHX_TRACKERS", "fsspec")
    monkeypatch.setenv("TORCHX_TRACKER_FSSPEC_CONFIG", str(root))
    p = pipeline(
        prep=sh("true"),
        train=sh("true", depends_on=["prep"]),
        evaluate=sh("true", depends_on=["train"]),
    )
    run = run_pipeline(p, wait_interval=1)
    assert run.state == "SUCCEEDED"
    prep, train, evaluate = (s.app_handle for s in run.steps.values())
    assert create(str(root)).lineage(evaluate).ancestors == [train, prep]


def test_step_env_beats_the_roles_env(tmp_path: Path) -> None:
    """A step's ``env`` overrides the env the component gives its role (as everywhere)."""
    out = tmp_path / "x.txt"
    step = Step(
        component="utils.sh",
        args=["--env", "X=from_role", "--", "sh", "-c", f'echo "$X" > {out}'],
        env={"X": "from_step"},
    )
    run = run_pipeline(pipeline(only=step), wait_interval=1)
    assert run.state == "SUCCEEDED", run.summary()
    assert out.read_text().strip() == "from_step"
