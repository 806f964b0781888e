"""Layering contracts, checked on the source (AST): who may import whom.

- ``torchx`` never imports an adapter (``torchx_airflow``, ``torchx_kfp``);
- an adapter imports only public ``torchx`` names: no ``torchx.x._y`` module and no ``_name``
  from a ``torchx`` module (dunders such as ``__version__`` are public; an adapter's own
  ``_private`` modules are its business), ``if TYPE_CHECKING:`` imports included;
- ``torchx.specs`` never imports ``torchx.runner``, ``torchx.schedulers`` or ``torchx.cli``;
- ``torchx.schedulers`` never imports ``torchx.runner`` or ``torchx.cli``;
- ``torchx.util`` is the bottom layer (DESIGN.md §1: specs, schedulers, runner, tracker, cli
  all build on it): it imports only itself, the root package ``torchx`` and its leaf modules
  ``torchx.settings`` and ``torchx.version``; everything else in ``torchx`` is above it. The
  one exception is listed in :data:`UTIL_EXCEPTIONS`: ``torchx.util.log_tee_helpers`` is
  TorchX's public path of ``tee_logs`` and re-exports it (with ``LogTee``) from the runner;
- no import cycle among the core modules, checked twice: on what runs (module- and
  function-level imports) and on every import including ``if TYPE_CHECKING:`` ones (a
  type-only cycle still ties two modules together, and ``typing.get_type_hints`` runs it);
  the second check leaves out a module's import of its own parent package (Python imports
  the package first anyway; a lazy package's ``__init__`` names its submodules' types);
- the local supervisor (``torchx.schedulers._local.supervisor``) imports only the standard
  library, with every torchx module it pulls in;
- the two adapters never import each other.

Every import counts, at module level or inside a function, and ``importlib.import_module``
with a literal name too; only ``if TYPE_CHECKING:`` blocks (never executed) are skipped,
except where said above. An ``import_module`` with a computed name (a lazy package's
``__getattr__``) is not seen.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "torchx": ROOT / "core" / "torchx",
    "torchx_airflow": ROOT / "adapters" / "torchx_airflow",
    "torchx_kfp": ROOT / "adapters" / "torchx_kfp",
}
SUPERVISOR = "torchx.schedulers._local.supervisor"
# what a supervisor process runs: started per app, or prestarted ("spare")
SUPERVISOR_ENTRIES = (SUPERVISOR, "torchx.schedulers._local._spare_entry")


def _module_name(package: str, root: Path, path: Path) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, root in PACKAGES.items():
        if root.is_dir():
            for path in root.rglob("*.py"):
                found[_module_name(package, root, path)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _walk(node: ast.AST, lazy: bool = True, typing: bool = False) -> Iterator[ast.AST]:
    for child in ast.iter_child_nodes(node):
        if not typing and isinstance(child, ast.If) and _is_type_checking(child):
            for stmt in child.orelse:
                yield stmt
                yield from _walk(stmt, lazy, typing)
            continue
        if not lazy and isinstance(child, _FUNCTIONS):
            continue
        yield child
        yield from _walk(child, lazy, typing)


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


@cache
def imports_of(module: str, lazy: bool = True, typing: bool = False) -> frozenset[str]:
    """Every module ``module`` may import (``from a import b`` counts ``a`` and ``a.b``).

    Args:
        module: the module name.
        lazy: include imports inside functions (else only what importing it runs).
        typing: include ``if TYPE_CHECKING:`` imports.
    """
    path = modules()[module]
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in _walk(ast.parse(path.read_text(), str(path)), lazy, typing):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node.level, node.module)
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return frozenset(found)


def _violations(sources: str, forbidden: tuple[str, ...]) -> list[str]:
    bad = []
    for module in sorted(modules()):
        if module != sources and not module.startswith(sources + "."):
            continue
        for target in sorted(imports_of(module)):
            if any(target == f or target.startswith(f + ".") for f in forbidden):
                bad.append(f"{module} imports {target}")
    return bad


@pytest.mark.parametrize(
    ("sources", "forbidden"),
    [
        ("torchx", ("torchx_airflow", "torchx_kfp")),
        ("torchx.specs", ("torchx.runner", "torchx.schedulers", "torchx.cli")),
        ("torchx.schedulers", ("torchx.runner", "torchx.cli")),
        ("torchx_airflow", ("torchx_kfp",)),
        ("torchx_kfp", ("torchx_airflow",)),
    ],
)
def test_layer_never_imports(sources: str, forbidden: tuple[str, ...]) -> None:
    assert _violations(sources, forbidden) == []


def _in(target: str, package: str) -> bool:
    return target == package or target.startswith(package + ".")


def _is_private(target: str) -> bool:
    return any(p.startswith("_") and not p.endswith("__") for p in target.split("."))


@pytest.mark.parametrize("adapter", ["torchx_airflow", "torchx_kfp"])
def test_adapters_import_only_public_torchx_names(adapter: str) -> None:
    bad = [
        f"{module} imports {target}"
        for module in sorted(m for m in modules() if _in(m, adapter))
        for target in sorted(imports_of(module, typing=True))
        if _in(target, "torchx") and _is_private(target)
    ]
    assert bad == []


# what the bottom layer may import: itself, the root package and its leaf modules
UTIL_MAY_IMPORT = ("torchx.util", "torchx.settings", "torchx.version")
# {util module: the modules above util it may import, and why}
UTIL_EXCEPTIONS = {
    # TorchX's public path of tee_logs; LogTee lives with the runner it reads logs through
    "torchx.util.log_tee_helpers": ("torchx.runner._log_tee",),
}


def test_util_imports_nothing_above_it() -> None:
    bad = []
    for module in sorted(m for m in modules() if _in(m, "torchx.util")):
        allowed = UTIL_MAY_IMPORT + UTIL_EXCEPTIONS.get(module, ())
        for target in sorted(imports_of(module, typing=True)):
            above = _in(target, "torchx") and target != "torchx"
            if above and not any(_in(target, a) for a in allowed):
                bad.append(f"{module} imports {target}")
    assert bad == []


def test_util_exceptions_are_still_needed() -> None:
    """An exception that no longer matches an import is removed from the list."""
    for module, targets in UTIL_EXCEPTIONS.items():
        for target in targets:
            assert target in imports_of(module, typing=True), f"{module}: drop {target}"


def _core_graph(typing: bool) -> dict[str, list[str]]:
    """``{core module: [core modules it imports]}``; see the module docstring for ``typing``."""
    graph: dict[str, list[str]] = {}
    for module in sorted(m for m in modules() if _in(m, "torchx")):
        targets = imports_of(module, typing=typing)
        graph[module] = sorted(
            t
            for t in targets
            if t in modules() and _in(t, "torchx") and t != module
            if not (typing and module.startswith(t + "."))
        )
    return graph


def find_cycle(graph: dict[str, list[str]]) -> list[str]:
    """Returns one cycle as ``[a, b, ..., a]`` (``a`` imports ``b`` ...), or ``[]``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for node in graph:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


@pytest.mark.parametrize("typing", [False, True], ids=["run-time", "with-type-checking"])
def test_no_import_cycle_in_core(typing: bool) -> None:
    cycle = find_cycle(_core_graph(typing))
    assert cycle == [], "import cycle: " + " -> ".join(cycle)


def test_find_cycle_reports_the_cycle() -> None:
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"], "d": []}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["b", "c"], "b": ["c"], "c": []}) == []


def _closure(start: str) -> tuple[set[str], set[str]]:
    """Returns (torchx modules, other top-level modules) that ``start`` imports transitively.

    The supervisor's own package (``_local``) counts with its function-level imports; the
    parent packages Python imports on the way (``torchx``, ``torchx.schedulers``) count
    with what importing them runs.
    """
    own = start.rpartition(".")[0]
    seen: set[str] = set()
    external: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]))
        for target in imports_of(module, lazy=module.startswith(own)):
            if target in modules():
                todo.append(target)
            elif target.split(".")[0] not in PACKAGES:
                external.add(target.split(".")[0])
    return seen, external


@pytest.mark.parametrize("entry", SUPERVISOR_ENTRIES)
def test_supervisor_imports_only_the_standard_library(entry: str) -> None:
    torchx_modules, external = _closure(entry)
    assert SUPERVISOR in torchx_modules
    assert sorted(external - set(sys.stdlib_module_names)) == []


@pytest.mark.parametrize("entry", SUPERVISOR_ENTRIES)
def test_supervisor_import_at_runtime_loads_no_third_party_module(entry: str) -> None:
    code = (
        "import sys; before = set(sys.modules)\n"
        f"import {entry}\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "print(','.join(sorted(new - set(sys.stdlib_module_names) - {'torchx'})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_checker_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    """The contracts would catch a function-level import and a relative import."""
    assert "torchx.runner.config" not in imports_of("torchx.specs._named_resources")
    assert any(t.startswith("torchx.schedulers") for t in imports_of("torchx.runner.api"))
    assert _resolve("torchx.specs.api", False, 1, "_state") == "torchx.specs._state"
    assert _resolve("torchx.specs", True, 2, "runner") == "torchx.runner"
