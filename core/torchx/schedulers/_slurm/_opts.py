"""Run options of ``slurm`` (re-exported by ``torchx.schedulers.slurm_scheduler``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from torchx.schedulers.api import StructuredOpts

__all__ = ["SlurmOpts"]


@dataclass
class SlurmOpts(StructuredOpts):
    """Run options of ``slurm`` (TorchX's, plus ``exclusive``, ``nomem`` and ``env_allow``)."""

    account: Optional[str] = None
    """The account to use for the slurm job."""

    partition: Optional[str] = None
    """The partition to run the job in."""

    time: Optional[str] = None
    """The maximum time the job is allowed to run for. Formats: "minutes",
    "minutes:seconds", "hours:minutes:seconds", "days-hours",
    "days-hours:minutes" or "days-hours:minutes:seconds"
    """

    comment: Optional[str] = None
    """Comment to set on the slurm job."""

    constraint: Optional[str] = None
    """Constraint to use for the slurm job."""

    mail_user: Optional[str] = field(default=None, metadata={"cfg_key": "mail-user"})
    """User to mail on job end."""

    mail_type: Optional[str] = field(default=None, metadata={"cfg_key": "mail-type"})
    """What events to mail users on."""

    job_dir: Optional[str] = None
    """The directory to place the job code and outputs. The
    directory must not exist and will be created. To enable log
    iteration, jobs will be tracked in ``.torchxslurmjobdirs``."""

    qos: Optional[str] = None
    """Quality of Service (QoS) to assign to the job."""

    exclusive: bool = False
    """Allocate every replica's node exclusively (sbatch --exclusive)."""

    nomem: bool = False
    """Do not request memory (--mem); also automatic when the partition has <= 1000 MB."""

    env_allow: Optional[list[str]] = None
    """glob patterns (* and ?) of the only submitter environment variables the job gets, e.g.
    HOME;WANDB_* (sbatch --export with their names; PATH is always kept; the role env and
    SLURM_* are added); unset: the job gets the submitter's whole environment (TorchX)"""
