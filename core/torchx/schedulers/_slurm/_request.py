"""AppDef -> ``sbatch`` script: one heterogeneous job, a component and ``srun`` group per replica.

Rendered as TorchX does. Pure: nothing here runs a Slurm command.

The script runs every replica in one heterogeneous ``srun`` step with ``--kill-on-bad-exit=1``, so
a replica that fails stops the others (fail-fast, done by Slurm). Retries requeue the whole job
(``scontrol requeue``) while ``$SLURM_RESTART_COUNT`` is below ``min(role.max_retries)``.
"""

from __future__ import annotations

import shlex
import string
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

from torchx.schedulers._slurm._labels import comment_with_labels
from torchx.schedulers._slurm._opts import SlurmOpts
from torchx.schedulers.labels import app_labels
from torchx.specs.api import NULL_RESOURCE, AppDef, Resource, RetryPolicy, Role, macros

__all__ = [
    "RANK0_ENV",
    "SlurmBatchRequest",
    "SlurmReplicaRequest",
    "build_request",
    "log_file_name",
]

RANK0_ENV = "SLURM_JOB_NODELIST_HET_GROUP_0"
"""What ``${rank0_env}`` becomes: Slurm sets it to the first component's node (rank 0's host)."""


def log_file_name(app_id: str, replica_name: str, extension: str) -> str:
    """The name of a replica's log file in the job's directory (``out`` or ``err``)."""
    return f"slurm-{app_id}-{replica_name}.{extension}"


def _with_job_id(arg: str) -> str:
    """Shell-quotes ``arg``, turning each ``${app_id}`` into ``"$SLURM_JOB_ID"``."""
    return '"$SLURM_JOB_ID"'.join(shlex.quote(p) if p else "" for p in arg.split(macros.app_id))


def _substitute(text: str, values: Mapping[str, str]) -> str:
    """What ``macros.Values.substitute`` does, without its per-call ``asdict``."""
    return string.Template(text).safe_substitute(values) if "$" in text else text


def _opts_to_strs(opts: Mapping[str, Optional[str]]) -> list[str]:
    return [f"--{k}" if v is None else f"--{k}={v}" for k, v in opts.items()]


def _sbatch_opts(
    resource: Resource, cfg: SlurmOpts, nomem: bool, gpus_per_node: bool
) -> dict[str, Optional[str]]:
    """The ``#SBATCH`` options of one component (the same for every replica of a role)."""
    sbatch_opts: dict[str, Optional[str]] = {"requeue": None}
    for key in ("partition", "time", "constraint", "qos"):
        value = getattr(cfg, key)
        if value is not None:
            sbatch_opts[key] = str(value)
    sbatch_opts["ntasks-per-node"] = "1"
    if cfg.exclusive:
        sbatch_opts["exclusive"] = None
    if resource != NULL_RESOURCE:
        if resource.cpu > 0:
            sbatch_opts["cpus-per-task"] = str(resource.cpu)
        if not nomem and resource.memMB > 0:
            sbatch_opts["mem"] = str(resource.memMB)
        if resource.gpu > 0:
            if gpus_per_node:
                sbatch_opts["gpus-per-node"] = str(resource.gpu)
            else:
                sbatch_opts["gpus-per-task"] = str(resource.gpu)
                sbatch_opts["ntasks"] = "1"
    return sbatch_opts


@dataclass
class SlurmReplicaRequest:
    """One replica: its ``#SBATCH`` component options and its ``srun`` group."""

    name: str
    entrypoint: str
    args: list[str]
    srun_opts: dict[str, str]
    sbatch_opts: dict[str, Optional[str]]
    env: dict[str, str]

    @classmethod
    def from_role(
        cls,
        name: str,
        role: Role,
        cfg: SlurmOpts,
        nomem: bool,
        gpus_per_node: bool = True,
    ) -> SlurmReplicaRequest:
        """Builds the request of replica ``name`` of a role whose macros are already applied.

        Args:
            name: ``{role}-{replica_id}`` (the component's job name).
            role: the role, macros substituted (``${app_id}`` stays, resolved by the script).
            cfg: the run options.
            nomem: do not request memory.
            gpus_per_node: ``--gpus-per-node`` (else ``--gpus-per-task`` with ``--ntasks=1``).
        """
        return cls._make(
            name, role.entrypoint, list(role.args), dict(role.env),
            _sbatch_opts(role.resource, cfg, nomem, gpus_per_node),
        )  # fmt: skip

    @classmethod
    def _make(
        cls,
        name: str,
        entrypoint: str,
        args: list[str],
        env: dict[str, str],
        sbatch_opts: dict[str, Optional[str]],
    ) -> SlurmReplicaRequest:
        srun_opts = {
            "output": log_file_name(macros.app_id, name, "out"),
            "error": log_file_name(macros.app_id, name, "err"),
            "wait": "60",  # end the others 60 s after the first replica exits
            "kill-on-bad-exit": "1",  # fail-fast: a failed replica ends the step
        }
        return cls(
            name=name,
            entrypoint=entrypoint,
            args=args,
            srun_opts=srun_opts,
            sbatch_opts=sbatch_opts,
            env=env,
        )

    def materialize(self) -> tuple[list[str], list[str]]:
        """Returns ``(#SBATCH words, srun group words)``; the srun words are shell-quoted.

        The environment is passed through ``env K=V ...`` in front of the entrypoint (not
        ``--export``, which splits values at commas).
        """
        sbatch_args = [f"--job-name={self.name}", *_opts_to_strs(self.sbatch_opts)]
        command = [self.entrypoint, *self.args]
        if self.env:
            command = ["env", *(f"{k}={v}" for k, v in self.env.items()), *command]
        words = [*_opts_to_strs(self.srun_opts), *command]
        return sbatch_args, [_with_job_id(w) for w in words]


@dataclass
class SlurmBatchRequest:
    """The ``sbatch`` command and the replicas of its script (``str()``/``repr()``: the dry run)."""

    cmd: list[str]
    replicas: dict[str, SlurmReplicaRequest]
    job_dir: Optional[str]
    max_retries: int
    exported: Optional[list[str]] = None
    """The names ``sbatch --export`` passes (``env_allow``); None: the whole environment."""

    def _step_export(self) -> str:
        """The script line that gives the ``srun`` step exactly the exported variables.

        ``sbatch --export=NAMES`` sets ``SLURM_EXPORT_ENV=NAMES`` in the job, which ``srun``
        applies to its step: the line adds the variables the script itself exports.
        """
        if self.exported is None:
            return ""
        names = [*self.exported, "PYTHONUNBUFFERED", "TORCHX_MAX_RETRIES"]
        return f"export SLURM_EXPORT_ENV={','.join(names)}\n"

    def materialize(self) -> str:
        """Returns the batch script (byte-stable for a given request)."""
        groups = []
        sruns = []
        for replica in self.replicas.values():
            sbatch_words, srun_words = replica.materialize()
            groups.append("#SBATCH " + " ".join(sbatch_words) + "\n")
            sruns.append(" ".join(srun_words))
        header = "#SBATCH hetjob\n".join(groups)
        srun = " :\\\n    ".join(sruns)
        cmd = " ".join(shlex.quote(a) for a in self.cmd)
        return f"""#!/bin/bash
#
# Generated by torchx-flow
# Run with: {cmd}
#
{header}
set -eu

export PYTHONUNBUFFERED=1
export SLURM_UNBUFFEREDIO=1
export TORCHX_MAX_RETRIES={self.max_retries}
{self._step_export()}
set +e
srun {srun}
exitcode=$?
set -e

echo "job exited with code $exitcode"
if [ $exitcode -ne 0 ]; then
    if [ "$TORCHX_MAX_RETRIES" -gt "${{SLURM_RESTART_COUNT:-0}}" ]; then
        scontrol requeue "$SLURM_JOB_ID"
    fi
    exit $exitcode
fi
"""

    def __repr__(self) -> str:
        return f"""{" ".join([*self.cmd, "$SBATCH_SCRIPT"])}

#----------------
# SBATCH_SCRIPT
#----------------
{self.materialize()}"""

    __str__ = __repr__


def _check_retries(app: AppDef) -> int:
    """``min(role.max_retries)``; warns when a role asks for a narrower restart than Slurm's."""
    for role in app.roles:
        if role.max_retries > 0 and role.retry_policy != RetryPolicy.APPLICATION:
            warnings.warn(
                f"role `{role.name}` asks for retry_policy {role.retry_policy.value}; Slurm"
                " requeues the whole job (every role) instead, as TorchX does",
                UserWarning,
                stacklevel=3,
            )
    return min((role.max_retries for role in app.roles), default=0)


def build_request(
    app: AppDef,
    cfg: SlurmOpts,
    nomem: bool,
    gpus_per_node: bool = True,
    exported: Optional[list[str]] = None,
) -> SlurmBatchRequest:
    """Renders ``app`` into the batch request (no Slurm command runs).

    The app's labels (``AppDef.metadata``, :mod:`torchx.schedulers.labels`) go into the job
    comment after ``cfg.comment`` (:mod:`torchx.schedulers._slurm._labels`).

    Args:
        app: the app; every replica of every role becomes one heterogeneous component.
        cfg: the run options.
        nomem: do not request memory (``cfg.nomem``, or a partition with <= 1000 MB).
        gpus_per_node: request GPUs per node (Slurm >= 24.11 style) rather than per task.
        exported: the names of the submitter's variables the job gets (``--export``; empty:
            ``--export=NONE``); None: all of them (no ``--export``, TorchX's behaviour).

    Raises:
        ValueError: the app has no replica at all.
    """
    replicas: dict[str, SlurmReplicaRequest] = {}
    for role in app.roles:
        opts = _sbatch_opts(role.resource, cfg, nomem or cfg.nomem, gpus_per_node)
        for replica_id in range(role.num_replicas):
            values = macros.Values(
                img_root=role.image,
                app_id=macros.app_id,
                replica_id=str(replica_id),
                rank0_env=RANK0_ENV,
            ).to_dict()
            name = f"{role.name}-{replica_id}"
            replicas[name] = SlurmReplicaRequest._make(
                name,
                role.entrypoint,
                [_substitute(a, values) for a in role.args],
                {k: _substitute(v, values) for k, v in role.env.items()},
                dict(opts),
            )
    if not replicas:
        raise ValueError(f"app `{app.name}` has no replica to run; give a role num_replicas >= 1")
    cmd = ["sbatch", "--parsable"]
    comment = comment_with_labels(cfg.comment, app_labels(app.metadata))
    for key in ("comment", "mail_user", "mail_type", "account"):
        value = comment if key == "comment" else getattr(cfg, key)
        if value is not None:
            cmd.append(f"--{key.replace('_', '-')}={value}")
    if exported is not None:
        cmd.append(f"--export={','.join(exported) or 'NONE'}")
    return SlurmBatchRequest(
        cmd=cmd,
        replicas=replicas,
        job_dir=cfg.job_dir,
        max_retries=_check_retries(app),
        exported=exported,
    )
