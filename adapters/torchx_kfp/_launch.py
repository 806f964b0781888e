"""What a launcher task runs: submit the app, stream every replica's log, wait, report.

SIGTERM (a KFP run cancelled, the pod deleted) cancels the app before the task exits.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Optional

from torchx_kfp._errors import TorchXKfpAppError

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.specs.api import AppDef, AppStatus

__all__ = ["build_app", "launch"]

Emit = Callable[[str], None]


def _print(line: str) -> None:
    print(line, flush=True)


def build_app(spec: Mapping[str, Any], params: Mapping[str, Any]) -> AppDef:
    """Returns the AppDef of a launcher's spec with run-time ``params`` applied.

    Args:
        spec: ``{"component": name, "args": [...], "app": AppDef JSON, "overrides": {...}}``
            (``app`` is used when ``component`` is empty).
        params: component parameters set at run time.
    """
    overrides = spec.get("overrides") or {}
    if not spec.get("component"):
        if params:
            raise ValueError(
                f"launcher params {sorted(params)} need a component, but the task runs an AppDef"
            )
        from torchx_kfp._appjson import app_from_json

        app = app_from_json(spec["app"])
    else:
        from torchx.specs.builders import materialize_appdef
        from torchx.specs.finder import get_component

        head = [part for k, v in params.items() for part in (f"--{k}", _arg(v))]
        fn = get_component(spec["component"]).fn
        args = [_arg(a) for a in spec.get("args") or []]
        app = materialize_appdef(fn, [*head, *args], None, None)
    _override(app, overrides)
    return app


def _arg(value: Any) -> str:
    """A run-time argument as text; KFP hands integers inside lists over as floats."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _override(app: AppDef, overrides: Mapping[str, Any]) -> None:
    for role in app.roles:
        if overrides.get("image"):
            role.image = overrides["image"]
        if overrides.get("resource"):
            from torchx.specs import resource

            role.resource = resource(h=overrides["resource"])
        if overrides.get("max_retries") is not None:
            role.max_retries = int(overrides["max_retries"])


def _follow(runner: Runner, handle: str, role: str, k: int, emit: Emit) -> None:
    try:
        for line in runner.log_lines(handle, role, k, should_tail=True):
            emit(f"[{role}/{k}] {line.rstrip()}")
    except Exception as e:  # a log problem never fails the task
        emit(f"[{role}/{k}] (logs unavailable: {type(e).__name__}: {e})")


def _stream(runner: Runner, handle: str, app: AppDef, emit: Emit) -> list[threading.Thread]:
    threads = [
        threading.Thread(target=_follow, args=(runner, handle, r.name, k, emit), daemon=True)
        for r in app.roles
        for k in range(r.num_replicas)
    ]
    for thread in threads:
        thread.start()
    return threads


def _failure(handle: str, status: Optional[AppStatus]) -> str:
    if status is None:
        return f"TorchX app {handle} no longer exists (purged by its scheduler?)"
    summary = ""
    try:
        from torchx.specs.api import AppStatus as _Status

        summary = _Status.error_summary(status)
    except AttributeError:  # torchx before AppStatus.error_summary
        summary = _error_line(status.structured_error_msg) or (status.msg or "").strip()
    head = f"TorchX app {handle} ended {status.state.name}"
    return f"{head}: {summary}\n{status.format()}" if summary else f"{head}\n{status.format()}"


def _error_line(structured: str) -> str:
    if not structured or structured == "<NONE>":
        return ""
    try:
        message: Any = json.loads(structured).get("message", "")
    except (ValueError, AttributeError):
        message = structured
    if isinstance(message, dict):
        message = message.get("message", "")
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    return lines[-1] if lines else ""


class _CancelOnTerm:
    """Cancels the app on SIGTERM while installed (main thread only), then exits 143."""

    def __init__(self, runner: Runner, handle: str, emit: Emit) -> None:
        self._runner, self._handle, self._emit = runner, handle, emit
        self._old: Any = None

    def __enter__(self) -> _CancelOnTerm:
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGTERM, self._on_term)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._old is not None:
            signal.signal(signal.SIGTERM, self._old)

    def _on_term(self, signum: int, frame: object) -> None:
        self._emit(f"task terminated: cancelling TorchX app {self._handle}")
        self._runner.cancel(self._handle)
        sys.exit(128 + signum)


def launch(
    spec: Mapping[str, Any],
    params: Mapping[str, Any],
    env: Mapping[str, str],
    scheduler: str,
    scheduler_cfg: str = "",
    parent_run_id: str = "",
    *,
    emit: Emit = _print,
    wait_interval: float = 5.0,
) -> str:
    """Submits the app, streams its logs and waits; returns its handle when it SUCCEEDED.

    Raises:
        TorchXKfpAppError: the app ended FAILED or CANCELLED (the message starts with its
            structured error), or vanished.
    """
    from torchx.runner import get_runner

    os.environ.update({k: str(v) for k, v in env.items()})
    app = build_app(spec, params)
    with get_runner() as runner:
        cfg = runner.cfg_from_str(scheduler, scheduler_cfg) if scheduler_cfg else {}
        info = runner.dryrun(app, scheduler, cfg, parent_run_id=parent_run_id or None)
        handle = runner.schedule(info)
        emit(f"launched TorchX app {handle}")
        with _CancelOnTerm(runner, handle, emit):
            threads = _stream(runner, handle, info.app or app, emit)
            status = runner.wait(handle, wait_interval=wait_interval)
            for thread in threads:
                thread.join(10.0)
        if status is None or status.state.name != "SUCCEEDED":
            raise TorchXKfpAppError(_failure(handle, status), handle)
        emit(f"TorchX app {handle} SUCCEEDED")
        return handle
