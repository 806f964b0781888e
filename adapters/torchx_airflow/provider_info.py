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
        A plain dict: package name, operators, hooks, triggers and the ``torchx``
        connection type.
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
        "connection-types": [
            {
                "connection-type": "torchx",
                "hook-class-name": "torchx_airflow.hooks.torchx.TorchXHook",
            }
        ],
    }
