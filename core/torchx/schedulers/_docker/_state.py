"""Container state -> TorchX state for ``local_docker`` (pure: works on plain values)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from torchx.specs.api import AppState, is_terminal

__all__ = ["CONTAINER_STATE", "ContainerInfo", "app_state", "container_state"]

CONTAINER_STATE: dict[str, AppState] = {
    "created": AppState.SUBMITTED,
    "restarting": AppState.PENDING,
    "running": AppState.RUNNING,
    "paused": AppState.PENDING,
    "removing": AppState.PENDING,
    "dead": AppState.FAILED,
}
"""Docker container status -> replica state (``exited`` depends on the exit code)."""


@dataclass(frozen=True)
class ContainerInfo:
    """What describe needs of one container (read from its inspect data)."""

    name: str
    status: str
    exit_code: int
    role: str
    role_index: int
    replica_id: int
    session: str = ""


def container_state(status: str, exit_code: int) -> AppState:
    """Returns the replica state of a container.

    Args:
        status: the container's ``State.Status``.
        exit_code: its ``State.ExitCode``.
    """
    if status == "exited":
        return AppState.SUCCEEDED if exit_code == 0 else AppState.FAILED
    return CONTAINER_STATE.get(status, AppState.UNKNOWN)


def app_state(replicas: Iterable[AppState], cancelled: bool = False) -> AppState:
    """Returns the app state from its replicas' states (fail-fast, like ``local_cwd``).

    A cancelled app is CANCELLED; one FAILED replica makes the app FAILED even while others
    still run (the scheduler then stops them); all SUCCEEDED is SUCCEEDED; otherwise RUNNING
    if any replica runs, else the earliest state (SUBMITTED before PENDING).

    Args:
        replicas: the replica states.
        cancelled: the app was cancelled.
    """
    states = list(replicas)
    if cancelled:
        return AppState.CANCELLED
    if not states:
        return AppState.UNKNOWN
    if AppState.FAILED in states:
        return AppState.FAILED
    if all(s == AppState.SUCCEEDED for s in states):
        return AppState.SUCCEEDED
    if AppState.RUNNING in states or AppState.SUCCEEDED in states:
        return AppState.RUNNING
    pending = [s for s in states if not is_terminal(s)]
    return min(pending, key=lambda s: s.value) if pending else AppState.UNKNOWN
