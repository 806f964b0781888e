"""The KFP backend's run-time rules for one task, as plain functions (test harness, not product).

Each rule follows kubeflow/pipelines ``backend/src/v2`` as read at the 2.17.0 tag (the files
cited are the same at 7b70c7b, 2026-08); the file is named per function. None was checked
against a running backend (it cannot be built here). :func:`driver_args` fails on an input the
executor input lacks: the driver never fills a component default in (``driver/resolve.go``). kfp.local is more lenient (it resolves Concat, run ids anywhere and
placeholders nested in constants); these rules are what a cluster does. The Docker part that
runs a whole pipeline is :mod:`_kfp_backend_run`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

__all__ = [
    "BackendRuleError",
    "RunContext",
    "driver_args",
    "driver_number",
    "launcher_args",
    "launcher_number",
    "local_path",
    "output_value",
    "resolve_constant",
    "unresolved_left",
]


class BackendRuleError(RuntimeError):
    """A task the KFP backend would run with an unresolved placeholder (or cannot run)."""


class RunContext:
    """The run's ids as the backend driver knows them.

    Args:
        run_id: the run's uuid (``{{$.pipeline_job_uuid}}``).
        run_name: the run's display name and resource name.
        dag_execution_id: the MLMD execution id of the enclosing DAG; the driver hands it out
            as ``{{$.pipeline_task_uuid}}`` (``driver/resolve.go``: ``opts.DAGExecutionID``),
            so sibling tasks get the same value.
    """

    def __init__(self, run_id: str, run_name: str, dag_execution_id: int) -> None:
        self.run_id = run_id
        self.run_name = run_name
        self.dag_execution_id = dag_execution_id


def resolve_constant(value: Any, ctx: RunContext, task_name: str) -> Any:
    """A task input's ``runtimeValue.constant`` (``driver/resolve.go::resolveInputParameter``).

    Only a constant that is exactly one of the run placeholders is replaced; everything else,
    including a string, list or dict that embeds ``{{$.inputs.parameters[...]}}``, is passed
    through as literal text.
    """
    if not isinstance(value, str):
        return value
    return {
        "{{$.pipeline_job_name}}": ctx.run_name,
        "{{$.pipeline_job_resource_name}}": ctx.run_name,
        "{{$.pipeline_job_uuid}}": ctx.run_id,
        "{{$.pipeline_task_name}}": task_name,
        "{{$.pipeline_task_uuid}}": str(ctx.dag_execution_id),
    }.get(value, value)


def driver_number(value: float) -> str:
    """A number as the driver prints it (``driver/util.go::pbValueToString``): ``%d`` / ``%g``."""
    if value == int(value):
        return str(int(value))
    number = Decimal(repr(value)).normalize()
    exponent = number.adjusted()
    if -4 <= exponent < 6:  # Go's %g with the shortest precision: plain notation
        return format(number, "f")
    sign, digits, _ = number.as_tuple()
    text = "".join(map(str, digits))
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


def launcher_number(value: float) -> str:
    """A number as the launcher prints it (``component/launcher_v2.go::getPlaceholders``:
    ``strconv.FormatFloat(v, 'f', -1, 64)``)."""
    return format(Decimal(repr(float(value))).normalize(), "f")


def _param_text(value: Any, number: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(number(float(value)))
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


_INPUT_PARAM = re.compile(r"\{\{\$\.inputs\.parameters\['(.+?)'\]\}\}")


def _driver_substitute(arg: str, params: Mapping[str, Any]) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(1) not in params:
            raise BackendRuleError(f"parameter {match.group(1)!r} not found in executor input")
        return _param_text(params[match.group(1)], driver_number)

    return _INPUT_PARAM.sub(one, arg)


def driver_args(args: Sequence[str], params: Mapping[str, Any]) -> list[str]:
    """The driver's pass over command or args (``driver/util.go::resolveContainerArgs``).

    An arg holding ``$.outputs`` is left to the launcher; an arg that is an
    ``{"IfPresent": ...}`` clause expands to its Then/Else; every other arg gets its
    ``{{$.inputs.parameters['x']}}`` replaced, anywhere in the string. Nothing else.
    """
    out: list[str] = []
    for arg in args:
        if "$.outputs" in arg:
            out.append(arg)
        elif arg.strip().startswith('{"IfPresent":'):
            clause = json.loads(arg)["IfPresent"]
            present = params.get(clause["InputName"]) is not None
            chosen = clause.get("Then") if present else clause.get("Else")
            items = [] if chosen is None else [chosen] if isinstance(chosen, str) else chosen
            out += [_driver_substitute(str(i), params) for i in items]
        else:
            out.append(_driver_substitute(arg, params))
    return out


def local_path(uri: str) -> str:
    """An artifact's path in the container (``component/launcher_v2.go::LocalPathForURI``)."""
    for scheme, root in (("gs://", "/gcs/"), ("minio://", "/minio/"), ("s3://", "/s3/")):
        if uri.startswith(scheme):
            return root + uri[len(scheme) :]
    raise BackendRuleError(f"unsupported artifact uri {uri}")


def _launcher_placeholders(executor_input: Mapping[str, Any]) -> dict[str, str]:
    inputs, outputs = executor_input["inputs"], executor_input["outputs"]
    found: dict[str, str] = {}
    for kind, arts in (("inputs", inputs.get("artifacts", {})), ("outputs", outputs["artifacts"])):
        for name, listed in arts.items():
            uri = listed["artifacts"][0]["uri"]
            found["{{$." + kind + f".artifacts['{name}'].uri}}}}"] = uri
            found["{{$." + kind + f".artifacts['{name}'].path}}}}"] = local_path(uri)
    for name, value in inputs.get("parameterValues", {}).items():
        found["{{$.inputs.parameters['" + name + "']}}"] = _param_text(value, launcher_number)
    for name, spec in outputs["parameters"].items():
        found["{{$.outputs.parameters['" + name + "'].output_file}}"] = spec["outputFile"]
    return found


def launcher_args(command: Sequence[str], executor_input: Mapping[str, Any]) -> list[str]:
    """The launcher's pass (``component/launcher_v2.go::compileCmdAndArgs``).

    The executable (the first element) gets only ``{{$}}`` replaced; every other element gets
    ``{{$}}``, input parameters, output-parameter files and artifact uri/path replaced.
    """
    whole = json.dumps(executor_input)
    head, rest = command[0].replace("{{$}}", whole), []
    table = _launcher_placeholders(executor_input)
    for arg in command[1:]:
        arg = arg.replace("{{$}}", whole)
        for key, value in table.items():
            arg = arg.replace(key, value)
        rest.append(arg)
    return [head, *rest]


def unresolved_left(argv: Sequence[str]) -> list[str]:
    """Elements still holding ``{{$.`` or ``{"Concat"`` once the backend resolved the argv."""
    return [a for a in argv if "{{$." in a or '{"Concat"' in a]


def output_value(text: str, parameter_type: str) -> Any:
    """An output-parameter file's text as a value (``metadata.TextToPbValue``)."""
    if parameter_type == "STRING":
        return text
    if parameter_type in ("NUMBER_INTEGER", "NUMBER_DOUBLE"):
        return float(text)
    if parameter_type == "BOOLEAN":
        return text.strip().lower() == "true"
    return json.loads(text)
