"""Kubeflow Pipelines v2 adapter for torchx-flow: TorchX apps as KFP components.

- :func:`component_from_app` / :func:`container_from_app`: a single-role, single-replica app
  as one KFP container task (resources, accelerator, retries, env, macros, Kubernetes).
- :func:`launcher_from_app` / :func:`launcher_component`: any app (several roles or nodes)
  through a task that submits it with a TorchX scheduler and follows it to the end.
- :func:`output_path`: the local path of a container task's output artifact
  (``outputs={"model": Model}``), for the app's arguments.

Needs the ``[kfp]`` extra (``pip install 'torchx-flow[kfp]'``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torchx_kfp._compile.artifacts import output_path
    from torchx_kfp._compile.task_settings import ACCELERATOR_TYPE
    from torchx_kfp._errors import TorchXKfpAppError
    from torchx_kfp._workflow import pipeline_from_workflow
    from torchx_kfp.component import TorchXComponent, component_from_app, container_from_app
    from torchx_kfp.launcher import launcher_component, launcher_from_app

__all__ = [
    "ACCELERATOR_TYPE",
    "TorchXComponent",
    "TorchXKfpAppError",
    "component_from_app",
    "container_from_app",
    "launcher_component",
    "launcher_from_app",
    "output_path",
    "pipeline_from_workflow",
]

_LAZY = {
    "ACCELERATOR_TYPE": "torchx_kfp._compile.task_settings",
    "TorchXComponent": "torchx_kfp.component",
    "TorchXKfpAppError": "torchx_kfp._errors",
    "component_from_app": "torchx_kfp.component",
    "container_from_app": "torchx_kfp.component",
    "launcher_component": "torchx_kfp.launcher",
    "launcher_from_app": "torchx_kfp.launcher",
    "output_path": "torchx_kfp._compile.artifacts",
    "pipeline_from_workflow": "torchx_kfp._workflow",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'torchx_kfp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
