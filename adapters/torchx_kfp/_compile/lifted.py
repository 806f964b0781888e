"""Launcher tasks whose pipeline channels are inputs of their own (and output artifacts).

KFP's compiler embeds a channel that sits inside a list, a dict or an f-string of a task input
as ``{{$.inputs.parameters['pipelinechannel--x']}}`` in a constant. The backend's driver
passes that constant on as text and the launcher replaces it by substring in the ``{{$}}``
executor-input JSON, unescaped, so a value with a double quote or a backslash breaks the
JSON a Python component parses (``docs/kfp-backend.md``). Here every such channel is lifted out: the
constant holds a marker ``{{torchx-kfp:N}}`` and the channel becomes the component's input
``torchx_channel_N``, a JSON-encoded value of the executor input, which the task puts back in
place of the marker (:mod:`torchx_kfp._in_task.lifted`). When a task has lifted channels, a
user's text that itself holds ``{{torchx-kfp:`` is escaped as ``{{torchx-kfp:e}}``, which the
task turns back into the literal text, so no constant is ever taken for a marker.

The component is generated from the launcher function's signature plus those inputs and
``Output[<artifact>]`` parameters for declared output artifacts (a workflow launcher step's
``Step.artifacts``), so the KFP compiler sees ordinary Lightweight Python Component
parameters.
"""

from __future__ import annotations

import inspect
import itertools
import keyword
import linecache
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

from kfp import dsl
from kfp.dsl.pipeline_channel import (
    PipelineArtifactChannel,
    PipelineChannel,
    extract_pipeline_channels_from_string,
)

from torchx_kfp._compile.python_task import exec_into_python

__all__ = ["CHANNEL_PREFIX", "lift_channels", "lifted_component"]

CHANNEL_PREFIX = "torchx_channel_"
_MARKER = "{{torchx-kfp:%d}}"
_MARKER_START = "{{torchx-kfp:"
_ESCAPED = "{{torchx-kfp:e}}"  # the literal text _MARKER_START
_TYPES = {
    "string": "str",
    "str": "str",
    "integer": "int",
    "int": "int",
    "float": "float",
    "double": "float",
    "number": "float",
    "boolean": "bool",
    "bool": "bool",
    "list": "list",
    "jsonarray": "list",
    "dict": "dict",
    "jsonobject": "dict",
    "struct": "dict",
}
_ARTIFACTS = ("Artifact", "Dataset", "Model", "Metrics", "HTML", "Markdown")
_counter = itertools.count()


class _Lifter:
    """Replaces nested channels by markers and remembers each channel once."""

    def __init__(self, escape: bool) -> None:
        self.escape = escape
        self.channels: dict[str, Any] = {}  # {input name: channel}
        self._by_pattern: dict[str, str] = {}

    def _marker(self, channel: Any) -> str:

        if isinstance(channel, PipelineArtifactChannel):
            raise ValueError(
                f"launcher task inputs take parameters, but `{channel.name}` is an artifact:"
                " pass its data on a volume (pvc=) or use a container task"
            )
        name = self._by_pattern.get(channel.pattern)
        if name is None:
            name = f"{CHANNEL_PREFIX}{len(self.channels)}"
            self._by_pattern[channel.pattern] = name
            self.channels[name] = channel
        return _MARKER % int(name[len(CHANNEL_PREFIX) :])

    def nested(self, value: Any) -> Any:

        if isinstance(value, PipelineChannel):
            return self._marker(value)
        if isinstance(value, str):
            if self.escape:
                value = value.replace(_MARKER_START, _ESCAPED)
            if "{{channel:" not in value:
                return value
            found = extract_pipeline_channels_from_string(value)  # a set's order: sort
            for channel in sorted(found, key=lambda c: value.index(c.pattern)):
                value = value.replace(channel.pattern, self._marker(channel))
            return value
        if isinstance(value, list | tuple):
            return [self.nested(v) for v in value]
        if isinstance(value, Mapping):
            return {self.nested(k): self.nested(v) for k, v in value.items()}
        return value


def lift_channels(values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Splits a launcher task's input values into constants and channel inputs.

    A value that is a channel stays as it is (a top-level input is encoded properly); a
    channel inside a list, a dict or a string becomes a marker, and the channel an input.
    When there is such a channel, text that looks like a marker is escaped (the task fills
    markers only then).

    Returns:
        (values with markers, ``{torchx_channel_N: channel}``).

    Raises:
        ValueError: an artifact channel inside a value.
    """
    for escape in (True, False):  # no channel: the values as they were, nothing to fill
        lifter = _Lifter(escape)
        out = {
            k: v if isinstance(v, PipelineChannel) else lifter.nested(v) for k, v in values.items()
        }
        if lifter.channels or not escape:
            break
    return out, lifter.channels


def _annotation(channel: Any) -> str:
    kind = channel.channel_type
    return _TYPES.get(str(kind).lower(), "str") if isinstance(kind, str) else "str"


def _parameter_text(param: inspect.Parameter) -> str:
    annotation = param.annotation
    text = f"{param.name}: {getattr(annotation, '__name__', annotation)}"
    return text if param.default is inspect.Parameter.empty else f"{text} = {param.default!r}"


def _check_artifacts(artifacts: Mapping[str, str], taken: Sequence[str]) -> None:
    for name, kind in artifacts.items():
        if not name.isidentifier() or keyword.iskeyword(name) or name in taken:
            raise ValueError(
                f"output artifact `{name}` of a launcher task needs a Python identifier name"
                f" other than {', '.join(taken)}: rename the output"
            )
        if kind not in _ARTIFACTS:
            raise ValueError(f"output artifact `{name}`: unknown kind `{kind}` ({_ARTIFACTS})")


def _doc(
    func: Callable[..., Any], channels: Mapping[str, Any], artifacts: Mapping[str, str]
) -> str:
    """``func``'s docstring with the lifted inputs and the output artifacts in its Args."""
    lines = [
        *(
            f"    {name}: the value of pipeline channel `{ch.name}`."
            for name, ch in channels.items()
        ),
        *(f"    {name}: the step's declared output `{name}`." for name in artifacts),
    ]
    return inspect.cleandoc(func.__doc__ or "") + "\n" + "\n".join(lines)


def _doc_literal(doc: str) -> str:
    if '"""' in doc or "\\" in doc:
        return f"    {doc!r}"
    return '    """' + doc.replace("\n", "\n    ").replace("\n    \n", "\n\n") + '\n    """'


def _source(
    func: Callable[..., Any], kind: str, channels: Mapping[str, Any], artifacts: Mapping[str, str]
) -> str:
    params = list(inspect.signature(func).parameters.values())
    _check_artifacts(artifacts, [p.name for p in params])
    required = [_parameter_text(p) for p in params if p.default is inspect.Parameter.empty]
    optional = [_parameter_text(p) for p in params if p.default is not inspect.Parameter.empty]
    lifted = [f"{name}: {_annotation(ch)}" for name, ch in channels.items()]
    outputs = [f"{name}: Output[{kind_}]" for name, kind_ in artifacts.items()]
    fields = ", ".join(f'("{f}", str)' for f in ("app_handle", "app_id", "tracker_run_id"))
    return (
        f"def {func.__name__}({', '.join([*required, *lifted, *outputs, *optional])})"
        f' -> NamedTuple("Outputs", [{fields}]):\n'
        f"{_doc_literal(_doc(func, channels, artifacts))}\n"
        "    arguments = dict(locals())\n"
        "    from torchx_kfp._in_task.lifted import call\n\n"
        f"    return call({kind!r}, arguments, {tuple(artifacts)!r})\n"
    )


def lifted_component(
    func: Callable[..., Any],
    kind: str,
    channels: Mapping[str, Any],
    artifacts: Optional[Mapping[str, str]] = None,
    **component_options: Any,
) -> Any:
    """A Lightweight Python Component: ``func``'s inputs plus ``channels`` and ``artifacts``.

    Args:
        func: the launcher function (``torchx_launch``, ``torchx_workflow_step``).
        kind: what the task calls at run time (``launcher`` or ``workflow_step``).
        channels: ``{torchx_channel_N: channel}`` from :func:`lift_channels`.
        artifacts: ``{output name: Artifact|Dataset|Model|Metrics|HTML|Markdown}``.
        component_options: ``kfp.dsl.component`` options (``base_image``, ...).

    Raises:
        ValueError: an artifact name that is not a Python identifier or is taken.
    """
    source = _source(func, kind, channels, dict(artifacts or {}))
    filename = f"<torchx_kfp launcher {next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": __name__}
    exec("from typing import NamedTuple\nfrom kfp.dsl import *", namespace)
    exec(
        compile(source, filename, "exec", dont_inherit=True), namespace
    )  # our own template, no user text
    return exec_into_python(dsl.component(namespace[func.__name__], **component_options))
