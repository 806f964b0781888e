"""The task function of a pipeline step under KFP (a Lightweight Python Component).

KFP embeds this function's source in the compiled pipeline, so it imports what it uses
inside its body. No ``from __future__ import annotations``: KFP reads the real annotations.
"""

from typing import NamedTuple

__all__ = ["torchx_workflow_step"]


def torchx_workflow_step(
    pipeline: str,
    step: str,
    params: dict,
    upstream: dict,
    env: dict,
    pvc: str = "",
    pvc_mount_path: str = "",
) -> NamedTuple("Outputs", [("app_handle", str), ("app_id", str), ("tracker_run_id", str)]):  # type: ignore[valid-type]
    """Renders one step of a torchx.workflow pipeline and launches it (launcher mode).

    Args:
        pipeline: the pipeline definition as JSON.
        step: the step to run.
        params: the pipeline parameter values.
        upstream: ``{"<step>.<field>": value}`` outputs of the upstream steps.
        env: variables for the launcher and its app (e.g. tracker configuration).
        pvc: a claim the task has at ``pvc_mount_path``; with the kubernetes scheduler the
            step's app mounts it there too.
        pvc_mount_path: where ``pvc`` is mounted.
    """
    from collections import namedtuple  # lazy: KFP embeds this function's source

    from torchx_kfp._in_task.workflow_run import run_step  # lazy: KFP embeds this function's source

    volume = (pvc, pvc_mount_path) if pvc else None
    handle = run_step(pipeline, step, params, upstream, env, volume)
    outputs = namedtuple("outputs", ["app_handle", "app_id", "tracker_run_id"])
    return outputs(handle, handle.rsplit("/", 1)[-1], handle)
