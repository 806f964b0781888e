"""The local supervisor's fast start: what it imports, its JSON writer and its process start.

Every ``local_cwd`` app waits for its supervisor to start, so the supervisor avoids the
standard library's heavier modules (``subprocess``, ``json``, ``selectors``...). These tests pin
that, and check that the replacements behave like the modules they replace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchx.schedulers._local import _launch
from torchx.schedulers._local._spawn import spawn
from torchx.schedulers._local._wire import dumps, read_request, write_json_atomic, write_request


@pytest.fixture(autouse=True)
def _restore_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    """spawn() changes the calling process's directory (in the supervisor, by design)."""
    monkeypatch.chdir(os.getcwd())


HEAVY = {
    "collections",
    "ctypes",
    "enum",
    "importlib",
    "json",
    "pathlib",
    "re",
    "selectors",
    "socket",
    "subprocess",
    "threading",
    "typing",
    "warnings",
}


def test_the_supervisor_starts_without_heavy_modules() -> None:
    """What the supervisor imports before it starts the replicas (ctypes comes after)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        " import torchx.schedulers._local.supervisor;"
        " print(','.join(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, _launch.IMPORT_ROOT],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = set(out.stdout.strip().split(","))
    assert "torchx.schedulers._local.supervisor" in loaded
    assert sorted(loaded & HEAVY) == []


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON)
def test_dumps_writes_what_json_dumps_writes(value: Any) -> None:
    assert dumps(value) == json.dumps(value)
    assert json.loads(dumps(value)) == value


def test_dumps_special_values_and_errors() -> None:
    assert dumps({"a": [float("nan"), 1.5, -0.0, True, None]}) == json.dumps(
        {"a": [float("nan"), 1.5, -0.0, True, None]}
    )
    assert dumps("\udcff\U0001f600\x7f\n") == json.dumps("\udcff\U0001f600\x7f\n")
    with pytest.raises(TypeError, match="keys must be str"):
        dumps({1: 2})
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps({"a": object()})


def test_state_and_request_files_round_trip(tmp_path: Path) -> None:
    data = {"app_id": "x", "roles": [{"env": {"K": "v é"}, "args": ["a", "b"]}], "n": 1.25}
    write_json_atomic(tmp_path / "state.json", data)
    assert json.loads((tmp_path / "state.json").read_text()) == data
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # no temp file left
    write_request(str(tmp_path), data)
    assert read_request(str(tmp_path)) == data
    (tmp_path / ".request.marshal").write_bytes(b"not marshal")
    assert read_request(str(tmp_path)) is None
    assert read_request(str(tmp_path / "missing")) is None


def _run(args: list[str], cwd: str | None = None, env: dict[str, str] | None = None) -> str:
    out_r, out_w = os.pipe()
    try:
        pid = spawn(args, env or dict(os.environ), cwd, out_w, out_w)
    finally:
        os.close(out_w)
    with open(out_r, "rb") as f:
        output = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, output
    return output


def test_spawn_runs_the_command_in_its_own_process_group(tmp_path: Path) -> None:
    private = os.open(os.devnull, os.O_RDONLY)  # close-on-exec, as Python opens every fd
    try:
        code = (
            "import os, sys; print(os.getpid() == os.getpgid(0) != os.getsid(0));"
            " print(sys.stdin.read() == '');"
            f" print(os.path.exists('/proc/self/fd/{private}')); print(os.getcwd())"
        )
        lines = _run([sys.executable, "-c", code], cwd=str(tmp_path)).split()
    finally:
        os.close(private)
    assert lines == ["True", "True", "False", str(tmp_path)]


def test_spawn_runs_a_relative_path_from_the_new_working_directory(tmp_path: Path) -> None:
    script = tmp_path / "tool.sh"
    script.write_text("#!/bin/sh\necho relative ok\n")
    script.chmod(0o755)
    assert _run(["./tool.sh"], cwd=str(tmp_path)) == "relative ok\n"


def test_spawn_finds_a_bare_command_on_the_given_path(tmp_path: Path) -> None:
    script = tmp_path / "hello-tool"
    script.write_text("#!/bin/sh\necho found $1\n")
    script.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:/usr/bin:/bin"}
    assert _run(["hello-tool", "it"], env=env) == "found it\n"


def test_spawn_restores_sigpipe_for_the_child() -> None:
    # Python ignores SIGPIPE; a shell pipeline in a replica must see the default again
    assert _run(["/bin/sh", "-c", "yes | head -1"]) == "y\n"


@pytest.mark.parametrize(
    ("case", "error", "filename"),
    [
        ("missing_cwd", FileNotFoundError, "cwd"),
        ("not_executable_on_path", PermissionError, "script"),
        ("missing_command", FileNotFoundError, "no-such-command-xyz"),
        ("missing_path", FileNotFoundError, "/no/such/file"),
        ("not_executable", PermissionError, "script"),
    ],
)
def test_spawn_reports_what_could_not_be_started(
    tmp_path: Path, case: str, error: type[OSError], filename: str
) -> None:
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\n")
    cwd, args, env = None, [sys.executable, "-c", "pass"], dict(os.environ)
    if case == "missing_cwd":
        cwd = str(tmp_path / "gone")
    elif case == "missing_command":
        args = ["no-such-command-xyz"]
    elif case == "missing_path":
        args = ["/no/such/file"]
    elif case == "not_executable_on_path":
        args, env = ["script"], {**os.environ, "PATH": str(tmp_path)}
    else:
        args = [str(script)]
    expected = {"cwd": str(tmp_path / "gone"), "script": args[0]}.get(filename, filename)
    out_r, out_w = os.pipe()
    try:
        with pytest.raises(error) as info:
            spawn(args, env, cwd, out_w, out_w)
    finally:
        os.close(out_r)
        os.close(out_w)
    assert info.value.filename == expected


def test_the_launched_supervisor_is_isolated_and_site_free(tmp_path: Path) -> None:
    """``-I -S``: no site-packages, no PYTHON* variables and no cwd on its path; replicas still
    get the launcher's environment."""
    from torchx.schedulers.local_scheduler import create_scheduler
    from torchx.specs.api import AppDef, AppState, Role

    sched = create_scheduler("test", grace_period=1)
    marker, ready = tmp_path / "go", tmp_path / "ready"
    code = (
        "import os, sys, time\nopen(sys.argv[2], 'w').close()\n"
        "while not os.path.exists(sys.argv[1]): time.sleep(0.05)"
    )
    role = Role("r", "img", entrypoint=sys.executable, args=["-c", code, str(marker), str(ready)])
    app_id = sched.submit(AppDef("iso", roles=[role]), {"log_dir": str(tmp_path / "logs")})
    try:
        state_file = Path(sched._state_root_dir()) / "test" / app_id / "state.json"
        deadline = time.monotonic() + 30
        while not ready.exists():  # the replica is past its start-up (no file open)
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert sched.describe(app_id).state == AppState.RUNNING  # type: ignore[union-attr]
        state = json.loads(state_file.read_text())
        pid = state["supervisor_pid"]
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert argv[1:3] == [b"-I", b"-S"]
        # every fd the supervisor keeps is close-on-exec: a replica holds only stdin/out/err
        # (an fd listed may close before its fdinfo is read, e.g. the supervisor's state-file
        # write: a closed fd is none the replicas can inherit, so it is skipped)
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                info = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
            except FileNotFoundError:
                continue
            flags = info.split("flags:")[1].split()[0]
            assert int(fd) <= 2 or int(flags, 8) & os.O_CLOEXEC, fd
        replica = state["roles"][0]["replicas"][0]["pid"]
        assert sorted(os.listdir(f"/proc/{replica}/fd"), key=int) == ["0", "1", "2"]
    finally:
        marker.touch()
        sched.close()


def test_a_relative_log_dir_is_the_launchers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supervisor runs elsewhere: a relative ``log_dir`` still means the launcher's cwd."""
    from torchx.schedulers.local_scheduler import create_scheduler
    from torchx.specs.api import AppDef, Role

    monkeypatch.chdir(tmp_path)
    sched = create_scheduler("test", grace_period=1)
    role = Role("r", "img", entrypoint="echo", args=["hello from", "relative"])
    try:
        app_id = sched.submit(AppDef("rel", roles=[role]), {"log_dir": "logs"})
        deadline = time.monotonic() + 30
        while sched.describe(app_id).state.name in ("PENDING", "RUNNING"):  # type: ignore[union-attr]
            assert time.monotonic() < deadline
            sched.wait_for_change(app_id, 1)
        assert sched.describe(app_id).state.name == "SUCCEEDED"  # type: ignore[union-attr]
        assert list(sched.log_iter(app_id, "r", 0)) == ["hello from relative\n"]
        assert (tmp_path / "logs" / "test" / app_id / "r" / "0" / "stdout.log").exists()
    finally:
        sched.close()


def test_a_replica_without_cwd_starts_in_the_app_dir_whatever_ran_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supervisor chdirs per replica: one without a cwd must not inherit the previous one's."""
    from torchx.schedulers.local_scheduler import create_scheduler
    from torchx.specs.api import AppDef, Role

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    sched = create_scheduler("test", grace_period=1)
    roles = [Role(name, "img", entrypoint="pwd") for name in ("first", "second")]
    info = sched.submit_dryrun(AppDef("cwds", roles=roles), {"log_dir": str(tmp_path / "logs")})
    info.request.role_params["second"][0].cwd = None  # e.g. an image provider without one
    try:
        app_id = sched.schedule(info)
        deadline = time.monotonic() + 30
        while sched.describe(app_id).state.name in ("PENDING", "RUNNING"):  # type: ignore[union-attr]
            assert time.monotonic() < deadline
            sched.wait_for_change(app_id, 1)
        first = list(sched.log_iter(app_id, "first", 0))
        second = list(sched.log_iter(app_id, "second", 0))
    finally:
        sched.close()
    assert first == [f"{work}\n"]
    app_dir = Path(sched._state_root_dir()) / "test" / app_id
    assert second == [f"{app_dir}\n"]


def test_a_nul_byte_in_the_env_fails_the_replica_not_the_supervisor(tmp_path: Path) -> None:
    from torchx.schedulers._local._replica import Replica
    from torchx.schedulers._local._spawn import Poller

    logs = {s: str(tmp_path / f"{s}.log") for s in ("stdout", "stderr", "combined")}
    spec = {"args": ["/bin/true"], "env": {"BAD": "a\x00b"}, "cwd": str(tmp_path), **logs}
    replica = Replica("r", 0, spec)
    error = replica.spawn(Poller())
    replica.close()
    assert isinstance(error, OSError) and "null" in str(error)
    assert "torchx: could not start /bin/true" in (tmp_path / "stderr.log").read_text()
