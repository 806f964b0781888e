"""Launcher mode: any TorchX app (several roles, multi-node DDP) as one KFP task.

The task is a Lightweight Python Component that submits the app through a TorchX scheduler
(``kubernetes`` in a cluster; ``local_cwd`` or ``local_docker`` locally), streams every
replica's log into the task log, fails with the app's structured error and its failed
replicas' last log lines, outputs ``app_handle``, ``app_id`` and ``tracker_run_id``, and cancels
the app on SIGTERM (it follows the app with ``torchx.runner.follow``). ``[component:<name>]``
defaults of the launcher's ``.torchxconfig`` apply, as in ``torchx run``.

The task's process chain ends in ``exec python3``: the shell KFP puts in front of a Python
component is replaced by the interpreter, so the SIGTERM the kubelet sends to the container's
PID 1 (a KFP run cancelled, the pod deleted) reaches the launcher, which cancels the app.

The launcher pod itself: ``launcher_resource`` sizes it (as the kubernetes scheduler sizes a
role), ``secrets`` expose Kubernetes secrets as its env (a tracker's credentials never appear in
the compiled IR, only the secret's name and keys) and forward those variables to the app's
roles, ``node_selector``/``tolerations`` place it, ``pvc`` mounts a volume the steps share
(in the app's pods too, with the kubernetes scheduler). It runs as the KFP run's service account
(KFP sets none per task), which needs ``deploy/kfp-launcher-rbac.yaml``; ``service_account``
is the one the app's pods run as (the kubernetes scheduler's ``service_account`` option).

Example::

    train = launcher_from_app(
        "dist.ddp", ["-j", "2x4", "--script", "train.py"], scheduler="kubernetes",
        scheduler_cfg="queue=default", parent_run_id=prep.outputs["tracker_run_id"],
        launcher_image="torchx-flow/torch:2.13.0", launcher_resource="cpu.small",
        secrets={"mlflow": {"token": "MLFLOW_TRACKING_TOKEN"}},
    )
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from torchx_kfp._compile.python_task import exec_into_python
from torchx_kfp._errors import import_kfp

import_kfp()

from kfp import dsl  # noqa: E402
from kfp.dsl import pipeline_context  # noqa: E402

from torchx.specs.api import AppDef  # noqa: E402
from torchx.specs.builders import materialize_appdef  # noqa: E402
from torchx.specs.finder import get_component  # noqa: E402
from torchx_kfp._appjson import app_to_json  # noqa: E402
from torchx_kfp._compile.launcher_pod import LauncherPod  # noqa: E402
from torchx_kfp._compile.lifted import lift_channels, lifted_component  # noqa: E402
from torchx_kfp._compile.params import compile_env  # noqa: E402
from torchx_kfp._in_task.launcher_fn import torchx_launch  # noqa: E402

if TYPE_CHECKING:
    from kfp.dsl.pipeline_task import PipelineTask
    from kfp.dsl.python_component import PythonComponent

    from torchx.specs.api import Resource

__all__ = [
    "DEFAULT_LAUNCHER_IMAGE",
    "exec_into_python",
    "launcher_component",
    "launcher_from_app",
]

DEFAULT_LAUNCHER_IMAGE = "torchx-flow/torch:2.13.0"
"""The launcher's default image: torch + torchx-flow[examples,kfp,kubernetes,workflow]
(``scripts/infra/torch-image.sh`` builds it; push it where your cluster pulls from)."""


def launcher_component(
    image: str = DEFAULT_LAUNCHER_IMAGE, packages_to_install: Optional[Sequence[str]] = None
) -> PythonComponent:
    """Returns the launcher component (``torchx_launch``) for an image.

    Args:
        image: the launcher's image; it needs ``torchx-flow[kfp]`` plus the scheduler's extra
            (``torchx-flow[kfp,kubernetes]``), unless ``packages_to_install`` installs them.
        packages_to_install: pip requirements installed when the task starts.
    """
    component = dsl.component(
        torchx_launch,
        base_image=image,
        packages_to_install=list(packages_to_install or []) or None,
        install_kfp_package=False,
    )
    return exec_into_python(component)


def _launcher_task(
    inputs: Mapping[str, Any], image: str, packages_to_install: Optional[Sequence[str]]
) -> PipelineTask:
    """The launcher task; channels nested in its inputs become inputs of their own."""
    values, channels = lift_channels(inputs)
    if not channels:
        return launcher_component(image, packages_to_install)(**values)
    component = lifted_component(
        torchx_launch,
        "launcher",
        channels,
        base_image=image,
        packages_to_install=list(packages_to_install or []) or None,
        install_kfp_package=False,
    )
    return component(**values, **channels)


def _app_spec(
    app: Union[AppDef, str, Callable[..., AppDef]],
    component_args: Optional[Sequence[Any]],
    overrides: Mapping[str, Any],
) -> dict[str, Any]:

    args = list(component_args or [])
    spec: dict[str, Any] = {"component": "", "args": [], "app": "", "overrides": dict(overrides)}
    if isinstance(app, str):
        get_component(app)  # fail at compile time on an unknown component
        return {**spec, "component": app, "args": args}
    if not isinstance(app, AppDef):
        with compile_env():  # nothing of this machine's env (LOGLEVEL) reaches the IR
            app = materialize_appdef(app, [str(a) for a in args], None, None)
    elif args:
        raise ValueError(f"app `{app.name}` is an AppDef: component_args need a component")
    return {**spec, "app": app_to_json(app)}


def launcher_from_app(
    app: Union[AppDef, str, Callable[..., AppDef]],
    component_args: Optional[Sequence[str]] = None,
    *,
    scheduler: Any = "local_cwd",
    scheduler_cfg: Any = "",
    parent_run_id: Any = "",
    params: Optional[Mapping[str, Any]] = None,
    env: Optional[Mapping[str, Any]] = None,
    image: Optional[str] = None,
    resource: Optional[str] = None,
    max_retries: Optional[int] = None,
    launcher_image: str = DEFAULT_LAUNCHER_IMAGE,
    packages_to_install: Optional[Sequence[str]] = None,
    display_name: str = "",
    enable_caching: bool = False,
    launcher_resource: Optional[Union[str, Resource]] = None,
    secrets: Optional[Mapping[str, Mapping[str, str]]] = None,
    node_selector: Optional[Mapping[str, str]] = None,
    tolerations: Optional[Sequence[Mapping[str, Any]]] = None,
    service_account: Any = "",
    pvc: Any = "",
    pvc_mount_path: str = "/mnt/torchx",
) -> PipelineTask:
    """Creates a launcher task for ``app`` inside a ``@dsl.pipeline``.

    Args:
        app: an AppDef, a component name (resolved in the task, so file components must
            exist there) or a component function (materialized now).
        component_args: the component's CLI-style arguments; elements may be pipeline
            channels or f-strings of them (resolved at run time).
        scheduler: the TorchX scheduler (a string or a pipeline channel).
        scheduler_cfg: run options ``k=v,k2=v2`` (a string or a channel).
        parent_run_id: the upstream step's ``tracker_run_id`` (tracker lineage).
        params: component parameters set at run time; values may be pipeline channels.
        env: variables for the launcher (tracker settings, ``TORCHXCONFIG``) and every role
            of the app, where they beat the role's own values; values may be channels.
        image: replaces every role's image.
        resource: a named resource for every role.
        max_retries: replaces every role's ``max_retries`` (the scheduler's retries).
        launcher_image: the launcher task's own image.
        packages_to_install: pip requirements the launcher installs at start.
        display_name: the task's display name (default: the app or component name).
        enable_caching: KFP result caching (off by default).
        launcher_resource: the launcher pod's own resources: a named resource
            (``cpu.small``) or a ``Resource``, sized as the kubernetes scheduler sizes a role.
        secrets: ``{secret name: {secret key: env var}}``: Kubernetes secrets exposed as the
            launcher's env (kfp-kubernetes), e.g. a tracker's credentials; the launcher
            passes these variables on to every role of the app at run time.
        node_selector: node labels the launcher pod must match.
        tolerations: Kubernetes tolerations of the launcher pod (``{key, operator, value,
            effect, toleration_seconds}``).
        service_account: the service account of the app's pods (the kubernetes scheduler's
            ``service_account`` run option; a string or a channel). The launcher pod runs as
            the KFP run's service account.
        pvc: a PersistentVolumeClaim (a name or a channel, e.g. a ``kfp.kubernetes.CreatePVC``
            task's ``outputs["name"]``) mounted at ``pvc_mount_path`` in the launcher pod
            (kfp-kubernetes) and, with the kubernetes scheduler, in every role's pods: the
            steps of a pipeline share data through it (use a ReadWriteMany claim).
        pvc_mount_path: where ``pvc`` is mounted.
    """
    overrides = {"image": image, "resource": resource, "max_retries": max_retries}
    spec = _app_spec(app, component_args, {k: v for k, v in overrides.items() if v is not None})
    if params and not isinstance(app, str):
        raise ValueError("launcher `params` need a component name (e.g. 'dist.ddp')")

    pod = LauncherPod.of(
        launcher_resource, secrets, node_selector, tolerations, pvc, pvc_mount_path
    )
    inputs = {
        **spec,
        "params": dict(params or {}),
        "env": dict(env or {}),
        "scheduler": scheduler,
        "scheduler_cfg": scheduler_cfg,
        "parent_run_id": parent_run_id,
        "secret_env": pod.secret_env(),
        "service_account": service_account,
        "pvc": pvc,
        "pvc_mount_path": pvc_mount_path if pvc else "",
    }
    task = _launcher_task(inputs, launcher_image, packages_to_install)

    if pipeline_context.Pipeline.get_default_pipeline() is not None:
        name = display_name or (app if isinstance(app, str) else getattr(app, "name", "app"))
        task.set_caching_options(enable_caching)
        task.set_display_name(f"{name} (launcher)" if not display_name else name)
        pod.apply(task)
    return task
