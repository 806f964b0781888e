"""Airflow provider metadata for torchx-flow (entry point group ``apache_airflow_provider``).

This module must stay importable without Airflow and import nothing heavy: Airflow's
providers manager calls :func:`get_provider_info` while it scans installed packages.
"""

from __future__ import annotations

from typing import Any

__all__ = ["get_provider_info"]

_INTEGRATION = "TorchX"


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
