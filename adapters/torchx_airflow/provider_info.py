"""Airflow provider metadata for torchx-flow (entry point group ``apache_airflow_provider``).

This module must stay importable without Airflow and import nothing heavy: Airflow's
providers manager calls :func:`get_provider_info` while it scans installed packages.
"""

from __future__ import annotations

from typing import Any

__all__ = ["get_provider_info"]

_INTEGRATION = "TorchX"


def _field(label: str, description: str, kind: str = "string", **schema: Any) -> dict[str, Any]:
    return {
        "label": label,
        "description": description,
        "schema": {"type": [kind, "null"], **schema},
    }


# the connection form (Airflow 3.2+ reads these without importing the hook); a field of
# format "password" is a masked input, and kubeconfig_secret's name makes Airflow's secrets
# masker hide its value in the UI, the REST API and task logs
_CONN_FIELDS = {
    "scheduler": _field("Scheduler", "Default TorchX scheduler, e.g. kubernetes"),
    "scheduler_cfg": _field("Run options", 'JSON object or k=v,... e.g. {"namespace": "ml"}'),
    "torchxconfig": _field("torchxconfig", "Text of a .torchxconfig file"),
    "kubeconfig_secret": _field("Kubeconfig", "Kubeconfig text (YAML); masked", format="password"),
    "kubeconfig_path": _field("Kubeconfig path", "Or a kubeconfig file on the workers"),
    "kube_context": _field("Kube context", "Context of the kubeconfig"),
    "in_cluster": _field("In cluster", "Use the worker pod's service account", "boolean"),
    "env_allow": _field("Inherited variables", "More worker variables replicas get, A;B*"),
    "ui_url": _field("App UI URL", "Extra link template: {app_id} {name} {namespace} {scheduler}"),
}


def get_provider_info() -> dict[str, Any]:
    """Returns the provider description Airflow validates against its provider schema.

    Returns:
        A plain dict: package name, operators, hooks, triggers, the "TorchX app" extra link,
        the ``torchx`` connection type and the ``[torchx]`` configuration section.
    """
    return {
        "package-name": "torchx-flow",
        "name": "TorchX",
        "description": "Run TorchX components and AppDefs as Airflow tasks on any scheduler.",
        "integrations": [
            {
                "integration-name": _INTEGRATION,
                "external-doc-url": "https://pytorch.org/torchx/",
                "tags": ["software"],
            }
        ],
        "operators": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": ["torchx_airflow.operators.torchx"],
            }
        ],
        "hooks": [
            {"integration-name": _INTEGRATION, "python-modules": ["torchx_airflow.hooks.torchx"]}
        ],
        "triggers": [
            {
                "integration-name": _INTEGRATION,
                "python-modules": ["torchx_airflow.triggers.torchx"],
            }
        ],
        "extra-links": ["torchx_airflow.links.torchx.TorchXAppLink"],
        "connection-types": [
            {
                "connection-type": "torchx",
                "hook-class-name": "torchx_airflow.hooks.torchx.TorchXHook",
                "hook-name": "TorchX",
                "conn-fields": _CONN_FIELDS,
                "ui-field-behaviour": {
                    "hidden-fields": ["host", "schema", "login", "password", "port"],
                    "relabeling": {"extra": "TorchX settings (JSON)"},
                    "placeholders": {},
                },
            }
        ],
        "config": {
            "torchx": {
                "description": "TorchX operators.",
                "options": {
                    "defer_local_apps": {
                        "description": (
                            "Let deferrable TorchXOperators defer apps of host-local schedulers"
                            " (local_cwd) to the triggerer. Only when the triggerer runs on the"
                            " workers' host: elsewhere it could neither follow nor cancel them,"
                            " so by default such tasks wait in the worker."
                        ),
                        "version_added": None,
                        "type": "boolean",
                        "example": "True",
                        "default": "False",
                    }
                },
            }
        },
    }
