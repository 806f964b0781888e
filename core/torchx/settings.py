"""Names of the environment variables that torchx reads or sets.

Each constant holds the variable name without the ``ENV_`` prefix, e.g.
``ENV_TORCHXCONFIG == "TORCHXCONFIG"``.
"""

from __future__ import annotations

__all__ = [
    "ENV_TORCHX_TRACKERS",
    "ENV_TORCHX_PARENT_RUN_ID",
    "ENV_TORCHX_JOB_ID",
    "ENV_TORCHXCONFIG",
    "ENV_TORCHX_INTERNAL_SESSION_ID",
    "ENV_TORCHX_IMAGE",
]

ENV_TORCHX_TRACKERS = "TORCHX_TRACKERS"
"""Comma-separated tracker names, set by the runner inside the job."""

ENV_TORCHX_PARENT_RUN_ID = "TORCHX_PARENT_RUN_ID"
"""Parent run id for tracker lineage; beats the ``parent_run_id`` argument."""

ENV_TORCHX_JOB_ID = "TORCHX_JOB_ID"
"""``{scheduler}://{session}/{app_id}``, set by the runner inside the job."""

ENV_TORCHXCONFIG = "TORCHXCONFIG"
"""The single ``.torchxconfig`` file to read; ``""`` disables config files."""

ENV_TORCHX_INTERNAL_SESSION_ID = "TORCHX_INTERNAL_SESSION_ID"
"""Per-process session uuid shared by the runner and events."""

ENV_TORCHX_IMAGE = "TORCHX_IMAGE"
"""The container's own image, set by the docker and kubernetes schedulers."""
