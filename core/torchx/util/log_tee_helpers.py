"""Stream the logs of every replica of an app (TorchX's public path of :func:`tee_logs`).

Everything here is :mod:`torchx.runner._log_tee` (``LogTee`` lives with the runner it reads
logs through), re-exported at the path TorchX code imports it from; the private helpers that
TorchX's ``torchx log`` used from here are re-exported too. This is the one module of
``torchx.util`` that imports a layer above it (listed in ``tests/core/test_layering.py``).
"""

from __future__ import annotations

from torchx.runner._log_tee import LogTee, Sink, replicas_of, tee_logs

# private helpers TorchX's ``torchx log`` imported from here (explicit re-exports)
from torchx.runner._log_tee import _find_role_replicas as _find_role_replicas
from torchx.runner._log_tee import _prefix_line as _prefix_line
from torchx.runner._log_tee import _print_log_lines as _print_log_lines
from torchx.runner._log_tee import (
    _start_threads_to_monitor_role_replicas as _start_threads_to_monitor_role_replicas,
)

__all__ = ["LogTee", "Sink", "replicas_of", "tee_logs"]
