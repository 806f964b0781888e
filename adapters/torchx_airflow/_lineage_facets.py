"""The OpenLineage facets and datasets of a ``TorchXOperator`` task (see ``_lineage``).

Imported only when the OpenLineage provider asks for lineage: it imports ``attrs`` and
``openlineage`` at module level.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from airflow.providers.openlineage.extractors import OperatorLineage
from attrs import define, field
from openlineage.client.event_v2 import Dataset
from openlineage.client.facet_v2 import RunFacet

from torchx.runner.launch import LaunchRequest, build_app
from torchx.specs import named_resources
from torchx.specs.api import AppDef
from torchx_airflow._settings import TorchXSettings
from torchx_airflow.hooks.torchx import TorchXHook

__all__ = [
    "TorchXErrorRunFacet",
    "TorchXRunFacet",
    "app_def",
    "operator_lineage",
    "role_facts",
    "settings_of",
    "task_facts",
    "to_dataset",
]

_APP_ID_MACRO = "${app_id}"  # torchx.specs.macros.app_id, filled in by the scheduler
_OBJECT_STORES = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs"}


@define
class TorchXRunFacet(RunFacet):
    """The TorchX app a task ran (run facet ``torchx``).

    Attributes:
        scheduler: the TorchX scheduler.
        component: the component (None for a prebuilt AppDef).
        appHandle: the app handle, once launched.
        appId: the app id, once launched.
        state: the app's last known state.
        uiUrl: the app's web UI, when its scheduler has one.
        roles: per role ``{name, image, replicas, resources: {cpu, gpu, memMB, devices}}``.
    """

    scheduler: str
    component: Optional[str] = None
    appHandle: Optional[str] = None  # OpenLineage facets are camelCase
    appId: Optional[str] = None
    state: Optional[str] = None
    uiUrl: Optional[str] = None
    roles: list[dict[str, Any]] = field(factory=list)


@define
class TorchXErrorRunFacet(RunFacet):
    """Why the TorchX app of a failed task failed (run facet ``torchx_error``).

    Attributes:
        message: the app's error summary (or what is known when it never ran).
        state: the app's final state (None when it was never launched).
        appHandle: the app handle (None when it was never launched).
    """

    message: str
    state: Optional[str] = None
    appHandle: Optional[str] = None


def to_dataset(uri: str) -> Dataset:
    """The OpenLineage dataset of a URI or local path (OpenLineage naming conventions).

    ``s3://b/k`` -> (``s3://b``, ``k``); ``gs://b/k`` -> (``gs://b``, ``k``);
    ``hdfs://nn:8020/p`` -> (``hdfs://nn:8020``, ``/p``); ``file:///p`` or ``/p`` ->
    (``file``, ``/p``); a relative path is made absolute.

    Args:
        uri: the URI or path.
    """
    parsed = urllib.parse.urlsplit(uri)
    scheme = parsed.scheme.lower()
    if not scheme or len(scheme) == 1:  # a path (or a Windows drive letter)
        return Dataset(namespace="file", name=os.path.abspath(uri))
    if scheme == "file":
        namespace = f"file://{parsed.netloc}" if parsed.netloc else "file"
        return Dataset(namespace=namespace, name=parsed.path)
    if scheme in _OBJECT_STORES:
        key = parsed.path.lstrip("/")
        return Dataset(namespace=f"{_OBJECT_STORES[scheme]}://{parsed.netloc}", name=key)
    return Dataset(namespace=f"{scheme}://{parsed.netloc}", name=parsed.path or "/")


def settings_of(op: Any) -> TorchXSettings:
    """The operator's ``torchx`` connection settings with its own arguments on top.

    Args:
        op: the operator.
    """
    return TorchXHook(
        op.torchx_conn_id, scheduler=op.scheduler, scheduler_cfg=op.scheduler_cfg
    ).settings


def app_def(op: Any, settings: TorchXSettings) -> AppDef:
    """The AppDef the operator launches, without its ``env`` (no scheduler call, no build).

    Built like the launch builds it (``torchx.runner.launch.build_app`` with the connection's
    component defaults and named resources), so it names the same images, replicas and
    resources.

    Args:
        op: the operator.
        settings: its connection settings (:func:`settings_of`).
    """
    runner = TorchXHook.make_runner(settings)
    request = LaunchRequest(
        component=op.component,
        component_args=op.component_args if op.component is not None else None,
        app=op.app,
        image=op.image,
        resource=op.resource,
        max_retries=op.max_retries,
        retry_policy=op.role_retry_policy,
    )
    defaults = runner.config.component_defaults()
    if "named_resources" in settings.torchxconfig:
        with named_resources.using(runner.config):
            return build_app(request, defaults)
    return build_app(request, defaults)


def role_facts(app: AppDef) -> list[dict[str, Any]]:
    """``{name, image, replicas, resources}`` per role of ``app`` (never its env).

    Args:
        app: the AppDef.
    """
    facts = []
    for role in app.roles:
        res = role.resource
        resources: dict[str, Any] = {"cpu": res.cpu, "gpu": res.gpu, "memMB": res.memMB}
        if res.devices:
            resources["devices"] = dict(res.devices)
        facts.append(
            {
                "name": role.name,
                "image": role.image,
                "replicas": role.num_replicas,
                "resources": resources,
            }
        )
    return facts


def _render(op: Any, context: Any, items: Iterable[str]) -> list[str]:
    """Renders the Jinja of lineage URIs with ``context`` (``${app_id}`` is kept).

    An item whose Jinja cannot be rendered (no context, an error) is left out.
    """
    out = []
    for item in items:
        text = item
        if "{{" in text or "{%" in text:
            if context is None:
                continue
            try:
                text = str(op.render_template(text, context))
            except Exception as e:
                op.log.warning("OpenLineage: cannot render %r: %s", item, e)
                continue
        if text:
            out.append(text)
    return out


def _with_app_id(items: Iterable[str], app_id: Optional[str]) -> list[str]:
    """``items`` with ``${app_id}`` replaced; those that need an unknown app id left out."""
    out = []
    for item in items:
        if _APP_ID_MACRO in item:
            if not app_id:
                continue
            item = item.replace(_APP_ID_MACRO, app_id)
        out.append(item)
    return out


def _roles(op: Any, settings: Optional[TorchXSettings]) -> list[dict[str, Any]]:
    if settings is None:
        return []
    try:
        return role_facts(app_def(op, settings))
    except Exception as e:  # the lineage never fails the task; the launch says what is wrong
        op.log.warning("OpenLineage: cannot build the AppDef for the torchx facet: %s", e)
        return []


def task_facts(op: Any, context: Any) -> dict[str, Any]:
    """What the lineage needs from the connection and the Jinja context, read in advance.

    ``{"inputs", "outputs", "roles", "settings"}``: the rendered lineage URIs (with
    ``${app_id}`` kept), the roles' facts and the connection settings (None when unreadable).
    Read in the task's process when its templates are rendered, so that a listener running in
    a forked process makes no API call for them.

    Args:
        op: the operator.
        context: the task's template context.
    """
    try:
        settings: Optional[TorchXSettings] = settings_of(op)
    except Exception as e:
        op.log.warning("OpenLineage: cannot read the torchx connection: %s", e)
        settings = None
    return {
        "inputs": _render(op, context, op.lineage_inputs),
        "outputs": _render(op, context, op.lineage_outputs),
        "roles": _roles(op, settings),
        "settings": settings,
    }


def _asset_uris(assets: Iterable[Any]) -> list[str]:
    return [a.uri for a in assets or () if isinstance(getattr(a, "uri", None), str)]


def _datasets(uris: Iterable[str]) -> list[Dataset]:
    seen: dict[tuple[str, str], Dataset] = {}
    for uri in uris:
        ds = to_dataset(uri)
        seen.setdefault((ds.namespace, ds.name), ds)
    return list(seen.values())


def _run_facet(op: Any, xcom: Mapping[str, Any], roles: list[dict[str, Any]]) -> TorchXRunFacet:
    handle = xcom.get("app_handle")
    scheduler = op.scheduler or (str(handle).split("://", 1)[0] if handle else None)
    return TorchXRunFacet(
        scheduler=scheduler or "local_cwd",
        component=op.component,
        appHandle=handle,
        appId=xcom.get("app_id"),
        state=xcom.get("state"),
        uiUrl=xcom.get("ui_url"),
        roles=roles,
    )


def _error_facet(
    op: Any, xcom: Mapping[str, Any], settings: Optional[TorchXSettings]
) -> TorchXErrorRunFacet:
    """The error of a failed task's app: its state and error summary (one status call)."""
    handle, state = xcom.get("app_handle"), xcom.get("state")
    if not handle:
        return TorchXErrorRunFacet(message="the task failed before a TorchX app was launched")
    message = f"TorchX app {handle} ended {state or 'in an unknown state'}"
    try:
        status = TorchXHook.make_runner(settings or settings_of(op)).status(handle)
        summary = status.error_summary() if status is not None else ""
        if summary:
            message = f"{message}: {summary}"
    except Exception as e:
        op.log.warning("OpenLineage: cannot read the status of %s: %s", handle, e)
    return TorchXErrorRunFacet(message=message, state=state, appHandle=handle)


def operator_lineage(
    op: Any,
    context: Any,
    xcom: Mapping[str, Any],
    *,
    failed: bool = False,
    known: Optional[Mapping[str, Any]] = None,
) -> OperatorLineage:
    """The ``OperatorLineage`` of ``op`` at start (empty ``xcom``), success or failure.

    Args:
        op: the operator.
        context: the task's template context (None: Jinja items are left out).
        xcom: what the task pushed: ``app_handle``, ``app_id``, ``state``, ``ui_url``.
        failed: add the ``torchx_error`` facet.
        known: :func:`task_facts` read earlier (None: read them now).
    """
    facts = known if known is not None else task_facts(op, context)
    app_id = xcom.get("app_id")
    inputs = _with_app_id(facts["inputs"], app_id) + _asset_uris(op.inlets)
    outputs = _with_app_id(facts["outputs"], app_id) + _asset_uris(op.outlets)
    run_facets: dict[str, RunFacet] = {"torchx": _run_facet(op, xcom, facts["roles"])}
    if failed:
        run_facets["torchx_error"] = _error_facet(op, xcom, facts["settings"])
    return OperatorLineage(
        inputs=_datasets(inputs), outputs=_datasets(outputs), run_facets=run_facets
    )
