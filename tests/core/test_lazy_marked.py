"""Every function-local import in core and the adapters says why it is lazy (issue 28 item 4).

Imports live at the top of their module; one inside a function (start-up cost, an optional
dependency, a package entry point, an upward import) carries a ``# lazy: <why>`` comment on its
line, or, for an import spread over several lines, on any of its lines or the line above.
Imports under ``if TYPE_CHECKING:`` are for type checkers only and need no comment.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = (REPO / "core" / "torchx", REPO / "adapters")
MARK = re.compile(r"#\s*lazy:\s*\S")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _local_imports(node: ast.AST, in_function: bool = False) -> Iterator[ast.stmt]:
    """The import statements inside functions under ``node``, ``TYPE_CHECKING`` blocks aside."""
    for child in ast.iter_child_nodes(node):
        if _is_type_checking(child):
            assert isinstance(child, ast.If)
            for stmt in child.orelse:
                yield from _local_imports_of(stmt, in_function)
            continue
        yield from _local_imports_of(child, in_function)


def _local_imports_of(node: ast.AST, in_function: bool) -> Iterator[ast.stmt]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        if in_function:
            yield node
        return
    yield from _local_imports(node, in_function or isinstance(node, FUNCTIONS))


def _is_marked(stmt: ast.stmt, lines: list[str]) -> bool:
    first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
    candidates = lines[first - 1 : last]
    if last > first and first > 1:
        candidates.append(lines[first - 2])
    return any(MARK.search(line) for line in candidates)


def _unmarked(path: Path) -> list[str]:
    text = path.read_text()
    lines = text.splitlines()
    rel = path.relative_to(REPO)
    return [
        f"{rel}:{stmt.lineno}: {lines[stmt.lineno - 1].strip()}"
        for stmt in _local_imports(ast.parse(text, str(path)))
        if not _is_marked(stmt, lines)
    ]


def _sources() -> list[Path]:
    return sorted(p for root in ROOTS for p in root.rglob("*.py"))


def test_the_scan_finds_sources_and_local_imports() -> None:
    sources = _sources()
    assert len(sources) > 100, "core/torchx and adapters moved? the scan found too few files"
    assert sum(1 for p in sources for _ in _local_imports(ast.parse(p.read_text()))) > 10


def test_the_scan_sees_what_it_must() -> None:
    code = (
        "import os\n"
        "if TYPE_CHECKING:\n"
        "    import typing\n"
        "def f():\n"
        "    import a  # lazy: a reason\n"
        "    import b\n"
        "    if TYPE_CHECKING:\n"
        "        import c\n"
        "    from d import (  # lazy: another reason\n"
        "        x,\n"
        "    )\n"
        "    # lazy: a multi-line import, explained above\n"
        "    from e import (\n"
        "        y,\n"
        "    )\n"
        "    class K:\n"
        "        def g(self):\n"
        "            import h  # a comment that is no reason\n"
    )
    lines = code.splitlines()
    found = {
        lines[s.lineno - 1].split()[1]: _is_marked(s, lines)
        for s in _local_imports(ast.parse(code))
    }
    assert found == {"a": True, "b": False, "d": True, "e": True, "h": False}


def test_every_function_local_import_says_why_it_is_lazy() -> None:
    unmarked = [entry for path in _sources() for entry in _unmarked(path)]
    assert not unmarked, (
        f"{len(unmarked)} function-local import(s) without a '# lazy: <why>' comment; move each"
        " to the top of its module, or say why it must stay (with the cost it saves):\n"
        + "\n".join(unmarked)
    )
