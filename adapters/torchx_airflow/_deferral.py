"""Whether the triggerer can follow an app, or the deferred task must wait in the worker.

Apps of a host-local scheduler (``local_cwd``: a supervisor process and its replicas on the
worker's host) can only be followed and cancelled from that host: another host, or another
container such as the triggerer of a docker-compose stack, sees neither their processes nor,
usually, their TORCHX_HOME. The operator records where it launched the app
(:func:`host_identity`) in the trigger; a trigger that finds itself elsewhere touches nothing
and hands the app back (:data:`WAIT_IN_WORKER`), and the resumed task waits in the worker,
where ``on_kill`` still cancels the app. Where the triggerer shares the worker's host
(``airflow standalone``, ``dag.test()``), deferral works as usual.

No Airflow import.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Optional

__all__ = [
    "HOST_LOCAL_SCHEDULERS",
    "WAIT_IN_WORKER",
    "handback_payload",
    "host_identity",
    "is_host_local",
    "needs_worker",
]

HOST_LOCAL_SCHEDULERS = frozenset({"local_cwd"})
WAIT_IN_WORKER = "wait_in_worker"


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
            " cancel it from there, so the task waits for it in the worker instead"
        ),
    }
