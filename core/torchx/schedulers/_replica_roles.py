"""A replica's role with its macros substituted, without ``macros.Values.apply``'s deep copy.

Shared by the schedulers that materialize a role per replica (``local_cwd``, ``kubernetes``):
``apply`` deep-copies the whole role and rebuilds the values dict for every string, the
costliest step of a dry run with many replicas.
"""

from __future__ import annotations

from collections.abc import Mapping
from string import Template
from typing import Any

from torchx.specs.api import Role, macros

__all__ = ["apply_macros"]


def apply_macros(values: macros.Values, role: Role) -> Role:
    """``values.apply(role)`` with a shallow copy.

    Substitution is ``macros.Values.substitute``'s (``Template.safe_substitute``) in ``args``,
    ``env`` values and ``metadata``, as ``apply`` does it. ``args``, ``env`` and ``metadata``
    are new containers; every other attribute is shared with ``role`` and must not be mutated.

    Args:
        values: the replica's macro values.
        role: the role, as the AppDef has it.
    """
    mapping = values.to_dict()
    cls = type(role)
    new = cls.__new__(cls)
    state = new.__dict__
    state.update(object.__getattribute__(role, "__dict__"))
    state["args"] = [_substitute(mapping, a) for a in state["args"]]
    state["env"] = {k: _substitute(mapping, v) for k, v in state["env"].items()}
    state["metadata"] = _substitute(mapping, state["metadata"])
    return new


def _substitute(mapping: Mapping[str, Any], value: Any) -> Any:
    if isinstance(value, str):
        return Template(value).safe_substitute(mapping) if "$" in value else value
    if isinstance(value, dict):
        return {k: _substitute(mapping, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(mapping, v) for v in value]
    return value
