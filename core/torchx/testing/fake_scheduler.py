"""``FakeScheduler``: an in-memory scheduler that plays back the suite apps' described behaviour.

Nothing runs: each replica follows ``role.metadata["torchx.testing"]`` (see
:func:`torchx.testing.make_app`) on the clock: it is SUBMITTED, PENDING, then RUNNING for its
``seconds``, then ends with its ``exit_code``, failing its first ``fail_first`` attempts when the
role allows retries. It has the local schedulers' semantics (fail-fast, sticky CANCELLED), so
it passes :class:`torchx.testing.SchedulerTestSuite`, and it is a starting point for a plugin
author's own fakes (Runner, CLI or orchestrator tests without a backend).
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    filter_regex,
)
from torchx.schedulers.ids import make_unique
from torchx.specs.api import (
    AppDef,
    AppDryRunInfo,
    AppState,
    CfgVal,
    ReplicaStatus,
    RoleStatus,
    is_terminal,
    macros,
)
from torchx.testing._apps import BEHAVIOUR_KEY

__all__ = ["FakeScheduler", "create_scheduler"]

_START_DELAY = 0.05  # SUBMITTED -> PENDING -> RUNNING


@dataclass
class _Replica:
    role: str
    rid: int
    spec: dict[str, Any]
    retries: int
    ended_at: Optional[float] = None  # set by fail-fast or cancel

    def attempts(self) -> int:
        return min(int(self.spec.get("fail_first", 0)), self.retries) + 1

    def end_time(self, start: float) -> float:
        """When the last attempt ends (each failed attempt ends at once)."""
        natural = start + _START_DELAY + float(self.spec.get("seconds", 0.0))
        return min(natural, self.ended_at) if self.ended_at is not None else natural

    def state(self, start: float, now: float) -> AppState:
        if now < start + _START_DELAY / 2:
            return AppState.SUBMITTED
        if now < start + _START_DELAY:
            return AppState.PENDING
        if now < self.end_time(start):
            return AppState.RUNNING
        if self.ended_at is not None and self.ended_at < start + _START_DELAY + float(
            self.spec.get("seconds", 0.0)
        ):
            return AppState.FAILED  # stopped early
        failed = int(self.spec.get("exit_code", 0)) != 0 or self.attempts() <= int(
            self.spec.get("fail_first", 0)
        )
        return AppState.FAILED if failed else AppState.SUCCEEDED


@dataclass
class _FakeApp:
    app_id: str
    name: str
    replicas: list[_Replica]
    start: float = field(default_factory=time.monotonic)
    cancelled_at: Optional[float] = None

    def states(self, now: float) -> list[AppState]:
        return [r.state(self.start, now) for r in self.replicas]

    def state(self, now: float) -> AppState:
        states = self.states(now)
        if self.cancelled_at is not None:
            return AppState.CANCELLED
        if AppState.FAILED in states:
            for r in self.replicas:  # fail-fast
                if not is_terminal(r.state(self.start, now)):
                    r.ended_at = now
            return AppState.FAILED
        if all(s == AppState.SUCCEEDED for s in states):
            return AppState.SUCCEEDED
        return max((s for s in states if not is_terminal(s)), key=lambda s: s.value)


class FakeScheduler(Scheduler[Mapping[str, CfgVal]]):
    """An in-memory scheduler (backend ``fake``) for tests; apps live as long as the instance.

    Args:
        session_name: the session name.
    """

    def __init__(self, session_name: str) -> None:
        super().__init__("fake", session_name)
        self._apps: dict[str, _FakeApp] = {}
        self._lock = threading.Lock()

    def _submit_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> AppDryRunInfo[tuple[str, AppDef]]:
        return AppDryRunInfo((make_unique(app.name), app), lambda r: f"fake request {r[0]}")

    def schedule(self, dryrun_info: AppDryRunInfo[tuple[str, AppDef]]) -> str:
        """Records the app; its replicas start playing back their behaviour now."""
        app_id, app = dryrun_info.request
        replicas = []
        for role in app.roles:
            for i in range(role.num_replicas):
                values = macros.Values(img_root="", app_id=app_id, replica_id=str(i), rank0_env="")
                specs = values.apply(role).metadata.get(BEHAVIOUR_KEY) or []
                spec = specs[i] if i < len(specs) else {}
                replicas.append(_Replica(role.name, i, dict(spec), role.max_retries))
        with self._lock:
            self._apps[app_id] = _FakeApp(app_id, app.name, replicas)
        return app_id

    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        """Describes an app of this instance; None if unknown or deleted."""
        with self._lock:
            app = self._apps.get(app_id)
            if app is None:
                return None
            now = time.monotonic()
            state = app.state(now)
            statuses: dict[str, RoleStatus] = {}
            for r in app.replicas:
                rs = statuses.setdefault(r.role, RoleStatus(r.role, []))
                host = f"{app_id}-{r.role}-{r.rid}"
                rs.replicas.append(ReplicaStatus(r.rid, r.state(app.start, now), r.role, host))
            restarts = sum(r.attempts() - 1 for r in app.replicas if now >= app.start)
            return DescribeAppResponse(
                app_id=app_id,
                state=state,
                num_restarts=restarts,
                roles_statuses=list(statuses.values()),
            )

    def list(self, cfg: Optional[Mapping[str, CfgVal]] = None) -> builtins.list[ListAppResponse]:
        """Lists this instance's apps, oldest first."""
        with self._lock:
            now = time.monotonic()
            return [
                ListAppResponse(
                    a.app_id, a.state(now), f"fake://{self.session_name}/{a.app_id}", a.name
                )
                for a in self._apps.values()
            ]

    def _handle(self, app_id: str) -> str:
        return f"fake://{self.session_name}/{app_id}"

    def _cancel_existing(self, app_id: str) -> None:
        with self._lock:
            app = self._apps[app_id]
            now = time.monotonic()
            if is_terminal(app.state(now)):
                return
            app.cancelled_at = now
            for r in app.replicas:
                if not is_terminal(r.state(app.start, now)):
                    r.ended_at = now

    def _delete_existing(self, app_id: str) -> None:
        with self._lock:
            self._apps.pop(app_id, None)

    def wait_for_change(self, app_id: str, timeout: float) -> None:
        """Sleeps a little (states change on the clock)."""
        time.sleep(min(max(0.0, timeout), 0.02))

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: Optional[str] = None,
        since: Optional[datetime] = None,
        until: Optional[datetime] = None,
        should_tail: bool = False,
        streams: Optional[Stream] = None,
    ) -> Iterable[str]:
        """Yields the replica's described output (all of it once the replica started).

        Raises:
            ValueError: no such app, role or replica.
        """
        with self._lock:
            app = self._apps.get(app_id)
            replica = next(
                (r for r in (app.replicas if app else []) if r.role == role_name and r.rid == k),
                None,
            )
        if app is None or replica is None:
            raise ValueError(f"app {app_id} has no replica {k} of role `{role_name}`")
        lines = self._lines(app, replica, streams, should_tail)
        return filter_regex(regex, lines) if regex else lines

    def _lines(
        self, app: _FakeApp, replica: _Replica, streams: Optional[Stream], tail: bool
    ) -> Iterator[str]:
        out = [f"{line}\n" for line in replica.spec.get("stdout", [])]
        err = [f"{line}\n" for line in replica.spec.get("stderr", [])]
        chosen = out if streams == Stream.STDOUT else err if streams == Stream.STDERR else out + err
        if not tail:
            yield from chosen
            return
        # tailing: the first line once started, the rest when the replica ends
        while replica.state(app.start, time.monotonic()) in (AppState.SUBMITTED, AppState.PENDING):
            time.sleep(0.01)
        yield from chosen[:1]
        while not is_terminal(replica.state(app.start, time.monotonic())):
            time.sleep(0.01)
        yield from chosen[1:]


def create_scheduler(session_name: str, **kwargs: Any) -> FakeScheduler:
    """Creates a :class:`FakeScheduler` (a scheduler plugin factory; kwargs are ignored)."""
    return FakeScheduler(session_name)
