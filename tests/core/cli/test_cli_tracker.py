"""`torchx tracker` and the --json read commands, through the real `torchx` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import run_torchx as torchx

RECORD = (
    "import sys; from torchx.tracker import app_run_from_env; r = app_run_from_env();"
    " r.add_metadata(step=sys.argv[1]); r.add_artifact(sys.argv[1], '/data/' + sys.argv[1])"
)


@pytest.fixture
def tracker_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "tracker"
    cfg = tmp_path / ".torchxconfig"
    cfg.write_text(f"[torchx:tracker]\nfsspec =\n\n[tracker:fsspec]\nconfig = {root}\n")
    monkeypatch.setenv("TORCHXCONFIG", str(cfg))
    return root


def run_step(name: str, parent: str | None = None) -> str:
    parent_args = ["--parent_run_id", parent] if parent else []
    proc = torchx(
        "run", "-s", "local_cwd", *parent_args, "utils.python", "--name", name, "-c", RECORD, name
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_three_step_lineage_from_the_cli(tracker_config: Path) -> None:
    prep = run_step("prep")
    train = run_step("train", parent=prep)
    evaluate = run_step("evaluate", parent=train)

    jobs = torchx("tracker", "list", "jobs", "--json")
    assert jobs.returncode == 0, jobs.stderr
    assert set(json.loads(jobs.stdout)) == {prep, train, evaluate}
    children = torchx("tracker", "list", "jobs", "--parent-run-id", prep)
    assert train in children.stdout and evaluate not in children.stdout
    assert "JOB ID" in children.stdout

    lineage = torchx("tracker", "lineage", evaluate, "--json")
    assert lineage.returncode == 0, lineage.stderr
    data = json.loads(lineage.stdout)
    assert data["ancestors"] == [train, prep]
    assert data["artifacts"][prep]["prep"]["path"] == "/data/prep"

    table = torchx("tracker", "lineage", prep)
    assert table.returncode == 0, table.stderr
    assert "2 descendant(s)" in table.stdout
    assert "PARENT RUN" in table.stdout and evaluate in table.stdout

    meta = torchx("tracker", "list", "metadata", train)
    assert "step" in meta.stdout and "train" in meta.stdout
    arts = torchx("tracker", "list", "artifacts", train, "--json")
    assert json.loads(arts.stdout) == {"train": {"path": "/data/train", "metadata": {}}}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "No trackers configured"),
        ({"TORCHX_TRACKERS": "fspec"}, "could be built"),
        ({"TORCHX_TRACKERS": "fsspec"}, "the fsspec tracker needs a config"),
    ],
)
def test_bad_tracker_setup_is_one_line(env: dict[str, str], message: str) -> None:
    proc = torchx("tracker", "list", "jobs", env=env)
    assert proc.returncode == 1
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len([line for line in proc.stderr.splitlines() if "error" in line.lower()]) == 1


def test_describe_and_list_json() -> None:
    proc = torchx("run", "-s", "local_cwd", "utils.echo", "--msg", "json please")
    assert proc.returncode == 0, proc.stderr
    handle = proc.stdout.strip()
    described = json.loads(torchx("describe", "--json", handle).stdout)
    assert described["roles"][0]["name"] == "echo"
    listed = json.loads(torchx("list", "-s", "local_cwd", "--json").stdout)
    assert any(a["app_handle"] == handle and a["state"] == "SUCCEEDED" for a in listed)
