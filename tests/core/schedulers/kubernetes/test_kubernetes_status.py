"""Volcano Job objects -> describe/list responses (the dicts the API server returns)."""

from __future__ import annotations

from typing import Any

import pytest

from torchx.schedulers._kubernetes.names import split_app_id
from torchx.schedulers._kubernetes.volcano_status import (
    JOB_STATE,
    TASK_STATE,
    app_state,
    describe_vcjob,
    list_entry,
    pod_hostname,
)
from torchx.schedulers.kubernetes_scheduler import JOB_STATE as PUBLIC_JOB_STATE
from torchx.specs.api import NONE, AppState, ReplicaState


def _job(phase: str | None, counts: dict[str, Any] | None = None, **status: Any) -> dict[str, Any]:
    job: dict[str, Any] = {"metadata": {"name": "app-x1"}, "spec": {}}
    if phase is not None:
        job["status"] = {"state": {"phase": phase}, **status}
        if counts is not None:
            job["status"]["taskStatusCount"] = counts
    return job


@pytest.mark.parametrize(
    ("phase", "state"),
    [
        ("Pending", AppState.PENDING),
        ("Running", AppState.RUNNING),
        ("Aborting", AppState.RUNNING),
        ("Restarting", AppState.RUNNING),
        ("Completing", AppState.RUNNING),
        ("Terminating", AppState.RUNNING),
        ("Completed", AppState.SUCCEEDED),
        ("Aborted", AppState.CANCELLED),
        ("Terminated", AppState.FAILED),
        ("Failed", AppState.FAILED),
        ("SomethingNew", AppState.UNKNOWN),
        (None, AppState.UNKNOWN),
    ],
)
def test_job_phase(phase: str | None, state: AppState) -> None:
    assert app_state(_job(phase)) == state
    assert describe_vcjob("ns:app-x1", _job(phase), lambda _: "").state == state


def test_failed_maps_to_an_app_state() -> None:
    # TorchX mapped "Failed" to ReplicaState.FAILED
    assert all(isinstance(s, AppState) for s in JOB_STATE.values())
    assert PUBLIC_JOB_STATE is JOB_STATE
    assert set(TASK_STATE) == {
        "Pending",
        "Allocated",
        "Pipelined",
        "Binding",
        "Bound",
        "Running",
        "Releasing",
        "Succeeded",
        "Failed",
        "Unknown",
    }


def test_roles_and_replicas_from_task_status_count() -> None:
    counts = {
        "trainer-1": {"phase": {"Running": 1}},
        "trainer-0": {"phase": {"Succeeded": 1}},
        "datareader-0": {"phase": {"Failed": 1}},
        "trainer-10": {"phase": {"Pending": 1}},
    }
    hosts: list[str] = []

    def hostname(pod: str) -> str:
        hosts.append(pod)
        return f"h-{pod}"

    desc = describe_vcjob("ns:app-x1", _job("Running", counts, retryCount=2), hostname)
    assert desc.app_id == "ns:app-x1" and desc.num_restarts == 2 and desc.msg == NONE
    assert [(r.name, r.num_replicas) for r in desc.roles] == [("datareader", 1), ("trainer", 3)]
    trainer = desc.roles_statuses[1]
    assert [(r.id, r.state, r.hostname) for r in trainer.replicas] == [
        (0, ReplicaState.SUCCEEDED, "h-app-x1-trainer-0-0"),
        (1, ReplicaState.RUNNING, "h-app-x1-trainer-1-0"),
        (10, ReplicaState.PENDING, "h-app-x1-trainer-10-0"),
    ]
    assert desc.roles_statuses[0].replicas[0].state == ReplicaState.FAILED
    assert len(hosts) == 4


def test_task_with_several_phases_takes_the_final_one() -> None:
    desc = describe_vcjob(
        "ns:j", _job("Running", {"r-0": {"phase": {"Pending": 1, "Failed": 1}}}), lambda _: ""
    )
    assert desc.roles_statuses[0].replicas[0].state == ReplicaState.FAILED


def test_status_message_and_no_status() -> None:
    job = _job("Failed")
    job["status"]["state"]["message"] = "pod failed"
    assert describe_vcjob("ns:j", job, lambda _: "").msg == "pod failed"
    empty = describe_vcjob("ns:j", _job(None), lambda _: "")
    assert empty.state == AppState.UNKNOWN and empty.roles == []


def test_pod_hostname() -> None:
    assert pod_hostname("10.1.2.3", "ml") == "10-1-2-3.ml.pod.cluster.local"
    assert pod_hostname(None, "ml") == ""


def test_list_entry() -> None:
    entry = list_entry("ml", _job("Completed"))
    assert (entry.app_id, entry.state) == ("ml:app-x1", AppState.SUCCEEDED)


@pytest.mark.parametrize("bad", ["nocolon", ":x", "ns:", "a:b:c"])
def test_bad_app_ids(bad: str) -> None:
    with pytest.raises(ValueError, match="not of the form NAMESPACE:NAME"):
        split_app_id(bad)
    assert split_app_id("ns:x") == ("ns", "x")


def test_volcano_pod_name_accepts_written_and_normalized_role_names() -> None:
    from torchx.schedulers._kubernetes.names import volcano_pod_name

    assert volcano_pod_name("app-x1", "Data_Reader", 2) == "app-x1-datareader-2-0"
    assert volcano_pod_name("app-x1", "datareader", 2) == "app-x1-datareader-2-0"


def _with_tasks(job: dict[str, Any], *tasks: str) -> dict[str, Any]:
    job["spec"]["tasks"] = [
        {
            "name": t,
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "my.app"}},
                "spec": {"containers": [{"image": f"img-{t.rpartition('-')[0]}"}]},
            },
        }
        for t in tasks
    ]
    return job


def test_replicas_come_from_the_spec_before_volcano_counts_them() -> None:
    job = _with_tasks(_job(None), "trainer-0", "trainer-1", "ps-0")
    desc = describe_vcjob("ns:app-x1", job, lambda _: "")
    assert desc.state == AppState.UNKNOWN
    assert [(r.name, r.image, r.num_replicas) for r in desc.roles] == [
        ("trainer", "img-trainer", 2),
        ("ps", "img-ps", 1),
    ]
    assert {r.state for rs in desc.roles_statuses for r in rs.replicas} == {ReplicaState.PENDING}
    running = _with_tasks(_job("Running", {"ps-0": {"phase": {"Running": 1}}}), "trainer-0", "ps-0")
    states = [
        r.state
        for rs in describe_vcjob("ns:j", running, lambda _: "").roles_statuses
        for r in rs.replicas
    ]
    assert states == [ReplicaState.PENDING, ReplicaState.RUNNING]
    done = _with_tasks(
        _job("Completed", {"ps-0": {"phase": {"Succeeded": 1}}}), "trainer-0", "ps-0"
    )
    states = [
        r.state
        for rs in describe_vcjob("ns:j", done, lambda _: "").roles_statuses
        for r in rs.replicas
    ]
    assert states == [ReplicaState.UNKNOWN, ReplicaState.SUCCEEDED]


def test_list_entry_name_from_pod_labels() -> None:
    assert list_entry("ml", _with_tasks(_job("Running"), "r-0")).name == "my.app"
