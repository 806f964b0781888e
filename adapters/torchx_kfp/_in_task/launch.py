"""What a launcher task runs: submit the app, then follow it with ``torchx.runner.follow``.

Every replica's log is streamed to the task log; SIGTERM (a KFP run cancelled, the pod
deleted) cancels the app before the task exits; a failed app fails the task with core's
failure message.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from torchx.runner import get_runner
from torchx.runner.follow import Follower, status_message
from torchx.runner.launch import LaunchRequest
from torchx.specs.api import VolumeMount
from torchx.specs.torchxconfig import TorchXConfig
from torchx.util.log_tee_helpers import replicas_of
from torchx.util.signals import Redelivery
from torchx_kfp._appjson import app_from_json
from torchx_kfp._errors import TorchXKfpAppError

if TYPE_CHECKING:
    from torchx.specs.api import AppStatus

__all__ = ["launch", "launch_request"]

Emit = Callable[[str], None]


def _print(line: str) -> None:
    print(line, flush=True)


def _arg(value: Any) -> str:
    """A run-time argument as text; KFP hands integers inside lists over as floats."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def launch_request(
    spec: Mapping[str, Any],
    params: Mapping[str, Any],
    scheduler: str,
    scheduler_cfg: str = "",
    parent_run_id: str = "",
    env: Optional[Mapping[str, Any]] = None,
) -> LaunchRequest:
    """Returns core's ``LaunchRequest`` for a launcher task's spec and run-time ``params``.

    Args:
        spec: ``{"component": name, "args": [...], "app": AppDef JSON, "overrides": {...}}``
            (``app`` is used when ``component`` is empty; overrides: ``image``,
            ``resource``, ``max_retries``).
        params: component parameters set at run time (``--name value`` before the args).
        scheduler: the TorchX scheduler.
        scheduler_cfg: its run options as ``k=v,k2=v2``.
        parent_run_id: the tracker parent run.
        env: variables set in every role's env (they beat the role's own values).
    """
    overrides = dict(spec.get("overrides") or {})
    common: dict[str, Any] = dict(
        scheduler=scheduler,
        cfg=scheduler_cfg or None,
        image=overrides.get("image") or None,
        resource=overrides.get("resource") or None,
        max_retries=overrides.get("max_retries"),
        parent_run_id=parent_run_id or None,
        env={str(k): str(v) for k, v in (env or {}).items()},
    )
    if spec.get("component"):
        head = [part for k, v in params.items() for part in (f"--{k}", _arg(v))]
        args = [*head, *(_arg(a) for a in spec.get("args") or [])]
        return LaunchRequest(component=str(spec["component"]), component_args=args, **common)
    if params:
        raise ValueError(
            f"launcher params {sorted(params)} need a component, but the task runs an AppDef"
        )

    return LaunchRequest(app=app_from_json(spec["app"]), **common)


@contextlib.contextmanager
def _environ(env: Mapping[str, Any]) -> Iterator[None]:
    """Sets ``env`` in ``os.environ`` (the runner reads tracker settings there); restores it."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update({k: str(v) for k, v in env.items()})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class _ExitOnTerm:
    """Turns SIGTERM into ``SystemExit(143)`` while installed (main thread only).

    Raised inside the follow loop, the exit cancels the app (``Follower`` cancels on any
    exception) before the task exits. A SIGTERM whose exit a finalizer swallowed is sent
    again every second until the exit leaves this block (then the ``Follower`` cancels).
    """

    def __init__(self, handle: str, emit: Emit) -> None:
        self._handle, self._emit = handle, emit
        self._old: Any = None
        self._redelivery = Redelivery(interval=1.0)

    def __enter__(self) -> _ExitOnTerm:
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGTERM, self._on_term)
        return self

    def __exit__(self, *exc: object) -> None:
        self._redelivery.acknowledge()
        if self._old is not None:
            signal.signal(signal.SIGTERM, self._old)

    def _on_term(self, signum: int, frame: object) -> None:
        if not self._redelivery.received(signal.Signals(signum)):
            return
        self._emit(f"task terminated: cancelling TorchX app {self._handle}")
        sys.exit(128 + signum)


class _ReasonLog:
    """Emits the reason an app gives while it waits (a pull error, Kueue's admission message).

    The follow loop calls it with each status whose state or message changed; a reason is
    emitted when it differs from the last one emitted.
    """

    def __init__(self, handle: str, emit: Emit) -> None:
        self._handle, self._emit = handle, emit
        self._last = ""

    def __call__(self, status: AppStatus) -> None:
        msg = status_message(status)
        if status.is_terminal() or not msg or msg == self._last:
            return
        self._last = msg
        self._emit(f"TorchX app {self._handle} is {status.state.name}: {msg}")


def _app_env(env: Mapping[str, Any], secret_env: Sequence[str]) -> dict[str, str]:
    """``env`` plus the launcher's own values of ``secret_env`` (set from secrets)."""
    out = {str(k): str(v) for k, v in env.items()}
    missing = [var for var in secret_env if var not in os.environ]
    if missing:
        raise ValueError(
            f"the launcher's env has no {', '.join(missing)}: the Kubernetes secret that sets"
            " it is missing a key, or the task runs without kfp-kubernetes (secrets=)"
        )
    out.update({var: os.environ[var] for var in secret_env})
    return out


def _with_service_account(scheduler_cfg: str, service_account: str) -> str:
    if not service_account:
        return scheduler_cfg
    extra = f"service_account={service_account}"
    return f"{scheduler_cfg},{extra}" if scheduler_cfg else extra


def _with_volume(request: LaunchRequest, app: Any, volume: tuple[str, str]) -> LaunchRequest:
    """``request`` for the built ``app`` with the claim mounted in every role."""
    claim, path = volume
    for role in app.roles:
        role.mounts = [*role.mounts, VolumeMount(src=claim, dst_path=path)]
    return dataclasses.replace(request, app=app, component=None, component_args=None)


def launch(
    spec: Mapping[str, Any],
    params: Mapping[str, Any],
    env: Mapping[str, str],
    scheduler: str,
    scheduler_cfg: str = "",
    parent_run_id: str = "",
    *,
    secret_env: Sequence[str] = (),
    service_account: str = "",
    volume: Optional[tuple[str, str]] = None,
    emit: Emit = _print,
    wait_interval: float = 5.0,
) -> str:
    """Submits the app, streams its logs and waits; returns its handle when it SUCCEEDED.

    ``env`` is set in the launcher's environment (tracker settings, ``TORCHXCONFIG``) and in
    every role's env, where it beats the role's own values (as ``LaunchRequest.env`` does).
    The discovered ``.torchxconfig`` gives ``[component:<name>]`` defaults, as for the CLI.
    The app is followed by ``torchx.runner.follow``: SIGTERM or any error while following
    cancels it; each new reason it gives while it waits (Kueue's admission message, a pull
    error) is emitted. ``secret_env`` names launcher env vars (set from Kubernetes secrets) that
    every role gets too; ``service_account`` becomes the scheduler's ``service_account``;
    ``volume`` (a claim and its mount path, which the launcher pod has) is mounted in every
    role's pods when the scheduler is ``kubernetes`` (other schedulers run the app inside the
    launcher's pod, where the claim already is).

    Raises:
        TorchXKfpAppError: the app ended FAILED or CANCELLED (the message starts with its
            structured error and ends with the failed replicas' last log lines), or vanished.
    """
    cfg = _with_service_account(scheduler_cfg, service_account)
    request = launch_request(spec, params, scheduler, cfg, parent_run_id, _app_env(env, secret_env))
    with _environ(env), get_runner(config=TorchXConfig.discover()) as runner:
        info = runner.dryrun_request(request)
        if volume and scheduler == "kubernetes":
            info = runner.dryrun_request(_with_volume(request, info.app, volume))
        handle = runner.schedule(info)
        emit(f"launched TorchX app {handle}")
        with (
            Follower(
                runner,
                handle,
                on_log=emit,
                on_status=_ReasonLog(handle, emit),
                replicas=replicas_of(info.app, None),
                app=info.app,
                log_prefix="[{role}/{replica}] ",
                wait_interval=wait_interval,
            ) as follower,
            _ExitOnTerm(handle, emit),
        ):
            result = follower.result()
        if not result.succeeded:
            raise TorchXKfpAppError(result.failure_message(), handle)
        emit(f"TorchX app {handle} SUCCEEDED")
        return handle
