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
      "in_cluster": false,                               # or the pod's service account
      "kubeconfig_secret": "...",                        # = kubeconfig, masked by name
      "env_allow": ["WANDB_*", "HF_HOME"],               # more inherited variables
      "ui_url": "https://dash.example/{namespace}/{app_id}"  # the "TorchX app" link
    }

``torchxconfig`` is the text of a ``.torchxconfig`` file, read by
:class:`torchx.specs.torchxconfig.TorchXConfig` before the worker's own ``.torchxconfig``
files (its values win): ``[cli:run] scheduler`` is the default scheduler, ``[<scheduler>]``
fills run options that neither the operator nor ``scheduler_cfg`` set, ``[component:<name>]``
sections give component defaults, and ``[torchx:tracker]`` / ``[tracker:<name>]`` sections
configure trackers for the launched apps, and ``[named_resources]`` defines named resources
(they win over the worker's files). The ``kubeconfig*``, ``kube_context`` and ``in_cluster``
extras configure the ``kubernetes`` scheduler's cluster access (without them: in-cluster, else
``$KUBECONFIG``), so a worker needs no local file. ``kubeconfig_secret`` is ``kubeconfig`` under a
name Airflow's secrets masker hides (its name holds ``secret``: masked in the UI, the REST API
and task logs by default); the hook masks the ``kubeconfig`` text and the credentials in it in
task logs too (:func:`secret_values`). ``env_allow`` adds inherited-variable patterns to the
default allow-list of local and Slurm replicas (``_runopts``), ``ui_url`` is a template
(``{app_id}``, ``{name}``, ``{namespace}``, ``{scheduler}``, ``{session}``) for the task's
extra link.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import string
from collections.abc import Mapping
from typing import Any, Optional

import yaml

from torchx.specs.torchxconfig import TorchXConfig

__all__ = ["EXTRA_KEYS", "UI_URL_FIELDS", "TorchXSettings", "secret_values"]

EXTRA_KEYS = (
    "scheduler",
    "scheduler_cfg",
    "scheduler_params",
    "torchxconfig",
    "kubeconfig",
    "kubeconfig_secret",
    "kubeconfig_path",
    "kube_context",
    "in_cluster",
    "env_allow",
    "ui_url",
)
_KUBE_PARAMS = {  # connection extra -> kubernetes scheduler factory parameter
    "kubeconfig": "kubeconfig_text",
    "kubeconfig_secret": "kubeconfig_text",
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
        env_allow: inherited-variable patterns added to the default allow-list.
        ui_url: the extra link's template ("" for the scheduler's own UI URL).
    """

    scheduler: Optional[str] = None
    scheduler_cfg: Any = None
    scheduler_params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    torchxconfig: str = ""
    kube: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    env_allow: tuple[str, ...] = ()
    ui_url: str = ""

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
            env_allow=_patterns(_ui_field(extras, "env_allow"), conn_id),
            ui_url=_check_ui_url(str(_ui_field(extras, "ui_url") or ""), conn_id),
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
            env_allow=self.env_allow,
            ui_url=self.ui_url,
        )

    def config(self) -> TorchXConfig:
        """Returns the ``torchxconfig`` text followed by the worker's ``.torchxconfig`` files."""
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
    if _ui_field(extras, "kubeconfig") and _ui_field(extras, "kubeconfig_secret"):
        raise ValueError(
            f"connection `{conn_id}`: set one of `kubeconfig` or `kubeconfig_secret` (the same"
            " text under a name Airflow masks)"
        )
    return out


UI_URL_FIELDS = ("app_id", "name", "namespace", "scheduler", "session")
"""The fields a connection's ``ui_url`` template may use."""


def _check_ui_url(template: str, conn_id: str) -> str:
    """Returns ``template`` if it uses only :data:`UI_URL_FIELDS`, else raises one clear line."""
    try:
        names = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as e:
        raise ValueError(f"connection `{conn_id}`: `ui_url` is not a valid template: {e}") from e
    unknown = sorted(n for n in names if n not in UI_URL_FIELDS)
    if unknown:
        known = ", ".join("{" + f + "}" for f in UI_URL_FIELDS)
        raise ValueError(
            f"connection `{conn_id}`: `ui_url` uses unknown field(s) {', '.join(unknown)};"
            f" known: {known}"
        )
    return template


def _patterns(value: Any, conn_id: str) -> tuple[str, ...]:
    """The ``env_allow`` extra: a list of patterns or ``a;b`` text."""
    if not value:
        return ()
    if isinstance(value, str):
        value = value.split(";")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(
            f"connection `{conn_id}`: `env_allow` must be a list of variable-name patterns"
            f" (or 'A;B*' text), got {value!r}"
        )
    return tuple(v.strip() for v in value if v.strip())


_CREDENTIAL_KEYS = frozenset(
    {"token", "password", "client-key-data", "client-certificate-data", "id-token", "refresh-token"}
)


def secret_values(extras: Mapping[str, Any]) -> list[str]:
    """The connection's secret texts the task log must not show.

    The ``kubeconfig`` / ``kubeconfig_secret`` text (or JSON object, dumped) and every
    credential inside it (user ``token``, ``password``, client key and certificate data,
    auth-provider tokens), so a log line holding only part of the file is masked too.
    """
    out: list[str] = []
    for key in ("kubeconfig", "kubeconfig_secret"):
        value = _ui_field(extras, key)
        if not value:
            continue
        if isinstance(value, Mapping):
            doc: Any = value
            out.append(json.dumps(value))
        else:
            out.append(str(value))
            doc = _load_yaml(str(value))
        out.extend(_credentials(doc))
    return [v for v in out if v]


def _load_yaml(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except Exception:  # not YAML: the whole text is masked all the same
        return None


def _credentials(doc: Any) -> list[str]:
    """Every string under a credential key, anywhere in a kubeconfig document."""
    if isinstance(doc, Mapping):
        found: list[str] = []
        for key, value in doc.items():
            if key in _CREDENTIAL_KEYS and isinstance(value, str):
                found.append(value)
            else:
                found.extend(_credentials(value))
        return found
    if isinstance(doc, list):
        return [v for item in doc for v in _credentials(item)]
    return []
