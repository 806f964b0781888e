"""Turning component functions plus CLI strings into an ``AppDef`` (``torchx.specs.builders``).

:func:`_create_args_parser` builds an :mod:`argparse` parser from a component's signature (and,
when its help is printed, its docstring), :func:`component_args_from_str` decodes the parsed
strings into typed arguments and :func:`materialize_appdef` calls the component with them.

Precedence of values (high to low): arguments passed explicitly on the command line, then
``config`` (a JSON dict, e.g. from ``torchx run --config``), then ``cmpnt_defaults`` (the
``[component:NAME]`` section of ``.torchxconfig``), then the signature defaults.

Bad arguments raise :class:`ComponentArgsError` (a ``ValueError``) with a one-line message;
the parser never calls ``sys.exit`` except for ``--help``, which prints the help and exits 0.

Example::

    from torchx.components.utils import echo
    from torchx.specs.builders import materialize_appdef

    app = materialize_appdef(echo, ["--msg", "hi"])
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

from torchx.specs import api
from torchx.specs._builders_decode import (
    UNSET,
    ComponentArgsError,
    ComponentArgumentParser,
    annotated_option_strings,
    argparse_type,
    decode_value,
    resolve_parameters,
)
from torchx.specs.api import AppDef, make_app_handle, parse_mounts
from torchx.specs.api import BindMount as BindMount  # TorchX's builders exposes the mount types
from torchx.specs.api import DeviceMount as DeviceMount
from torchx.specs.api import VolumeMount as VolumeMount
from torchx.specs.file_linter import TorchXArgumentHelpFormatter

__all__ = [
    "ComponentArgs",
    "ComponentArgsError",
    "component_args_from_str",
    "make_app_handle",
    "materialize_appdef",
    "parse_args",
    "parse_mounts",
]


class ComponentArgs(NamedTuple):
    """The decoded arguments of a component call ``fn(*positional, *var_args, **kwargs)``.

    Attributes:
        positional_args: positional-or-keyword parameters by name, in signature order.
        var_args: the ``*args`` values.
        kwargs: the keyword-only parameters by name.
    """

    positional_args: dict[str, Any]
    var_args: list[Any]
    kwargs: dict[str, Any]


def _help_default(default: Any) -> Any:
    return str(default) if isinstance(default, bool) else default


def _add_parameter(
    parser: argparse.ArgumentParser,
    param: inspect.Parameter,
    annotation: Any,
    help_str: str,
    cmpnt_defaults: dict[str, str],
    config: dict[str, Any],
) -> None:
    name = param.name
    if param.kind == inspect.Parameter.VAR_KEYWORD:
        raise TypeError(
            f"component fn param `{name}` is a '**kwargs' which is not supported;"
            " consider changing the type to a dict or explicitly declare the params"
        )
    has_default = name in cmpnt_defaults or param.default is not inspect.Parameter.empty
    default = cmpnt_defaults.get(name, param.default if has_default else None)
    if param.kind == inspect.Parameter.VAR_POSITIONAL:
        parser.add_argument(
            name, help=help_str, nargs=argparse.REMAINDER, type=str, default=default
        )
        return
    extra = annotated_option_strings(annotation)
    option_strings = [f"--{name}", *extra]
    if not extra and len(name) == 1:
        option_strings.append(f"-{name}")
    arg_type = argparse_type(annotation)
    parser.add_argument(
        *option_strings,
        dest=name,
        type=arg_type,
        default=_help_default(default),
        required=not has_default and name not in config,
        help=help_str,
    )


def _create_args_parser(
    cmpnt_fn: Callable[..., Any],
    cmpnt_defaults: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
) -> argparse.ArgumentParser:
    """Builds the argparse parser for ``cmpnt_fn``'s parameters.

    Args:
        cmpnt_fn: the component function.
        cmpnt_defaults: string defaults (``[component:NAME]``) that replace declared ones.
        config: values that will be merged in after parsing; a parameter they supply is not
            required on the command line.

    Returns:
        The parser (``add_help=False`` plus a manual ``--help``, so ``-h`` stays free).

    Raises:
        TypeError: the component has a ``**kwargs`` parameter.
    """
    parser = ComponentArgumentParser(
        prog=f"torchx run <run args...> {cmpnt_fn.__name__} ",
        add_help=False,
        formatter_class=TorchXArgumentHelpFormatter,
    )
    parser.add_argument(
        "--help", action="help", default=argparse.SUPPRESS, help="show this help message and exit"
    )
    defaults = cmpnt_defaults or {}
    for param, annotation in resolve_parameters(cmpnt_fn):
        _add_parameter(parser, param, annotation, " ", defaults, config or {})
    parser.defer_help(cmpnt_fn)  # the docstring is parsed only if the help is printed
    return parser


def _merge_config_values_with_args(
    parsed_args: argparse.Namespace, config: dict[str, Any], cli_set_args: set[str]
) -> None:
    """Writes ``config`` values into ``parsed_args`` unless the CLI set them explicitly.

    Args:
        parsed_args: the parsed namespace (updated in place).
        config: values by parameter name.
        cli_set_args: names of the parameters given on the command line.
    """
    for key, value in config.items():
        if key not in cli_set_args:
            setattr(parsed_args, key, value)


def _parse_known(
    parser: argparse.ArgumentParser, cmpnt_args: list[str]
) -> tuple[argparse.Namespace, set[str]]:
    namespace = argparse.Namespace()
    actions = [a for a in parser._actions if a.default is not argparse.SUPPRESS]
    for action in actions:
        setattr(namespace, action.dest, UNSET)
    parsed = parser.parse_args(cmpnt_args, namespace=namespace)
    cli_set = set()
    for action in actions:
        value = getattr(parsed, action.dest)
        if value is UNSET or (action.nargs == argparse.REMAINDER and not value):
            setattr(parsed, action.dest, _converted_default(action))
        else:
            cli_set.add(action.dest)
    return parsed, cli_set


def _converted_default(action: argparse.Action) -> Any:
    default = action.default
    if action.nargs == argparse.REMAINDER:
        return default.split() if isinstance(default, str) else list(default or [])
    if isinstance(default, str) and callable(action.type) and action.nargs is None:
        try:
            return action.type(default)
        except ValueError as e:
            raise ComponentArgsError(
                f"default value {default!r} of `--{action.dest}` is not a valid"
                f" {getattr(action.type, '__name__', action.type)}: {e}"
            ) from e
    return default


def parse_args(
    cmpnt_fn: Callable[..., Any],
    cmpnt_args: list[str],
    cmpnt_defaults: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
) -> argparse.Namespace:
    """Parses ``cmpnt_args`` for ``cmpnt_fn`` and merges ``config`` under explicit CLI values.

    Args:
        cmpnt_fn: the component function.
        cmpnt_args: the component's command-line arguments.
        cmpnt_defaults: string defaults (``[component:NAME]``).
        config: values that override defaults but not explicit CLI arguments.

    Returns:
        The namespace with one attribute per parameter (values not yet decoded).

    Raises:
        ComponentArgsError: the arguments do not parse.
    """
    parser = _create_args_parser(cmpnt_fn, cmpnt_defaults, config)
    parsed, cli_set = _parse_known(parser, cmpnt_args)
    if config:
        _merge_config_values_with_args(parsed, config, cli_set)
    return parsed


def _var_args(value: Any, default: Any) -> list[Any]:
    if isinstance(value, str):
        value = value.split()
    values = list(value or [])
    if values and values[0] == "--":
        values = values[1:]
    if not values and isinstance(default, str):
        values = default.split()
    return values


def component_args_from_str(
    cmpnt_fn: Callable[..., Any],
    cmpnt_args: list[str],
    cmpnt_defaults: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
) -> ComponentArgs:
    """Parses and decodes ``cmpnt_args`` into the arguments to call ``cmpnt_fn`` with.

    Args:
        cmpnt_fn: the component function.
        cmpnt_args: the component's command-line arguments, e.g. ``["--j", "2x4", "--", "x"]``.
        cmpnt_defaults: string defaults (``[component:NAME]``).
        config: values that override defaults but not explicit CLI arguments.

    Returns:
        The decoded :class:`ComponentArgs`.

    Raises:
        ComponentArgsError: the arguments do not parse or decode.
    """
    parsed = parse_args(cmpnt_fn, cmpnt_args, cmpnt_defaults, config)
    positional: dict[str, Any] = {}
    var_args: list[Any] = []
    kwargs: dict[str, Any] = {}
    defaults = cmpnt_defaults or {}
    for param, annotation in resolve_parameters(cmpnt_fn):
        value = getattr(parsed, param.name)
        if param.kind == inspect.Parameter.VAR_POSITIONAL:
            var_args = _var_args(value, defaults.get(param.name))
        elif param.kind == inspect.Parameter.KEYWORD_ONLY:
            kwargs[param.name] = decode_value(param.name, value, annotation)
        else:
            positional[param.name] = decode_value(param.name, value, annotation)
    return ComponentArgs(positional, var_args, kwargs)


def materialize_appdef(
    cmpnt_fn: Callable[..., Any],
    cmpnt_args: list[str],
    cmpnt_defaults: dict[str, str] | None = None,
    config: dict[str, Any] | None = None,
) -> AppDef:
    """Calls ``cmpnt_fn`` with arguments decoded from ``cmpnt_args`` and returns its AppDef.

    Args:
        cmpnt_fn: the component function.
        cmpnt_args: the component's command-line arguments.
        cmpnt_defaults: string defaults (``[component:NAME]``).
        config: values that override defaults but not explicit CLI arguments.

    Returns:
        The AppDef the component built.

    Raises:
        ComponentArgsError: the arguments do not parse or decode.
        TypeError: the component did not return an AppDef.
    """
    args = component_args_from_str(cmpnt_fn, cmpnt_args, cmpnt_defaults, config)
    appdef = cmpnt_fn(*args.positional_args.values(), *args.var_args, **args.kwargs)
    if not isinstance(appdef, api.AppDef):
        raise TypeError(f"Expected a component that returns `AppDef`, but got `{type(appdef)}`")
    return appdef
