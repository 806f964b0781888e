"""The launcher task's function (a KFP Lightweight Python Component).

KFP embeds this function's source in the compiled pipeline, so it imports everything it
uses inside its body; its image (or environment) needs ``torchx-flow[kfp]`` and the extra of
the scheduler it submits to. No ``from __future__ import annotations`` here: KFP reads the
real annotations.
"""

from typing import NamedTuple

__all__ = ["torchx_launch"]


def torchx_launch(
    component: str,
    args: list,
    app: str,
    overrides: dict,
    params: dict,
    env: dict,
    scheduler: str = "local_cwd",
    scheduler_cfg: str = "",
    parent_run_id: str = "",
    secret_env: list = [],  # noqa: B006 (KFP reads the default; never mutated)
    service_account: str = "",
    pvc: str = "",
    pvc_mount_path: str = "",
) -> NamedTuple("Outputs", [("app_handle", str), ("app_id", str), ("tracker_run_id", str)]):  # type: ignore[valid-type]
    """Submits a TorchX app, streams its logs, and fails when the app does not succeed.

    Args:
        component: the component (``dist.ddp``, ``file.py:fn``), or "" to run ``app``.
        args: the component's CLI-style arguments.
        app: the AppDef as JSON when ``component`` is "".
        overrides: ``{image, resource, max_retries}`` applied to every role.
        params: component parameters set at run time (``{"msg": "hi"}``).
        env: variables set for the launcher and its app (e.g. tracker configuration).
        scheduler: the TorchX scheduler (``kubernetes`` in a cluster; ``local_cwd`` locally).
        scheduler_cfg: the scheduler's run options as ``k=v,k2=v2``.
        parent_run_id: the tracker run id of the upstream step.
        secret_env: env vars of the launcher (set from Kubernetes secrets) passed on to
            every role of the app.
        service_account: the service account of the app's pods (kubernetes scheduler).
        pvc: a PersistentVolumeClaim the launcher pod has at ``pvc_mount_path``; with the
            kubernetes scheduler every role mounts it there too.
        pvc_mount_path: where ``pvc`` is mounted.
    """
    from collections import namedtuple  # lazy: KFP embeds this function's source

    from torchx_kfp._in_task.launch import launch  # lazy: KFP embeds this function's source

    spec = {"component": component, "args": args, "app": app, "overrides": overrides}
    handle = launch(
        spec,
        params,
        env,
        scheduler,
        scheduler_cfg,
        parent_run_id,
        secret_env=secret_env,
        service_account=service_account,
        volume=(pvc, pvc_mount_path) if pvc else None,
    )
    outputs = namedtuple("outputs", ["app_handle", "app_id", "tracker_run_id"])
    return outputs(handle, handle.rsplit("/", 1)[-1], handle)
