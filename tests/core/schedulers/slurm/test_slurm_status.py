"""Slurm states, pending reasons, ``squeue``/``sacct`` parsing and the scheduler over a fake client.

The rows are the shapes Slurm 22.05 prints (copied from the local Slurm), trimmed to the fields read.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Optional

import pytest

from torchx.schedulers.api import Stream
from torchx.schedulers.slurm_scheduler import (
    SLURM_STATES,
    SlurmClient,
    SlurmScheduler,
    SlurmUnavailableError,
    appstate_from_slurm_state,
    get_appstate_from_job,
)
from torchx.specs.api import AppDef, AppState, Resource, RetryPolicy, Role

TORCHX_STATES = {
    "BOOT_FAIL": AppState.FAILED, "CANCELLED": AppState.CANCELLED,
    "COMPLETED": AppState.SUCCEEDED, "DEADLINE": AppState.FAILED, "FAILED": AppState.FAILED,
    "NODE_FAIL": AppState.FAILED, "OUT_OF_MEMORY": AppState.FAILED,
    "PENDING": AppState.PENDING, "PREEMPTED": AppState.FAILED, "RUNNING": AppState.RUNNING,
    "REQUEUED": AppState.PENDING, "RESIZING": AppState.PENDING, "REVOKED": AppState.FAILED,
    "SUSPENDED": AppState.PENDING, "TIMEOUT": AppState.FAILED,
}  # fmt: skip
EVERY_SLURM_STATE = set(TORCHX_STATES) | {
    "COMPLETING", "CONFIGURING", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD",
    "SIGNALING", "SPECIAL_EXIT", "STAGE_OUT", "STOPPED",
}  # fmt: skip


def job(jid: int, het: int, offset: int, name: str, state: str, **kw: Any) -> dict[str, Any]:
    return {
        "job_id": jid, "het_job_id": het, "het_job_offset": offset, "name": name,
        "job_state": state, "state_reason": kw.get("reason", "None"),
        "nodes": kw.get("nodes", ""), "current_working_directory": kw.get("cwd", "/w"),
        "restart_cnt": kw.get("restarts", 0),
    }  # fmt: skip


FAILED_ROWS = [  # sacct -D --parsable2 --noheader of a fail-fast job that was requeued once
    "24+0|fail-0|REQUEUED|0:0|runsc|/w|None",
    "24+0.batch|batch|FAILED|3:0|runsc||",
    "24+0.0|sh|FAILED|3:0|runsc||",
    "24+1|fail-1|REQUEUED|0:0|vm|/w|None",
    "24+1.0|sleep|CANCELLED|0:15|vm||",
    "24+0|fail-0|FAILED|3:0|runsc|/w|BeginTime",
    "24+0.batch|batch|FAILED|3:0|runsc||",
    "24+0.0|sh|FAILED|3:0|runsc||",
    "24+1|fail-1|FAILED|3:0|vm|/w|BeginTime",
    "24+1.0|sleep|CANCELLED|0:15|vm||",
]


class FakeClient(SlurmClient):
    def __init__(self, jobs: list[dict[str, Any]], rows: Optional[list[str]] = None) -> None:
        self.jobs = jobs
        self.rows = rows
        self.cancelled: list[str] = []

    def squeue_jobs(self) -> list[dict[str, Any]]:
        return self.jobs

    def sacct_job(self, job_id: str) -> Optional[list[str]]:
        return self.rows

    def sacct_list(self, days: int) -> list[str]:
        return ["24+0|fail-0|FAILED", "24+1|fail-1|FAILED", "30|echo-0|COMPLETED", "30.0|sh|X"]

    def scancel(self, job_id: str) -> None:
        self.cancelled.append(job_id)

    def partition_memmb(self, partition: Optional[str]) -> Optional[int]:
        return None


def test_every_slurm_state_is_mapped_and_torchx_mapping_kept() -> None:
    assert set(SLURM_STATES) == EVERY_SLURM_STATE
    for state, expected in TORCHX_STATES.items():
        assert SLURM_STATES[state] == expected, state
    assert appstate_from_slurm_state("CANCELLED by 0") == AppState.CANCELLED
    assert appstate_from_slurm_state("CANCELLED+") == AppState.CANCELLED
    assert appstate_from_slurm_state("NOT_A_STATE") == AppState.UNKNOWN
    assert get_appstate_from_job({"job_state": ["RUNNING", "COMPLETING"]}) == AppState.RUNNING
    assert get_appstate_from_job({"job_state": "TIMEOUT"}) == AppState.FAILED


def test_pending_reason_goes_into_msg() -> None:
    jobs = [job(7, 7, 0, "t-0", "PENDING", reason="Resources"), job(8, 7, 1, "t-1", "PENDING")]
    desc = SlurmScheduler("s", client=FakeClient(jobs)).describe("7")
    assert desc is not None and desc.state == AppState.PENDING
    assert desc.msg.startswith("PENDING (Resources): waiting for resources"), desc.msg
    jobs = [job(9, 0, 0, "t-0", "PENDING", reason="SomethingNew")]
    desc = SlurmScheduler("s", client=FakeClient(jobs)).describe("9")
    assert desc is not None and desc.msg == "PENDING (SomethingNew)"


def test_running_het_job_from_squeue_ignores_other_jobs() -> None:
    jobs = [
        job(5, 0, 0, "other-0", "RUNNING"),
        job(7, 7, 0, "trainer-0", "RUNNING", nodes="runsc", restarts=1),
        job(8, 7, 1, "trainer-1", "RUNNING", nodes="vm", restarts=1),
        job(9, 7, 2, "ps-0", "RUNNING", nodes="vm", restarts=1),
    ]
    desc = SlurmScheduler("s", client=FakeClient(jobs)).describe("7")
    assert desc is not None and desc.state == AppState.RUNNING and desc.num_restarts == 1
    assert [(r.name, r.num_replicas, r.image) for r in desc.roles] == [
        ("trainer", 2, "/w"),
        ("ps", 1, "/w"),
    ]
    hosts = [(r.role, r.id, r.hostname) for rs in desc.roles_statuses for r in rs.replicas]
    assert hosts == [("trainer", 0, "runsc"), ("trainer", 1, "vm"), ("ps", 0, "vm")]


def test_ended_job_from_sacct_names_the_failed_replica_and_counts_requeues() -> None:
    desc = SlurmScheduler("s", client=FakeClient([], FAILED_ROWS)).describe("24")
    assert desc is not None and desc.state == AppState.FAILED
    assert desc.num_restarts == 1
    states = {r.id: r.state for rs in desc.roles_statuses for r in rs.replicas}
    assert states == {0: AppState.FAILED, 1: AppState.CANCELLED}
    assert desc.msg == "FAILED: replica fail-0 FAILED exit code 3:0"


def test_the_replica_that_exited_non_zero_is_named_before_one_stopped_with_it() -> None:
    # --kill-on-bad-exit ends the good replica's step too: Slurm may report it FAILED first
    rows = [
        "30+0|good-0|FAILED|0:0|runsc|/w|None",
        "30+0.0|sleep|FAILED|0:9|runsc||",
        "30+1|bad-0|FAILED|7:0|vm|/w|None",
        "30+1.0|sh|FAILED|7:0|vm||",
    ]
    desc = SlurmScheduler("s", client=FakeClient([], rows)).describe("30")
    assert desc is not None and desc.state == AppState.FAILED
    assert desc.msg == "FAILED: replica bad-0 FAILED exit code 7:0"


def test_squeue_state_wins_while_sacct_lags() -> None:
    jobs = [job(24, 24, 0, "fail-0", "FAILED"), job(25, 24, 1, "fail-1", "FAILED")]
    lagging = ["24+0|fail-0|RUNNING|0:0|runsc|/w|None", "24+1|fail-1|RUNNING|0:0|vm|/w|None"]
    desc = SlurmScheduler("s", client=FakeClient(jobs, lagging)).describe("24")
    assert desc is not None and desc.state == AppState.FAILED


def test_unknown_and_malformed_ids() -> None:
    sched = SlurmScheduler("s", client=FakeClient([], []))
    assert sched.describe("123") is None
    assert sched.describe("tx-no-such-app") is None
    sched.cancel("123")
    assert sched._client.cancelled == []  # type: ignore[attr-defined]


def test_list_merges_sacct_and_squeue() -> None:
    jobs = [job(31, 0, 0, "echo-0", "RUNNING"), job(30, 0, 0, "echo-0", "COMPLETED")]
    listed = SlurmScheduler("sess", client=FakeClient(jobs)).list()
    assert [(a.app_id, a.state, a.app_handle) for a in listed] == [
        ("24", AppState.FAILED, "slurm://sess/24"),
        ("30", AppState.SUCCEEDED, "slurm://sess/30"),
        ("31", AppState.RUNNING, "slurm://sess/31"),
    ]


def test_log_iter_streams_and_regex(tmp_path: Path) -> None:
    (tmp_path / "slurm-7-t-1.out").write_text("hello 1\nbye\n")
    (tmp_path / "slurm-7-t-1.err").write_text("oops 1\n")
    jobs = [job(7, 0, 0, "t-0", "COMPLETED", cwd=str(tmp_path))]
    sched = SlurmScheduler("s", client=FakeClient(jobs))
    assert list(sched.log_iter("7", "t", 1)) == ["hello 1\n", "bye\n", "oops 1\n"]
    assert list(sched.log_iter("7", "t", 1, streams=Stream.STDOUT)) == ["hello 1\n", "bye\n"]
    assert list(sched.log_iter("7", "t", 1, streams=Stream.STDERR)) == ["oops 1\n"]
    assert list(sched.log_iter("7", "t", 1, regex="^b")) == ["bye\n"]
    assert list(sched.log_iter("7", "t", 1, should_tail=True)) == ["hello 1\n", "bye\n", "oops 1\n"]


def test_missing_slurm_commands_say_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SlurmUnavailableError, match="scripts/infra/slurm.sh start"):
        SlurmClient().squeue_jobs()


def test_narrow_retry_policies_warn_that_the_whole_job_is_requeued() -> None:
    role = Role("r", image="", entrypoint="true", max_retries=2, resource=Resource(1, 0, 64))
    role.retry_policy = RetryPolicy.REPLICA
    sched = SlurmScheduler("s", client=FakeClient([]))
    with pytest.warns(UserWarning, match="requeues the whole job"):
        info = sched.submit_dryrun(AppDef("a", roles=[role]), {})
    assert "TORCHX_MAX_RETRIES=2" in str(info)
    role.retry_policy = RetryPolicy.APPLICATION
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.submit_dryrun(AppDef("a", roles=[role]), {})


def test_app_without_replicas_is_refused() -> None:
    role = Role("r", image="", entrypoint="true", num_replicas=0)
    with pytest.raises(ValueError, match="no replica to run"):
        SlurmScheduler("s", client=FakeClient([])).submit_dryrun(AppDef("a", roles=[role]), {})


def test_sacct_placeholder_of_a_just_ended_job_is_not_used() -> None:
    jobs = [job(234, 0, 0, "sh-0", "COMPLETED", nodes="runsc")]
    placeholder = ["234|allocation|COMPLETED|0:0|runsc||None", "234.0|env|COMPLETED|0:0|runsc||"]
    desc = SlurmScheduler("s", client=FakeClient(jobs, placeholder)).describe("234")
    assert desc is not None and desc.state == AppState.SUCCEEDED
    assert [(r.name, r.num_replicas, r.image) for r in desc.roles] == [("sh", 1, "/w")]
