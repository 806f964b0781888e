"""Volcano mode on the API server through an ``ApiClient`` getter (see ``_kubernetes.modes``).

Volcano's controller runs the Job: it restarts, fails or aborts it per the Job's policies (as in
TorchX), so this mode enforces nothing after a failure; its ``wait_for_change`` sleeps (no watch).
App labels (``torchx.schedulers.labels``) are on the Volcano Job itself as well as on its pods'
templates, so the Job is found by a label selector before (or without) any pod.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Callable, Mapping
from typing import Any, Optional

from torchx.schedulers._kubernetes.clients import ModeClients
from torchx.schedulers._kubernetes.modes import PodFactory
from torchx.schedulers._kubernetes.names import (
    LABEL_UNIQUE_NAME,
    MAX_NAME_LEN,
    clean_label,
    task_name,
)
from torchx.schedulers._kubernetes.render import to_plain
from torchx.schedulers._kubernetes.request import KubernetesJob
from torchx.schedulers._kubernetes.settings import Settings
from torchx.schedulers._kubernetes.volcano import (
    VOLCANO_GROUP,
    VOLCANO_PLURAL,
    VOLCANO_VERSION,
    app_to_volcano_job,
)
from torchx.schedulers._kubernetes.volcano_status import (
    app_state,
    describe_vcjob,
    list_entry,
    pod_hostname,
)
from torchx.schedulers._kubernetes.waiting import events_reader, replica_reasons
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse
from torchx.schedulers.labels import app_labels
from torchx.specs.api import AppDef, is_terminal
from torchx.util.strings import normalize_str

__all__ = ["VolcanoOps", "check_pod_names"]

_CRD = {"group": VOLCANO_GROUP, "version": VOLCANO_VERSION, "plural": VOLCANO_PLURAL}


def check_pod_names(resource: Mapping[str, Any]) -> None:
    """Every pod Volcano would create has a valid name (at most 63 characters).

    Raises:
        ValueError: a pod name is too long (naming it and the fix).
    """
    job = resource["metadata"]["name"]
    for task in resource["spec"]["tasks"]:
        pod = f"{job}-{task['name']}-{task.get('replicas', 1) - 1}"
        if len(pod) > MAX_NAME_LEN:
            raise ValueError(
                f"Pod name '{pod}' ({len(pod)} chars) exceeds {MAX_NAME_LEN} character limit."
                " Shorten app.name or role names"
            )


def _api_exception() -> type[Exception]:
    from kubernetes.client.rest import (  # lazy: ~300 ms; runopts kubernetes skips it
        ApiException,
    )

    exc: type[Exception] = ApiException
    return exc


def _conflict_name(e: Any, fallback: str) -> str:
    try:
        return str(json.loads(e.body)["details"]["name"])
    except (TypeError, ValueError, KeyError):
        return fallback


class VolcanoOps(ModeClients):
    """Build, create, read, abort and delete Volcano Jobs.

    Args:
        api_client: returns a configured ``kubernetes.client.ApiClient`` (called on first use).
    """

    def __init__(self, api_client: Callable[[], Any]) -> None:
        self._api_client = api_client

    # -- submit ---------------------------------------------------------------------------

    def build(
        self,
        app: AppDef,
        app_id: str,
        settings: Settings,
        pod: PodFactory,
    ) -> KubernetesJob:
        """The Volcano Job of ``app`` (see ``volcano.app_to_volcano_job``).

        Raises:
            ValueError: no roles, clashing role names, ``RetryPolicy.ROLE``, a pod name over
                63 characters.
        """
        resource = app_to_volcano_job(app, app_id, settings, lambda replica: pod(app_id, replica))
        check_pod_names(resource)
        labels = app_labels(app.metadata)
        if labels:
            resource["metadata"]["labels"] = labels
        return KubernetesJob(resource=resource)

    def validate(self, namespace: str, request: KubernetesJob) -> None:
        """Server-side dry-run create (see :meth:`create` for the errors)."""
        self._create(namespace, request.resource, dry_run=True)

    def create(self, namespace: str, request: KubernetesJob) -> str:
        """Create the Job; return its name.

        Raises:
            ValueError: a Job with this name exists (409), the namespace does not exist, the
                Volcano Job CRD is not installed, or the API server rejected the spec.
        """
        return self._create(namespace, request.resource, dry_run=False)

    def _create(self, namespace: str, resource: Mapping[str, Any], dry_run: bool) -> str:
        body = to_plain(resource)
        kwargs = {"dry_run": "All"} if dry_run else {}
        try:
            resp = self._custom.create_namespaced_custom_object(
                namespace=namespace, body=body, **_CRD, **kwargs
            )
        except _api_exception() as e:
            raise _create_error(e, namespace, body["metadata"]["name"]) from e
        return str(resp["metadata"]["name"])

    # -- read -----------------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> Optional[dict[str, Any]]:
        """The Job object, or None if it does not exist."""
        try:
            job: dict[str, Any] = self._custom.get_namespaced_custom_object(
                namespace=namespace, name=name, **_CRD
            )
        except _api_exception() as e:
            if getattr(e, "status", None) == 404:
                return None
            raise
        return job

    def describe(self, namespace: str, name: str) -> Optional[DescribeAppResponse]:
        """Describe the Job (None if it does not exist); hostnames from the pods' IPs.

        The pods are read with one label-selected list, not one request per replica; while
        the Job has not ended, pending pods say why they wait (``_kubernetes.waiting``).
        """
        job = self.get(namespace, name)
        if job is None:
            return None
        pods = self._pods(namespace, name)
        ips = {pod.metadata.name: pod.status.pod_ip if pod.status else None for pod in pods}
        waiting: dict[str, str] = {}
        if not is_terminal(app_state(job)):
            pending = [p for p in pods if p.status is not None and p.status.phase == "Pending"]
            objects = [(p, "Pod", str(p.metadata.name)) for p in pending]
            found = replica_reasons(objects, events_reader(self._core, namespace))
            waiting = {objects[i][2]: reason for i, reason in found.items()}
        desc = describe_vcjob(
            f"{namespace}:{name}", job, lambda pod: pod_hostname(ips.get(pod), namespace), waiting
        )
        desc.metadata = app_labels(job.get("metadata", {}).get("labels") or {})
        return desc

    def _pods(self, namespace: str, name: str) -> list[Any]:
        selector = f"{LABEL_UNIQUE_NAME}={clean_label(name)}"
        try:
            pods = self._core.list_namespaced_pod(namespace=namespace, label_selector=selector)
        except _api_exception():
            return []
        return list(pods.items)

    def has_app(self, namespace: str, name: str) -> bool:
        """Whether a Volcano Job ``name`` exists (False when the CRD is not installed)."""
        return self.get(namespace, name) is not None

    def log_pod(self, namespace: str, name: str, role: str, k: int, wait: float) -> Optional[str]:
        """The pod Volcano creates for the replica: ``{job}-{task}-0`` (not checked)."""
        return normalize_str(f"{name}-{task_name(role, k)}-0")

    def read_log(self) -> Callable[..., Any]:
        """``CoreV1Api.read_namespaced_pod_log`` of this client."""
        return self._core.read_namespaced_pod_log

    def wait_for_change(self, namespace: str, name: str, timeout: float) -> None:
        """Sleep ``timeout`` seconds (this mode has no watch)."""
        time.sleep(max(0.0, timeout))

    def enforce_fail_fast(self, namespace: str, name: str) -> None:
        """Nothing to do: a failed Job's other tasks are Volcano's (its policies), as in TorchX."""

    # -- stop / delete ----------------------------------------------------------------------

    def abort(self, namespace: str, name: str) -> None:
        """Set ``status.state.phase=Aborted``; the spec stays for inspection."""
        job = self.get(namespace, name)
        if job is None:
            return
        status = job.setdefault("status", {})
        status.setdefault("state", {})["phase"] = "Aborted"
        self._custom.replace_namespaced_custom_object_status(
            namespace=namespace, name=name, body=job, **_CRD
        )

    def delete(self, namespace: str, name: str) -> None:
        """Delete the Job (Kubernetes garbage-collects its pods)."""
        try:
            self._custom.delete_namespaced_custom_object(namespace=namespace, name=name, **_CRD)
        except _api_exception() as e:
            if getattr(e, "status", None) != 404:
                raise

    def list(self, namespace: str) -> list[ListAppResponse]:
        """Every Volcano Job of the namespace ([] when the Volcano CRD is not installed)."""
        return [list_entry(namespace, item) for item in self._list(namespace)]

    def names_by_labels(self, namespace: str, labels: dict[str, str]) -> builtins.list[str]:
        """The names of the Volcano Jobs carrying ``labels`` (a label selector)."""
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        return [str(item["metadata"]["name"]) for item in self._list(namespace, selector)]

    def set_labels(self, namespace: str, name: str, labels: dict[str, str]) -> bool:
        """Merge-patch ``labels`` onto the Volcano Job; False if it does not exist."""
        try:
            self._custom.patch_namespaced_custom_object(
                namespace=namespace, name=name, body={"metadata": {"labels": labels}}, **_CRD
            )
        except _api_exception() as e:
            if getattr(e, "status", None) == 404:
                return False
            raise
        return True

    def _list(self, namespace: str, selector: str = "") -> builtins.list[dict[str, Any]]:
        kwargs = {"label_selector": selector} if selector else {}
        try:
            resp = self._custom.list_namespaced_custom_object(
                namespace=namespace, timeout_seconds=30, **_CRD, **kwargs
            )
        except _api_exception() as e:
            if getattr(e, "status", None) == 404:
                return []
            raise
        return builtins.list(resp.get("items", []))


def _create_error(e: Any, namespace: str, name: str) -> Exception:
    """The clear error for a failed create (the ``ApiException`` itself if none applies)."""
    status = getattr(e, "status", None)
    if status == 409:
        name = _conflict_name(e, name)
        return ValueError(
            f"Job `{name}` already exists. This seems like a transient exception,"
            " try resubmitting job"
        )
    if status == 404:
        if _details(e).get("kind") == "namespaces":
            return ValueError(
                f"namespace `{namespace}` does not exist; create it"
                " (kubectl create namespace ...) or choose another with -cfg namespace=NAME"
            )
        return ValueError(
            f"the Volcano Job CRD ({VOLCANO_PLURAL}.{VOLCANO_GROUP}) is not installed on this"
            " cluster; install Volcano, or run without it: -cfg mode=plain"
        )
    if status in (400, 422):
        return ValueError(f"Invalid job spec: {_reason(e)}")
    return e if isinstance(e, Exception) else RuntimeError(str(e))


def _details(e: Any) -> dict[str, Any]:
    try:
        details = json.loads(e.body).get("details") or {}
    except (TypeError, ValueError, AttributeError):
        return {}
    return details if isinstance(details, dict) else {}


def _reason(e: Any) -> str:
    try:
        return str(json.loads(e.body)["message"])
    except (TypeError, ValueError, KeyError):
        return str(getattr(e, "reason", e))
