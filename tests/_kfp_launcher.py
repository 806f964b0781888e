"""The launcher task's container command, as the KFP backend's launcher would start it.

``launcher_argv`` takes the compiled launcher component (``torchx_kfp.launcher_component``)
and builds the argv its container runs: KFP's ``sh -ec`` command with the component's source,
then the args with ``{{$}}`` replaced by the executor input (the task's input values and the
output files), which is what ``launcher_v2.go`` substitutes. Tests run it as a process, in a
container or in a pod, so the whole process chain (shell, ``exec``, Python) is the real one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

OUTPUTS = ("app_handle", "app_id", "tracker_run_id")


def executor_input(values: Mapping[str, Any], out_dir: str) -> dict[str, Any]:
    """The executor input of a launcher task: input values and where the outputs go."""
    return {
        "inputs": {"parameterValues": dict(values)},
        "outputs": {
            "parameters": {name: {"outputFile": f"{out_dir}/{name}"} for name in OUTPUTS},
            "outputFile": f"{out_dir}/executor_output.json",
        },
    }


def launcher_argv(component: Any, values: Mapping[str, Any], out_dir: str) -> list[str]:
    """The container argv of launcher ``component`` for input ``values``.

    Args:
        component: a ``torchx_kfp.launcher_component()`` (a KFP Python component).
        values: the task's input values (``component``, ``args``, ``app``, ``overrides``,
            ``params``, ``env``, ``scheduler``, ...); unset optional inputs get their defaults.
        out_dir: where the task's output files go (inside the process's file system).
    """
    spec = component.component_spec
    defaults = {name: inp.default for name, inp in spec.inputs.items() if inp.default is not None}
    text = json.dumps(executor_input({**defaults, **values}, out_dir))
    container = spec.implementation.container
    args = [text if a == "{{$}}" else a for a in container.args]
    return [*container.command, *args]
