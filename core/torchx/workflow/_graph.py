"""The step graph: dependencies, cycles, order, transitive reduction (private)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from torchx.workflow._template import Ref, find_refs

__all__ = ["direct_upstream", "find_cycle", "step_refs", "strings_of", "topo_order", "upstream"]


def strings_of(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Yields ``(path, string)`` for every string inside ``value`` (lists and dicts walked).

    Args:
        value: a str, list, dict or scalar.
        path: the path of ``value``.
    """
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from strings_of(v, (*path, k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from strings_of(v, (*path, i))


TEMPLATED_FIELDS = ("args", "scheduler", "cfg", "resource", "image", "env")


def step_refs(step: Any) -> Iterator[tuple[tuple[Any, ...], Ref]]:
    """Yields ``(field path, ref)`` for every reference in a step's templated fields.

    ``outputs`` are included; a reference there to the step itself is allowed.

    Args:
        step: a :class:`torchx.workflow.Step`.
    """
    for field in (*TEMPLATED_FIELDS, "outputs"):
        for path, text in strings_of(getattr(step, field), (field,)):
            for ref in find_refs(text):
                yield path, ref


def upstream(steps: Mapping[str, Any]) -> dict[str, list[str]]:
    """Returns ``{step: [steps it depends on]}`` from ``depends_on`` and references.

    References to unknown steps and to the step itself are left out (validation reports them).

    Args:
        steps: ``{name: Step}``.
    """
    deps: dict[str, list[str]] = {}
    for name, step in steps.items():
        found = [d for d in step.depends_on if d in steps and d != name]
        if step.parent in steps and step.parent != name:
            found.append(step.parent)
        for _, ref in step_refs(step):
            if ref.kind == "steps" and ref.name in steps and ref.name != name:
                found.append(ref.name)
        deps[name] = list(dict.fromkeys(found))
    return deps


def find_cycle(deps: Mapping[str, Sequence[str]]) -> list[str]:
    """Returns a cycle as ``[a, b, ..., a]``, or ``[]`` when the graph has none.

    Args:
        deps: ``{step: [upstream steps]}``.
    """
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        color[node] = 1
        stack.append(node)
        for up in deps.get(node, ()):
            if color.get(up) == 1:
                return [*stack[stack.index(up) :], up]
            if up not in color:
                cycle = visit(up)
                if cycle:
                    return cycle
        stack.pop()
        color[node] = 2
        return []

    for node in deps:
        if node not in color:
            cycle = visit(node)
            if cycle:
                return list(reversed(cycle))
    return []


def topo_order(deps: Mapping[str, Sequence[str]]) -> list[str]:
    """Returns the steps so that each comes after its upstream steps, else in definition order.

    Args:
        deps: ``{step: [upstream steps]}`` without cycles.
    """
    done: list[str] = []
    seen: set[str] = set()
    pending = list(deps)
    while pending:
        ready = [n for n in pending if all(u in seen for u in deps[n])]
        if not ready:
            raise ValueError(f"cycle among steps {', '.join(pending)}")
        for n in ready:
            seen.add(n)
            done.append(n)
        pending = [n for n in pending if n not in seen]
    return done


def direct_upstream(deps: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Returns the transitive reduction: drops ``a -> c`` when ``a -> b -> ... -> c`` exists.

    Args:
        deps: ``{step: [upstream steps]}`` without cycles.
    """
    ancestors: dict[str, set[str]] = {}
    for n in topo_order(deps):
        ancestors[n] = set()
        for u in deps[n]:
            ancestors[n] |= {u} | ancestors[u]
    reduced: dict[str, list[str]] = {}
    for n, ups in deps.items():
        reduced[n] = [u for u in ups if not any(u in ancestors[o] for o in ups if o != u)]
    return reduced
