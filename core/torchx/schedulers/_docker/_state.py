"""Container state -> TorchX state for ``local_docker`` (pure: works on plain values)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from torchx.specs.api import AppState, ReplicaStatus, Role, RoleStatus, is_terminal

__all__ = [
    "CONTAINER_STATE",
    "ContainerInfo",
    "app_state",
    "container_state",
    "failure_msg",
    "roles_from_containers",
    "signature",
]

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
    retries: int = 0
    labels: tuple[tuple[str, str], ...] = ()
    """The app labels (``torchx.schedulers.labels``) the container carries."""
    role_replicas: str = ""
    """``role=n,...`` of the whole app, recorded at submission (``_partial``)."""
    submitter: str = ""
    """The submitting process (``torchx.util.host.process_ident``)."""
    submitted_at: float = 0.0
    """When submission started (seconds since the epoch)."""


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
    still run (``enforce_fail_fast`` stops them); all SUCCEEDED is SUCCEEDED; otherwise RUNNING
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


def signature(infos: list[tuple[str, ContainerInfo]]) -> tuple[tuple[str, str, int], ...]:
    """Returns what identifies the containers' observable state (for change detection)."""
    return tuple((i.name, i.status, i.exit_code) for _, i in infos)


def failure_msg(infos: list[tuple[str, ContainerInfo]], states: list[AppState]) -> str:
    """Returns the message naming the first failed replica, or ``""``."""
    failed = [i for (_, i), s in zip(infos, states, strict=True) if s == AppState.FAILED]
    if not failed:
        return ""
    first = failed[0]
    where = f"{first.role}/{first.replica_id} ({first.name})"
    return f"replica {where} exited with code {first.exit_code}"


def roles_from_containers(
    infos: list[tuple[str, ContainerInfo]], states: list[AppState]
) -> tuple[list[Role], list[RoleStatus]]:
    """Rebuilds the roles (name and replica count) and their replica statuses."""
    roles: dict[str, Role] = {}
    statuses: dict[str, RoleStatus] = {}
    for (_, info), state in zip(infos, states, strict=True):
        role = roles.setdefault(info.role, Role(name=info.role, image="", num_replicas=0))
        role.num_replicas += 1
        status = statuses.setdefault(info.role, RoleStatus(info.role, []))
        status.replicas.append(ReplicaStatus(info.replica_id, state, info.role, info.name))
    return list(roles.values()), list(statuses.values())
