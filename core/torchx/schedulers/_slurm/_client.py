"""The one module that runs Slurm commands (argv lists, never a shell).

Every command reads ``SLURM_CONF`` (and its own defaults) from the environment, like a user's
shell on a login node. A missing command raises :class:`SlurmUnavailableError` with one line
saying what to install or start.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Optional

from torchx.schedulers._slurm._describe import SACCT_FIELDS

__all__ = ["SlurmClient", "SlurmCommandError", "SlurmUnavailableError"]

_TIMEOUT = 60.0


class SlurmUnavailableError(RuntimeError):
    """A Slurm command is not installed (not on ``PATH``)."""


class SlurmCommandError(RuntimeError):
    """A Slurm command failed; the message is its stderr's last line."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        last = next((ln for ln in reversed(stderr.strip().splitlines()) if ln.strip()), "")
        super().__init__(f"`{' '.join(argv[:2])}` failed ({returncode}): {last}".rstrip(": "))
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr


class SlurmClient:
    """Runs ``sbatch``, ``squeue``, ``sacct``, ``scancel``, ``sinfo`` and returns parsed output."""

    def run(self, argv: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        """Runs ``argv`` (no shell) and returns the completed process.

        Raises:
            SlurmUnavailableError: the command is not installed.
            SlurmCommandError: ``check`` and it exited non-zero, or it did not end in 60 s.
        """
        try:
            proc = subprocess.run(
                list(argv),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=_TIMEOUT,
            )
        except subprocess.TimeoutExpired as e:
            raise SlurmCommandError(argv, -1, f"no answer in {_TIMEOUT:.0f} s") from e
        except FileNotFoundError as e:
            raise SlurmUnavailableError(
                f"Slurm command `{argv[0]}` not found: run on a Slurm login node (Slurm client"
                " installed, SLURM_CONF set), or start the local one: scripts/infra/slurm.sh start"
            ) from e
        if check and proc.returncode != 0:
            raise SlurmCommandError(argv, proc.returncode, proc.stderr)
        return proc

    def sbatch(self, cmd: Sequence[str], script_path: str) -> str:
        """Submits ``script_path`` with ``cmd`` (``sbatch --parsable ...``); returns the job id."""
        out = self.run([*cmd, script_path]).stdout.strip()
        return out.split(";")[0]  # "id" or "id;cluster"

    def squeue_jobs(self) -> list[dict[str, Any]]:
        """Every job ``squeue --json`` shows (22.05 ignores ``-j`` with ``--json``)."""
        proc = self.run(["squeue", "--json"])
        jobs: list[dict[str, Any]] = json.loads(proc.stdout).get("jobs", [])
        return jobs

    def sacct_job(self, job_id: str) -> Optional[list[str]]:
        """``sacct`` rows of every attempt of ``job_id``; None when accounting is unavailable."""
        proc = self.run(
            ["sacct", "-D", "--parsable2", "--noheader", f"--format={SACCT_FIELDS}", "-j", job_id],
            check=False,
        )
        if proc.returncode != 0:
            return None
        return proc.stdout.splitlines()

    def sacct_list(self, days: int) -> list[str]:
        """``JobID|JobName|State`` of the allocations of the last ``days`` days (this user)."""
        start = (datetime.now() - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S")
        argv = ["sacct", "-X", "--parsable2", "--noheader", "--format=JobID,JobName,State"]
        return self.run([*argv, f"--starttime={start}"]).stdout.splitlines()

    def sacct_comments(self, days: int) -> list[str]:
        """``JobID|State|Comment`` of the allocations of the last ``days`` days (this user)."""
        start = (datetime.now() - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S")
        argv = ["sacct", "-X", "--parsable2", "--noheader", "--format=JobID,State,Comment"]
        return self.run([*argv, f"--starttime={start}"]).stdout.splitlines()

    def set_comment(self, job_id: str, comment: str, live: bool) -> None:
        """Replaces the comment of job ``job_id`` (one argv word each: no shell, no quoting).

        A job the controller still runs is updated there (``scontrol update``), which tells
        accounting too; an ended one (or one that ended meanwhile) in accounting
        (``sacctmgr modify job``).

        Raises:
            SlurmCommandError: neither command could change it.
        """
        if live:
            try:
                self.run(["scontrol", "update", f"JobId={job_id}", f"Comment={comment}"])
                return
            except SlurmCommandError:
                pass  # ended meanwhile: accounting holds it now
        where = ["where", f"JobID={job_id}", "set", f"Comment={comment}"]
        self.run(["sacctmgr", "-i", "modify", "job", *where])

    def scancel(self, job_id: str) -> None:
        """Cancels every component of ``job_id``."""
        self.run(["scancel", job_id])

    def version(self) -> str:
        """``sinfo --version`` output (``slurm 22.05.8``)."""
        return self.run(["sinfo", "--version"]).stdout.strip()

    def partition_memmb(self, partition: Optional[str]) -> Optional[int]:
        """The memory (MB) of a node of ``partition`` (default: the default partition), or None."""
        try:
            proc = self.run(["sinfo", "--noheader", "--format=%P|%m", "--noconvert"], check=False)
        except (SlurmUnavailableError, SlurmCommandError):
            return None
        if proc.returncode != 0:
            return None
        for line in proc.stdout.splitlines():
            part, _, mem = line.strip().partition("|")
            default = part.endswith("*")
            part = part.rstrip("*")
            if part == partition or (partition is None and default):
                digits = mem.strip().rstrip("+M")
                return int(digits) if digits.isdigit() else None
        return None
