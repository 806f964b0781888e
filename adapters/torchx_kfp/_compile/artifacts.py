"""KFP artifacts of a container task: outputs the app writes, upstream artifacts it reads.

An output artifact is declared by name and type (``outputs={"model": Model}``); the app gets
the artifact's local path through ``output_path("model")`` in its arguments
(``{{$.outputs.artifacts['model'].path}}``, which the KFP launcher resolves in args and whose
content it uploads to the pipeline root when the task ends). An upstream artifact (a task
output such as ``train.outputs["model"]``, or an f-string of it) in the arguments becomes an
input artifact of the component, replaced by its local path
(``{{$.inputs.artifacts['train_model'].path}}``), which the KFP launcher downloads before the
app starts. Both forms are among the placeholders the KFP backend resolves in command/args
(§3.9 of the design notes); kfp.local resolves them too.

While the component is built, each artifact path is a string input's probe token, so it
follows every rule of input values (placeholders embedded in one string, ``sh -c`` scripts
reading it from an exported variable); :func:`with_artifacts` then turns those inputs into
the artifact's placeholder and declares the artifact inputs and outputs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from kfp.dsl import pipeline_context
from kfp.dsl.pipeline_channel import PipelineArtifactChannel

__all__ = [
    "ArtifactRef",
    "OUTPUT_PATH",
    "artifact_channels",
    "artifact_type",
    "input_path",
    "output_path",
    "split_outputs",
    "token_input",
    "with_artifacts",
]

OUTPUT_PATH = re.compile(r"\{\{\$\.outputs\.artifacts\['([A-Za-z_][A-Za-z0-9_]*)'\]\.path\}\}")
"""``output_path(name)`` inside an argument (group 1: the name)."""

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED = ("app_id", "tracker_run_id", "parent_run_id")


@dataclasses.dataclass(frozen=True)
class ArtifactRef:
    """An artifact path used in a component's args (while built: a string input's token).

    Args:
        name: the artifact's name (the component input or output).
        token_name: the string input standing for its path while the component is built.
        kfp_type: its schema type (``system.Model@0.0.1``); None for an output (``outputs=``
            gives it).
        output: an output artifact (else an input).
    """

    name: str
    token_name: str
    kfp_type: Optional[str]
    output: bool


_ARTIFACT_CHANNEL = re.compile(
    r"\{\{channel:task=([\w\s_-]*);name=([\w\s_-]+);type=([\w.]+@[\w.]+);\}\}"
)


def artifact_channels(text: str) -> list[Any]:
    """The artifact channels (task output artifacts) whose f-string form ``text`` holds.

    KFP's own parser skips them (its pattern has no ``.`` or ``@`` in a type); each one found
    is the producing task's output channel when the task exists in the current pipeline.
    """
    pipeline = pipeline_context.Pipeline.get_default_pipeline()
    found = []
    for task_name, name, kind in _ARTIFACT_CHANNEL.findall(text):
        task = pipeline.tasks.get(task_name) if pipeline is not None else None
        channel = task.outputs.get(name) if task is not None else None
        if not isinstance(channel, PipelineArtifactChannel):
            channel = PipelineArtifactChannel(name, kind, task_name, is_artifact_list=False)
        found.append(channel)
    return found


def token_input(name: str, output: bool) -> str:
    """The string input standing for an artifact's path while the component is built."""
    return f"output_{name}" if output else name


def output_path(name: str) -> str:
    """The local path of output artifact ``name`` inside the task (a string for the app's args).

    Example::

        container_from_app(
            "dist.ddp", ["-j", "1x2", "--script", "train.py", "--",
                         "--output-dir", output_path("model")],
            outputs={"model": Model},
        )
    """
    _check_name(name, "output artifact")
    return f"{{{{$.outputs.artifacts['{name}'].path}}}}"


def input_path(name: str) -> str:
    """The local path of input artifact ``name`` inside the task."""
    _check_name(name, "input artifact")
    return f"{{{{$.inputs.artifacts['{name}'].path}}}}"


def _check_name(name: str, what: str) -> None:
    if not _NAME.match(name):
        raise ValueError(f"{what} name `{name}` must be a Python identifier (letters, _, digits)")


def artifact_type(value: Any) -> str:
    """The KFP schema type of an artifact class (``Model``) or schema string.

    Raises:
        TypeError: ``value`` is neither an artifact class nor a ``system.X@v`` string.
    """
    title = getattr(value, "schema_title", None)
    version = getattr(value, "schema_version", None)
    if isinstance(title, str) and isinstance(version, str):
        return f"{title}@{version}"
    if isinstance(value, str) and re.match(r"^[\w.]+@[\w.]+$", value):
        return value
    raise TypeError(
        f"output artifact type {value!r} is not a KFP artifact class"
        " (use kfp.dsl.Artifact, Dataset, Model, Metrics, ...)"
    )


def split_outputs(outputs: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``outputs=`` as ``({name: type}, {name: path the app writes})``.

    A value is an artifact type (the app writes ``output_path(name)``) or ``(type, path)``
    (the task copies ``path`` to the artifact once the app succeeded).

    Raises:
        ValueError: a tuple that is not ``(type, path)``.
    """
    kinds: dict[str, Any] = {}
    copied: dict[str, Any] = {}
    for name, value in outputs.items():
        if isinstance(value, tuple):
            if len(value) != 2:
                raise ValueError(
                    f"outputs['{name}'] must be an artifact type or (type, path), got {value!r}"
                )
            kinds[name], copied[name] = value[0], value[1]
        else:
            kinds[name] = value
    return kinds, copied


def _output_specs(outputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    specs = []
    for name, kind in outputs.items():
        _check_name(name, "output artifact")
        if name in _RESERVED:
            raise ValueError(
                f"output artifact `{name}` clashes with the component's own `{name}`;"
                " pick another name"
            )
        specs.append({"name": name, "type": artifact_type(kind)})
    return specs


def _replace(spec: Mapping[str, Any], old: str, new: str) -> dict[str, Any]:
    """``spec`` with ``old`` replaced by ``new`` in every command/args string."""
    container = dict(spec["implementation"]["container"])
    for key in ("command", "args"):
        container[key] = [
            e.replace(old, new) if isinstance(e, str) else e for e in container.get(key) or []
        ]
    return {**spec, "implementation": {**spec["implementation"], "container": container}}


def with_artifacts(
    spec: Mapping[str, Any],
    refs: Sequence[ArtifactRef],
    outputs: Mapping[str, Any],
) -> dict[str, Any]:
    """Returns the component dict ``spec`` with its artifact inputs and outputs.

    Args:
        spec: the component dict built with a string input per artifact path (``refs``).
        refs: the artifact paths the args use.
        outputs: the declared output artifacts, ``{name: artifact class or schema type}``.

    Raises:
        ValueError: the args use ``output_path`` of an undeclared output, or an output name
            clashes with a component input or output.
    """
    added = _output_specs(outputs)
    used_outputs = {r.name for r in refs if r.output}
    undeclared = sorted(used_outputs - set(outputs))
    if undeclared:
        raise ValueError(
            f"the args use output_path('{undeclared[0]}'), but outputs= does not declare it:"
            f" add outputs={{'{undeclared[0]}': Model}} (or another artifact type)"
        )
    tokens = {r.token_name for r in refs if r.output}
    taken = {i["name"] for i in spec["inputs"] if i["name"] not in tokens}
    taken |= {o["name"] for o in spec["outputs"]}
    for item in added:
        if item["name"] in taken:
            raise ValueError(f"output artifact `{item['name']}` clashes with a component input")
    out = dict(spec)
    types = {r.token_name: r.kfp_type for r in refs if not r.output}
    out["inputs"] = [
        {"name": i["name"], "type": types[i["name"]]} if i["name"] in types else i
        for i in spec["inputs"]
        if i["name"] not in tokens
    ]
    out["outputs"] = [*spec["outputs"], *added]
    for ref in refs:
        where = "outputs" if ref.output else "inputs"
        new = f"{{{{$.{where}.artifacts['{ref.name}'].path}}}}"
        out = _replace(out, "{{$.inputs.parameters['" + ref.token_name + "']}}", new)
    return out
