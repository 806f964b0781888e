"""The Kubernetes API groups a mode's operations call, each made on first use."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["ModeClients"]


class ModeClients:
    """Lazy ``CoreV1Api``, ``BatchV1Api`` and ``CustomObjectsApi`` over ``self._api_client()``.

    The plain, Volcano and JobSet operations share them; the kubernetes SDK is imported on the
    first call, not when the scheduler module is.
    """

    _api_client: Callable[[], Any]

    @functools.cached_property
    def _core(self) -> Any:
        from kubernetes import client  # lazy: ~300 ms; runopts kubernetes skips it

        return client.CoreV1Api(self._api_client())

    @functools.cached_property
    def _batch(self) -> Any:
        from kubernetes import client  # lazy: ~300 ms; runopts kubernetes skips it

        return client.BatchV1Api(self._api_client())

    @functools.cached_property
    def _custom(self) -> Any:  # Volcano Jobs, JobSets, Kueue's Workloads
        from kubernetes import client  # lazy: ~300 ms; runopts kubernetes skips it

        return client.CustomObjectsApi(self._api_client())
