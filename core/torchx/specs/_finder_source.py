"""``get_builtin_source``: the source of a component, for ``torchx builtins --print``."""

from __future__ import annotations

import ast

from torchx.specs import file_linter

__all__ = ["get_builtin_source"]


def get_builtin_source(name: str) -> str:
    """Returns the source of component ``name``: its file's imports, then the function.

    Args:
        name: the component name.

    Returns:
        The ``import``/``from`` lines before ``def {fn}(``, a blank line, and the function
        source (including decorators).
    """
    from torchx.specs import finder

    fn = finder.get_component(name).fn
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
    from torchx.specs import finder

    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == fn_name:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            return "\n".join(lines[start - 1 : node.end_lineno]) + "\n"
    raise finder.ComponentNotFoundException(f"Function {fn_name} not found in its source file")
