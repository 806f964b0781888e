"""Import rules that import-linter cannot express (the rest: ``[tool.importlinter]``).

``lint-imports`` (``make test``, ``make lint``) checks the layers of core's packages, that no
package has an import cycle among its sub-packages and modules, that a private ``torchx``
module is imported only inside its parent package (so never by an adapter), that core never
imports an adapter and that the adapters are independent. What is left here, checked on the
source (AST):

- an adapter imports no ``_name`` from a ``torchx`` module (dunders such as ``__version__``
  are public), ``if TYPE_CHECKING:`` imports included;
- the local supervisor (``torchx.schedulers._local.supervisor``) imports only the standard
  library, with every torchx module it pulls in;
- every package root still holds the modules these checks and the contracts are about (a
  moved root fails here instead of passing with nothing checked).

Every import counts, at module level or inside a function, and ``importlib.import_module``
with a literal name too; only ``if TYPE_CHECKING:`` blocks (never executed) are skipped,
except where said above.
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


def _in(target: str, package: str) -> bool:
    return target == package or target.startswith(package + ".")


def _is_private(target: str) -> bool:
    return any(p.startswith("_") and not p.endswith("__") for p in target.split("."))


@pytest.mark.parametrize("adapter", ["torchx_airflow", "torchx_kfp"])
def test_adapters_import_only_public_torchx_names(adapter: str) -> None:
    """No ``torchx.x._y`` module (lint-imports checks it too) and no ``_name`` from one."""
    bad = [
        f"{module} imports {target}"
        for module in sorted(m for m in modules() if _in(m, adapter))
        for target in sorted(imports_of(module, typing=True))
        if _in(target, "torchx") and _is_private(target)
    ]
    assert bad == []


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


# {package: a module each root must hold}; the contracts in pyproject.toml name these packages
EXPECTED = {
    "torchx": ("torchx.specs.api", "torchx.runner.api", "torchx.schedulers.api", "torchx.cli.main"),
    "torchx_airflow": ("torchx_airflow.operators",),
    "torchx_kfp": ("torchx_kfp.component", "torchx_kfp.launcher"),
}


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_package_root_is_where_the_checks_look(package: str) -> None:
    found = modules()
    assert PACKAGES[package].is_dir(), f"{package} moved: update PACKAGES and [tool.importlinter]"
    assert all(m in found for m in EXPECTED[package])
    assert sum(1 for m in found if _in(m, package)) >= 10


def test_the_checker_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    """The contracts would catch a function-level import and a relative import."""
    assert "torchx.runner.config" not in imports_of("torchx.specs._named_resources")
    assert any(t.startswith("torchx.schedulers") for t in imports_of("torchx.runner.api"))
    assert _resolve("torchx.specs.api", False, 1, "_state") == "torchx.specs._state"
    assert _resolve("torchx.specs", True, 2, "runner") == "torchx.runner"
