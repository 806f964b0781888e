"""``TorchXAppLink``: the task's "TorchX app" button, to the app's UI when its scheduler has one."""

from __future__ import annotations

from typing import Any, Optional

from torchx_airflow.version_compat import BaseOperatorLink

__all__ = ["TorchXAppLink", "web_url"]


def web_url(url: Optional[str]) -> Optional[str]:
    """Returns ``url`` when it is an ``http(s)`` URL (``local_cwd``'s ``file://`` is not)."""
    if url and url.partition("://")[0] in ("http", "https"):
        return url
    return None


class TorchXAppLink(BaseOperatorLink):
    """Links a ``TorchXOperator`` task to its app's UI (``AppStatus.ui_url``).

    Airflow computes the link in the worker when the task ends (``get_link``) and keeps it as
    an XCom; an app without a web UI gives no link (an empty string: no button target).
    """

    name = "TorchX app"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        """Returns the UI URL the operator saw for its app, else ``""``."""
        return web_url(getattr(operator, "_ui_url", None)) or ""
