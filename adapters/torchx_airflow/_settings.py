r"""What a ``torchx`` connection (or the hook's arguments) says about where and how to run apps.

Pure Python, no Airflow import: the hook reads the connection's extras into a
:class:`TorchXSettings`; everything else (scheduler, run options, component defaults,
trackers) is read by core from :meth:`TorchXSettings.config` through the ``Runner``.

Connection extras (JSON)::

    {
      "scheduler": "local_cwd",
      "scheduler_cfg": {"log_dir": "/tmp/logs"},      # or "log_dir=/tmp/logs,..."
      "scheduler_params": {"cache_size": 100},        # keyword args of the scheduler factory
      "torchxconfig": "[component:dist.ddp]  j = 1x2 ...",  # the text of a .torchxconfig
      "kubeconfig": "apiVersion: v1\nkind: Config ...",   # a kubeconfig (YAML text or object)
      "kubeconfig_path": "/etc/kube/config",             # or a kubeconfig file on the worker
      "kube_context": "prod",                            # the context of either
      "in_cluster": false                                # or the pod's service account
    }

``torchxconfig`` is the text of a ``.torchxconfig`` file, read by
:class:`torchx.specs.torchxconfig.TorchXConfig` before the worker's own ``.torchxconfig``
files (its values win): ``[cli:run] scheduler`` is the default scheduler, ``[<scheduler>]``
fills run options that neither the operator nor ``scheduler_cfg`` set, ``[component:<name>]``
sections give component defaults, and ``[torchx:tracker]`` / ``[tracker:<name>]`` sections
configure trackers for the launched apps, and ``[named_resources]`` defines named resources
(they win over the worker's files). The ``kubeconfig*``, ``kube_context`` and ``in_cluster``
extras configure the ``kubernetes`` scheduler's cluster access (without them: in-cluster, else
``$KUBECONFIG``), so a worker needs no local file.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from torchx.specs.torchxconfig import TorchXConfig

__all__ = ["EXTRA_KEYS", "TorchXSettings"]

EXTRA_KEYS = (
    "scheduler",
    "scheduler_cfg",
    "scheduler_params",
    "torchxconfig",
    "kubeconfig",
    "kubeconfig_path",
    "kube_context",
    "in_cluster",
)
_KUBE_PARAMS = {  # connection extra -> kubernetes scheduler factory parameter
    "kubeconfig": "kubeconfig_text",
    "kubeconfig_path": "kubeconfig",
    "kube_context": "kube_context",
    "in_cluster": "in_cluster",
}


def _check_extras(extras: Mapping[str, Any], conn_id: str) -> None:
    for key in extras:
        if key in EXTRA_KEYS or key.startswith("extra__"):
            continue
        close = difflib.get_close_matches(key, EXTRA_KEYS, n=1)
        hint = f"did you mean `{close[0]}`? " if close else ""
        raise ValueError(
            f"connection `{conn_id}` has an unknown extra `{key}`: {hint}"
            f"valid extras are {', '.join(EXTRA_KEYS)}"
        )


def _ui_field(extras: Mapping[str, Any], key: str) -> Any:
    """Returns ``key`` or its UI-form spelling ``extra__torchx__{key}``."""
    value = extras.get(key)
    if value in (None, ""):
        value = extras.get(f"extra__torchx__{key}")
    return None if value == "" else value


@dataclasses.dataclass(frozen=True)
class TorchXSettings:
    """Scheduler, run config and ``.torchxconfig`` text for launching TorchX apps.

    Args:
        scheduler: the scheduler name, or None for ``[cli:run] scheduler`` / ``local_cwd``.
        scheduler_cfg: run options as a dict, or a ``k=v,k2=v2`` string.
        scheduler_params: keyword arguments for the scheduler factories.
        torchxconfig: the text of a ``.torchxconfig`` file ("" for none).
        kube: the kubernetes scheduler's cluster access (factory parameters
            ``kubeconfig_text``, ``kubeconfig``, ``kube_context``, ``in_cluster``); kept apart
            from ``scheduler_params`` so it never travels in trigger arguments.
    """

    scheduler: Optional[str] = None
    scheduler_cfg: Any = None
    scheduler_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    torchxconfig: str = ""
    kube: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_extras(cls, extras: Mapping[str, Any], conn_id: str = "") -> TorchXSettings:
        """Reads a connection's extras.

        Args:
            extras: the decoded JSON extras.
            conn_id: the connection id, for error messages.

        Raises:
            ValueError: an unknown key (with a close-match suggestion) or a bad value type.
        """
        _check_extras(extras, conn_id)
        params = _ui_field(extras, "scheduler_params") or {}
        if not isinstance(params, Mapping):
            raise ValueError(
                f"connection `{conn_id}`: `scheduler_params` must be a JSON object, got {params!r}"
            )
        return cls(
            scheduler=_ui_field(extras, "scheduler"),
            scheduler_cfg=_ui_field(extras, "scheduler_cfg"),
            scheduler_params=dict(params),
            torchxconfig=_ui_field(extras, "torchxconfig") or "",
            kube=_kube(extras, conn_id),
        )

    def override(
        self,
        scheduler: Optional[str] = None,
        scheduler_cfg: Any = None,
        scheduler_params: Optional[Mapping[str, Any]] = None,
        torchxconfig: Optional[str] = None,
    ) -> TorchXSettings:
        """Returns a copy where each non-empty argument replaces (cfg/params: updates) a value."""
        return TorchXSettings(
            scheduler=scheduler or self.scheduler,
            scheduler_cfg=_merge_cfg(self.scheduler_cfg, scheduler_cfg),
            scheduler_params={**self.scheduler_params, **(scheduler_params or {})},
            torchxconfig=self.torchxconfig if torchxconfig is None else torchxconfig,
            kube=self.kube,
        )

    def config(self) -> TorchXConfig:
        """Returns the ``torchxconfig`` text followed by the worker's ``.torchxconfig`` files."""
        from torchx.specs.torchxconfig import TorchXConfig

        text = TorchXConfig.from_text(self.torchxconfig, "the torchx connection's torchxconfig")
        return text.then(TorchXConfig.discover())


def _merge_cfg(base: Any, top: Any) -> Any:
    if not top:
        return base
    if isinstance(base, Mapping) and isinstance(top, Mapping):
        return {**base, **top}
    return top


def _kube(extras: Mapping[str, Any], conn_id: str) -> dict[str, Any]:
    """The kubernetes factory parameters of the ``kubeconfig*`` / ``kube_context`` extras."""
    out: dict[str, Any] = {}
    for extra, param in _KUBE_PARAMS.items():
        value = _ui_field(extras, extra)
        if value in (None, False):
            continue
        if extra == "kubeconfig" and isinstance(value, Mapping):
            import json

            value = json.dumps(value)  # JSON is YAML: one text form for the factory
        elif extra == "in_cluster":
            value = value if isinstance(value, bool) else str(value).lower() in ("1", "true")
        elif not isinstance(value, str):
            raise ValueError(
                f"connection `{conn_id}`: `{extra}` must be a string, got {type(value).__name__}"
            )
        out[param] = value
    if "kubeconfig_text" in out and "kubeconfig" in out:
        raise ValueError(
            f"connection `{conn_id}`: set one of `kubeconfig` (the text) or `kubeconfig_path`"
        )
    return out
