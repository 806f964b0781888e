"""Turns the operator's parameters into the AppDef to submit (at execute time, never at parse)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

if TYPE_CHECKING:
    from torchx.specs.api import AppDef, Role

__all__ = ["PerRole", "apply_overrides", "build_app", "replicas_of"]

PerRole = Union[str, Mapping[str, str], None]


def build_app(
    component: Optional[str],
    component_args: Union[Sequence[Any], Mapping[str, Any], None],
    app: Optional[AppDef],
    component_defaults: Mapping[str, Mapping[str, str]],
) -> AppDef:
    """Returns a copy of ``app``, or the AppDef the component builds from its arguments.

    Args:
        component: a builtin (``dist.ddp``) or ``path/to/file.py:fn``.
        component_args: CLI-style arguments (a list) or ``{param: value}`` (a dict).
        app: a prebuilt AppDef (exclusive with ``component``).
        component_defaults: ``{component: {param: value}}`` string defaults.
    """
    if app is not None:
        return copy.deepcopy(app)
    if not component:
        raise ValueError("TorchXOperator needs `component` or `app`; got neither")
    from torchx.specs.builders import materialize_appdef
    from torchx.specs.finder import get_component

    fn = get_component(component).fn
    if isinstance(component_args, Mapping):
        list_args: list[str] = []
        dict_args: dict[str, Any] = dict(component_args)
    else:
        list_args = [str(a) for a in (component_args or [])]
        dict_args = {}
    defaults = component_defaults.get(component)
    return materialize_appdef(fn, list_args, dict(defaults) if defaults else None, dict_args)


def _for_role(value: PerRole, role: Role, what: str) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value or None
    return value.get(role.name)


def _check_role_keys(value: PerRole, roles: Sequence[Role], what: str) -> None:
    if value is None or isinstance(value, str):
        return
    import difflib

    names = [r.name for r in roles]
    for key in value:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            raise ValueError(
                f"`{what}` names role `{key}`{hint}, but the app's roles are: {', '.join(names)}"
            )


def apply_overrides(
    app: AppDef,
    *,
    image: PerRole = None,
    resource: PerRole = None,
    max_retries: Optional[int] = None,
    env: Optional[Mapping[str, str]] = None,
) -> AppDef:
    """Applies the operator's overrides to ``app`` in place and returns it.

    Args:
        app: the AppDef (already a private copy).
        image: an image for every role, or ``{role: image}``.
        resource: a named resource for every role, or ``{role: named resource}``.
        max_retries: the scheduler-side retries of every role (``Role.max_retries``).
        env: variables added to every role's env (the role's own values win).
    """
    _check_role_keys(image, app.roles, "image")
    _check_role_keys(resource, app.roles, "resource")
    for role in app.roles:
        role_image = _for_role(image, role, "image")
        if role_image:
            role.image = role_image
        named = _for_role(resource, role, "resource")
        if named:
            from torchx.specs import resource as make_resource

            role.resource = make_resource(h=named)
        if max_retries is not None:
            role.max_retries = max_retries
        for key, value in (env or {}).items():
            role.env.setdefault(key, value)
    return app


def replicas_of(app: Optional[AppDef]) -> list[tuple[str, int]]:
    """Returns ``(role, replica index)`` for every replica of ``app`` (empty for None)."""
    if app is None:
        return []
    return [(role.name, k) for role in app.roles for k in range(role.num_replicas)]
