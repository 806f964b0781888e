"""Volcano Job operations on the API server through an injected ``ApiClient``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

from torchx.schedulers._kubernetes.names import LABEL_UNIQUE_NAME, clean_label
from torchx.schedulers._kubernetes.request import sanitize_for_serialization
from torchx.schedulers._kubernetes.volcano import VOLCANO_GROUP, VOLCANO_PLURAL, VOLCANO_VERSION
from torchx.schedulers._kubernetes.volcano_status import describe_vcjob, list_entry, pod_hostname
from torchx.schedulers.api import DescribeAppResponse, ListAppResponse

__all__ = ["VolcanoOps", "split_app_id"]

_CRD = {"group": VOLCANO_GROUP, "version": VOLCANO_VERSION, "plural": VOLCANO_PLURAL}


def split_app_id(app_id: str) -> tuple[str, str]:
    """``"{namespace}:{name}"`` -> ``(namespace, name)``.

    Raises:
        ValueError: ``app_id`` is not of that form.
    """
    namespace, sep, name = app_id.partition(":")
    if not sep or not namespace or not name or ":" in name:
        raise ValueError(f"kubernetes app id `{app_id}` is not of the form NAMESPACE:NAME")
    return namespace, name


def _api_exception() -> type[Exception]:
    from kubernetes.client.rest import ApiException

    exc: type[Exception] = ApiException
    return exc


def _conflict_name(e: Any, fallback: str) -> str:
    try:
        return str(json.loads(e.body)["details"]["name"])
    except (TypeError, ValueError, KeyError):
        return fallback


class VolcanoOps:
    """Create, read, abort and delete Volcano Jobs.

    Args:
        api_client: a configured ``kubernetes.client.ApiClient``.
    """

    def __init__(self, api_client: Any) -> None:
        from kubernetes import client

        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)

    def create(self, namespace: str, resource: Mapping[str, Any], dry_run: bool = False) -> str:
        """Create the Job (``dry_run``: server-side validation only); return its name.

        Raises:
            ValueError: a Job with this name exists (409), the namespace does not exist, the
                Volcano Job CRD is not installed, or the API server rejected the spec.
        """
        body = sanitize_for_serialization(resource)
        kwargs = {"dry_run": "All"} if dry_run else {}
        try:
            resp = self._custom.create_namespaced_custom_object(
                namespace=namespace, body=body, **_CRD, **kwargs
            )
        except _api_exception() as e:
            raise _create_error(e, namespace, body["metadata"]["name"]) from e
        return str(resp["metadata"]["name"])

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

        The pods are read with one label-selected list, not one request per replica.
        """
        job = self.get(namespace, name)
        if job is None:
            return None
        ips = self._pod_ips(namespace, name)
        return describe_vcjob(
            f"{namespace}:{name}", job, lambda pod: pod_hostname(ips.get(pod), namespace)
        )

    def _pod_ips(self, namespace: str, name: str) -> dict[str, Optional[str]]:
        selector = f"{LABEL_UNIQUE_NAME}={clean_label(name)}"
        try:
            pods = self._core.list_namespaced_pod(namespace=namespace, label_selector=selector)
        except _api_exception():
            return {}
        return {pod.metadata.name: pod.status.pod_ip if pod.status else None for pod in pods.items}

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
        try:
            resp = self._custom.list_namespaced_custom_object(
                namespace=namespace, timeout_seconds=30, **_CRD
            )
        except _api_exception() as e:
            if getattr(e, "status", None) == 404:
                return []
            raise
        return [list_entry(namespace, item) for item in resp.get("items", [])]


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
