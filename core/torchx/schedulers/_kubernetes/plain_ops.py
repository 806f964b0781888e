"""Plain mode on the API server through an ``ApiClient`` getter (see ``_kubernetes.modes``).

Plain mode has no controller of its own, so the scheduler applies two rules. A failed replica
fails the app (``describe``, a read, reports FAILED at once); stopping the other replicas is
the explicit :meth:`PlainOps.enforce_fail_fast` (``Runner.wait`` calls it once it sees FAILED):
their Jobs get ``parallelism: 0``, which makes the Job controller delete their pods, and the
``stopped: peer-failed`` annotation. Cancel does the same with ``stopped: cancelled`` and keeps
the Jobs, so the app reads CANCELLED until deleted.
"""

from __future__ import annotations

import builtins
import functools
import time
from collections.abc import Callable
from typing import Any, Optional

from torchx.schedulers._kubernetes.clients import ModeClients
from torchx.schedulers._kubernetes.kueue import deactivate_queued, queue_note
from torchx.schedulers._kubernetes.modes import PodFactory
from torchx.schedulers._kubernetes.names import (
    LABEL_ORGANIZATION,
    LABEL_REPLICA_ID,
    LABEL_ROLE_NAME,
    LABEL_UNIQUE_NAME,
    task_name,
)
from torchx.schedulers._kubernetes.plain import (
    ANNOTATION_STOPPED,
    LABEL_MODE,
    MODE_LABEL_VALUE,
    PlainJob,
    PlainRequest,
    app_to_plain,
    job_name,
    service_name,
)
from torchx.schedulers._kubernetes.plain_partial import Partial, add_missing, check
from torchx.schedulers._kubernetes.plain_policy import apply_policies
from torchx.schedulers._kubernetes.plain_status import (
    ReplicaView,
    app_names,
    app_state,
    failure,
    newest_pods,
    num_restarts,
    replica_errors,
    replica_state,
    replica_views,
    role_statuses,
    roles,
    waiting_status,
)
from torchx.schedulers._kubernetes.plain_submit import (
    RANK0_IP_TIMEOUT,
    PlainSubmitter,
    SubmitTiming,
    api_exception,
)
from torchx.schedulers._kubernetes.pod_watch import await_pod_change
from torchx.schedulers._kubernetes.request import KubernetesJob
from torchx.schedulers._kubernetes.settings import Settings
from torchx.schedulers._kubernetes.startup import (
    ANNOTATION_STOPPED_REASON,
    STARTUP_FAILED,
    plain_startup,
)
from torchx.schedulers._kubernetes.unstarted import delete_unstarted_pods
from torchx.schedulers._kubernetes.waiting import events_reader
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse
from torchx.schedulers.labels import app_labels
from torchx.specs.api import NONE, AppDef, AppState, is_terminal

__all__ = ["PlainOps", "RANK0_IP_TIMEOUT"]

_SELECTOR = f"{LABEL_ORGANIZATION}=torchx.pytorch.org,{LABEL_MODE}={MODE_LABEL_VALUE}"


def app_selector(name: str) -> str:
    """The label selector of every Job, pod and Service of plain-mode app ``name``."""
    return f"{LABEL_UNIQUE_NAME}={name},{LABEL_MODE}={MODE_LABEL_VALUE}"


class PlainOps(ModeClients):
    """Build, create, read, stop and delete plain-mode apps.

    Args:
        api_client: returns a configured ``kubernetes.client.ApiClient`` (called on first use).
        sleep: how to wait between polls (tests may pass a faster one).
        timing: how long submission may take (recorded on the app, see ``plain_partial``);
            None: the defaults.
    """

    def __init__(
        self,
        api_client: Callable[[], Any],
        sleep: Callable[[float], None] = time.sleep,
        timing: Optional[SubmitTiming] = None,
    ) -> None:
        self._api_client = api_client
        self._sleep = sleep
        self._timing = timing or SubmitTiming()

    # -- submit ---------------------------------------------------------------------------

    def build(self, app: AppDef, app_id: str, settings: Settings, pod: PodFactory) -> KubernetesJob:
        """The Service and Jobs of ``app`` (see ``plain.app_to_plain``).

        Raises:
            ValueError: no roles, an unknown ``rank0_address``, a Job name over 63 characters.
        """
        request = app_to_plain(
            app,
            app_id,
            settings.namespace or "default",
            lambda replica: pod(app_id, replica),
            settings.rank0_address,
        )
        apply_policies(app, request, settings)
        return PlainJob(resource=request)

    @functools.cached_property
    def _submitter(self) -> PlainSubmitter:
        return PlainSubmitter(self._batch, self._core, self._sleep, self._timing)

    def validate(self, namespace: str, request: KubernetesJob) -> None:
        """Server-side dry-run create of every object (nothing is stored).

        Raises:
            ValueError: the API server rejected an object (its reason).
        """
        self._submitter.validate(namespace, request.resource)

    def create(self, namespace: str, request: KubernetesJob) -> str:
        """Create the Service and the Jobs (see ``_kubernetes.plain_submit``).

        Returns:
            The app name.

        Raises:
            ValueError: the app already exists.
            RuntimeError: rank 0's pod got no IP in time (everything created is deleted).
        """
        plain: PlainRequest = request.resource
        return self._submitter.create(
            namespace, plain, lambda: self.delete(namespace, plain.app_id)
        )

    # -- read -----------------------------------------------------------------------------

    def _jobs(self, namespace: str, name: str) -> list[Any]:
        items = self._batch.list_namespaced_job(namespace, label_selector=app_selector(name))
        return list(items.items)

    def _pods(self, namespace: str, name: str) -> list[Any]:
        items = self._core.list_namespaced_pod(namespace, label_selector=app_selector(name))
        return list(items.items)

    def has_app(self, namespace: str, name: str) -> bool:
        """Whether a plain-mode app ``name`` has a Job in ``namespace``."""
        found = self._batch.list_namespaced_job(
            namespace, label_selector=app_selector(name), limit=1
        )
        return bool(found.items)

    def wait_for_change(self, namespace: str, name: str, timeout: float) -> None:
        """Block until a pod of the app changes or ``timeout`` seconds pass.

        The app is read here, at entry (no state is kept from an earlier ``describe``): if it
        is already terminal (or gone) this returns at once, so a change between the caller's
        last look and this call cannot make it wait out ``timeout``; otherwise it watches the
        app's pods from the version it listed.
        """
        selector = app_selector(name)
        listed = self._core.list_namespaced_pod(namespace, label_selector=selector)
        jobs = self._jobs(namespace, name)
        if not jobs or is_terminal(_read(jobs, replica_views(jobs, listed.items))[0]):
            return
        version = listed.metadata.resource_version
        await_pod_change(self._core, namespace, selector, version, timeout, self._sleep)

    def describe(self, namespace: str, name: str) -> Optional[DescribeAppResponse]:
        """Describe the app; a read only (:meth:`enforce_fail_fast` stops a failed app's peers).

        While the app has not ended, ``msg`` says why its PENDING replicas wait (events are
        read only for the few whose pod does not say; see ``_kubernetes.waiting``).

        Returns:
            The response (app id ``{namespace}:{name}``), or None when no Job of it exists.
        """
        jobs = self._jobs(namespace, name)
        if not jobs:
            return None
        views = replica_views(jobs, self._pods(namespace, name))
        now = time.time()
        state, partial = _read(jobs, views, now)
        msg, error = failure(views)
        errors = replica_errors(views)
        if not is_terminal(state):
            msg, waiting = waiting_status(views, events_reader(self._core, namespace))
            errors.update(waiting)
            expired = plain_startup(jobs, msg, now)
            state, msg = (AppState.FAILED, expired) if expired else (state, msg)
            msg = queue_note(self._custom, namespace, jobs, msg)
        statuses, found = role_statuses(views, errors), roles(views)
        if partial is not None:  # submission stopped, or is still running (plain_partial)
            msg = "; ".join(m for m in (partial.msg(), msg) if m != NONE)
            add_missing(statuses, found, partial, now)
        return DescribeAppResponse(
            app_id=f"{namespace}:{name}",
            state=state,
            num_restarts=num_restarts(views),
            msg=msg,
            structured_error_msg=error,
            roles_statuses=statuses,
            roles=found,
            metadata=app_labels(jobs[0].metadata.labels or {}),
        )

    def enforce_fail_fast(self, namespace: str, name: str) -> None:
        """If the app FAILED, stop its unfinished replicas (``stopped: peer-failed``).

        Synchronous for the API server (the Jobs are patched before it returns); the Job
        controller then deletes their pods, each within its termination grace period.
        A no-op for an app that did not fail.
        """
        desc = self.describe(namespace, name)
        if desc is not None and desc.state == AppState.FAILED:
            timed_out = desc.msg.startswith(STARTUP_FAILED)
            self.stop(namespace, name, "startup-timeout" if timed_out else "peer-failed", desc.msg)

    def list(self, namespace: str) -> list[ListAppResponse]:
        """Every plain-mode app in ``namespace`` (from its Jobs' labels and conditions)."""
        jobs = self._batch.list_namespaced_job(namespace, label_selector=_SELECTOR).items
        out, now = [], time.time()
        for name, app_jobs in app_names(jobs).items():
            views = replica_views(app_jobs, [])
            cancelled = any(_stopped(job) == "cancelled" for job in app_jobs)
            state = app_state([_list_state(v.job, v.state) for v in views], cancelled)
            partial = check(app_jobs, None, now)
            if partial is not None and not partial.failed:  # rare: read rank 0's pod too
                partial = check(app_jobs, self._rank0_pod(namespace, views), now)
            if partial is not None:
                state = partial.state(state)
            out.append(ListAppResponse(app_id=f"{namespace}:{name}", state=state, name=name))
        return out

    def _rank0_pod(self, namespace: str, views: builtins.list[ReplicaView]) -> Optional[Any]:
        rank0 = [v.job for v in views if (v.role_idx, v.replica_id) == (0, 0)]
        if not rank0:
            return None
        job = rank0[0].metadata.name
        pods = self._core.list_namespaced_pod(namespace, label_selector=f"job-name={job}")
        return newest_pods(pods.items).get(job)

    def names_by_labels(self, namespace: str, labels: dict[str, str]) -> builtins.list[str]:
        """The names of the plain-mode apps whose Jobs carry ``labels`` (a label selector)."""
        selector = ",".join([_SELECTOR, *(f"{k}={v}" for k, v in labels.items())])
        jobs = self._batch.list_namespaced_job(namespace, label_selector=selector).items
        return builtins.list(app_names(jobs))

    def set_labels(self, namespace: str, name: str, labels: dict[str, str]) -> bool:
        """Patch ``labels`` onto every Job of the app; False if it has none."""
        jobs, body = self._jobs(namespace, name), {"metadata": {"labels": labels}}
        for job in jobs:
            self._batch.patch_namespaced_job(job.metadata.name, namespace, body)
        return bool(jobs)

    def log_pod(
        self, namespace: str, name: str, role: str, k: int, wait: float = 0.0
    ) -> Optional[str]:
        """The newest pod of replica ``k`` of ``role`` once its container started, else None.

        Waits up to ``wait`` seconds for the container to start (see ``Mode.log_pod``).

        Raises:
            ValueError: the app has no such replica (naming the replicas it has).
        """
        job = job_name(name, task_name(role, k))
        selector = f"job-name={job}"
        deadline = time.monotonic() + wait
        while True:
            pods = self._core.list_namespaced_pod(namespace, label_selector=selector)
            pod = newest_pods(pods.items).get(job)
            if pod is not None and pod.status is not None and pod.status.phase != "Pending":
                return str(pod.metadata.name)
            found = self._read_job(namespace, job)
            if found is None:
                raise ValueError(self._no_replica(namespace, name, role, k))
            # a replica that ended (or was stopped) without starting its container has no log
            left = deadline - time.monotonic()
            if left <= 0 or is_terminal(replica_state(found, pod)):
                return None
            version = pods.metadata.resource_version
            await_pod_change(self._core, namespace, selector, version, left, self._sleep)

    def _read_job(self, namespace: str, job: str) -> Optional[Any]:
        try:
            return self._batch.read_namespaced_job(job, namespace)
        except api_exception() as e:
            if getattr(e, "status", None) == 404:
                return None
            raise

    def _no_replica(self, namespace: str, name: str, role: str, k: int) -> str:
        labels = [j.metadata.labels or {} for j in self._jobs(namespace, name)]
        have = sorted(f"{x.get(LABEL_ROLE_NAME)}/{x.get(LABEL_REPLICA_ID)}" for x in labels)
        return (
            f"app {namespace}:{name} has no replica {role}/{k};"
            f" its replicas are: {', '.join(have) or 'none'}"
        )

    def read_log(self) -> Callable[..., Any]:
        """``CoreV1Api.read_namespaced_pod_log`` of this client."""
        return self._core.read_namespaced_pod_log

    # -- stop / delete ----------------------------------------------------------------------

    def abort(self, namespace: str, name: str) -> None:
        """Cancel: stop every unfinished replica, keeping the Jobs (the app reads CANCELLED)."""
        self.stop(namespace, name, "cancelled")

    def stop(self, namespace: str, name: str, reason: str, detail: str = "") -> None:
        """Stop every unfinished replica: ``parallelism: 0`` plus the ``stopped`` annotation."""
        notes = {ANNOTATION_STOPPED: reason, ANNOTATION_STOPPED_REASON: detail or None}
        body = {"metadata": {"annotations": notes}, "spec": {"parallelism": 0}}
        jobs = self._jobs(namespace, name)
        for job in jobs:
            view = replica_views([job], [])[0]
            if view.state in (AppState.SUCCEEDED, AppState.FAILED) or _stopped(job):
                continue
            self._batch.patch_namespaced_job(job.metadata.name, namespace, body)
        deactivate_queued(self._custom, namespace, jobs)  # Kueue must not readmit them
        # pods that never ran go at once, not after their pull back-off (see ``unstarted``)
        delete_unstarted_pods(
            self._core, namespace, app_selector(name), api_exception(), self._sleep
        )

    def delete(self, namespace: str, name: str) -> None:
        """Delete the Jobs (their pods with them) and the Service; missing ones are skipped."""
        for job in self._jobs(namespace, name):
            self._ignore_404(
                self._batch.delete_namespaced_job,
                job.metadata.name,
                namespace,
                propagation_policy="Background",
            )
        self._ignore_404(self._core.delete_namespaced_service, service_name(name), namespace)
        delete_unstarted_pods(
            self._core, namespace, app_selector(name), api_exception(), self._sleep
        )

    def _ignore_404(self, call: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        try:
            call(*args, **kwargs)
        except api_exception() as e:
            if getattr(e, "status", None) != 404:
                raise


def _stopped(job: Any) -> Optional[str]:
    value = (job.metadata.annotations or {}).get(ANNOTATION_STOPPED)
    return str(value) if value else None


def _state(jobs: list[Any], views: list[Any]) -> AppState:
    cancelled = any(_stopped(job) == "cancelled" for job in jobs)
    return app_state([v.state for v in views], cancelled)


def _read(
    jobs: list[Any], views: list[ReplicaView], now: Optional[float] = None
) -> tuple[AppState, Optional[Partial]]:
    """The app's state, and what it misses when it has fewer Jobs than submitted (or None)."""
    rank0 = next((v.pod for v in views if (v.role_idx, v.replica_id) == (0, 0)), None)
    partial = check(jobs, rank0, time.time() if now is None else now)
    state = _state(jobs, views)
    return (state if partial is None else partial.state(state)), partial


def _list_state(job: Any, state: AppState) -> AppState:
    # without pods: a Job with an active pod counts as running
    if state == AppState.PENDING and job.status is not None and job.status.active:
        return AppState.RUNNING
    return state
