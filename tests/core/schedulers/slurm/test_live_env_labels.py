"""On the local Slurm: ``env_allow`` keeps the submitter's environment out of the job, and app
labels travel in the job comment (found by ``find_apps``, changed by ``set_app_labels``).

The replicas run on this machine (the local Slurm's nodes are loopback names), so the test reads
``/proc/<pid>/environ`` of the replica and of the batch script that started it.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchx.runner import get_runner
from torchx.runner.labels import find_apps, set_app_labels, supports_labels
from torchx.schedulers.labels import LABEL_PREFIX, label_value, labels_metadata
from torchx.specs.api import AppDef, AppState, Resource, Role, is_terminal

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

SECRET = "s3cr3t-slurm-env-allow-93be"
_RES = Resource(cpu=1, gpu=0, memMB=128)


@pytest.fixture
def runner() -> Iterator[Any]:
    with get_runner() as r:
        yield r


def _sleeper(marker: str) -> Role:
    return Role(
        "w", image="", entrypoint="python", args=["-c", "import time; time.sleep(300)", marker],
        env={"ROLE_VAR": "from-role"}, resource=_RES,
    )  # fmt: skip


def _pids_with(text: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if text.encode() in cmd:
            found.append(int(pid))
    return found


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    entries = [e.decode(errors="replace") for e in raw.split(b"\0") if b"=" in e]
    return dict(e.split("=", 1) for e in entries)


def _replica_and_script(marker: str) -> tuple[int, int]:
    """The replica's pid (``python -c ... marker``) and its batch script's (``slurm_script``)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        replicas = [p for p in _pids_with(marker) if b"srun" not in _cmd(p)]
        scripts = [p for p in _pids_with("slurm_script") if _cwd_has(p, marker)]
        if replicas and scripts:
            return replicas[0], scripts[0]
        time.sleep(0.3)
    raise AssertionError(f"no replica/batch script with {marker} started")


def _cmd(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _cwd_has(pid: int, marker: str) -> bool:
    try:
        return marker in os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False


def _run(runner: Any, marker: str, tmp_path: Path, cfg: str, metadata: dict[str, str]) -> str:
    app = AppDef("envlab", roles=[_sleeper(marker)], metadata=metadata)
    parsed = runner.cfg_from_str("slurm", cfg)
    parsed["job_dir"] = str(tmp_path / marker)
    info = runner.dryrun(app, "slurm", cfg=parsed)
    assert SECRET not in str(info)
    return runner.schedule(info)


def _stop(runner: Any, handle: str) -> AppState:
    runner.cancel(handle)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = runner.status(handle)
        if status is not None and is_terminal(status.state):
            return status.state
        time.sleep(0.5)
    raise AssertionError(f"{handle} did not end")


@pytest.mark.parametrize("cfg", ["env_allow=", "env_allow=FAKE_KEEP*"])
def test_env_allow_keeps_the_submitters_environment_out_of_the_job(
    cfg: str, runner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_API_TOKEN", SECRET)
    monkeypatch.setenv("FAKE_KEEP_ME", "kept")
    marker = f"txf-{uuid.uuid4().hex}"
    handle = _run(runner, marker, tmp_path, cfg, {})
    try:
        replica, script = _replica_and_script(marker)
        for pid in (replica, script):
            env = _environ(pid)
            assert "FAKE_API_TOKEN" not in env
            assert SECRET.encode() not in Path(f"/proc/{pid}/environ").read_bytes()
            assert env.get("FAKE_KEEP_ME") == ("kept" if "FAKE_KEEP" in cfg else None)
        env = _environ(replica)
        assert env["ROLE_VAR"] == "from-role"  # the role's env
        assert env["PYTHONUNBUFFERED"] == "1" and env["TORCHX_MAX_RETRIES"] == "0"  # torchx's
        assert env["PATH"] == os.environ["PATH"]  # always kept
        # the step got exactly the allowed variables, torchx's and Slurm's own (SLURM_*, and
        # what slurmstepd sets: TMPDIR, PWD), nothing else of the submitter's
        expected = {"PATH", "FAKE_KEEP_ME", "ROLE_VAR", "PYTHONUNBUFFERED", "TORCHX_MAX_RETRIES"}
        others = {k for k in env if not k.startswith(("SLURM", "TORCHX_"))} - expected
        assert others <= {"TMPDIR", "PWD", "SHLVL", "_"}, others
    finally:
        _stop(runner, handle)


def test_without_env_allow_the_job_gets_the_whole_environment(
    runner: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TorchX's behaviour (sbatch without --export): documented, kept by default
    monkeypatch.setenv("FAKE_API_TOKEN", SECRET)
    marker = f"txf-{uuid.uuid4().hex}"
    handle = _run(runner, marker, tmp_path, "", {})
    try:
        replica, _ = _replica_and_script(marker)
        assert _environ(replica)["FAKE_API_TOKEN"] == SECRET
    finally:
        _stop(runner, handle)


def test_labels_round_trip_through_the_job_comment(runner: Any, tmp_path: Path) -> None:
    assert supports_labels(runner, "slurm")
    run = f"manual__{uuid.uuid4().hex}"
    labels = {"task": "train", "run": run, "map-index": -1}
    marker = f"txf-{uuid.uuid4().hex}"
    handle = _run(runner, marker, tmp_path, "comment=my own note", labels_metadata(labels))
    app_id = handle.rpartition("/")[2]
    try:
        (found,) = find_apps(runner, "slurm", {"run": run})
        assert found.app_handle == handle
        assert found.labels == {"task": "train", "run": run, "map-index": label_value(-1)}
        assert found.labels["task"] == "train" and found.labels["run"] == run
        assert find_apps(runner, "slurm", {"run": run, "task": "other"}) == []
        sched = runner._scheduler("slurm")
        desc = sched.describe(app_id)
        assert desc.metadata[LABEL_PREFIX + "run"] == run
        # added while the job runs: scontrol update
        set_app_labels(runner, handle, {"owner-try": 2})
        (found,) = find_apps(runner, "slurm", {"run": run, "owner-try": 2})
        assert found.labels["task"] == "train"  # the others are kept
        comments = sched._client.run(["squeue", "-h", "-j", app_id, "-o", "%k"]).stdout
        assert comments.startswith("my own note ")  # the user's comment is kept
    finally:
        assert _stop(runner, handle) == AppState.CANCELLED
    # added after the end, once the controller has let the job go (its end record is in
    # accounting): sacctmgr. (Labelled in the moment between the two, the label can be lost to
    # the end record: see docs/slurm.md.)
    deadline = time.monotonic() + 60
    while sched._squeue(app_id) and time.monotonic() < deadline:
        time.sleep(1)
    set_app_labels(runner, handle, {"processed": "true"})
    (found,) = find_apps(runner, "slurm", {"run": run, "processed": "true"})
    assert found.state == AppState.CANCELLED
    assert found.labels["owner-try"] == "2" and found.labels["task"] == "train"
    assert find_apps(runner, "slurm", {"run": run}, without=["processed"]) == []
    assert sched.describe(app_id).metadata[LABEL_PREFIX + "processed"] == "true"


def test_set_app_labels_on_an_unknown_job_says_so(runner: Any) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        set_app_labels(runner, f"slurm://{runner.name()}/999999999", {"a": "b"})
