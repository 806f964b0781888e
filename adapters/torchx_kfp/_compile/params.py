"""A TorchX component function's typed parameters -> the KFP component's inputs.

A parameter becomes a KFP input when its value flows verbatim into the role's ``args`` or
``env`` and nowhere else: the component is called with two different probe values for it,
and the two AppDefs must differ only by that value inside args and env. Parameters that shape
the app (image, resources, replicas, optional flags) are fixed at compile time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import typing
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union, get_args, get_origin

if TYPE_CHECKING:
    from torchx.specs.api import AppDef

__all__ = ["ComponentInput", "compile_env", "component_with_inputs", "probe_token"]

_KFP_TYPES = {str: "String", int: "Integer", float: "Float"}


@dataclasses.dataclass(frozen=True)
class ComponentInput:
    """One KFP input made from a component parameter.

    Args:
        name: the parameter (and input) name.
        kfp_type: ``String``, ``Integer`` or ``Float``.
        default: the parameter's default (None: a required input).
        token: the probe text standing for the value inside the AppDef's args and env.
    """

    name: str
    kfp_type: str
    default: Any
    token: str


def probe_token(name: str, kfp_type: str, variant: int = 0) -> str:
    """Returns a probe value for parameter ``name``; distinct per name and variant."""
    if kfp_type == "String":
        return f"torchxkfp{variant}x{name}x"
    base = 7_919_000_000 + 1000 * (zlib.crc32(name.encode()) % 1_000_000) + variant
    return str(base) if kfp_type == "Integer" else f"{base}.5"


def _plain_type(annotation: Any) -> Optional[type]:
    if isinstance(annotation, str):
        annotation = {"str": str, "int": int, "float": float, "Optional[str]": str}.get(
            annotation.replace("typing.", "")
        )
    if get_origin(annotation) is Union:
        inner = [a for a in get_args(annotation) if a is not type(None)]
        annotation = inner[0] if len(inner) == 1 else None
    return annotation if annotation in _KFP_TYPES else None


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """``fn``'s parameter types, with string annotations evaluated.

    The builtin components use ``from __future__ import annotations``; so may a user's. {}
    when one cannot be evaluated (the raw annotations are used then).
    """
    try:
        return typing.get_type_hints(fn)
    except Exception:  # an unresolvable forward reference: fall back to the raw annotations
        return {}


def _bound_names(args: Sequence[str]) -> set[str]:
    names = set()
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("-"):
            names.add(arg.lstrip("-").split("=", 1)[0].replace("-", "_"))
    return names


def _candidates(
    fn: Callable[..., Any], bound: Sequence[str], wanted: Optional[Sequence[str]]
) -> dict[str, tuple[str, Any]]:
    found: dict[str, tuple[str, Any]] = {}
    taken = _bound_names(bound)
    hints = _type_hints(fn)
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or name in taken:
            continue
        kind = _plain_type(hints.get(name, param.annotation))
        if kind is None or (wanted is not None and name not in wanted):
            continue
        default = None if param.default is inspect.Parameter.empty else param.default
        found[name] = (_KFP_TYPES[kind], default)
    return found


_KEPT_ENV = ("HOME", "PATH", "PWD", "TMPDIR", "TORCHXCONFIG", "PYTHONPATH", "LANG", "LC_ALL")
"""Variables a component still sees while it is materialized for KFP (none of them reach
an AppDef through the builtins; ``TORCHXCONFIG`` names the config file on purpose)."""


@contextlib.contextmanager
def compile_env() -> Iterator[None]:
    """Hides the compiling machine's environment while components are materialized.

    Components may read the caller's environment (``dist.ddp`` and ``utils.sh`` set
    ``LOGLEVEL`` from it); at compile time that would bake this machine's values into the IR.
    Inside the block ``os.environ`` holds only :data:`_KEPT_ENV`, so every such read gets
    its default. Not thread-safe: compile pipelines in one thread.
    """
    saved = dict(os.environ)
    try:
        for key in [k for k in os.environ if k not in _KEPT_ENV]:
            del os.environ[key]
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _materialize(fn: Callable[..., Any], args: list[str]) -> AppDef:
    from torchx.specs.builders import materialize_appdef  # lazy: docstring_parser, ~15 ms

    return materialize_appdef(fn, args, None, None)


def _probe_args(values: dict[str, str], bound: Sequence[str]) -> list[str]:
    head = [part for name, value in values.items() for part in (f"--{name}", value)]
    return [*head, *bound]


def _swap(app: AppDef, old: str, new: str) -> AppDef:
    app = dataclasses.replace(app, roles=[dataclasses.replace(r) for r in app.roles])
    for role in app.roles:
        role.args = [a.replace(old, new) if isinstance(a, str) else a for a in role.args]
        role.env = {k: v.replace(old, new) for k, v in role.env.items()}
    return app


def _flows_verbatim(
    fn: Callable[..., Any],
    name: str,
    probes: dict[str, str],
    bound: Sequence[str],
    kind: str,
    first: Optional[AppDef],
) -> bool:
    """Whether parameter ``name``'s value reaches only args/env, verbatim.

    ``first`` is the app materialized with every probe (None: the component rejected them).
    The value must appear in args or env and nowhere else; then one more materialization,
    with ``name``'s second probe, must differ from ``first`` only by the value.
    """
    if first is None:
        return False
    token = probes[name]
    uses = any(token in a for r in first.roles for a in [*r.args, *r.env.values()])
    if not uses or token in repr(_swap(first, token, "")):
        return False  # decided by `first` alone (image, resources, replicas, flags...)
    try:
        other = probe_token(name, kind, variant=1)
        second = _materialize(fn, _probe_args({**probes, name: other}, bound))
    except Exception:  # the component rejects a probe: the value shapes the app
        return False
    return _swap(second, other, token) == first


def component_with_inputs(
    fn: Callable[..., Any], bound: Sequence[str], wanted: Optional[Sequence[str]] = None
) -> tuple[AppDef, list[ComponentInput]]:
    """Materializes ``fn`` with its input-eligible parameters left as probe tokens.

    Args:
        fn: the component function.
        bound: CLI-style arguments fixed at compile time (``["--script", "train.py"]``).
        wanted: the parameters to turn into inputs (None: every eligible one).

    Returns:
        The AppDef (input values appear as ``ComponentInput.token`` in args and env) and the
        inputs.

    Raises:
        ValueError: a ``wanted`` parameter cannot be an input, or a required parameter is
            neither bound nor eligible.
    """
    with compile_env():  # one switch for every probe materialization of this component
        return _with_inputs(fn, bound, wanted)


def _with_inputs(
    fn: Callable[..., Any], bound: Sequence[str], wanted: Optional[Sequence[str]]
) -> tuple[AppDef, list[ComponentInput]]:
    cands = _candidates(fn, bound, wanted)
    probes = {n: probe_token(n, t) for n, (t, _) in cands.items()}
    first: Optional[AppDef] = None
    if cands:
        try:  # with every probe: the same for each candidate, so materialized once
            first = _materialize(fn, _probe_args(probes, bound))
        except Exception:  # the component rejects a probe: no parameter is an input
            first = None
    eligible = {n for n, (t, _) in cands.items() if _flows_verbatim(fn, n, probes, bound, t, first)}
    for name in wanted or []:
        if name not in eligible:
            raise ValueError(
                f"component parameter `{name}` cannot be a KFP input: its value shapes the app"
                " (image, resources, replicas or flags), or it is not a str/int/float parameter;"
                f" pass it at compile time in component_args (--{name} VALUE)"
            )
    required = [n for n, (_, d) in cands.items() if d is None and n not in eligible]
    sig = inspect.signature(fn).parameters
    missing = [n for n in required if sig[n].default is inspect.Parameter.empty]
    if missing:
        raise ValueError(
            f"component parameter(s) {', '.join(missing)} must be given at compile time:"
            f" pass them in component_args ({' '.join(f'--{n} VALUE' for n in missing)})"
        )
    if first is not None and len(eligible) == len(cands):
        app = first  # every candidate is an input: the app with every probe
    else:
        app = _materialize(fn, _probe_args({n: probes[n] for n in eligible}, bound))
    inputs = [
        ComponentInput(n, cands[n][0], cands[n][1], probes[n]) for n in cands if n in eligible
    ]
    return app, inputs
