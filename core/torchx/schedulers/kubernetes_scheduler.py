"""The ``kubernetes`` scheduler: runs an AppDef as pods on a Kubernetes cluster (§11.3).

Prerequisites
=============

``pip install 'torchx-flow[kubernetes]'`` and a kubeconfig (or an in-cluster service account).
Two modes, chosen with the ``mode`` run option:

- ``volcano`` (default, as in TorchX): one ``batch.volcano.sh/v1alpha1`` Job, one task per
  replica, gang scheduled by Volcano (its controller and scheduler must run in the cluster).
  ``queue`` is required. Rank 0 is reached through ``VC_{ROLE0}_0_HOSTS`` set by Volcano's
  ``svc`` plugin.
- ``plain``: standard ``batch/v1`` Jobs plus a headless Service; no Volcano needed.
- ``jobset``: one ``jobset.x-k8s.io`` JobSet (an Indexed Job per role); needs JobSet.
  In plain and jobset modes ``queue`` names a Kueue LocalQueue (docs/kubernetes.md).

``torchx run -s kubernetes --workspace "" --dryrun -cfg queue=default,validate_spec=False ...``
prints the manifest without contacting the cluster or a Docker engine (a workspace is built into
an image and pushed to ``image_repo``, as in TorchX).

Compared with TorchX: labels are always valid label values, ``[FIELD_PATH]`` env values keep
their whole field path, ``RetryPolicy.ROLE`` is rejected with a clear ``ValueError``, the
rank-0 variable of a role with ``-`` in its name is the one Volcano sets, names Kubernetes would
reject (pods over 63 characters, clashing role names, a Job name starting with a digit) fail in
the dry run even without ``validate_spec``, and the run options ``image_pull_secrets`` and
``tolerations`` are added.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from torchx.schedulers._kubernetes._opts import Opts
from torchx.schedulers._kubernetes.client import api_server_errors, load_api_client
from torchx.schedulers._kubernetes.extras import add_pod_extras, parse_toleration
from torchx.schedulers._kubernetes.names import (
    ANNOTATION_ISTIO_SIDECAR,
    LABEL_APP_NAME,
    LABEL_INSTANCE_TYPE,
    LABEL_KUBE_APP_NAME,
    LABEL_ORGANIZATION,
    LABEL_REPLICA_ID,
    LABEL_ROLE_INDEX,
    LABEL_ROLE_NAME,
    LABEL_UNIQUE_NAME,
    LABEL_VERSION,
    PLACEHOLDER_FIELD_PATH,
    RESERVED_MEMMB,
    RESERVED_MILLICPU,
    pod_labels,
    prefix_container_name,
    split_app_id,
)
from torchx.schedulers._kubernetes.overlay import apply_pod_overlay as _apply_pod_overlay
from torchx.schedulers._kubernetes.plain_submit import SubmitTiming
from torchx.schedulers._kubernetes.pod import requests_and_limits, role_to_pod
from torchx.schedulers._kubernetes.replicas import Replica
from torchx.schedulers._kubernetes.request import KubernetesJob, sanitize_for_serialization
from torchx.schedulers._kubernetes.routing import ModeRouting
from torchx.schedulers._kubernetes.scheduler_apps import AppQueries
from torchx.schedulers._kubernetes.settings import Settings
from torchx.schedulers._kubernetes.volcano import RETRY_POLICIES, app_to_volcano_job
from torchx.schedulers._kubernetes.volcano_status import JOB_STATE, TASK_STATE
from torchx.schedulers.api import DescribeAppResponse, Scheduler
from torchx.schedulers.ids import make_unique
from torchx.specs.api import AppDef, AppDryRunInfo, CfgVal
from torchx.specs.overlays import get_overlay
from torchx.util.strings import normalize_str
from torchx.workspace.docker_workspace import DockerWorkspaceMixin

if TYPE_CHECKING:
    from torchx.schedulers._kubernetes.modes import Mode

__all__ = [
    "ANNOTATION_ISTIO_SIDECAR",
    "JOB_STATE",
    "KubernetesJob",
    "KubernetesOpts",
    "KubernetesScheduler",
    "LABEL_APP_NAME",
    "LABEL_INSTANCE_TYPE",
    "LABEL_KUBE_APP_NAME",
    "LABEL_ORGANIZATION",
    "LABEL_REPLICA_ID",
    "LABEL_ROLE_INDEX",
    "LABEL_ROLE_NAME",
    "LABEL_UNIQUE_NAME",
    "LABEL_VERSION",
    "Opts",
    "PLACEHOLDER_FIELD_PATH",
    "RESERVED_MEMMB",
    "RESERVED_MILLICPU",
    "RETRY_POLICIES",
    "TASK_STATE",
    "_apply_pod_overlay",
    "app_to_resource",
    "create_scheduler",
    "make_unique",
    "pod_labels",
    "prefix_container_name",
    "requests_and_limits",
    "role_to_pod",
    "sanitize_for_serialization",
]

logger: logging.Logger = logging.getLogger(__name__)

KubernetesOpts = Opts
"""TorchX's name for the run options."""


def _replica_pod(app: AppDef, app_id: str, settings: Settings, replica: Replica) -> Any:
    # module globals are looked up at call time, so patched names (§15) take effect
    pod = role_to_pod(
        replica.name,
        replica.materialized,
        settings.service_account,
        settings.reserved_millicpu,
        settings.reserved_memmb,
        settings.efa_device_count,
    )
    add_pod_extras(pod, settings.image_pull_secrets, settings.tolerations)
    for container in pod.spec.containers:
        container.image_pull_policy = settings.image_pull_policy or None
    overlay = get_overlay(replica.role, "kubernetes", "V1Pod")
    if overlay:
        _apply_pod_overlay(pod, overlay)
    labels = pod_labels(app, replica.role_idx, replica.role, replica.replica_id, app_id)
    pod.metadata.labels = {**(pod.metadata.labels or {}), **labels}
    return pod


def app_to_resource(
    app: AppDef,
    queue: str,
    service_account: Optional[str],
    priority_class: Optional[str] = None,
    reserved_millicpu: int = RESERVED_MILLICPU,
    reserved_memmb: int = RESERVED_MEMMB,
    efa_device_count: Optional[int] = None,
    *,
    image_pull_secrets: Sequence[str] = (),
    tolerations: Sequence[str] = (),
    namespace: Optional[str] = None,
) -> dict[str, Any]:
    """Build the Volcano Job for ``app`` (TorchX's signature, plus keyword-only extras).

    Args:
        app: the application.
        queue: the Volcano queue.
        service_account: the pods' service account, or None.
        priority_class: the Job's PriorityClass, or None.
        reserved_millicpu: subtracted from each CPU request.
        reserved_memmb: subtracted from each memory request.
        efa_device_count: None keeps ``resource.devices``; 0 removes EFA; N sets it.
        image_pull_secrets: Secret names for pulling images.
        tolerations: ``key[=value][:Effect]`` strings.
        namespace: the Job's namespace; when given, each pod's ``TORCHX_JOB_ID`` is the
            app's handle (``.../{namespace}:{name}``) rather than TorchX's ``.../{name}``.

    Returns:
        The Job dict; task templates are ``V1Pod`` objects.

    Raises:
        ValueError: no roles, ``RetryPolicy.ROLE``, or a malformed toleration.
    """
    settings = Settings(
        queue=queue,
        service_account=service_account,
        priority_class=priority_class,
        reserved_millicpu=reserved_millicpu,
        reserved_memmb=reserved_memmb,
        efa_device_count=efa_device_count,
        image_pull_secrets=tuple(image_pull_secrets),
        tolerations=tuple(parse_toleration(t) for t in tolerations),
        namespace=namespace,
    )
    app_id = normalize_str(make_unique(app.name))
    return app_to_volcano_job(
        app, app_id, settings, lambda replica: _replica_pod(app, app_id, settings, replica)
    )


class KubernetesScheduler(
    ModeRouting, AppQueries, DockerWorkspaceMixin, Scheduler[Mapping[str, CfgVal]]
):
    """Runs apps on Kubernetes, as a Volcano Job (default) or as plain Jobs (``mode=plain``).

    The app id is ``{namespace}:{job name}``. Cancel aborts a Volcano Job but keeps it for
    inspection; ``delete`` removes it.

    Args:
        session_name: the session name.
        client: a ``kubernetes.client.ApiClient``; None loads the in-cluster config, then the
            kubeconfig, on first use.
        docker_client: a ``docker.DockerClient`` for image workspaces (built, then pushed to
            ``image_repo``); default: from the environment, only when a workspace is built.
        kube: ``load_api_client``'s arguments (kubeconfig, context, in-cluster).
        plain_timing: how long plain-mode submission may take (``_kubernetes.plain_submit``).
    """

    supports_app_labels = True
    """Apps carry ``LaunchRequest(labels=...)`` as Job and pod labels in both modes (plain Jobs,
    the Volcano Job), found by ``list_by_labels``, added by ``set_app_labels``."""

    def __init__(
        self,
        session_name: str,
        client: Optional[Any] = None,
        docker_client: Optional[Any] = None,
        kube: Optional[Mapping[str, Any]] = None,
        plain_timing: Optional[SubmitTiming] = None,
    ) -> None:
        super().__init__("kubernetes", session_name, docker_client=docker_client)
        self._client = client
        self._owns_client = False  # an injected client belongs to the caller
        self._kube = dict(kube or {})  # load_api_client's arguments
        self._plain_timing = plain_timing or SubmitTiming()
        self._app_modes: dict[str, Mode] = {}  # app id -> its mode (``_kubernetes.routing``)

    # -- client ------------------------------------------------------------------------------

    def _api_client(self) -> Any:
        if self._client is None:
            self._client = load_api_client(**self._kube)
            self._owns_client = True
        return self._client

    def close(self) -> None:
        """Closes the API client this scheduler loaded (its connection pool and threads)."""
        self._forget_modes()
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client, self._owns_client = None, False
        super().close()

    def _get_active_context(self) -> dict[str, Any]:
        from kubernetes import config  # lazy: ~300 ms; runopts kubernetes skips it

        _, active = config.list_kube_config_contexts()
        return dict(active or {})

    # -- submit ------------------------------------------------------------------------------

    def _run_opts(self) -> Any:
        return Opts.as_runopts()

    def _validate(self, app: AppDef, scheduler: str, cfg: Mapping[str, CfgVal]) -> None:
        """No-op (as TorchX): pods without resource requests are valid."""

    def _submit_dryrun(
        self, app: AppDef, cfg: Mapping[str, CfgVal]
    ) -> AppDryRunInfo[KubernetesJob]:
        opts = Opts.from_cfg(cfg)
        opts.check()
        settings = Settings.from_opts(opts)
        images_to_push = self.dryrun_push_images(app, opts)  # workspace images -> image_repo
        mode = self._mode(opts.mode)
        app_id = normalize_str(make_unique(app.name))
        request = mode.build(
            app, app_id, settings, lambda job, replica: _replica_pod(app, job, settings, replica)
        )
        if opts.validate_spec:
            with api_server_errors(self._api_client(), "validating the job spec"):
                mode.validate(opts.namespace, request)
        request.images_to_push = images_to_push
        return AppDryRunInfo(request, repr)

    def schedule(self, dryrun_info: AppDryRunInfo[KubernetesJob]) -> str:
        """Create the app's objects on the cluster (in the dry run's mode).

        Returns:
            ``{namespace}:{job name}``.

        Raises:
            ValueError: a Job with the same name already exists.
        """
        opts = Opts.from_cfg(dryrun_info._cfg or {})
        if dryrun_info.request.images_to_push:
            self.push_images(dryrun_info.request.images_to_push)
        mode = self._mode(opts.mode)
        with api_server_errors(self._api_client(), "submitting the job"):
            name = mode.create(opts.namespace, dryrun_info.request)
        app_id = f"{opts.namespace}:{name}"
        self._found(app_id, mode)
        return app_id

    # -- existing apps -----------------------------------------------------------------------

    def describe(self, app_id: str) -> Optional[DescribeAppResponse]:
        """Describe the app (a read only); None if no mode knows it."""
        namespace, name = split_app_id(app_id)
        with api_server_errors(self._api_client(), f"describing {app_id}"):
            known = self._known_modes().get(app_id)
            for mode in self._modes(app_id):
                found = mode.describe(namespace, name)
                if found is not None:
                    self._found(app_id, mode)
                    return found
            if known is not None:  # gone from its mode: ask every mode once more
                self._found(app_id, None)
                return self.describe(app_id)
        return None

    def enforce_fail_fast(self, app_id: str) -> None:
        """Stop the replicas still running in a FAILED app (plain mode; Volcano's own).

        Synchronous for the API server: the other replicas' Jobs are stopped before it returns
        and Kubernetes deletes their pods within their grace period. A no-op for an app that
        did not fail.
        """
        namespace, name = split_app_id(app_id)
        mode = self._mode_of(namespace, name, f"stopping the replicas of {app_id}")
        if mode is not None:
            with api_server_errors(self._api_client(), f"stopping the replicas of {app_id}"):
                mode.enforce_fail_fast(namespace, name)

    def _cancel_existing(self, app_id: str) -> None:
        namespace, name = split_app_id(app_id)
        with api_server_errors(self._api_client(), f"cancelling {app_id}"):
            for mode in self._modes():
                if mode.describe(namespace, name) is not None:
                    mode.abort(namespace, name)
                    return

    def wait_for_change(self, app_id: str, timeout: float) -> None:
        """Return when the app may have changed, else after ``timeout`` seconds.

        Only the app's mode is kept between calls (known from ``schedule`` or an earlier look,
        so no other mode is probed): the mode reads the app at entry and returns at once if it
        is terminal or gone (plain mode then watches its pods; volcano mode sleeps).
        """
        namespace, name = split_app_id(app_id)
        mode = self._mode_of(namespace, name, f"waiting on {app_id}")
        if mode is not None:
            with api_server_errors(self._api_client(), f"waiting on {app_id}"):
                mode.wait_for_change(namespace, name, timeout)

    def _delete_existing(self, app_id: str) -> None:
        namespace, name = split_app_id(app_id)
        with api_server_errors(self._api_client(), f"deleting {app_id}"):
            for mode in self._modes():
                mode.delete(namespace, name)
        self._found(app_id, None)


def create_scheduler(
    session_name: str,
    client: Optional[Any] = None,
    docker_client: Optional[Any] = None,
    **kwargs: Any,
) -> KubernetesScheduler:
    """Create a ``kubernetes`` scheduler.

    Args:
        session_name: the session name.
        client: a ``kubernetes.client.ApiClient`` (tests inject one); None loads the config.
        docker_client: unused (TorchX compatibility).
        kwargs: ``kubeconfig`` (a path), ``kube_context``, ``in_cluster`` and
            ``kubeconfig_text`` (a kubeconfig's YAML) choose the cluster configuration
            (see ``_kubernetes.client.load_api_client``); ``k8s_submit_margin`` (env
            ``TORCHX_K8S_SUBMIT_MARGIN``, seconds) is the plain-mode submission margin after
            which an app with missing Jobs reads FAILED; other keys are ignored (every
            ``TORCHX_*`` env var arrives here).

    Raises:
        ValueError: ``k8s_submit_margin`` is not seconds >= 0.
    """
    in_cluster = kwargs.get("in_cluster")
    if isinstance(in_cluster, str):
        in_cluster = in_cluster.strip().lower() in ("1", "true", "yes")
    kube = {
        "kubeconfig": kwargs.get("kubeconfig") or None,
        "context": kwargs.get("kube_context") or None,
        "in_cluster": bool(in_cluster) or None,
        "kubeconfig_text": kwargs.get("kubeconfig_text") or None,
    }
    return KubernetesScheduler(
        session_name,
        client=client,
        docker_client=docker_client,
        kube={k: v for k, v in kube.items() if v is not None},
        plain_timing=SubmitTiming.from_params(kwargs),
    )
