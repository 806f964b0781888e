"""Plain-mode submission: the dry-run check and the creation of the Service and the Jobs.

Every object created carries the submission's annotations (``_kubernetes.plain_partial``): how
many Jobs the app has, when submission started and how long it may take, so that ``describe``
tells an app whose submitter stopped half-way from one still being submitted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from torchx.schedulers._kubernetes.names import LABEL_ROLE_NAME
from torchx.schedulers._kubernetes.plain import PlainRequest, fill_rank0_ip
from torchx.schedulers._kubernetes.plain_partial import submission_annotations

__all__ = [
    "PARAM_SUBMIT_MARGIN",
    "RANK0_IP_TIMEOUT",
    "SUBMIT_MARGIN",
    "PlainSubmitter",
    "SubmitTiming",
    "api_exception",
    "representatives",
]

RANK0_IP_TIMEOUT = 600.0
"""Seconds ``pod_ip`` submission waits for rank 0's pod to get an IP (it may be queued)."""

SUBMIT_MARGIN = 60.0
"""Seconds submission takes at most besides that wait: creating the other Jobs, clock skew."""

PARAM_SUBMIT_MARGIN = "k8s_submit_margin"
"""Scheduler parameter (env ``TORCHX_K8S_SUBMIT_MARGIN``) overriding :data:`SUBMIT_MARGIN`."""


def api_exception() -> type[Exception]:
    """``kubernetes.client.rest.ApiException`` (imported on first use)."""
    from kubernetes.client.rest import (  # lazy: ~300 ms; runopts kubernetes skips it
        ApiException,
    )

    return ApiException


def _seconds(params: Mapping[str, Any], key: str, default: float) -> float:
    value = params.get(key)
    if value is None or value == "":
        return default
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if not seconds >= 0:
        raise ValueError(
            f"kubernetes scheduler parameter `{key}` (env TORCHX_{key.upper()}) must be a"
            f" number of seconds >= 0, got {value!r}"
        )
    return seconds


@dataclass(frozen=True)
class SubmitTiming:
    """How long plain-mode submission may take.

    Attributes:
        rank0_ip_timeout: the longest ``pod_ip`` submission waits for rank 0's pod IP.
        margin: the longest the rest of submission takes (recorded on the app: past it, an
            app with missing Jobs is half-created).
    """

    rank0_ip_timeout: float = RANK0_IP_TIMEOUT
    margin: float = SUBMIT_MARGIN

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> SubmitTiming:
        """From scheduler parameters (:data:`PARAM_SUBMIT_MARGIN`).

        Raises:
            ValueError: a value that is not a number of seconds >= 0 (one line naming it).
        """
        return cls(margin=_seconds(params, PARAM_SUBMIT_MARGIN, SUBMIT_MARGIN))


def representatives(jobs: list[Any]) -> list[Any]:
    """The last Job of each role (highest replica id), in role order."""
    last: dict[str, Any] = {}
    for job in jobs:
        last[(job.metadata.labels or {}).get(LABEL_ROLE_NAME, "")] = job
    return list(last.values())


class PlainSubmitter:
    """Creates a plain-mode app's objects.

    Args:
        batch: a ``BatchV1Api``.
        core: a ``CoreV1Api``.
        sleep: how to wait between polls.
        timing: the submission's time limits.
    """

    def __init__(
        self, batch: Any, core: Any, sleep: Callable[[float], None], timing: SubmitTiming
    ) -> None:
        self._batch, self._core, self._sleep, self._timing = batch, core, sleep, timing

    def validate(self, namespace: str, plain: PlainRequest) -> None:
        """Server-side dry-run create of the Service and one Job per role (nothing is stored).

        A role's Jobs differ only in their replica id (in names, labels and env values), so
        the role's last one, whose name is the longest, stands for all: one API call per role,
        not per replica.

        Raises:
            ValueError: the API server rejected an object (its reason).
        """
        try:
            self._core.create_namespaced_service(namespace, plain.service, dry_run="All")
            for job in representatives(plain.jobs):
                self._batch.create_namespaced_job(namespace, job, dry_run="All")
        except api_exception() as e:
            raise ValueError(f"Invalid job spec: {getattr(e, 'reason', e)}") from e

    def create(self, namespace: str, plain: PlainRequest, delete: Callable[[], None]) -> str:
        """Stamp and create the Service and the Jobs; with ``pod_ip`` rank 0 goes first.

        Args:
            namespace: where they go.
            plain: the request.
            delete: deletes what was created (called when creation fails).

        Returns:
            The app name.

        Raises:
            ValueError: the app already exists.
            RuntimeError: rank 0's pod got no IP in time (everything created is deleted).
        """
        self._stamp(plain)
        try:
            self._core.create_namespaced_service(namespace, plain.service)
        except api_exception() as e:
            if getattr(e, "status", None) == 409:
                raise ValueError(
                    f"Job `{plain.app_id}` already exists. This seems like a transient"
                    " exception, try resubmitting job"
                ) from e
            raise
        try:
            self._create_jobs(namespace, plain)
        except BaseException:
            delete()
            raise
        return plain.app_id

    def _stamp(self, plain: PlainRequest) -> None:
        roles: dict[str, int] = {}
        for job in plain.jobs:  # in role order
            role = (job.metadata.labels or {}).get(LABEL_ROLE_NAME, "")
            roles[role] = roles.get(role, 0) + 1
        by_ip = plain.rank0_address == "pod_ip" and len(plain.jobs) > 1
        wait = self._timing.rank0_ip_timeout if by_ip else 0.0
        stamp = submission_annotations(roles.items(), time.time(), wait, self._timing.margin)
        for obj in (plain.service, *plain.jobs):
            obj.metadata.annotations = {**(obj.metadata.annotations or {}), **stamp}

    def _create_jobs(self, ns: str, request: PlainRequest) -> None:
        first, rest = request.jobs[0], request.jobs[1:]
        self._batch.create_namespaced_job(ns, first)
        if rest and request.rank0_address == "pod_ip":
            ip = self._wait_pod_ip(ns, first.metadata.name, self._timing.rank0_ip_timeout)
            for job in rest:
                fill_rank0_ip(job, ip)
        for job in rest:
            self._batch.create_namespaced_job(ns, job)

    def _wait_pod_ip(self, namespace: str, job: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            pods = self._core.list_namespaced_pod(namespace, label_selector=f"job-name={job}")
            for pod in pods.items:
                if pod.status is not None and pod.status.pod_ip:
                    return str(pod.status.pod_ip)
                if pod.status is not None and pod.status.phase in ("Failed", "Succeeded"):
                    raise RuntimeError(
                        f"rank 0 pod {pod.metadata.name} ended ({pod.status.phase}) before it"
                        " got an IP; see `torchx log` for its output"
                    )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"rank 0 of Job {job} got no pod IP within {timeout:.0f} s (is it schedulable?"
                    " `kubectl describe job` shows why); with cluster DNS use rank0_address=dns"
                )
            self._sleep(0.2)
