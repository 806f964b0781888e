"""Every input a container command references is passed by each task that runs it.

The KFP backend (2.17.0, ``backend/src/v2/driver/resolve.go::resolveInputs``) leaves an
optional input the task does not pass out of the executor input: the default is not filled
in ("resolved internally within the component"). The driver's pass over the container's
command and args (``driver/util.go::resolveInputParameterPlaceholders``) then fails with
``parameter "x" not found in executor input``. The only reference that survives an unpassed
input is one inside a whole ``{"IfPresent": {"InputName": x, ...}}`` element naming that
input (``driver/util.go::resolveCondition`` takes its Else branch).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["check_passed_inputs", "referenced_inputs"]

_PARAM = re.compile(r"\{\{\$\.inputs\.parameters\['([^']+)'\]\}\}")
_IF_PRESENT = '{"IfPresent":'


def _plain(items: Any) -> set[str]:
    """References in a Then/Else branch: a string or a list of strings.

    2.17.0 ``resolveCondition`` substitutes each item as plain text, never as a nested clause.
    """
    texts = [items] if isinstance(items, str) else list(items or [])
    return {n for t in texts if isinstance(t, str) for n in _PARAM.findall(t)}


def _refs(element: Any) -> set[str]:
    if not isinstance(element, str):
        return set()
    if element.lstrip().startswith(_IF_PRESENT):
        clause = json.loads(element)["IfPresent"]
        guarded = _plain(clause.get("Then")) - {clause.get("InputName", "")}
        return guarded | _plain(clause.get("Else"))
    return set(_PARAM.findall(element))


def referenced_inputs(command: Iterable[Any]) -> set[str]:
    """The input parameters a container command/args references outside an IfPresent guard.

    A reference in the Then branch of a whole ``{"IfPresent": ...}`` element naming the same
    input is guarded (that branch is taken only when the input is in the executor input).

    Args:
        command: the container's command followed by its args, as in the IR.
    """
    return set().union(*(_refs(e) for e in command))


def _container_refs(ir: Mapping[str, Any]) -> dict[str, set[str]]:
    executors = (ir.get("deploymentSpec") or {}).get("executors") or {}
    refs: dict[str, set[str]] = {}
    for name, comp in (ir.get("components") or {}).items():
        container = (executors.get(comp.get("executorLabel", "")) or {}).get("container")
        if container is not None:
            argv = [*(container.get("command") or []), *(container.get("args") or [])]
            refs[name] = referenced_inputs(argv)
    return refs


def check_passed_inputs(ir: Mapping[str, Any]) -> None:
    """Raises when a task does not pass an input its container command references unguarded.

    Args:
        ir: the compiled pipeline spec as a dict.

    Raises:
        ValueError: ``KFP task `t`: its command references input `x`, which the task does
            not pass ...`` (the first such task and input).
    """
    refs = _container_refs(ir)
    dags = [ir.get("root") or {}, *(ir.get("components") or {}).values()]
    for dag in dags:
        for key, task in ((dag.get("dag") or {}).get("tasks") or {}).items():
            comp = (task.get("componentRef") or {}).get("name", "")
            passed = set((task.get("inputs") or {}).get("parameters") or {})
            missing = sorted(refs.get(comp, set()) - passed)
            if missing:
                raise ValueError(
                    f"KFP task `{key}`: its command references input `{missing[0]}`, which the"
                    " task does not pass; the KFP backend (2.17+) leaves an unpassed optional"
                    ' input out of the executor input and fails ("not found in executor'
                    ' input"): pass it, or guard it with an IfPresent placeholder'
                )
