"""The adapter's shape (issue 25 item 8): no import cycle, no helper reaching into the operator.

Static: every ``import`` / ``from ... import`` of ``torchx_airflow`` modules (at module level,
in functions, under ``TYPE_CHECKING``) read with ``ast``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "adapters" / "torchx_airflow"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[_module(path)] = {m for m in found if m.startswith("torchx_airflow.")}
    return graph


def test_no_import_cycle_inside_the_adapter() -> None:
    graph = _graph()
    graph.pop("torchx_airflow", None)  # the package's lazy names point at every module
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                raise AssertionError(f"import cycle: {' -> '.join([*path, node, nxt])}")
            if nxt not in state:
                visit(nxt, [*path, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def test_only_the_pipeline_builder_imports_the_operator() -> None:
    users = {m for m, deps in _graph().items() if "torchx_airflow.operators.torchx" in deps}
    assert users <= {"torchx_airflow", "torchx_airflow.operators", "torchx_airflow._pipeline"}


def test_no_helper_calls_private_operator_methods() -> None:
    # the manager and the deferral steps get the operator as ``op`` / ``mgr.op``
    calls = re.compile(r"\bop\._[a-z]\w*\(")
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "operators":
            continue
        assert not calls.findall(path.read_text()), path
