"""Run options of ``local_docker`` (re-exported by ``torchx.schedulers.docker_scheduler``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from torchx.schedulers.api import StructuredOpts

__all__ = ["Opts"]


@dataclass
class Opts(StructuredOpts):
    """Run options of ``local_docker``."""

    copy_env: Optional[list[str]] = None
    """glob patterns of launcher environment variables to copy into every replica (FOO_*)"""

    env_allow: Optional[list[str]] = None
    """glob patterns of launcher environment variables copied into every replica, as copy_env
    (a container never gets the launcher's environment otherwise; the uniform allow-list option
    of local_cwd, local_docker and slurm)"""

    env_drop: Optional[list[str]] = None
    """glob patterns of launcher environment variables never copied, even when copy_env matches
    them (SECRET_*)"""

    env: Optional[dict[str, str]] = None
    """environment variables for every replica (ENV1:v1,ENV2:v2), applied over copy_env's"""

    privileged: bool = False
    """run the containers with elevated permissions (`docker run --privileged`)"""
