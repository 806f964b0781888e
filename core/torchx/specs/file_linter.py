"""Static checks for component functions (``torchx.specs.file_linter``).

A component is a function that returns ``AppDef`` and whose parameters have types that the
CLI can decode from strings. :func:`validate` parses the component's file with :mod:`ast`
(the file is never imported here) and runs a list of :class:`ComponentFunctionValidator`.

Example::

    from torchx.specs.file_linter import validate

    for msg in validate("my_component.py", "trainer"):
        print(f"{msg.line}:{msg.char} {msg.description}")
"""

from __future__ import annotations

import abc
import argparse
import ast
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torchx.util.io import read_conf_file
from torchx.util.terminal import terminal_columns

__all__ = [
    "ArgTypeValidator",
    "ComponentFnVisitor",
    "ComponentFunctionValidator",
    "LinterMessage",
    "ReturnTypeValidator",
    "TorchXArgumentHelpFormatter",
    "get_fn_docstring",
    "get_generic_type",
    "get_optional_type",
    "is_primitive",
    "read_conf_file",
    "validate",
]

_FUNCTION_VALIDATOR = "TorchxFunctionValidator"
_FILE_VALIDATOR = "TorchXValidator"
_DICT_NAMES = ("dict", "Dict")
_LIST_NAMES = ("list", "List")
_TUPLE_NAMES = ("tuple", "Tuple")
_OPTIONAL_NAMES = ("Optional",)
_ANNOTATED_NAMES = ("Annotated",)
_DOCSTRING_TIP = (
    "{fn} TIP: improve this help string by adding a docstring\nto your component"
    " (see: https://meta-pytorch.org/torchx/latest/component_best_practices.html)"
)


@dataclass
class LinterMessage:
    """One problem found in a component function.

    Attributes:
        name: the validator that found it (``TorchxFunctionValidator`` or ``TorchXValidator``).
        description: what is wrong.
        line: 1-based line number in the file (0 when unknown).
        char: 0-based column (0 when unknown).
        severity: always ``"error"`` for the builtin validators.
    """

    name: str
    description: str
    line: int
    char: int
    severity: str = "error"


class TorchXArgumentHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help formatter that appends `` (required)`` or `` (default: {d})`` to each option."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        # argparse would size the help with ``shutil`` (~2 ms to import) on every
        # ``add_argument``: a component parser makes a formatter per parameter
        kwargs.setdefault("width", terminal_columns() - 2)
        super().__init__(prog, **kwargs)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_str = action.help or ""
        if action.required:
            return f"{help_str} (required)"
        if action.default is argparse.SUPPRESS:
            return help_str
        return f"{help_str} (default: {action.default})"


class ComponentFunctionValidator(abc.ABC):
    """Base class of the checks :func:`validate` runs on a component's ``ast.FunctionDef``."""

    @abc.abstractmethod
    def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
        """Returns the problems found in ``app_specs_func_def`` (empty if none).

        Args:
            app_specs_func_def: the parsed component function.
        """

    def _gen_linter_message(self, description: str, lineno: int, char: int = 0) -> LinterMessage:
        return LinterMessage(
            name=_FUNCTION_VALIDATOR, description=description, line=lineno, char=char
        )


def _subscript_base(node: ast.expr) -> str | None:
    """Returns ``X`` for ``X[...]`` or ``mod.X[...]``, else None."""
    if not isinstance(node, ast.Subscript):
        return None
    value = node.value
    if isinstance(value, ast.Name):
        return value.id
    if isinstance(value, ast.Attribute):
        return value.attr
    return None


def _subscript_params(node: ast.Subscript) -> list[ast.expr]:
    if isinstance(node.slice, ast.Tuple):
        return list(node.slice.elts)
    return [node.slice]


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _unwrap(node: ast.expr) -> ast.expr:
    """Strips ``Annotated[T, ...]``, quotes and ONE ``Optional[T]``/``T | None``/``None | T``.

    As TorchX: a nested optional (``Optional[Optional[T]]``) is left, and reported as an
    unsupported ``'Optional'`` container.
    """
    optional_seen = False
    while True:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return node
            continue
        if _subscript_base(node) in _ANNOTATED_NAMES:
            node = _subscript_params(node)[0]  # type: ignore[arg-type]
            continue
        inner = None if optional_seen else get_optional_type(node)
        if inner is None:
            return node
        optional_seen = True
        node = inner


def is_primitive(arg: ast.expr) -> bool:
    """Returns whether the annotation ``arg`` is a bare name (``int``, ``str``, ``MyType``)."""
    return isinstance(arg, ast.Name)


def get_generic_type(arg: ast.expr) -> ast.expr:
    """Returns the subscript of ``C[T]`` (``T``; a tuple node for ``C[K, V]``).

    Raises:
        TypeError: ``arg`` is not subscripted.
    """
    if not isinstance(arg, ast.Subscript):
        raise TypeError(f"expected a subscripted type (C[T]), got {ast.unparse(arg)!r}")
    return arg.slice


def get_optional_type(arg: ast.expr) -> ast.expr | None:
    """Returns ``T`` for ``Optional[T]``, ``T | None`` or ``None | T``; None otherwise."""
    if _subscript_base(arg) in _OPTIONAL_NAMES:
        return get_generic_type(arg)
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.BitOr):
        if _is_none(arg.right):
            return arg.left
        if _is_none(arg.left):
            return arg.right
    return None


class ComponentFnVisitor(ast.NodeVisitor):
    """Runs the validators on the function (or class) named ``component_function_name``.

    Visit a parsed module; then ``linter_errors`` holds the problems found and
    ``visited_function`` tells whether the component was found at all.

    Args:
        component_function_name: the component's name.
        validators: the checks to run; None means ``[ArgTypeValidator(),
            ReturnTypeValidator("AppDef")]``.
    """

    def __init__(
        self,
        component_function_name: str,
        validators: list[ComponentFunctionValidator] | None,
    ) -> None:
        if validators is None:
            validators = [ArgTypeValidator(), ReturnTypeValidator("AppDef")]
        self.validators = validators
        self.linter_errors: list[LinterMessage] = []
        self.component_function_name = component_function_name
        self.visited_function = False

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        """Validates the component function."""
        if node.name == self.component_function_name:
            self.visited_function = True
            for validator in self.validators:
                self.linter_errors += validator.validate(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        """A class component: checks the return type of its ``build`` method, if defined."""
        if node.name != self.component_function_name:
            self.generic_visit(node)
            return
        self.visited_function = True
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "build":
                self.linter_errors += ReturnTypeValidator("AppDef").validate(stmt)


class ArgTypeValidator(ComponentFunctionValidator):
    """Checks that every argument is annotated with a type the CLI can decode.

    Allowed: any bare name (treated as a primitive), ``dict[K, V]`` and ``list[T]`` with
    primitive parameters, and ``tuple[T1, T2, ...]`` with at least two primitive parameters.
    ``Annotated`` and one ``Optional[T]`` or ``T | None`` are unwrapped first.
    """

    def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
        """Returns one message per badly annotated argument.

        Args:
            app_specs_func_def: the parsed component function.
        """
        fn_args = app_specs_func_def.args
        args = [*fn_args.posonlyargs, *fn_args.args]
        if fn_args.vararg is not None:
            args.append(fn_args.vararg)
        args.extend(fn_args.kwonlyargs)
        messages: list[LinterMessage] = []
        for arg in args:
            reason = self._check_arg(arg)
            if reason is not None:
                description = (
                    f"{reason} for argument '{ast.unparse(arg)}'"
                    f" in function '{app_specs_func_def.name}'"
                )
                messages.append(self._gen_linter_message(description, arg.lineno, arg.col_offset))
        return messages

    def _check_arg(self, arg: ast.arg) -> str | None:
        if arg.annotation is None:
            return "Missing type annotation"
        node = _unwrap(arg.annotation)
        if isinstance(node, ast.Name):
            return None
        base = _subscript_base(node)
        if base is None or not isinstance(node, ast.Subscript):
            return f"Unsupported argument type '{ast.unparse(node)}'"
        params = _subscript_params(node)
        if base in _DICT_NAMES:
            return self._check_dict(node, params)
        if base in _LIST_NAMES:
            return _check_elements(params)
        if base in _TUPLE_NAMES:
            if len(params) < 2:
                return (
                    f"Unsupported tuple type '{ast.unparse(node)}': single-element tuples are"
                    " valid typing but not supported for components; expected element types"
                    " (tuple[T1, T2, ...])"
                )
            return _check_elements(params)
        return f"Unsupported container type '{base}'"

    def _check_dict(self, node: ast.Subscript, params: list[ast.expr]) -> str | None:
        if len(params) != 2:
            return (
                f"Malformed dict type '{ast.unparse(node)}',"
                " expected exactly two type parameters (dict[K, V])"
            )
        key, value = params
        if not isinstance(key, ast.Name):
            return f"Non-primitive key type '{ast.unparse(key)}'"
        if not isinstance(value, ast.Name):
            return f"Non-primitive value type '{ast.unparse(value)}'"
        return None


def _check_elements(params: list[ast.expr]) -> str | None:
    for param in params:
        if not isinstance(param, ast.Name):
            return f"Non-primitive element type '{ast.unparse(param)}'"
    return None


def _return_type_name(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.strip().rsplit(".", 1)[-1]
    return None


class ReturnTypeValidator(ComponentFunctionValidator):
    """Checks that the function is annotated to return ``supported_return_type``.

    Args:
        supported_return_type: the required return type name (``"AppDef"``).
    """

    def __init__(self, supported_return_type: str = "AppDef") -> None:
        self._supported_return_type = supported_return_type

    def validate(self, app_specs_func_def: ast.FunctionDef) -> list[LinterMessage]:
        """Returns a message when the return annotation is missing or different.

        Args:
            app_specs_func_def: the parsed component function.
        """
        fn = app_specs_func_def.name
        expected = self._supported_return_type
        actual = _return_type_name(app_specs_func_def.returns)
        if actual is None:
            desc = (
                f"Function: {fn} missing return annotation or has unknown annotations."
                f" Supported return annotation: {expected}"
            )
        elif actual != expected:
            desc = (
                f"Function: {fn} has incorrect return annotation, supported annotation: {expected}"
            )
        else:
            return []
        lineno = app_specs_func_def.lineno
        return [self._gen_linter_message(desc, lineno, app_specs_func_def.col_offset)]


def _find_function(module: ast.Module, fn_name: str) -> ast.FunctionDef | None:
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef) and node.name == fn_name:
            return node
    return None


@functools.lru_cache(maxsize=32)
def _parse(source: str, path: str) -> ast.Module:
    """Parses a component file once per source text (discovery lints each function of it)."""
    return ast.parse(source, filename=path)


def validate(
    path: str,
    component_function: str,
    validators: list[ComponentFunctionValidator] | None = None,
) -> list[LinterMessage]:
    """Lints the function ``component_function`` defined in the file ``path``.

    Args:
        path: the component file (read through :func:`read_conf_file`).
        component_function: the function name.
        validators: the checks to run; default ``[ArgTypeValidator(),
            ReturnTypeValidator("AppDef")]``.

    Returns:
        The problems found; empty when the function is a valid component.
    """
    source = read_conf_file(path)
    try:
        module = _parse(source, path)
    except SyntaxError as e:
        return [LinterMessage(_FILE_VALIDATOR, f"{e.msg}", e.lineno or 0, e.offset or 0)]
    fn_def = _find_function(module, component_function)
    if fn_def is None:
        return [LinterMessage(_FILE_VALIDATOR, f"Function {component_function} not found", 0, 0)]
    if validators is None:
        validators = [ArgTypeValidator(), ReturnTypeValidator("AppDef")]
    messages: list[LinterMessage] = []
    for validator in validators:
        messages.extend(validator.validate(fn_def))
    return messages


def get_fn_docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """Parses ``fn``'s Google-style docstring into CLI help strings.

    Args:
        fn: the component function.

    Returns:
        ``(description, {arg_name: help})``. The description is the short description plus
        a newline and the long description when there is one, or a tip to add a docstring. Every
        parameter of ``fn`` has an entry; an undocumented one has help ``" "``.
    """
    import docstring_parser  # lazy: ~36 ms here, component --help only

    params = list(inspect.signature(fn).parameters)
    args_desc = dict.fromkeys(params, " ")
    if not fn.__doc__:
        return _DOCSTRING_TIP.format(fn=fn.__name__), args_desc
    docstring = docstring_parser.parse(fn.__doc__)
    for param in docstring.params:
        name = param.arg_name.lstrip("*")
        if name in args_desc and param.description:
            args_desc[name] = param.description
    description = docstring.short_description or _DOCSTRING_TIP.format(fn=fn.__name__)
    if docstring.long_description:
        description += "\n" + docstring.long_description
    return description, args_desc
