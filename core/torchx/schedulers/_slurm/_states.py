"""Slurm job states and pending reasons -> TorchX states and messages. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from torchx.specs.api import AppState

__all__ = [
    "PENDING_REASONS",
    "SLURM_STATES",
    "appstate_from_slurm_state",
    "get_appstate_from_job",
    "pending_msg",
]

SLURM_STATES: Mapping[str, AppState] = MappingProxyType(
    {
        # TorchX's mapping
        "BOOT_FAIL": AppState.FAILED,
        "CANCELLED": AppState.CANCELLED,
        "COMPLETED": AppState.SUCCEEDED,
        "DEADLINE": AppState.FAILED,
        "FAILED": AppState.FAILED,
        "NODE_FAIL": AppState.FAILED,
        "OUT_OF_MEMORY": AppState.FAILED,
        "PENDING": AppState.PENDING,
        "PREEMPTED": AppState.FAILED,
        "RUNNING": AppState.RUNNING,
        "REQUEUED": AppState.PENDING,
        "RESIZING": AppState.PENDING,
        "REVOKED": AppState.FAILED,
        "SUSPENDED": AppState.PENDING,
        "TIMEOUT": AppState.FAILED,
        # the other states Slurm reports (TorchX leaves them UNKNOWN)
        "COMPLETING": AppState.RUNNING,  # replicas still ending
        "CONFIGURING": AppState.PENDING,  # nodes allocated, booting
        "REQUEUE_FED": AppState.PENDING,
        "REQUEUE_HOLD": AppState.PENDING,
        "RESV_DEL_HOLD": AppState.PENDING,
        "SIGNALING": AppState.RUNNING,
        "SPECIAL_EXIT": AppState.FAILED,
        "STAGE_OUT": AppState.RUNNING,
        "STOPPED": AppState.PENDING,  # SIGSTOPped, resumable like SUSPENDED
    }
)
"""Slurm job state -> TorchX state (a superset of TorchX's table)."""

PENDING_REASONS: Mapping[str, str] = MappingProxyType(
    {
        "None": "waiting to be scheduled",
        "Priority": "higher priority jobs go first",
        "Resources": "waiting for resources (CPUs, memory, GPUs or nodes) to become free",
        "BeginTime": "not eligible yet (a begin time, or the delay after a requeue)",
        "Dependency": "waiting for a dependency to finish",
        "DependencyNeverSatisfied": "a dependency can never be satisfied; cancel the app",
        "JobHeldUser": "held by the user (scontrol release)",
        "JobHeldAdmin": "held by an administrator",
        "PartitionDown": "the partition is down",
        "PartitionInactive": "the partition is inactive",
        "PartitionNodeLimit": "asks for more nodes than the partition allows",
        "PartitionTimeLimit": "asks for more time than the partition allows (run option time)",
        "ReqNodeNotAvail": "a required node is not available (down, drained or reserved)",
        "NodeDown": "a node the job needs is down",
        "BadConstraints": "no node satisfies the constraints (run option constraint)",
        "Licenses": "waiting for licenses",
        "Reservation": "waiting for its reservation",
        "InvalidAccount": "the account is not valid (run option account)",
        "InvalidQOS": "the QOS is not valid (run option qos)",
        "QOSMaxJobsPerUserLimit": "the QOS's jobs-per-user limit is reached",
        "AssocGrpCpuLimit": "the account's CPU limit is reached",
        "AssocMaxJobsLimit": "the account's job limit is reached",
        "launch failed requeued held": "its launch failed; Slurm requeued and held it",
        "JobLaunchFailure": "its launch failed",
        "SystemFailure": "a Slurm failure",
    }
)
"""Slurm pending reason (``squeue %r``) -> what it means, for ``AppStatus.msg``."""


def appstate_from_slurm_state(slurm_state: str) -> AppState:
    """Maps a Slurm state (``CANCELLED by 0`` and ``CANCELLED+`` included) to a TorchX state.

    Args:
        slurm_state: the state as ``squeue`` or ``sacct`` print it.

    Returns:
        The TorchX state; UNKNOWN for a state Slurm does not document.
    """
    words = slurm_state.split()
    base = words[0].rstrip("+") if words else ""
    return SLURM_STATES.get(base, AppState.UNKNOWN)


def get_appstate_from_job(job: Mapping[str, object]) -> AppState:
    """The state of one ``squeue --json`` job (``job_state``: a string, or a list from 23.11)."""
    state = job.get("job_state")
    if isinstance(state, list):
        return appstate_from_slurm_state(str(state[0]) if state else "")
    return appstate_from_slurm_state(str(state))


def pending_msg(reason: str) -> str:
    """``AppStatus.msg`` for a pending job: ``"PENDING (Reason): what it means"``."""
    meaning = PENDING_REASONS.get(reason)
    return f"PENDING ({reason}): {meaning}" if meaning else f"PENDING ({reason})"
