"""The source of a component function, for ``torchx builtins --print`` (private).

``torchx.specs.finder.get_builtin_source`` finds the component and calls
:func:`component_source`; this module never imports the finder.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from torchx.specs import file_linter

__all__ = ["component_source"]


def component_source(fn: Callable[..., Any]) -> str:
    """Returns the source of component function ``fn``: its file's imports, then the function.

    Args:
        fn: the component function.

    Returns:
        The ``import``/``from`` lines before ``def {fn}(``, a blank line, and the function
        source (including decorators).

    Raises:
        LookupError: the function is not defined at the top level of its file.
    """
    source = file_linter.read_conf_file(fn.__code__.co_filename)
    lines = source.splitlines()
    header = f"def {fn.__name__}("
    imports: list[str] = []
    for line in lines:
        if line.startswith(header):
            break
        if line.startswith(("import ", "from ")):
            imports.append(line)
    fn_source = _function_source(source, lines, fn.__name__)
    return "\n".join(imports) + "\n\n\n" + fn_source


def _function_source(source: str, lines: list[str], fn_name: str) -> str:
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == fn_name:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            return "\n".join(lines[start - 1 : node.end_lineno]) + "\n"
    raise LookupError(f"Function {fn_name} not found in its source file")
