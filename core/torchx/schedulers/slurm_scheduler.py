"""The ``slurm`` scheduler: every app is one heterogeneous ``sbatch`` job (§11.4).

Each replica of each role is one heterogeneous component (``#SBATCH hetjob``) named
``{role}-{replica_id}`` with its own ``--cpus-per-task``/``--mem``/``--gpus-per-node``, and one
``srun`` group of a single heterogeneous step; the app id is the Slurm job id. ``${rank0_env}``
is ``SLURM_JOB_NODELIST_HET_GROUP_0`` (the first component's node) and ``${img_root}`` the role
image (the job's directory). As in TorchX:

- a failed replica ends the step (``srun --kill-on-bad-exit=1``): fail-fast is Slurm's own;
- ``max_retries`` requeues the whole job (``scontrol requeue``) up to ``min(role.max_retries)``
  times; a REPLICA or ROLE retry policy warns that the whole job restarts;
- status comes from ``squeue`` while Slurm holds the job, then from ``sacct`` (accounting must be
  enabled); a pending job's reason is in ``msg``;
- logs are ``slurm-{job id}-{role}-{replica}.out``/``.err`` in the job's directory
  (``job_dir``, else the directory ``torchx`` ran in), found again through ``squeue``/``sacct``.

Unlike TorchX, ``log_iter`` reads both streams when none is given, ``delete`` waits until the job
has ended, ``list`` names each app's handle, and nothing is written to the launcher's directory
(TorchX appends to ``.torchxslurmjobdirs`` there: it is still read, for jobs TorchX launched).
Importing this module runs no Slurm command.
"""

from __future__ import annotations

import builtins
import fnmatch
import functools
import logging
import os
import re
import tempfile
import time
import warnings
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Optional

from torchx.schedulers._slurm._client import (
    SlurmClient,
    SlurmCommandError,
    SlurmUnavailableError,
)
from torchx.schedulers._slurm._describe import (
    Component,
    components_from_sacct,
    components_from_squeue,
    describe,
    list_from_sacct,
    list_from_squeue,
    merge_steps,
)
from torchx.schedulers._slurm._labels import (
    comment_labels,
    comment_with_labels,
    merge_labelled,
    sacct_labelled,
    squeue_labelled,
)
from torchx.schedulers._slurm._logs import (
    SLURM_JOB_DIRS,
    follow_files,
    get_job_dirs,
)
from torchx.schedulers._slurm._opts import SlurmOpts
from torchx.schedulers._slurm._request import (
    RANK0_ENV,
    SlurmBatchRequest,
    SlurmReplicaRequest,
    build_request,
    log_file_name,
)
from torchx.schedulers._slurm._states import (
    PENDING_REASONS,
    SLURM_STATES,
    appstate_from_slurm_state,
    get_appstate_from_job,
)
from torchx.schedulers.api import (
    DAYS_IN_2_WEEKS,
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    filter_regex,
)
from torchx.schedulers.labels import LabelledApp, matches
from torchx.specs.api import AppDef, AppDryRunInfo, CfgVal, is_terminal
from torchx.workspace.dir_workspace import DirWorkspaceMixin

__all__ = [
    "PENDING_REASONS",
    "RANK0_ENV",
    "SLURM_JOB_DIRS",
    "SLURM_STATES",
    "SlurmBatchRequest",
    "SlurmClient",
    "SlurmCommandError",
    "SlurmOpts",
    "SlurmReplicaRequest",
    "SlurmScheduler",
    "SlurmUnavailableError",
    "appstate_from_slurm_state",
    "create_scheduler",
    "get_appstate_from_job",
    "version",
]

logger: logging.Logger = logging.getLogger(__name__)

_DELETE_WAIT = 30.0  # seconds delete waits for a cancelled job to end
_CHANGE_POLL = 0.25
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@functools.cache
def version() -> tuple[int, int]:
    """The Slurm version ``(major, minor)`` from ``sinfo --version`` (cached per process).

    Without a working ``sinfo`` it warns and assumes 24.05, as TorchX does.
    """
    try:
        out = SlurmClient().version()
    except (SlurmUnavailableError, SlurmCommandError):
        warnings.warn(
            "could not run `sinfo --version` to get the Slurm version (not on a Slurm login"
            " node?); assuming slurm 24.05",
            RuntimeWarning,
            stacklevel=2,
        )
        out = "slurm 24.05.8"
    major, minor = (int(v) for v in out.split()[1].split(".")[:2])
    return major, minor


class SlurmScheduler(DirWorkspaceMixin, Scheduler[SlurmOpts]):
    """Runs each app as one heterogeneous Slurm job (a component per replica).

    Args:
        session_name: the session (part of the handles ``list`` returns).
        client: runs the Slurm commands (default: :class:`SlurmClient`, from ``PATH``).
    """

    supports_app_labels = True
    """Apps carry ``LaunchRequest(labels=...)`` in the job comment (``list_by_labels``)."""

    def __init__(self, session_name: str, client: Optional[SlurmClient] = None) -> None:
        super().__init__("slurm", session_name)
        self._client = client or SlurmClient()
        self._seen: dict[str, tuple[tuple[str, str], ...]] = {}

    # -- submit ----------------------------------------------------------------------------

    def _run_opts(self) -> Any:
        return SlurmOpts.as_runopts()

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """No-op (as TorchX): a role without resources gets Slurm's defaults."""

    def _submit_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> AppDryRunInfo[SlurmBatchRequest]:
        opts = cfg if isinstance(cfg, SlurmOpts) else SlurmOpts.from_cfg(cfg)
        nomem = opts.nomem
        if not nomem:
            memmb = self._client.partition_memmb(opts.partition)
            nomem = memmb is not None and memmb <= 1000  # aws-parallelcluster#2198, as TorchX
        exported = export_names(os.environ, opts.env_allow)
        return AppDryRunInfo(build_request(app, opts, nomem=nomem, exported=exported), repr)

    def schedule(self, dryrun_info: AppDryRunInfo[SlurmBatchRequest]) -> str:
        """Writes the batch script and submits it with ``sbatch``; returns the job id.

        The job runs in ``job_dir`` (created if needed) or the current directory, where its
        replicas write their logs.
        """
        req = dryrun_info.request
        cmd = list(req.cmd)
        if req.job_dir is not None:
            os.makedirs(req.job_dir, exist_ok=True)
            cmd.append(f"--chdir={req.job_dir}")
        with tempfile.TemporaryDirectory(prefix="torchx_slurm_") as tmp:
            path = os.path.join(req.job_dir or tmp, "torchx-sbatch.sh")
            with open(path, "w", encoding="utf-8") as f:
                f.write(req.materialize())
            return self._client.sbatch(cmd, path)

    # -- queries ---------------------------------------------------------------------------

    def _squeue(self, app_id: str) -> list[Component]:
        """The job's components as ``squeue`` shows them ([] when squeue fails: use sacct)."""
        try:
            return components_from_squeue(self._client.squeue_jobs(), app_id)
        except SlurmCommandError as e:
            logger.info("squeue failed (%s): describing %s from sacct", e, app_id)
            return []

    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        """Describes the job from ``squeue``, then ``sacct``; None if Slurm does not know it.

        A read only: nothing is changed.
        """
        if not app_id.isdigit():
            return None
        live = self._squeue(app_id)
        self._seen[app_id] = _signature(live)
        if live and not all(is_terminal(c.app_state) for c in live):
            return _labelled(describe(app_id, live), live[0].comment)
        rows = self._client.sacct_job(app_id)
        done, _ = components_from_sacct(rows or [], app_id)
        if live:  # ended: squeue's components and state are final, sacct adds the steps
            desc = describe(app_id, merge_steps(live, done), state=live[0].app_state)
            return _labelled(desc, live[0].comment, done[0].comment if done else "")
        return _labelled(describe(app_id, done), done[0].comment if done else "")

    def list_by_labels(
        self, labels: Mapping[str, str], cfg: Optional[Mapping[str, CfgVal]] = None
    ) -> builtins.list[LabelledApp]:
        """This user's jobs of the last two weeks whose comment holds ``labels`` (full keys).

        ``sacct``'s (needs ``AccountingStoreFlags=job_comment`` for the comment given at
        submit), updated by ``squeue``'s (fresher; all a cluster without accounting has).
        """
        done: dict[str, LabelledApp] = {}
        try:
            done = sacct_labelled(self._client.sacct_comments(DAYS_IN_2_WEEKS))
        except SlurmCommandError as e:
            logger.info("sacct failed (%s): searching the jobs squeue knows only", e)
        live = squeue_labelled(self._client.squeue_jobs())
        return [a for a in merge_labelled(done, live) if matches(a.labels, labels)]

    def set_app_labels(self, app_id: str, labels: Mapping[str, str]) -> None:
        """Adds labels to the job's comment (``scontrol update``, or ``sacctmgr`` once ended).

        Raises:
            ValueError: Slurm does not know the job.
        """
        live = self._squeue(app_id) if app_id.isdigit() else []
        done, _ = components_from_sacct(self._client.sacct_job(app_id) or [], app_id)
        if not live and not done:
            raise ValueError(f"slurm job `{app_id}` does not exist (neither squeue nor sacct)")
        current: Optional[str] = live[0].comment if live else done[0].comment
        if done and (not live or is_terminal(live[0].app_state)):  # accounting may be newer
            current = comment_with_labels(current, comment_labels(done[0].comment))
        running = bool(live) and not is_terminal(live[0].app_state)
        self._client.set_comment(app_id, comment_with_labels(current, labels) or "", running)

    def list(self, cfg: Optional[Mapping[str, CfgVal]] = None) -> builtins.list[ListAppResponse]:
        """This user's jobs of the last two weeks: ``sacct``'s, updated by ``squeue``'s.

        ``squeue`` is fresher (``sacct`` learns of a job's end a moment later) and stands in
        for ``sacct`` on a cluster without accounting.
        """
        apps: dict[str, ListAppResponse] = {}
        try:
            for app in list_from_sacct(self._client.sacct_list(DAYS_IN_2_WEEKS), self.session_name):
                apps[app.app_id] = app
        except SlurmCommandError as e:
            logger.info("sacct failed (%s): listing the jobs squeue knows only", e)
        for app in list_from_squeue(self._client.squeue_jobs(), self.session_name):
            apps[app.app_id] = app
        return sorted(apps.values(), key=lambda a: int(a.app_id))

    def wait_for_change(self, app_id: str, timeout: float) -> None:
        """Returns once ``squeue`` shows the job differently than at the last ``describe``."""
        deadline = time.monotonic() + max(0.0, timeout)
        seen = self._seen.get(app_id)
        while time.monotonic() < deadline:
            if seen is None or _signature(self._squeue(app_id)) != seen:
                return
            time.sleep(min(_CHANGE_POLL, max(0.0, deadline - time.monotonic())))

    # -- cancel and delete -----------------------------------------------------------------

    def _cancel_existing(self, app_id: str) -> None:
        """``scancel`` (every component); a job that already ended is left as it is."""
        self._client.scancel(app_id)

    def _delete_existing(self, app_id: str) -> None:
        """Cancels the job and waits (up to 30 s) until it has ended; Slurm keeps its record."""
        self._client.scancel(app_id)
        deadline = time.monotonic() + _DELETE_WAIT
        while time.monotonic() < deadline:
            desc = self.describe(app_id)
            if desc is None or is_terminal(desc.state):
                return
            time.sleep(_CHANGE_POLL)

    # -- logs ------------------------------------------------------------------------------

    def _job_dir(self, app_id: str) -> str:
        live = self._squeue(app_id)
        if live and live[0].workdir:
            return live[0].workdir
        done, _ = components_from_sacct(self._client.sacct_job(app_id) or [], app_id)
        if done and done[0].workdir:
            return done[0].workdir
        return get_job_dirs().get(app_id, os.getcwd())

    def log_iter(
        self,
        app_id: str,
        role_name: str,
        k: int = 0,
        regex: Optional[str] = None,
        since: Optional[datetime] = None,
        until: Optional[datetime] = None,
        should_tail: bool = False,
        streams: Optional[Stream] = None,
    ) -> Iterable[str]:
        """Iterates over the lines of replica ``k`` of ``role_name`` (each keeping its newline).

        ``streams``: STDOUT reads the ``.out`` file, STDERR the ``.err`` file, None or COMBINED
        both (stdout's lines, then stderr's; as they come when tailing). ``since``/``until`` are
        ignored with a warning (the files carry no timestamps), as in TorchX.
        """
        if since or until:
            logger.warning(
                "since/until are ignored by the slurm scheduler (its log files carry no"
                " timestamps): returning every line"
            )
        name = f"{role_name}-{k}"
        directory = self._job_dir(app_id)
        exts = {Stream.STDOUT: ["out"], Stream.STDERR: ["err"]}.get(streams, ["out", "err"])  # type: ignore[arg-type]
        paths = [os.path.join(directory, log_file_name(app_id, name, e)) for e in exts]

        def is_done() -> bool:
            desc = self.describe(app_id)
            return desc is None or is_terminal(desc.state)

        lines = follow_files(paths, is_done, should_tail)
        return filter_regex(regex, lines) if regex else lines


def export_names(environ: Mapping[str, str], allow: Optional[list[str]]) -> Optional[list[str]]:
    """The names of the variables ``sbatch --export`` passes under ``env_allow``.

    None (no ``--export``: the whole environment) when ``allow`` is None; else ``PATH`` and
    the names matching a pattern, sorted (names that are not shell identifiers are skipped:
    ``--export`` splits at commas and the script names them).
    """
    if allow is None:
        return None
    return sorted(
        k
        for k in environ
        if _IDENTIFIER.match(k) and (k == "PATH" or any(fnmatch.fnmatchcase(k, p) for p in allow))
    )


def _labelled(desc: Optional[DescribeAppResponse], *comments: str) -> Optional[DescribeAppResponse]:
    """``desc`` with the labels of its job comment(s) (later ones win) in its metadata."""
    if desc is not None:
        for comment in comments:
            desc.metadata.update(comment_labels(comment))
    return desc


def _signature(comps: Iterable[Component]) -> tuple[tuple[str, str], ...]:
    return tuple((c.state, c.reason) for c in comps)


def create_scheduler(session_name: str, **kwargs: Any) -> SlurmScheduler:
    """Creates a ``slurm`` scheduler.

    Args:
        session_name: the session name.
        kwargs: ``client`` (a :class:`SlurmClient`) is used; other keys are ignored.
    """
    return SlurmScheduler(session_name, client=kwargs.get("client"))
