"""The ``local_docker`` scheduler: one container per replica on a Docker engine (§11.2).

Every replica runs in its own container on a per-app user network ``torchx-{app_id}``, where
rank 0 is reachable by its container name (``$TORCHX_RANK0_HOST``). Containers carry labels
(app id, app name, session, role, replica), so ``describe``, ``list``, ``log_iter``, ``cancel``
and ``delete`` work from any process. Unlike TorchX:

- fail-fast: as soon as one replica fails (after its retries), ``describe`` reports the app
  FAILED; stopping the others is the explicit ``enforce_fail_fast`` (``Runner.wait`` and the
  follow layer call it once they see FAILED), so ``describe`` stays a read;
- a cancelled app stays CANCELLED: ``cancel`` leaves a labelled marker volume next to the
  containers, and ``delete`` removes containers, network and marker;
- container labels cannot change, so ``set_app_labels`` keeps each added label on a marker
  volume of its own (``describe`` and ``list_by_labels`` merge them over the containers');
- ``list`` is scoped to the scheduler's session, like ``local_cwd``.

Importing this module does not import the ``docker`` SDK (creating a scheduler does).
"""

from __future__ import annotations

import builtins
import importlib.util
import logging
import os
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Optional

from torchx.schedulers._docker._marks import (
    add_labels,
    container_infos,
    labelled_apps,
    mark_cancelled,
    marks,
    session_apps,
)
from torchx.schedulers._docker._opts import Opts
from torchx.schedulers._docker._partial import check, submission_labels
from torchx.schedulers._docker._request import (
    LABEL_APP_ID,
    LABEL_APP_NAME,
    LABEL_REPLICA_ID,
    LABEL_ROLE_INDEX,
    LABEL_ROLE_NAME,
    LABEL_SESSION,
    LABEL_VERSION,
    NETWORK,
    DockerContainer,
    DockerJob,
    copy_env,
    to_docker_job,
)
from torchx.schedulers._docker._state import (
    CONTAINER_STATE,
    ContainerInfo,
    app_state,
    container_state,
    failure_msg,
    roles_from_containers,
    signature,
)
from torchx.schedulers.api import (
    DescribeAppResponse,
    ListAppResponse,
    Scheduler,
    Stream,
    filter_regex,
    split_lines_iterator,
)
from torchx.schedulers.ids import make_unique
from torchx.schedulers.labels import LabelledApp
from torchx.specs.api import (
    AppDef,
    AppDryRunInfo,
    AppState,
    is_terminal,
)
from torchx.util.host import process_ident
from torchx.version import __version__
from torchx.workspace.docker_workspace import DockerWorkspaceMixin

if TYPE_CHECKING:
    from torchx.schedulers._docker._client import DockerEngine

__all__ = [
    "CONTAINER_STATE",
    "LABEL_APP_ID",
    "LABEL_APP_NAME",
    "LABEL_REPLICA_ID",
    "LABEL_ROLE_INDEX",
    "LABEL_ROLE_NAME",
    "LABEL_SESSION",
    "LABEL_VERSION",
    "NETWORK",
    "DockerContainer",
    "DockerJob",
    "DockerScheduler",
    "Opts",
    "create_scheduler",
    "ensure_network",
    "has_docker",
]

logger: logging.Logger = logging.getLogger(__name__)

DEFAULT_GRACE_PERIOD = 10.0
_SETTLE = 2.0
"""Seconds ``wait_for_change`` polls after an event until the change shows in the list."""
_INSTALL_HINT = "pip install 'torchx-flow[docker]'"


def has_docker() -> bool:
    """Returns whether the ``docker`` SDK is installed (without importing it)."""
    return importlib.util.find_spec("docker") is not None


def _engine(client: Optional[Any]) -> DockerEngine:
    if client is None and not has_docker():
        raise ModuleNotFoundError(
            f"scheduler `local_docker` needs the package `docker`, which is not installed;"
            f" install it with: {_INSTALL_HINT}",
            name="docker",
        )
    from torchx.schedulers._docker._client import (  # lazy: docker SDK ~170 ms; optional extra
        DockerEngine,
    )

    return DockerEngine(client)


def ensure_network(client: Optional[Any] = None, network: Optional[str] = None) -> None:
    """Creates a user bridge network unless it exists (TorchX's shared ``torchx`` by default).

    Args:
        client: a ``docker.DockerClient`` (default: from the environment).
        network: the network name.
    """
    _engine(client).ensure_network(network or NETWORK, {LABEL_VERSION: _version()})


def _role_replicas(job: DockerJob) -> list[tuple[str, int]]:
    """``(role, replicas)`` of the job's containers, in role order."""
    counts: dict[tuple[int, str], int] = {}
    for c in job.containers:
        labels = c.kwargs.get("labels", {})
        key = (int(labels.get(LABEL_ROLE_INDEX, 0)), labels.get(LABEL_ROLE_NAME, ""))
        counts[key] = counts.get(key, 0) + 1
    return [(role, n) for (_, role), n in sorted(counts.items())]


def _version() -> str:
    return __version__


class DockerScheduler(DockerWorkspaceMixin, Scheduler[Mapping[str, Any]]):
    """Runs each replica as a container on a Docker engine.

    Args:
        session_name: the session apps are labelled with (``list`` shows this session's apps).
        client: a ``docker.DockerClient``; default: ``docker.from_env()`` on first use.
        grace_period: seconds between SIGTERM and SIGKILL on cancel and ``enforce_fail_fast``.
    """

    supports_app_labels = True
    """Apps carry ``LaunchRequest(labels=...)`` as container labels (``list_by_labels``)."""

    def __init__(
        self,
        session_name: str,
        client: Optional[Any] = None,
        grace_period: float = DEFAULT_GRACE_PERIOD,
    ) -> None:
        engine = _engine(client)
        super().__init__("docker", session_name, docker_client=client, engine=engine)
        self._engine = engine
        self._grace_period = grace_period

    # -- submit ----------------------------------------------------------------------------

    def _run_opts(self) -> Any:
        return Opts.as_runopts()

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, Any]) -> None:
        """No-op: a role without resources runs without limits."""

    def _submit_dryrun(self, app: AppDef, cfg: Mapping[str, Any]) -> AppDryRunInfo[DockerJob]:
        opts = Opts.from_cfg(cfg)
        images_to_push = self.dryrun_push_images(app, cfg) if cfg.get("image_repo") else {}
        job = to_docker_job(
            app,
            make_unique(app.name),
            self.session_name,
            env=opts.env,
            copied_env=copy_env(
                [*(opts.copy_env or ()), *(opts.env_allow or ())], os.environ, opts.env_drop
            ),
            privileged=bool(opts.privileged),
        )
        job.images_to_push = images_to_push
        return AppDryRunInfo(job, str)

    def schedule(self, dryrun_info: AppDryRunInfo[DockerJob]) -> str:
        """Creates the app's network and starts its containers; returns the app id.

        Raises:
            DockerUnavailableError: no engine answers (one line naming ``DOCKER_HOST``).
            RuntimeError: an image is missing or a container cannot start (nothing is left).
        """
        job: DockerJob = dryrun_info.request
        if job.images_to_push:
            self.push_images(job.images_to_push)
        images = {c.image for c in job.containers}
        for image in sorted(images):
            if not image.startswith("sha256:"):
                self._engine.ensure_image(image)
        labels = {LABEL_VERSION: _version(), LABEL_APP_ID: job.app_id}
        self._engine.ensure_network(job.network, labels)
        stamp = submission_labels(_role_replicas(job), process_ident(), time.time())
        try:
            for container in job.containers:
                container.kwargs["labels"] = {**container.kwargs.get("labels", {}), **stamp}
                self._engine.run(container)
        except BaseException:
            self._remove_app(job.app_id)
            raise
        return job.app_id

    # -- queries ---------------------------------------------------------------------------

    def _infos(self, app_id: str) -> list[tuple[str, ContainerInfo]]:
        return container_infos(self._engine, app_id)

    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        """Describes an app from its containers' labels and states; None if it has none.

        A read only: a FAILED app's other replicas keep running until ``enforce_fail_fast``.
        """
        infos = self._infos(app_id)
        if not infos:
            return None
        states = [container_state(i.status, i.exit_code) for _, i in infos]
        cancelled, added = marks(self._engine, f"{LABEL_APP_ID}={app_id}")
        state = app_state(states, cancelled=app_id in cancelled)
        resp = DescribeAppResponse(app_id=app_id, state=state, num_restarts=0)
        resp.msg = failure_msg(infos, states)
        partial = None if app_id in cancelled else check([i for _, i in infos], time.time())
        if partial is not None and state != AppState.FAILED:
            resp.state, resp.msg = partial.state(state), partial.msg()
        resp.roles, resp.roles_statuses = roles_from_containers(infos, states)
        resp.metadata = {**dict(infos[0][1].labels), **added.get(app_id, {})}
        resp.num_restarts = sum(
            self._engine.restart_count(cid) for cid, info in infos if info.retries
        )
        return resp

    def enforce_fail_fast(self, app_id: str) -> None:
        """Stops the replicas still running in an app with a FAILED replica.

        Synchronous: SIGTERM, SIGKILL after the grace period, in parallel; when it returns no
        replica of the app runs. A no-op for an app without a failed replica.
        """
        infos = self._infos(app_id)
        states = [container_state(i.status, i.exit_code) for _, i in infos]
        partial = check([i for _, i in infos], time.time())
        if AppState.FAILED not in states and not (partial and partial.failed):
            return
        live = [cid for (cid, _), s in zip(infos, states, strict=True) if not is_terminal(s)]
        self._engine.stop(live, self._grace_period)

    def list(self, cfg: Optional[Mapping[str, Any]] = None) -> builtins.list[ListAppResponse]:
        """Lists this session's apps (from any process), in container creation order."""
        return session_apps(self._engine, self.session_name)

    def list_by_labels(
        self, labels: Mapping[str, str], cfg: Optional[Mapping[str, Any]] = None
    ) -> builtins.list[LabelledApp]:
        """Lists the apps (of any session) carrying ``labels`` (full keys), added ones included.

        One engine call for the markers, one for the containers with the first label; an app
        that has the first label only as an added one costs one more.
        """
        return labelled_apps(self._engine, labels)

    def placement(self, cfg: Optional[Mapping[str, Any]] = None) -> str:
        """``docker:<engine ID>``: apps are followed through the engine that runs them."""
        return f"docker:{self._engine.engine_id()}"

    def set_app_labels(self, app_id: str, labels: Mapping[str, str]) -> None:
        """Adds labels to the app: one marker volume per key (a new value replaces the old).

        Raises:
            ValueError: the app has no containers.
        """
        infos = self._infos(app_id)
        if not infos:
            raise ValueError(f"local_docker app `{app_id}` does not exist: it has no containers")
        add_labels(self._engine, app_id, infos[0][1].session, labels)

    def wait_for_change(self, app_id: str, timeout: float) -> None:
        """Returns once the app changed, or after ``timeout`` seconds; at once if it has ended.

        Nothing is kept from an earlier ``describe``: the containers are listed at entry, and
        an app without containers or whose containers have all ended (or with a failed one)
        returns at once. Otherwise it blocks on the engine's events since entry (a container
        starting, ending, pausing or being removed), then polls the list briefly until the
        change shows: the engine emits ``die`` just before the container reads as exited.
        """
        since = time.time()
        deadline = time.monotonic() + max(0.0, timeout)
        infos = self._infos(app_id)
        states = [container_state(i.status, i.exit_code) for _, i in infos]
        if not infos or is_terminal(app_state(states)):
            return
        seen = signature(infos)
        if not self._engine.wait_event(f"{LABEL_APP_ID}={app_id}", since, timeout):
            return
        settle = min(deadline, time.monotonic() + _SETTLE)
        while time.monotonic() < settle and signature(self._infos(app_id)) == seen:
            time.sleep(0.02)

    # -- cancel and delete -----------------------------------------------------------------

    def _cancel_existing(self, app_id: str) -> None:
        """Marks the app cancelled, then stops its containers (SIGTERM, SIGKILL after grace)."""
        infos = self._infos(app_id)
        mark_cancelled(self._engine, app_id, infos[0][1].session if infos else self.session_name)
        self._engine.stop([cid for cid, _ in infos], self._grace_period)

    def delete(self, app_id: str) -> None:
        """Deletes the app; also removes a network or marker left after its containers went."""
        if self.exists(app_id):
            self._delete_existing(app_id)
        else:
            self._remove_app(app_id)

    def close(self) -> None:
        """Closes the engine connection this scheduler opened (apps keep running)."""
        self._engine.close()

    def _delete_existing(self, app_id: str) -> None:
        """Stops the app, then removes its containers, network and marker."""
        infos = self._infos(app_id)
        self._engine.stop([cid for cid, _ in infos], self._grace_period)
        self._remove_app(app_id)

    def _remove_app(self, app_id: str) -> None:
        label = f"{LABEL_APP_ID}={app_id}"
        self._engine.remove([r["id"] for r in self._engine.containers(label)])
        self._engine.remove_networks(label)
        self._engine.remove_markers(label)

    # -- logs ------------------------------------------------------------------------------

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
        """Iterates over the log lines of replica ``k`` of ``role_name`` (keeping newlines).

        ``streams`` picks stdout, stderr or both (the default); ``should_tail`` follows the
        container until it stops.

        Raises:
            ValueError: no such role or replica.
        """
        name = next(
            (i.name for _, i in self._infos(app_id) if i.role == role_name and i.replica_id == k),
            None,
        )
        if name is None:
            raise ValueError(f"app {app_id} has no replica {k} of role `{role_name}`")
        chunks = self._engine.logs(
            name,
            stdout=streams != Stream.STDERR,
            stderr=streams != Stream.STDOUT,
            since=since,
            until=until,
            follow=should_tail,
        )
        lines = split_lines_iterator(c.decode("utf-8", errors="replace") for c in chunks)
        return filter_regex(regex, lines) if regex else lines


def create_scheduler(session_name: str, **kwargs: Any) -> DockerScheduler:
    """Creates a ``local_docker`` scheduler.

    Args:
        session_name: the session name.
        kwargs: ``client`` (a ``docker.DockerClient``) and ``grace_period`` are used; other keys
            are ignored.

    Raises:
        ModuleNotFoundError: the ``docker`` SDK is not installed and no client was given.
    """
    grace = kwargs.get("grace_period")
    return DockerScheduler(
        session_name,
        client=kwargs.get("client"),
        grace_period=float(grace) if grace not in (None, "") else DEFAULT_GRACE_PERIOD,
    )
