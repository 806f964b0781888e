"""The component dict of :mod:`torchx_kfp._compile.spec` -> a KFP v2 ``ComponentSpec``, directly.

Building the spec objects instead of dumping and re-parsing YAML keeps compiling a
pipeline of TorchX steps about as fast as one of hand-made container components; the
resources go into the container spec itself (no per-task setter calls).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kfp.dsl import placeholders, structures

from torchx_kfp._compile.placeholders import check_container

if TYPE_CHECKING:
    from torchx_kfp._compile.task_settings import TaskSettings

__all__ = ["component_spec"]


def _element(value: Any) -> Any:
    """A command/args element: a string, an output file, or an IfPresent guard.

    Strings have input placeholders embedded; a guard is the YAML component's
    ``{"if": {"cond": {"isPresent": x}, "then": [...]}}`` (the SDK's IfPresentPlaceholder).
    """
    if isinstance(value, str):
        return value
    if "if" in value:
        clause = value["if"]
        return placeholders.IfPresentPlaceholder(
            input_name=clause["cond"]["isPresent"],
            then=[_element(e) for e in clause["then"]],
            else_=[_element(e) for e in clause.get("else") or []] or None,
        )
    if "inputValue" in value:
        return placeholders.InputValuePlaceholder(value["inputValue"])
    if "outputPath" in value:
        return placeholders.OutputParameterPlaceholder(value["outputPath"])
    raise ValueError(f"unexpected container element {value!r} (only strings and output files)")


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if "inputValue" in value:
        return "{{$.inputs.parameters['" + value["inputValue"] + "']}}"
    if "if" in value:
        return str(_element(value)._to_string())
    return "{{$.outputs.parameters['" + value["outputPath"] + "'].output_file}}"


def _check(spec: Mapping[str, Any]) -> None:
    """Refuses a component with a placeholder the KFP backend does not resolve."""
    c = spec["implementation"]["container"]
    check_container(
        spec["name"],
        [_text(e) for e in c["command"]],
        [_text(e) for e in c["args"]],
        dict(c.get("env") or {}),
        [i["name"] for i in spec["inputs"]],
        [o["name"] for o in spec["outputs"]],
    )


def _resources(settings: TaskSettings) -> Any:

    if not (settings.cpu or settings.memory or settings.accelerator_count):
        return None
    accel = settings.accelerator_count > 0 and settings.accelerator_type
    return structures.ResourceSpec(
        cpu_request=settings.cpu_request or settings.cpu,
        cpu_limit=settings.cpu,
        memory_request=settings.memory_request or settings.memory,
        memory_limit=settings.memory,
        accelerator_type=settings.accelerator_type if accel else None,
        accelerator_count=str(settings.accelerator_count) if accel else None,
    )


def component_spec(spec: Mapping[str, Any], settings: TaskSettings) -> Any:
    """Returns the ``kfp.dsl.structures.ComponentSpec`` of a component dict."""
    c = spec["implementation"]["container"]
    _check(spec)
    container = structures.ContainerSpecImplementation(
        image=c["image"],
        command=[_element(e) for e in c["command"]],
        args=[_element(e) for e in c["args"]],
        env=dict(c.get("env") or {}),
        resources=_resources(settings),
    )
    inputs = {
        i["name"]: structures.InputSpec(
            type=i["type"], default=i.get("default"), optional=bool(i.get("optional"))
        )
        for i in spec["inputs"]
    }
    outputs = {o["name"]: structures.OutputSpec(type=o["type"]) for o in spec["outputs"]}
    return structures.ComponentSpec(
        name=spec["name"],
        description=spec.get("description"),
        implementation=structures.Implementation(container=container),
        inputs=inputs,
        outputs=outputs,
    )
