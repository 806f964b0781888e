"""One launch path for the CLI and every adapter: :class:`LaunchRequest` and :func:`build_app`.

A launch request says what to run (a component and its arguments, or a prebuilt AppDef) and
the per-launch overrides an orchestrator task carries (image, named resource, retries, env,
scheduler, run config, workspace, parent run). :func:`build_app` turns it into the AppDef;
``Runner.dryrun_request`` / ``Runner.launch`` add the scheduler, run config and tracker
settings of the runner's :class:`~torchx.specs.torchxconfig.TorchXConfig` and submit it.

Example::

    from torchx.runner import get_runner
    from torchx.runner.launch import LaunchRequest

    request = LaunchRequest(component="utils.echo", component_args=["--msg", "hi"])
    with get_runner() as runner:
        handle = runner.launch(request)
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

if TYPE_CHECKING:
    from torchx.specs.api import AppDef, CfgVal, RetryPolicy, Role, Workspace

__all__ = ["ComponentArgs", "LaunchRequest", "PerRole", "build_app"]

PerRole = Union[str, Mapping[str, str], None]
"""One value for every role, ``{role name: value}``, or None (keep the app's)."""

ComponentArgs = Union[Sequence[Any], Mapping[str, Any], None]
"""CLI-style arguments (a list) or ``{param: value}`` (a dict)."""


@dataclasses.dataclass
class LaunchRequest:
    """What to launch and how: the data an orchestrator task (or ``torchx run``) carries.

    Exactly one of ``component`` and ``app`` is set.

    Args:
        component: a builtin (``dist.ddp``) or ``path/to/file.py:fn``.
        component_args: the component's CLI-style arguments (list) or ``{param: value}``.
        app: a prebuilt AppDef instead of a component (it is copied, never mutated).
        scheduler: the scheduler; None means the config's ``[cli:run] scheduler``, else
            ``local_cwd``.
        cfg: run options as a dict or a ``k=v,k2=v2`` string; the config's
            ``[<scheduler>]`` section fills the keys it leaves out.
        workspace: replaces the first role's workspace when non-empty.
        image: an image for every role, or ``{role: image}``.
        resource: a named resource for every role, or ``{role: named resource}``.
        max_retries: the scheduler-side retries of every role (``Role.max_retries``).
        retry_policy: the retry policy of every role (a ``RetryPolicy`` or its name:
            ``APPLICATION``, ``REPLICA``, ``ROLE``); None keeps the roles' own.
        env: variables set in every role's env (they beat the role's own values; the
            ``TORCHX_*`` variables the runner sets beat both).
        parent_run_id: the tracker parent run (``$TORCHX_PARENT_RUN_ID`` beats it).
        labels: app labels ``{key: value}``: put into ``AppDef.metadata`` (see
            :mod:`torchx.schedulers.labels`; values are made label-safe), carried by the app's
            objects on schedulers that support labels and matched by
            :func:`torchx.runner.labels.find_apps`. Keys: 1-63 of ``[A-Za-z0-9-_.]``.
    """

    component: Optional[str] = None
    component_args: ComponentArgs = None
    app: Optional[AppDef] = None
    scheduler: Optional[str] = None
    cfg: Union[Mapping[str, CfgVal], str, None] = None
    workspace: Union[Workspace, str, None] = None
    image: PerRole = None
    resource: PerRole = None
    max_retries: Optional[int] = None
    retry_policy: Union[RetryPolicy, str, None] = None
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    parent_run_id: Optional[str] = None
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.component is None) == (self.app is None):
            raise ValueError(
                "a launch needs exactly one of `component` (e.g. 'utils.echo') or `app` (an"
                f" AppDef); got {'both' if self.app is not None else 'neither'}"
            )
        if self.app is not None and self.component_args:
            raise ValueError("`component_args` needs `component`; an `app` is used as is")
        if self.max_retries is not None and self.max_retries < 0:
            raise ValueError(f"`max_retries` must be >= 0, got {self.max_retries}")
        if self.labels:
            from torchx.schedulers.labels import (  # lazy: DAG files import LaunchRequest
                check_label_key,
            )

            for key in self.labels:
                check_label_key(key)


def _split_args(args: ComponentArgs) -> tuple[list[str], dict[str, Any]]:
    if isinstance(args, Mapping):
        return [], dict(args)
    if isinstance(args, str):
        raise ValueError(
            f"component arguments must be a list or a dict, got the string {args!r};"
            " split it into a list (e.g. with shlex.split)"
        )
    return [str(a) for a in (args or [])], {}


def build_app(
    request: LaunchRequest,
    component_defaults: Optional[Mapping[str, Mapping[str, str]]] = None,
) -> AppDef:
    """Returns the AppDef ``request`` describes, with its overrides applied.

    The component is materialized (CLI > ``component_defaults`` > signature defaults), or
    ``request.app`` is deep-copied; then ``image``, ``resource``, ``max_retries`` and ``env``
    are applied to every role (or to the roles they name), and ``labels`` to the metadata.

    Args:
        request: the launch request.
        component_defaults: ``{component: {param: value}}`` string defaults.

    Returns:
        A new AppDef the caller owns.

    Raises:
        ValueError: a per-role override names a role the app does not have (with a close
            match), or the component arguments are invalid.
    """
    if request.app is not None:
        app = copy.deepcopy(request.app)
    else:
        from torchx.specs.builders import (  # lazy: docstring_parser, a component name only
            materialize_appdef,
        )
        from torchx.specs.finder import get_component  # lazy: a component name only

        name = str(request.component)
        fn = get_component(name).fn
        list_args, dict_args = _split_args(request.component_args)
        defaults = (component_defaults or {}).get(name)
        app = materialize_appdef(fn, list_args, dict(defaults) if defaults else None, dict_args)
    _apply_overrides(app, request)
    return app


def _for_role(value: PerRole, role: Role) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value or None
    return value.get(role.name)


def _check_role_keys(value: PerRole, roles: Sequence[Role], what: str) -> None:
    if value is None or isinstance(value, str):
        return
    names = [r.name for r in roles]
    for key in value:
        if key not in names:
            import difflib  # lazy: only for an error message (difflib ~2 ms)

            close = difflib.get_close_matches(key, names, n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            raise ValueError(
                f"`{what}` names role `{key}`{hint}, but the app's roles are: {', '.join(names)}"
            )


def _apply_overrides(app: AppDef, request: LaunchRequest) -> None:
    _check_role_keys(request.image, app.roles, "image")
    _check_role_keys(request.resource, app.roles, "resource")
    policy = _retry_policy(request.retry_policy)
    for role in app.roles:
        image = _for_role(request.image, role)
        if image:
            role.image = image
        named = _for_role(request.resource, role)
        if named:
            from torchx.specs import resource as make_resource  # lazy: named resources

            role.resource = make_resource(h=named)
        if request.max_retries is not None:
            role.max_retries = request.max_retries
        if policy is not None:
            role.retry_policy = policy
        role.env.update(request.env)
    if request.labels:
        from torchx.schedulers.labels import labels_metadata  # lazy: see check_label_key

        app.metadata.update(labels_metadata(request.labels))


def _retry_policy(value: Union[RetryPolicy, str, None]) -> Optional[RetryPolicy]:
    from torchx.specs.api import RetryPolicy  # lazy: the spec types (see check_label_key)

    if value is None or isinstance(value, RetryPolicy):
        return value
    try:
        return RetryPolicy[str(value).upper()]
    except KeyError:
        names = [p.name for p in RetryPolicy]
        import difflib  # lazy: only for an error message (difflib ~2 ms)

        close = difflib.get_close_matches(str(value).upper(), names, n=1)
        hint = f" (did you mean `{close[0]}`?)" if close else ""
        raise ValueError(
            f"unknown retry policy `{value}`{hint}; use one of {', '.join(names)}"
        ) from None
