"""Reading and validating pipelines: ``load_pipeline`` (YAML) and ``validate_pipeline``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Optional, Union

from pydantic import ValidationError

from torchx.workflow._check_components import check_registries
from torchx.workflow._validate import check_pipeline, line_of
from torchx.workflow._yaml import Lines, load_yaml
from torchx.workflow.errors import Issue, WorkflowError, did_you_mean
from torchx.workflow.model import Param, Pipeline, Step, StepDefaults

__all__ = ["load_pipeline", "pipeline_from_dict", "validate_pipeline"]

_MODELS: dict[str, type[Any]] = {
    "params": Param,
    "defaults": StepDefaults,
    "steps": Step,
}


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    model: type[Any] = Pipeline
    if loc and loc[0] in _MODELS:
        model = _MODELS[str(loc[0])]
    return list(model.model_fields)


def _issue_from(err: Mapping[str, Any], lines: Lines) -> Issue:
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p))
    step = str(loc[1]) if len(loc) > 1 and loc[0] == "steps" else ""
    rest = loc[2:] if step else loc
    field = ".".join(str(p) for p in rest)
    if err["type"] == "extra_forbidden":
        key = str(loc[-1])
        hint = did_you_mean(key, _fields_at(loc[:1] if loc[:1] != ("defaults",) else loc[:1]))
        msg = f"unknown field `{key}`{hint}"
    else:
        text = str(err["msg"]).removeprefix("Value error, ")
        msg = f"`{field}`: {text}" if field else text
    return Issue(msg, step, line_of(lines, loc))


def validate_pipeline(
    pipeline: Pipeline, lines: Optional[Lines] = None, *, registries: bool = True
) -> Pipeline:
    """Checks references, dependencies, cycles and (``registries``) the TorchX names.

    The TorchX names are components, their argument names, named resources and schedulers.

    Args:
        pipeline: the pipeline.
        lines: its line map (from :func:`load_pipeline`), for error locations.
        registries: also check against the TorchX registries.

    Returns:
        ``pipeline``.

    Raises:
        WorkflowError: every issue found, each with file, line and step.
    """
    lines = lines or {}
    issues = check_pipeline(pipeline, lines)
    if not issues and registries:
        issues = check_registries(pipeline, lines)
    if issues:
        raise WorkflowError(issues, pipeline.source)
    return pipeline


def pipeline_from_dict(
    data: Any, source: str = "", lines: Optional[Lines] = None, *, registries: bool = True
) -> Pipeline:
    """Builds and validates a pipeline from plain data (a parsed YAML or JSON document).

    Args:
        data: the document.
        source: the file it came from, for error messages.
        lines: ``{path: line}`` of the document.
        registries: also check components, resources and schedulers.

    Raises:
        WorkflowError: the document is not a valid pipeline.
    """
    lines = lines or {}
    if not isinstance(data, dict):
        raise WorkflowError([Issue("expected a mapping with `name` and `steps`", "", 1)], source)
    try:
        pipeline = Pipeline.model_validate({**data, "source": source})
    except ValidationError as e:
        issues = [_issue_from(err, lines) for err in e.errors()]
        raise WorkflowError(issues, source) from None
    return validate_pipeline(pipeline, lines, registries=registries)


def load_pipeline(
    path: Union[str, os.PathLike[str]],
    *,
    registries: bool = True,
) -> Pipeline:
    """Reads and validates a YAML pipeline file.

    Args:
        path: the file (``pipelines/pipeline.yaml``).
        registries: also check components, resources and schedulers.

    Raises:
        WorkflowError: the file is not a valid pipeline (file, line and step named).
        OSError: the file cannot be read.
    """
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"pipeline file `{source}` not found") from None
    data, lines = load_yaml(text, source)
    return pipeline_from_dict(data, source, lines, registries=registries)
