"""Whether a deferred task's app can be followed by the triggerer, or must be awaited in the worker.

Apps of a host-local scheduler (``local_cwd``: a supervisor process and its replicas on the
worker's host) can only be followed and cancelled from that host: another host, or another
container such as the triggerer of a docker-compose stack, sees neither their processes nor,
usually, their TORCHX_HOME. So a deferrable operator does not defer such apps: it waits in the
worker and says why (:func:`wait_in_worker_reason`), unless ``[torchx] defer_local_apps`` is
true (``AIRFLOW__TORCHX__DEFER_LOCAL_APPS=true``: the triggerer shares the workers' host, as
with ``airflow standalone`` or ``airflow dags test``).

Deferring anyway is safe: the operator records where it launched the app
(:func:`host_identity`) in the trigger, and a trigger that finds itself elsewhere touches
nothing and hands the app back (:data:`WAIT_IN_WORKER`); the resumed task waits in the worker.
(Handing back at once races with the scheduler's bookkeeping of the deferring try on a busy
machine, hence the up-front decision.)

Airflow is imported only to read the configuration.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Optional

from airflow.sdk.configuration import conf

__all__ = [
    "HOST_LOCAL_SCHEDULERS",
    "WAIT_IN_WORKER",
    "handback_payload",
    "host_identity",
    "is_host_local",
    "needs_worker",
    "wait_in_worker_reason",
    "write_delays",
]

HOST_LOCAL_SCHEDULERS = frozenset({"local_cwd"})
WAIT_IN_WORKER = "wait_in_worker"
_WHY = "so the task waits for it in the worker instead"
# a local app still running this long after launch gets its own ``app_handle`` XCom; one that
# ended sooner has it in the result (one API round trip less for short tasks)
_HANDLE_PUSH_AFTER = 1.0
# a local app's handle goes to the task state store (re-attach) once it has run this long: an
# app that ends sooner is not worth an API round trip, and a retry simply launches it again
_STORE_AFTER = 0.05


def _read(path: str) -> str:
    try:
        if path.startswith("/proc/self/ns/"):
            return os.readlink(path)
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def host_identity() -> str:
    """Returns ``hostname/boot id/pid namespace``: equal only where local apps are visible.

    Two containers on one machine differ (hostname and pid namespace); two processes of one
    container or host are equal.
    """
    boot = _read("/proc/sys/kernel/random/boot_id")
    return f"{socket.gethostname()}/{boot}/{_read('/proc/self/ns/pid')}"


def is_host_local(app_handle: str) -> bool:
    """True for apps of a scheduler whose apps live on the launching host only."""
    return app_handle.partition("://")[0] in HOST_LOCAL_SCHEDULERS


def write_delays(app_handle: str) -> tuple[float, float]:
    """Seconds after launch for an app's re-attach record and its ``app_handle`` XCom.

    A short host-local app needs neither (it may end within milliseconds: the writes would
    cost more than the app). An app in containers or on a cluster takes longer to start than
    both writes: done at once they overlap its start, instead of landing when it may end (on
    Kubernetes a write at the 50 ms mark waited for the pod's first change, often its end, and
    then delayed seeing that end).
    """
    return (_STORE_AFTER, _HANDLE_PUSH_AFTER) if is_host_local(app_handle) else (0.0, 0.0)


def needs_worker(app_handle: str, worker_host: Optional[str]) -> bool:
    """True when this process cannot follow ``app_handle`` launched on ``worker_host``."""
    return bool(worker_host) and is_host_local(app_handle) and worker_host != host_identity()


def handback_payload(app_handle: str, worker_host: str) -> dict[str, Any]:
    """Returns the trigger event that sends the app back to be awaited in the worker."""
    scheduler = app_handle.partition("://")[0]
    return {
        "status": WAIT_IN_WORKER,
        "app_handle": app_handle,
        "message": (
            f"the triggerer ({socket.gethostname()}) is not on the host that runs {scheduler}"
            f" app {app_handle} ({worker_host.partition('/')[0]}): it can neither follow nor"
            f" cancel it from there, {_WHY}"
        ),
    }


def defer_local_apps() -> bool:
    """Returns ``[torchx] defer_local_apps`` (False when unset)."""
    return bool(conf.getboolean("torchx", "defer_local_apps", fallback=False))


def wait_in_worker_reason(app_handle: str) -> str:
    """Returns why a deferrable task waits for ``app_handle`` in the worker ("" to defer)."""
    if not is_host_local(app_handle) or defer_local_apps():
        return ""
    scheduler = app_handle.partition("://")[0]
    return (
        f"TorchX app {app_handle} runs on this worker's host ({scheduler}): a triggerer on another"
        f" host or container could neither follow nor cancel it, {_WHY} (set [torchx]"
        " defer_local_apps = True when the triggerer shares the workers' host)"
    )
