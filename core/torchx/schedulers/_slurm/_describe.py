"""``squeue --json`` jobs and ``sacct`` rows -> ``DescribeAppResponse`` / ``ListAppResponse``. Pure.

Each replica is one heterogeneous component named ``{role}-{replica_id}``. ``squeue`` knows a
job while it is queued or running and for ``MinJobAge`` seconds after; ``sacct`` knows it for
good and has one row per srun step, which tells the replica that failed from those that were
stopped because of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from torchx.schedulers._api_types import DescribeAppResponse, ListAppResponse
from torchx.schedulers._slurm._states import (
    appstate_from_slurm_state,
    get_appstate_from_job,
    pending_msg,
)
from torchx.specs.api import AppState, ReplicaStatus, Role, RoleStatus, is_terminal

__all__ = [
    "SACCT_FIELDS",
    "Component",
    "components_from_sacct",
    "components_from_squeue",
    "describe",
    "list_from_sacct",
    "list_from_squeue",
    "merge_steps",
]

SACCT_FIELDS = "JobID,JobName,State,ExitCode,NodeList,WorkDir,Reason,Comment"
"""The ``sacct --format`` the parsers below read (``--parsable2 --noheader``)."""


@dataclass
class Component:
    """One replica as Slurm reports it."""

    offset: int
    name: str
    state: str
    reason: str = ""
    nodes: str = ""
    workdir: str = ""
    restarts: int = 0
    exit_code: str = ""
    step_state: str = ""  # the replica's srun step (sacct only): tells failed from stopped
    comment: str = ""  # the job comment (where the app's labels are)

    @property
    def app_state(self) -> AppState:
        """The component's (job-level) TorchX state."""
        return appstate_from_slurm_state(self.state)

    @property
    def replica_state(self) -> AppState:
        """The replica's state: its step's once it has ended, else the component's."""
        if self.step_state:
            step = appstate_from_slurm_state(self.step_state)
            if is_terminal(step):
                return step
        return self.app_state


def _int(value: Any) -> int:
    if isinstance(value, dict):  # newer Slurm: {"set": true, "number": n}
        value = value.get("number", 0)
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def components_from_squeue(jobs: Iterable[Mapping[str, Any]], app_id: str) -> list[Component]:
    """The components of job ``app_id`` among ``squeue --json``'s jobs (which may hold others)."""
    out = []
    for job in jobs:
        het = _int(job.get("het_job_id"))
        if str(het or _int(job.get("job_id"))) != app_id:
            continue
        state = job.get("job_state")
        out.append(
            Component(
                offset=_int(job.get("het_job_offset")),
                name=str(job.get("name", "")),
                state=str(state[0] if isinstance(state, list) and state else state),
                reason=str(job.get("state_reason", "") or ""),
                nodes=str(job.get("nodes", "") or ""),
                workdir=str(job.get("current_working_directory", "") or ""),
                restarts=_int(job.get("restart_cnt")),
                comment=str(job.get("comment", "") or ""),
            )
        )
    return sorted(out, key=lambda c: c.offset)


def _split_job_id(job_id: str) -> tuple[str, int, Optional[str]]:
    """``"7+1.0"`` -> ``("7", 1, "0")``; ``"7.batch"`` -> ``("7", 0, "batch")``."""
    alloc, _, step = job_id.partition(".")
    leader, _, offset = alloc.partition("+")
    return leader, int(offset) if offset.isdigit() else 0, step or None


def components_from_sacct(lines: Iterable[str], app_id: str) -> tuple[list[Component], int]:
    """The components of the last attempt of ``app_id`` and the number of restarts.

    Args:
        lines: ``sacct -D --parsable2 --noheader --format=SACCT_FIELDS`` output lines.
        app_id: the job id.

    Returns:
        ``(components, restarts)``; each requeue starts a new attempt (component 0 again).
    """
    attempts: list[dict[int, Component]] = []
    for line in lines:
        cols = line.rstrip("\n").split("|")
        if len(cols) < 7:
            continue
        job_id, name, state, exit_code, nodes, workdir, reason = cols[:7]
        leader, offset, step = _split_job_id(job_id)
        if leader != app_id:
            continue
        if step is None:
            if not attempts or offset in attempts[-1]:
                attempts.append({})
            attempts[-1][offset] = Component(
                offset, name, state, reason, nodes, workdir, exit_code=exit_code,
                comment="|".join(cols[7:]),  # last: a comment may hold `|`
            )  # fmt: skip
        elif step.isdigit() and attempts and offset in attempts[-1]:
            attempts[-1][offset].step_state = state  # the last srun step wins
            attempts[-1][offset].exit_code = exit_code
    if not attempts:
        return [], 0
    comps = sorted(attempts[-1].values(), key=lambda c: c.offset)
    for c in comps:
        c.restarts = len(attempts) - 1
    return comps, len(attempts) - 1


def merge_steps(live: list[Component], done: list[Component]) -> list[Component]:
    """``squeue``'s components of an ended job with ``sacct``'s step states and restarts.

    ``sacct`` may still hold a placeholder for a job that just ended (job name ``allocation``,
    no directory): only a component with the same offset and name contributes its steps.
    """
    by_offset = {c.offset: c for c in done}
    for c in live:
        d = by_offset.get(c.offset)
        if d is not None and d.name == c.name:
            c.step_state, c.exit_code, c.restarts = d.step_state, d.exit_code, d.restarts
    return live


def _exited_nonzero(exit_code: str) -> bool:
    """Whether sacct's ``code:signal`` says the process itself exited with a non-zero code."""
    code, _, _ = exit_code.partition(":")
    return code.strip() not in ("", "0")


def _app_msg(state: AppState, comps: list[Component]) -> str:
    if state == AppState.PENDING:
        return pending_msg(comps[0].reason or "None")
    if state == AppState.FAILED:
        failed = [c for c in comps if c.replica_state == AppState.FAILED and c.step_state]
        # the replica that exited non-zero first, before one that --kill-on-bad-exit stopped
        failed.sort(key=lambda c: not _exited_nonzero(c.exit_code))
        culprit = failed[0] if failed else comps[0]
        code = f" exit code {culprit.exit_code}" if culprit.exit_code else ""
        return (
            f"{comps[0].state}: replica {culprit.name} {culprit.step_state or culprit.state}{code}"
        )
    return ""


def describe(
    app_id: str, comps: list[Component], state: Optional[AppState] = None
) -> Optional[DescribeAppResponse]:
    """Builds the description of an app from its components (None if it has none).

    Args:
        app_id: the job id.
        comps: its components (from ``squeue`` or ``sacct``), in offset order.
        state: the app state when known better than component 0's (``squeue`` while ``sacct``
            lags behind).
    """
    if not comps:
        return None
    app_state = state if state is not None else comps[0].app_state
    roles: dict[str, Role] = {}
    statuses: dict[str, RoleStatus] = {}
    for c in comps:
        role_name, _, replica = c.name.rpartition("-")
        if not role_name or not replica.isdigit():
            continue  # not a torchx-launched component
        role = roles.setdefault(role_name, Role(name=role_name, image=c.workdir, num_replicas=0))
        role.num_replicas += 1
        rstate = c.replica_state if is_terminal(app_state) else c.app_state
        statuses.setdefault(role_name, RoleStatus(role_name, [])).replicas.append(
            ReplicaStatus(id=int(replica), state=rstate, role=role_name, hostname=c.nodes)
        )
    resp = DescribeAppResponse(
        app_id=app_id,
        state=app_state,
        num_restarts=max(c.restarts for c in comps),
        roles=list(roles.values()),
        roles_statuses=list(statuses.values()),
    )
    resp.msg = _app_msg(app_state, comps) or resp.msg
    return resp


def list_from_sacct(lines: Iterable[str], session: str) -> list[ListAppResponse]:
    """``sacct -X --parsable2 --noheader --format=JobID,JobName,State`` -> one entry per job."""
    apps: dict[str, ListAppResponse] = {}
    for line in lines:
        cols = line.rstrip("\n").split("|")
        if len(cols) < 3:
            continue
        leader, offset, step = _split_job_id(cols[0])
        if step is not None or offset != 0 or not leader.isdigit():
            continue
        apps[leader] = ListAppResponse(
            app_id=leader,
            state=appstate_from_slurm_state(cols[2]),
            app_handle=f"slurm://{session}/{leader}",
            name=cols[1],
        )
    return list(apps.values())


def list_from_squeue(jobs: Iterable[Mapping[str, Any]], session: str) -> list[ListAppResponse]:
    """``squeue --json`` jobs -> one entry per job (heterogeneous components folded)."""
    out = []
    for job in jobs:
        job_id = _int(job.get("job_id"))
        het = _int(job.get("het_job_id"))
        if het and het != job_id:
            continue
        out.append(
            ListAppResponse(
                app_id=str(job_id),
                state=get_appstate_from_job(job),
                app_handle=f"slurm://{session}/{job_id}",
                name=str(job.get("name", "")),
            )
        )
    return out
