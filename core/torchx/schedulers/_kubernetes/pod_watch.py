"""Waiting for a change of some pods with a watch instead of a polling loop (plain mode).

A watch from the ``resourceVersion`` of the list the caller just read returns at the first
change after that list, so nothing between the read and the watch is missed, and the caller
learns of a change at once instead of at its next poll. The API server's ``timeoutSeconds``
is whole seconds (at least 1), so a shorter wait may last up to a second, or until the
change. A watch that cannot run (e.g. ``410 Gone`` for an expired ``resourceVersion``) falls
back to one short sleep; the caller reads again in either case. Only the client's errors are
caught: an interruption (``torchx``'s ``SignalException`` on SIGTERM/SIGINT) propagates.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["FALLBACK_SLEEP", "MAX_WATCH_SECONDS", "await_pod_change"]

MAX_WATCH_SECONDS = 10
"""The longest single watch; a longer wait is several, each after a fresh read by the caller."""

FALLBACK_SLEEP = 0.25
"""Seconds slept instead when the watch fails."""


def await_pod_change(
    core: Any,
    namespace: str,
    selector: str,
    resource_version: str,
    timeout: float,
    sleep: Callable[[float], None],
) -> None:
    """Blocks until a pod matching ``selector`` changes after ``resource_version``, or timeout.

    Args:
        core: a ``CoreV1Api``.
        namespace: the pods' namespace.
        selector: their label selector.
        resource_version: the ``metadata.resource_version`` of the caller's pod list.
        timeout: seconds to wait at most (rounded up to whole seconds, at most
            :data:`MAX_WATCH_SECONDS`).
        sleep: sleeps that many seconds (injected for tests).
    """
    import urllib3  # lazy: urllib3 ~70 ms; runopts kubernetes skips it
    from kubernetes import watch  # lazy: ~300 ms; runopts kubernetes skips it
    from kubernetes.client.exceptions import (  # lazy: ~300 ms; runopts kubernetes skips it
        ApiException,
    )

    seconds = max(1, min(math.ceil(timeout), MAX_WATCH_SECONDS))
    stream = watch.Watch().stream(
        core.list_namespaced_pod,
        namespace,
        label_selector=selector,
        resource_version=resource_version,
        timeout_seconds=seconds,
    )
    try:
        for _ in stream:
            return
    except (ApiException, urllib3.exceptions.HTTPError, OSError):  # the client's errors only:
        sleep(FALLBACK_SLEEP)  # an expired version, a dropped connection: poll once instead
    finally:
        stream.close()
