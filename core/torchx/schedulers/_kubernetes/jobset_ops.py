"""Jobset mode on the API server through an ``ApiClient`` getter (see ``_kubernetes.modes``).

The JobSet controller runs the app (creates its Jobs and headless Service, restarts or fails
it per ``failurePolicy``). Cancel sets ``spec.suspend`` (the controller stops the Jobs' pods) and
the ``stopped: cancelled`` annotation, and deactivates the app's Kueue Workload, so the app reads
CANCELLED until deleted; delete removes the JobSet (its Jobs, pods and Service with it).
A replica that waits with a reason longer than the JobSet's ``startup-timeout`` annotation makes
the app read FAILED with that reason (``_kubernetes.startup``); ``enforce_fail_fast`` then stops
it the same way with ``stopped: startup-timeout``.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Callable
from typing import Any, Optional

from torchx.schedulers._kubernetes import kueue
from torchx.schedulers._kubernetes.clients import ModeClients
from torchx.schedulers._kubernetes.jobset import (
    JOBSET_GROUP,
    JOBSET_PLURAL,
    JOBSET_VERSION,
    LABEL_MODE,
    MODE_LABEL_VALUE,
    app_to_jobset,
)
from torchx.schedulers._kubernetes.jobset_status import JobSetView, jobset_state, jobset_views
from torchx.schedulers._kubernetes.modes import PodFactory
from torchx.schedulers._kubernetes.names import LABEL_ORGANIZATION
from torchx.schedulers._kubernetes.plain import ANNOTATION_STOPPED
from torchx.schedulers._kubernetes.pod_watch import await_pod_change
from torchx.schedulers._kubernetes.render import to_plain
from torchx.schedulers._kubernetes.request import KubernetesJob
from torchx.schedulers._kubernetes.settings import Settings
from torchx.schedulers._kubernetes.startup import ANNOTATION_STOPPED_REASON, jobset_summary
from torchx.schedulers._kubernetes.unstarted import delete_unstarted_pods
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse
from torchx.schedulers.labels import app_labels
from torchx.specs.api import AppDef, AppState, is_terminal
from torchx.util.strings import normalize_str

__all__ = ["JobSetOps"]

_CRD = (JOBSET_GROUP, JOBSET_VERSION)
_SELECTOR = f"{LABEL_ORGANIZATION}=torchx.pytorch.org,{LABEL_MODE}={MODE_LABEL_VALUE}"
_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
_ABSENT = (403, 404)
"""Reads that find no JobSet app: no JobSet CRD (404), or a service account not allowed to
read JobSets (403: e.g. a launcher whose Role covers only the plain and volcano modes)."""


def _api_exception() -> type[Exception]:
    from kubernetes.client.rest import (  # lazy: ~300 ms; runopts kubernetes skips it
        ApiException,
    )

    exc: type[Exception] = ApiException
    return exc


class JobSetOps(ModeClients):
    """Build, create, read, stop and delete jobset-mode apps.

    Args:
        api_client: returns a configured ``kubernetes.client.ApiClient`` (called on first use).
        sleep: how to wait between polls.
    """

    def __init__(
        self, api_client: Callable[[], Any], sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._api_client = api_client
        self._sleep = sleep

    # -- submit ---------------------------------------------------------------------------

    def build(self, app: AppDef, app_id: str, settings: Settings, pod: PodFactory) -> KubernetesJob:
        """The JobSet of ``app`` (see ``jobset.app_to_jobset``)."""
        resource = app_to_jobset(app, app_id, settings, lambda replica: pod(app_id, replica))
        return KubernetesJob(resource=resource)

    def validate(self, namespace: str, request: KubernetesJob) -> None:
        """Server-side dry-run create (see :meth:`create` for the errors)."""
        self._create(namespace, request.resource, dry_run=True)

    def create(self, namespace: str, request: KubernetesJob) -> str:
        """Create the JobSet; return its name.

        Raises:
            ValueError: it exists (409), the namespace or the JobSet CRD is missing, or the API
                server (or a webhook: JobSet's, Kueue's) rejected it.
        """
        return self._create(namespace, request.resource, dry_run=False)

    def _create(self, namespace: str, resource: dict[str, Any], dry_run: bool) -> str:
        body = to_plain(resource)
        kwargs = {"dry_run": "All"} if dry_run else {}
        try:
            resp = self._custom.create_namespaced_custom_object(
                *_CRD, namespace, JOBSET_PLURAL, body, **kwargs
            )
        except _api_exception() as e:
            raise _create_error(e, namespace, body["metadata"]["name"]) from e
        return str(resp["metadata"]["name"])

    # -- read -----------------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> Optional[dict[str, Any]]:
        """The JobSet, or None if it (or the JobSet CRD) does not exist."""
        try:
            found: dict[str, Any] = self._custom.get_namespaced_custom_object(
                *_CRD, namespace, JOBSET_PLURAL, name
            )
        except _api_exception() as e:
            if getattr(e, "status", None) in _ABSENT:
                return None
            raise
        labels = found.get("metadata", {}).get("labels") or {}
        return found if labels.get(LABEL_MODE) == MODE_LABEL_VALUE else None

    def has_app(self, namespace: str, name: str) -> bool:
        """Whether a torchx JobSet ``name`` exists."""
        return self.get(namespace, name) is not None

    def _view(self, namespace: str, jobset: dict[str, Any]) -> tuple[JobSetView, list[Any]]:
        selector = f"{_NAME_LABEL}={jobset['metadata']['name']}"
        jobs = self._batch.list_namespaced_job(namespace, label_selector=selector).items
        pods = self._core.list_namespaced_pod(namespace, label_selector=selector).items
        return jobset_views(jobset, list(jobs), list(pods)), list(jobs)

    def _kueue(self, namespace: str, jobset: dict[str, Any]) -> tuple[Optional[bool], str]:
        labels = jobset["metadata"].get("labels") or {}
        if kueue.LABEL_KUEUE_QUEUE not in labels:
            return None, ""
        lister = kueue.workload_lister(self._custom)
        uid, queue = jobset["metadata"].get("uid", ""), labels[kueue.LABEL_KUEUE_QUEUE]
        return kueue.workload_note(lister, namespace, [uid], queue)

    def describe(self, namespace: str, name: str) -> Optional[DescribeAppResponse]:
        """Describe the app (a read only); None when no torchx JobSet ``name`` exists."""
        jobset = self.get(namespace, name)
        if jobset is None:
            return None
        view, jobs = self._view(namespace, jobset)
        summary = jobset_summary(
            jobset, view, jobs, self._kueue(namespace, jobset), self._core, time.time()
        )
        return DescribeAppResponse(
            app_id=f"{namespace}:{name}",
            state=summary.state,
            num_restarts=int((jobset.get("status") or {}).get("restarts") or 0),
            msg=summary.msg,
            structured_error_msg=summary.error,
            roles_statuses=summary.roles_statuses,
            roles=view.roles,
            metadata=app_labels(jobset["metadata"].get("labels") or {}),
        )

    def wait_for_change(self, namespace: str, name: str, timeout: float) -> None:
        """Block until a pod of the app changes or ``timeout`` passes (at once if terminal)."""
        jobset = self.get(namespace, name)
        if jobset is None or is_terminal(jobset_state(jobset, [])):
            return
        selector = f"{_NAME_LABEL}={name}"
        listed = self._core.list_namespaced_pod(namespace, label_selector=selector)
        version = listed.metadata.resource_version
        await_pod_change(self._core, namespace, selector, version, timeout, self._sleep)

    def enforce_fail_fast(self, namespace: str, name: str) -> None:
        """Stop an app that failed its startup timeout (the controller handles other failures)."""
        desc = self.describe(namespace, name)
        jobset = self.get(namespace, name)
        if desc is None or jobset is None or desc.state != AppState.FAILED:
            return
        if not (jobset.get("status") or {}).get("terminalState"):
            self.stop(namespace, jobset, "startup-timeout", desc.msg)

    def list(self, namespace: str) -> builtins.list[ListAppResponse]:
        """Every torchx JobSet in ``namespace`` (state from the JobSet alone)."""
        out = []
        for item in self._list(namespace, _SELECTOR):
            name = str(item["metadata"]["name"])
            state = jobset_state(item, [_list_state(item)])
            out.append(ListAppResponse(app_id=f"{namespace}:{name}", state=state, name=name))
        return out

    def names_by_labels(self, namespace: str, labels: dict[str, str]) -> builtins.list[str]:
        """The names of the torchx JobSets carrying ``labels``."""
        selector = ",".join([_SELECTOR, *(f"{k}={v}" for k, v in labels.items())])
        return [str(item["metadata"]["name"]) for item in self._list(namespace, selector)]

    def set_labels(self, namespace: str, name: str, labels: dict[str, str]) -> bool:
        """Merge-patch ``labels`` onto the JobSet; False if it does not exist."""
        if self.get(namespace, name) is None:
            return False
        body = {"metadata": {"labels": labels}}
        self._custom.patch_namespaced_custom_object(*_CRD, namespace, JOBSET_PLURAL, name, body)
        return True

    def _list(self, namespace: str, selector: str) -> builtins.list[dict[str, Any]]:
        try:
            resp = self._custom.list_namespaced_custom_object(
                *_CRD, namespace, JOBSET_PLURAL, label_selector=selector, timeout_seconds=30
            )
        except _api_exception() as e:
            if getattr(e, "status", None) in _ABSENT:
                return []
            raise
        return builtins.list(resp.get("items", []))

    def log_pod(self, namespace: str, name: str, role: str, k: int, wait: float) -> Optional[str]:
        """The newest pod of replica ``k`` of ``role`` once its container started, else None."""
        selector = (
            f"{_NAME_LABEL}={name},jobset.sigs.k8s.io/replicatedjob-name={normalize_str(role)},"
            f"batch.kubernetes.io/job-completion-index={k}"
        )
        deadline = time.monotonic() + wait
        while True:
            pods = self._core.list_namespaced_pod(namespace, label_selector=selector)
            started = [
                p for p in pods.items if p.status is not None and p.status.phase != "Pending"
            ]
            if started:
                newest = max(started, key=lambda p: p.metadata.creation_timestamp.timestamp())
                return str(newest.metadata.name)
            left = deadline - time.monotonic()
            if left <= 0 or self.get(namespace, name) is None:
                return None
            version = pods.metadata.resource_version
            await_pod_change(self._core, namespace, selector, version, left, self._sleep)

    def log_container(self, role: str, k: int) -> str:
        """The container of replica ``k`` of ``role``: one per role template."""
        return normalize_str(role)

    def read_log(self) -> Callable[..., Any]:
        """``CoreV1Api.read_namespaced_pod_log`` of this client."""
        return self._core.read_namespaced_pod_log

    # -- stop / delete ----------------------------------------------------------------------

    def abort(self, namespace: str, name: str) -> None:
        """Cancel: suspend the JobSet (its pods stop), keep it; the app reads CANCELLED."""
        jobset = self.get(namespace, name)
        if jobset is not None and not (jobset.get("status") or {}).get("terminalState"):
            self.stop(namespace, jobset, "cancelled")

    def stop(self, namespace: str, jobset: dict[str, Any], reason: str, detail: str = "") -> None:
        """Annotate ``stopped: reason``, suspend, and deactivate its Kueue Workload."""
        name = jobset["metadata"]["name"]
        annotations = {ANNOTATION_STOPPED: reason}
        if detail:
            annotations[ANNOTATION_STOPPED_REASON] = detail
        body = {"metadata": {"annotations": annotations}, "spec": {"suspend": True}}
        self._custom.patch_namespaced_custom_object(*_CRD, namespace, JOBSET_PLURAL, name, body)
        if kueue.LABEL_KUEUE_QUEUE in (jobset["metadata"].get("labels") or {}):
            kueue.deactivate(self._custom, namespace, [jobset["metadata"].get("uid", "")])
        self._drop_unstarted(namespace, name)

    def delete(self, namespace: str, name: str) -> None:
        """Delete the JobSet (its Jobs, pods and Service go with it)."""
        if self.get(namespace, name) is None:
            return
        try:
            self._custom.delete_namespaced_custom_object(
                *_CRD, namespace, JOBSET_PLURAL, name, propagation_policy="Background"
            )
        except _api_exception() as e:
            if getattr(e, "status", None) != 404:
                raise
        self._drop_unstarted(namespace, name)

    def _drop_unstarted(self, namespace: str, name: str) -> None:
        """Pods that never ran go at once, not after their pull back-off (see ``unstarted``)."""
        selector = f"{_NAME_LABEL}={name}"
        delete_unstarted_pods(self._core, namespace, selector, _api_exception(), self._sleep)


def _list_state(jobset: dict[str, Any]) -> AppState:
    """The replicas' state as the JobSet's counts show it (no pods read)."""
    counts = {
        j.get("name"): j for j in (jobset.get("status") or {}).get("replicatedJobsStatus") or []
    }
    wanted = jobset["spec"]["replicatedJobs"]
    if wanted and all(
        (counts.get(r["name"]) or {}).get("succeeded", 0) >= r.get("replicas", 1) for r in wanted
    ):
        return AppState.SUCCEEDED  # before the controller writes its Completed condition
    return AppState.RUNNING if any(j.get("ready") for j in counts.values()) else AppState.PENDING


def _create_error(e: Any, namespace: str, name: str) -> Exception:
    status = getattr(e, "status", None)
    try:
        body = json.loads(e.body)
    except (TypeError, ValueError, AttributeError):
        body = {}
    if status == 409:
        return ValueError(f"JobSet `{name}` already exists in namespace `{namespace}`; resubmit")
    if status == 404:
        if (body.get("details") or {}).get("kind") == "namespaces":
            return ValueError(
                f"namespace `{namespace}` does not exist; create it or choose another"
                " with -cfg namespace=NAME"
            )
        return ValueError(
            f"the JobSet CRD ({JOBSET_PLURAL}.{JOBSET_GROUP}) is not installed on this cluster;"
            " install JobSet, or use -cfg mode=plain"
        )
    if status in (400, 422):
        return ValueError(f"Invalid JobSet: {body.get('message') or getattr(e, 'reason', e)}")
    return e if isinstance(e, Exception) else RuntimeError(str(e))
