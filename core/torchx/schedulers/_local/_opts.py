"""Run options of the ``local_cwd`` scheduler (private; public as ``local_scheduler.Opts``).

Kept apart from :mod:`torchx.schedulers.local_scheduler` so that ``torchx runopts local_cwd``
builds them without importing the scheduler (and with it ``torchx.specs.api``): see
:func:`run_opts`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from torchx.schedulers._api_opts import StructuredOpts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs.options import runopts

__all__ = ["Opts", "run_opts"]


@dataclass
class Opts(StructuredOpts):
    """Run options of ``local_cwd``."""

    log_dir: Optional[str] = None
    """dir to write stdout/stderr log files of replicas (default: the app's state dir)"""

    prepend_cwd: bool = False
    """if set, prepends CWD to replica's PATH env var making any binaries in CWD take precedence
    over those in PATH"""

    auto_set_cuda_visible_devices: bool = False
    """sets the `CUDA_VISIBLE_DEVICES` for roles that request GPU resources; each role replica
    gets its own contiguous range of GPU indices"""

    detach: bool = False
    """if set, the app keeps running after the launching process exits (find it by its handle)"""

    grace_period: Optional[float] = None
    """seconds between SIGTERM and SIGKILL when replicas are stopped (default: the scheduler's,
    10)"""

    env_drop: Optional[list[str]] = None
    """glob patterns (* and ?, case-sensitive) of inherited environment variables the replicas do
    not get, e.g. SECRET_*;AWS_SECRET_ACCESS_KEY (what the AppDef sets is kept)"""

    env_allow: Optional[list[str]] = None
    """glob patterns (* and ?, case-sensitive) of the only inherited environment variables the
    replicas and their supervisor get, e.g. HOME;LANG;WANDB_* (PATH is always kept; the AppDef's
    env and what torchx sets are added; env_drop still applies); unset: all of them (TorchX)"""


def run_opts() -> runopts:
    """Returns the run options of ``local_cwd`` (``LocalScheduler.run_opts()``)."""
    return Opts.as_runopts()
