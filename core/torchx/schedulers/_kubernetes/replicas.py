"""Per-replica roles: macros substituted and the torchx env added (shared by both modes)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from torchx.schedulers._kubernetes.names import ENV_TORCHX_IMAGE, ENV_TORCHX_RANK0_HOST, task_name
from torchx.schedulers._replica_roles import apply_macros
from torchx.settings import ENV_TORCHX_JOB_ID
from torchx.specs.api import AppDef, Role, macros

__all__ = ["Replica", "iter_replicas", "qualify_job_id"]


@dataclass(frozen=True)
class Replica:
    """One replica of one role, ready to become a pod.

    Attributes:
        role_idx: index of the role in ``app.roles``.
        role: the role as the user wrote it (labels and overlays read this one).
        replica_id: index within the role.
        name: the task/container name, ``normalize_str(f"{role.name}-{replica_id}")``.
        materialized: a shallow copy of ``role`` with macros substituted (as
            ``macros.Values.apply``) and the torchx env added.
    """

    role_idx: int
    role: Role
    replica_id: int
    name: str
    materialized: Role


def iter_replicas(
    app: AppDef, app_id: str, rank0_env: str, rank0_host: str = "localhost"
) -> Iterator[Replica]:
    """Yield every replica of every role, in role order.

    Role 0 replica 0 gets ``${rank0_env}`` = ``TORCHX_RANK0_HOST`` and that variable set to
    ``rank0_host``; every other replica gets ``rank0_env`` (the name of a variable the
    cluster sets to the rank-0 host). Every replica gets ``TORCHX_IMAGE``.

    Args:
        app: the application.
        app_id: the value of ``${app_id}`` (the unique job name).
        rank0_env: the name substituted for ``${rank0_env}`` outside rank 0.
        rank0_host: the value of ``TORCHX_RANK0_HOST`` in rank 0.

    Yields:
        The replicas.
    """
    for role_idx, role in enumerate(app.roles):
        for replica_id in range(role.num_replicas):
            is_rank0 = role_idx == 0 and replica_id == 0
            values = macros.Values(
                img_root="",
                app_id=app_id,
                replica_id=str(replica_id),
                rank0_env=ENV_TORCHX_RANK0_HOST if is_rank0 else rank0_env,
            )
            materialized = apply_macros(values, role)
            if is_rank0:
                materialized.env[ENV_TORCHX_RANK0_HOST] = rank0_host
            materialized.env[ENV_TORCHX_IMAGE] = materialized.image
            yield Replica(
                role_idx, role, replica_id, task_name(role.name, replica_id), materialized
            )


def qualify_job_id(env: dict[str, str], app_id: str, namespace: str) -> None:
    """Completes ``TORCHX_JOB_ID`` in ``env`` to the app's handle (``.../{namespace}:{app_id}``).

    The runner sets it to ``{scheduler}://{session}/${app_id}``, but a kubernetes app id is
    ``{namespace}:{name}`` while ``${app_id}`` is only the name; a value that does not end in
    ``/{app_id}`` is left alone.
    """
    job_id = env.get(ENV_TORCHX_JOB_ID, "")
    if job_id.endswith(f"/{app_id}"):
        env[ENV_TORCHX_JOB_ID] = f"{job_id[: -len(app_id)]}{namespace}:{app_id}"
