"""Airflow adapter for torchx-flow: run TorchX components as Airflow tasks.

``TorchXHook`` (hook), ``TorchXOperator`` (operator) and ``TorchXJobTrigger`` (deferrable
trigger) are loaded on first access, so importing the package (which Airflow's provider
discovery does, through :mod:`torchx_airflow.provider_info`) imports neither Airflow nor
the TorchX runner.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchx_airflow._errors import TorchXAppError
    from torchx_airflow._pipeline import dag_from_pipeline
    from torchx_airflow.hooks.torchx import TorchXHook
    from torchx_airflow.operators.torchx import TorchXOperator
    from torchx_airflow.provider_info import get_provider_info
    from torchx_airflow.triggers.torchx import TorchXJobTrigger

__all__ = [
    "TorchXAppError",
    "TorchXHook",
    "TorchXJobTrigger",
    "TorchXOperator",
    "dag_from_pipeline",
    "get_provider_info",
]

_LAZY = {
    "TorchXAppError": "torchx_airflow._errors",
    "TorchXHook": "torchx_airflow.hooks.torchx",
    "TorchXOperator": "torchx_airflow.operators.torchx",
    "TorchXJobTrigger": "torchx_airflow.triggers.torchx",
    "get_provider_info": "torchx_airflow.provider_info",
    "dag_from_pipeline": "torchx_airflow._pipeline",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'torchx_airflow' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
