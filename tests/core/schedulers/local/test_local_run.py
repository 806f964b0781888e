from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support import pid_alive as _alive

from torchx.schedulers.api import Stream
from torchx.schedulers.local_scheduler import LocalScheduler, create_scheduler
from torchx.specs.api import AppDef, AppState, RetryPolicy, Role, is_terminal


@pytest.fixture
def sched() -> Iterator[LocalScheduler]:
    scheduler = create_scheduler("test", grace_period=1)
    yield scheduler
    scheduler.close()


def _sh(name: str, script: str, num_replicas: int = 1, **kwargs: Any) -> Role:
    return Role(
        name, "img", entrypoint="bash", args=["-c", script], num_replicas=num_replicas, **kwargs
    )


def _wait(sched: LocalScheduler, app_id: str, limit: int = 200) -> AppState:
    for _ in range(limit):
        desc = sched.describe(app_id)
        assert desc is not None
        if is_terminal(desc.state):
            return desc.state
        sched.wait_for_change(app_id, 30)
    raise AssertionError(f"{app_id} did not end")


def _state_json(sched: LocalScheduler, app_id: str) -> dict[str, Any]:
    path = Path(sched._state_root_dir()) / sched.session_name / app_id / "state.json"
    return json.loads(path.read_text())


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def test_success_state_logs_and_describe(sched: LocalScheduler) -> None:
    role = _sh("echo", "echo out-${replica_id}; echo err-${replica_id} >&2", num_replicas=2)
    app_id = sched.submit(AppDef("hello", roles=[role]), {})
    assert _wait(sched, app_id) == AppState.SUCCEEDED
    desc = sched.describe(app_id)
    assert desc is not None and desc.num_restarts == 0
    assert desc.ui_url == f"file://{Path(sched._state_root_dir()) / 'test' / app_id}"
    replicas = desc.roles_statuses[0].replicas
    assert [(r.id, r.state, r.role) for r in replicas] == [
        (0, AppState.SUCCEEDED, "echo"),
        (1, AppState.SUCCEEDED, "echo"),
    ]
    assert [r.name for r in desc.roles] == ["echo"] and desc.roles[0].num_replicas == 2
    assert sorted(sched.log_iter(app_id, "echo", k=1)) == ["err-1\n", "out-1\n"]
    assert list(sched.log_iter(app_id, "echo", 0, streams=Stream.STDOUT)) == ["out-0\n"]
    assert list(sched.log_iter(app_id, "echo", 0, streams=Stream.STDERR)) == ["err-0\n"]
    assert list(sched.log_iter(app_id, "echo", 0, regex="^out")) == ["out-0\n"]
    summary = json.loads((Path(sched._state_root_dir()) / "test" / app_id / "SUCCESS").read_text())
    assert summary["state"] == "SUCCEEDED"
    assert [a.app_id for a in sched.list()] == [app_id]


def test_failure_fans_out_and_leaves_nothing(sched: LocalScheduler) -> None:
    script = (
        'if [ "${replica_id}" = 0 ]; then sleep 0.5; exit 3; fi; sleep 60 & echo child $!; wait'
    )
    app_id = sched.submit(AppDef("fan", roles=[_sh("r", script, num_replicas=2)]), {})
    assert _wait(sched, app_id) == AppState.FAILED
    desc = sched.describe(app_id)
    assert desc is not None and "r/0" in desc.msg and "exited with code 3" in desc.msg
    states = [r.state for r in desc.roles_statuses[0].replicas]
    assert states == [AppState.FAILED, AppState.CANCELLED]
    pids = [r["pid"] for r in _state_json(sched, app_id)["roles"][0]["replicas"]]
    child = int(next(iter(sched.log_iter(app_id, "r", 1))).split()[1])
    assert not any(_alive(pid) for pid in [*pids, child])
    assert all(_group_gone(pid) for pid in pids)


def test_structured_error_message(sched: LocalScheduler) -> None:
    script = """echo '{"message": "boom"}' > "$TORCHELASTIC_ERROR_FILE"; exit 1"""
    app_id = sched.submit(AppDef("err", roles=[_sh("r", script)]), {})
    assert _wait(sched, app_id) == AppState.FAILED
    desc = sched.describe(app_id)
    assert desc is not None and "boom" in desc.structured_error_msg


def test_entrypoint_not_found_fails_clearly(sched: LocalScheduler) -> None:
    role = Role("r", "img", entrypoint="/nonexistent/torchx-binary")
    app_id = sched.submit(AppDef("nf", roles=[role]), {})
    assert _wait(sched, app_id) == AppState.FAILED
    assert "command not found: /nonexistent/torchx-binary" in "".join(sched.log_iter(app_id, "r"))
    desc = sched.describe(app_id)
    assert desc is not None
    replica = desc.roles_statuses[0].replicas[0]
    assert "command not found: /nonexistent/torchx-binary" in replica.structured_error_msg
    assert "could not start: command not found" in desc.msg


def _retry_app(tmp_path: Path, policy: RetryPolicy) -> AppDef:
    # the first attempt of one replica fails; APPLICATION restarts both, REPLICA only that one.
    # With APPLICATION the failing replica waits until the other one has started.
    marker, started = tmp_path / "marker", tmp_path / "started"
    if policy == RetryPolicy.APPLICATION:
        failing, other = "0", f"touch {started}; sleep 30"
        wait = f"while [ ! -e {started} ]; do sleep 0.02; done;"
    else:
        failing, other, wait = "1", "exit 0", ""
    script = (
        f"echo start; if [ -e {marker} ]; then exit 0; fi;"
        f" if [ ${{replica_id}} = {failing} ]; then {wait} touch {marker}; exit 1; fi; {other}"
    )
    return AppDef("retry", roles=[_sh("r", script, 2, max_retries=2, retry_policy=policy)])


@pytest.mark.parametrize(
    ("policy", "starts"),
    [(RetryPolicy.APPLICATION, [2, 2]), (RetryPolicy.REPLICA, [1, 2])],
)
def test_retries(
    sched: LocalScheduler, tmp_path: Path, policy: RetryPolicy, starts: list[int]
) -> None:
    app_id = sched.submit(_retry_app(tmp_path, policy), {})
    assert _wait(sched, app_id) == AppState.SUCCEEDED
    desc = sched.describe(app_id)
    assert desc is not None and desc.num_restarts == 1
    got = [list(sched.log_iter(app_id, "r", k)).count("start\n") for k in range(2)]
    assert got == starts


def test_role_retry_restarts_only_that_role(sched: LocalScheduler, tmp_path: Path) -> None:
    marker = tmp_path / "m"
    flaky = _sh("a", f"echo start; [ -e {marker} ] && exit 0; touch {marker}; exit 1")
    flaky.max_retries, flaky.retry_policy = 1, RetryPolicy.ROLE
    steady = _sh("b", "echo start; sleep 1")
    app_id = sched.submit(AppDef("role", roles=[flaky, steady]), {})
    assert _wait(sched, app_id) == AppState.SUCCEEDED
    assert list(sched.log_iter(app_id, "a")).count("start\n") == 2
    assert list(sched.log_iter(app_id, "b")).count("start\n") == 1


def test_retries_exhausted(sched: LocalScheduler) -> None:
    app_id = sched.submit(AppDef("x", roles=[_sh("r", "echo start; exit 2", max_retries=2)]), {})
    assert _wait(sched, app_id) == AppState.FAILED
    desc = sched.describe(app_id)
    assert desc is not None and desc.num_restarts == 2
    assert list(sched.log_iter(app_id, "r")).count("start\n") == 3


def test_logs_complete_for_many_replicas(sched: LocalScheduler) -> None:
    script = (
        "for i in $(seq 1 300); do echo out-${replica_id}-$i; echo err-${replica_id}-$i >&2;"
        " done; printf tail-${replica_id}"
    )
    app_id = sched.submit(AppDef("many", roles=[_sh("r", script, num_replicas=64)]), {})
    assert _wait(sched, app_id) == AppState.SUCCEEDED
    for k in range(64):
        out = list(sched.log_iter(app_id, "r", k, streams=Stream.STDOUT))
        err = list(sched.log_iter(app_id, "r", k, streams=Stream.STDERR))
        combined = list(sched.log_iter(app_id, "r", k))
        assert out == [f"out-{k}-{i}\n" for i in range(1, 301)] + [f"tail-{k}"]
        assert err == [f"err-{k}-{i}\n" for i in range(1, 301)]
        # an unterminated last line is ended in the combined log so streams never share a line
        assert sorted(combined) == sorted([*out[:-1], f"tail-{k}\n", *err])
        assert [line for line in combined if line.startswith("out")] == out[:-1]


@pytest.mark.timeout(30)
def test_wait_for_change_returns_when_app_ends(sched: LocalScheduler) -> None:
    app_id = sched.submit(AppDef("w", roles=[_sh("r", "sleep 0.5")]), {})
    while (desc := sched.describe(app_id)) is not None and desc.state == AppState.PENDING:
        sched.wait_for_change(app_id, 120)
    sched.wait_for_change(app_id, 120)
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.SUCCEEDED


def test_log_iter_tail_follows_until_end(sched: LocalScheduler) -> None:
    role = _sh("r", "for i in 1 2 3; do echo line-$i; sleep 0.2; done")
    app_id = sched.submit(AppDef("tail", roles=[role]), {})
    assert list(sched.log_iter(app_id, "r", should_tail=True)) == [
        "line-1\n",
        "line-2\n",
        "line-3\n",
    ]
    desc = sched.describe(app_id)
    assert desc is not None and desc.state == AppState.SUCCEEDED


def test_log_iter_errors_and_since_warning(sched: LocalScheduler) -> None:
    app_id = sched.submit(AppDef("e", roles=[_sh("trainer", "echo hi")]), {})
    _wait(sched, app_id)
    with pytest.raises(ValueError, match="Did you mean `trainer`"):
        list(sched.log_iter(app_id, "trainr"))
    with pytest.raises(ValueError, match="replica 5 does not exist"):
        list(sched.log_iter(app_id, "trainer", k=5))
    with pytest.raises(RuntimeError, match="was not configured to log into a file"):
        list(sched.log_iter("nope-123", "trainer"))
    from datetime import datetime

    with pytest.warns(UserWarning, match="will be ignored"):
        assert list(sched.log_iter(app_id, "trainer", since=datetime.now())) == ["hi\n"]


def test_unknown_app(sched: LocalScheduler) -> None:
    assert sched.describe("nope-123") is None
    assert sched.describe("../../etc") is None
    assert not sched.exists("nope-123")
    sched.cancel("nope-123")
    sched.wait_for_change("nope-123", 0.01)


def test_log_dir_keeps_torchx_layout(sched: LocalScheduler, tmp_path: Path) -> None:
    app_id = sched.submit(AppDef("ld", roles=[_sh("r", "echo hi")]), {"log_dir": str(tmp_path)})
    assert _wait(sched, app_id) == AppState.SUCCEEDED
    log = tmp_path / "test" / app_id / "r" / "0"
    assert (log / "combined.log").read_text() == "hi\n"
    assert {p.name for p in log.iterdir()} >= {"stdout.log", "stderr.log", "combined.log"}
    sched.close()
    assert (log / "combined.log").exists(), "close() must not remove a user log_dir"


def test_cache_evicts_oldest_terminal(tmp_path: Path) -> None:
    sched = create_scheduler("test", cache_size=1, grace_period=1)
    first = sched.submit(AppDef("a", roles=[_sh("r", "sleep 30")]), {})
    with pytest.raises(IndexError, match=r"App cache size \(1\) exceeded"):
        sched.submit(AppDef("b", roles=[_sh("r", "true")]), {})
    sched.cancel(first)
    second = sched.submit(AppDef("b", roles=[_sh("r", "true")]), {})
    assert list(sched._apps) == [second]
    assert sched.describe(first) is not None, "eviction only forgets; state stays on disk"
    sched.close()
