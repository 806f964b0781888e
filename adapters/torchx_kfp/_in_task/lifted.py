"""Run-time side of generated launcher components (:mod:`torchx_kfp._compile.lifted`).

The task's constants hold markers ``{{torchx-kfp:N}}`` where the pipeline had a channel; the
channel's value arrives as input ``torchx_channel_N``. :func:`call` puts each value back (a
marker that is a whole element gets the value itself; inside text, the value as text), calls
the launcher function, and once the app SUCCEEDED copies a workflow step's declared outputs
to its output artifacts. ``{{torchx-kfp:e}}`` is a user's literal ``{{torchx-kfp:`` (escaped at
compile time). A task without lifted channels has nothing escaped and fills nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

from torchx_kfp._in_task.launcher_fn import torchx_launch
from torchx_kfp._in_task.workflow_run import step_output_paths
from torchx_kfp._in_task.workflow_step import torchx_workflow_step

__all__ = ["call", "copy_output", "fill", "value_text"]

_PREFIX = "torchx_channel_"
_MARKER = re.compile(r"\{\{torchx-kfp:(\d+|e)\}\}")
_LITERAL = "{{torchx-kfp:"  # what the escape ``{{torchx-kfp:e}}`` stands for
_JSON_INPUTS = ("app",)  # text inputs holding JSON (an AppDef): filled after parsing


def value_text(value: Any) -> str:
    """A value inside text, as the KFP backend's launcher renders parameters."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"))
    return "" if value is None else str(value)


def _text(match: re.Match[str], channels: Mapping[int, Any]) -> str:
    key = match.group(1)
    return _LITERAL if key == "e" else value_text(channels[int(key)])


def fill(value: Any, channels: Mapping[int, Any]) -> Any:
    """``value`` with every marker replaced by its channel's value (one pass, not rescanned)."""
    if isinstance(value, str):
        whole = _MARKER.fullmatch(value)
        if whole and whole.group(1) != "e":
            return channels[int(whole.group(1))]
        return _MARKER.sub(lambda m: _text(m, channels), value)
    if isinstance(value, list):
        return [fill(v, channels) for v in value]
    if isinstance(value, dict):
        return {value_text(fill(k, channels)): fill(v, channels) for k, v in value.items()}
    return value


def _filled(values: Mapping[str, Any], channels: Mapping[int, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key in _JSON_INPUTS and isinstance(value, str) and _MARKER.search(value):
            out[key] = json.dumps(fill(json.loads(value), channels))
        else:
            out[key] = fill(value, channels)
    return out


def copy_output(name: str, source: str, dest: str) -> None:
    """Copies what the app wrote at ``source`` (a file or a directory) to artifact ``dest``.

    Raises:
        FileNotFoundError: the app did not write ``source``.
    """
    if os.path.isdir(source):
        shutil.copytree(source, dest, dirs_exist_ok=True)
    elif os.path.isfile(source):
        os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
        shutil.copyfile(source, dest)
    else:
        raise FileNotFoundError(
            f"output `{name}`: the app did not write {source}, so the artifact is empty;"
            " make the app write its declared output there"
        )


def call(kind: str, values: Mapping[str, Any], artifacts: Sequence[str] = ()) -> Any:
    """Runs a generated launcher task: fills markers, launches, copies output artifacts.

    Args:
        kind: ``launcher`` (``torchx_launch``) or ``workflow_step`` (``torchx_workflow_step``).
        values: the task function's arguments (``locals()``).
        artifacts: names of ``Output[...]`` arguments (workflow step outputs).
    """
    rest = dict(values)
    channels = {int(k[len(_PREFIX) :]): rest.pop(k) for k in list(rest) if k.startswith(_PREFIX)}
    paths = {name: rest.pop(name).path for name in artifacts}
    args = _filled(rest, channels) if channels else rest  # no channel: nothing was escaped
    if kind == "launcher":
        return torchx_launch(**args)

    outputs = torchx_workflow_step(**args)  # returns only when the app SUCCEEDED
    if paths:
        declared = step_output_paths(
            args["pipeline"], args["step"], args["params"], args["upstream"], outputs[0]
        )
        for name, dest in paths.items():
            copy_output(name, declared[name], dest)
    return outputs
