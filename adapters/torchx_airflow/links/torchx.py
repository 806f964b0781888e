"""``TorchXAppLink``: the "TorchX app" button (the connection's ``ui_url`` or the app's UI)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from torchx_airflow.version_compat import BaseOperatorLink

__all__ = ["TorchXAppLink", "render_ui_url", "web_url"]


def web_url(url: Optional[str]) -> Optional[str]:
    """Returns ``url`` when it is an ``http(s)`` URL (``local_cwd``'s ``file://`` is not)."""
    if url and url.partition("://")[0] in ("http", "https"):
        return url
    return None


def render_ui_url(template: str, app_handle: str, cfg: Mapping[str, Any]) -> Optional[str]:
    """Fills a ``ui_url`` template for ``app_handle`` (None without a template).

    ``{namespace}`` is the ``namespace:`` prefix of the app id (Kubernetes), else the
    ``namespace`` run option the app went with, else ``""``; ``{name}`` is the app id without
    that prefix.
    """
    if not template:
        return None
    from torchx.specs.api import parse_app_handle  # lazy: torchx.specs, ~19 ms

    scheduler, session, app_id = parse_app_handle(app_handle)
    namespace, _, name = app_id.rpartition(":")
    namespace = namespace or str(cfg.get("namespace") or "")
    fields = {
        "app_id": app_id,
        "name": name,
        "namespace": namespace,
        "scheduler": scheduler,
        "session": session,
    }
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError):
        return None


class TorchXAppLink(BaseOperatorLink):
    """Links a ``TorchXOperator`` task to its app (connection ``ui_url``, or ``AppStatus.ui_url``).

    Airflow computes the link in the worker when the task ends (``get_link``) and keeps it as
    an XCom; an app without a web URL gives no link (an empty string: no button target).
    """

    name = "TorchX app"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        """Returns the URL the operator saw for its app, else ``""``."""
        return web_url(getattr(operator, "app_ui_url", None)) or ""
