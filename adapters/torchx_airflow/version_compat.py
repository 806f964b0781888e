"""Every Airflow import and version branch of ``torchx_airflow`` lives here.

The adapter targets Airflow 3: operators and hooks come from the task SDK (``airflow.sdk``),
triggers from ``airflow.triggers.base``. ``AIRFLOW_V_3_3_PLUS`` gates the 3.3 features the
operator uses when present (``task_state_store`` for re-attach, ``BaseTrigger.on_kill``).
"""

from __future__ import annotations

from importlib import metadata
from typing import TYPE_CHECKING, Any

from airflow.sdk.configuration import conf

try:
    from airflow.sdk import BaseHook, BaseOperator, BaseOperatorLink, Connection, Context
    from airflow.sdk.exceptions import AirflowException, AirflowNotFoundException, TaskDeferred
except ImportError as e:  # pragma: no cover - exercised only without Airflow
    raise ImportError(
        "torchx_airflow needs Apache Airflow 3: pip install 'torchx-flow[airflow]'"
    ) from e

if TYPE_CHECKING:
    from airflow.triggers.base import BaseTrigger, TriggerEvent

__all__ = [
    "AIRFLOW_V_3_3_PLUS",
    "AirflowException",
    "AirflowNotFoundException",
    "BaseHook",
    "BaseOperator",
    "BaseOperatorLink",
    "BaseTrigger",
    "Connection",
    "Context",
    "TaskDeferred",
    "TriggerEvent",
    "airflow_version",
    "default_deferrable",
]


def airflow_version() -> tuple[int, int]:
    """Returns the installed Airflow ``(major, minor)``."""
    parts = metadata.version("apache-airflow").split(".")
    return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)


AIRFLOW_V_3_3_PLUS: bool = airflow_version() >= (3, 3)


def default_deferrable() -> bool:
    """Returns ``[operators] default_deferrable`` (False when unset)."""
    return bool(conf.getboolean("operators", "default_deferrable", fallback=False))


def __getattr__(name: str) -> Any:
    # BaseTrigger/TriggerEvent on first use (~6 ms): parsing a DAG file builds operators only,
    # and only the deferrable path needs the trigger classes
    if name in ("BaseTrigger", "TriggerEvent"):
        from airflow.triggers import base  # lazy: airflow.triggers, ~6-35 ms; deferral only

        value = getattr(base, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
