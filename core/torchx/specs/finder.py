"""Component discovery (``torchx.specs.finder``).

Components come from three places:

* the builtins: every function in the ``torchx.components`` package (``dist.ddp``, ...);
* the ``torchx.components`` entry-point group: ``alias = package.module`` exposes the functions
  of that package as ``alias.<relative module>.<fn>``; an alias starting with ``_`` (``_``,
  ``_0``, ...) adds no prefix. When the group yields any component the builtins are **not**
  loaded; add ``_ = torchx.components`` to keep them (TorchX behaviour);
* files: ``path/to/file.py:fn`` execs the file (with ``__file__`` set) and takes ``fn``.

Every function found is linted (:mod:`torchx.specs.file_linter`); invalid ones are hidden from
:func:`get_components`, and :func:`get_component` raises for them. Module components are cached in
the module global ``_components`` (set it to None to force rediscovery).

Example::

    from torchx.specs.finder import get_component

    ddp = get_component("dist.ddp").fn
"""

from __future__ import annotations

import abc
import importlib
import inspect
import os
import pkgutil
import types
import warnings
from collections.abc import Iterator
from typing import Any

from torchx.specs import file_linter
from torchx.specs._component_record import _Component, _make_component
from torchx.specs._finder_source import component_source
from torchx.specs.api import TorchXError
from torchx.specs.file_linter import ComponentFunctionValidator
from torchx.util import entrypoints

__all__ = [
    "ComponentNotFoundException",
    "ComponentValidationException",
    "ComponentsFinder",
    "CustomComponentsFinder",
    "ModuleComponentsFinder",
    "get_builtin_source",
    "get_component",
    "get_components",
    "is_namespace_package",
    "is_package",
    "module_relname",
]

_BUILTINS_MODULE = "torchx.components"
_ENTRY_POINT_GROUP = "torchx.components"
_CONFIGURE_URL = "https://meta-pytorch.org/torchx/latest/configure.html"


class ComponentNotFoundException(TorchXError):
    """The named component does not exist."""


class ComponentValidationException(TorchXError):
    """The component exists but failed the linter."""


# Helpers for component authors' test suites, with no components (and a unittest import).
_NOT_COMPONENT_MODULES = frozenset({"torchx.components.component_test_base"})


_components: dict[str, _Component] | None = None


def is_namespace_package(module: types.ModuleType) -> bool:
    """Returns True for an implicit namespace package (a ``__path__`` but no ``__file__``)."""
    return hasattr(module, "__path__") and getattr(module, "__file__", None) is None


def is_package(module: types.ModuleType) -> bool:
    """Returns True if ``module`` is a package (regular or namespace)."""
    return hasattr(module, "__path__")


def _module_name(module: types.ModuleType | str) -> str:
    return module if isinstance(module, str) else module.__name__


def module_relname(module: types.ModuleType | str, relative_to: types.ModuleType | str) -> str:
    """Returns ``module``'s dotted name relative to ``relative_to`` (``""`` for itself).

    Args:
        module: a module or module name, e.g. ``torchx.components.dist``.
        relative_to: a package or package name, e.g. ``torchx.components``.

    Returns:
        The relative name, e.g. ``dist``.

    Raises:
        ValueError: ``module`` is not ``relative_to`` or one of its submodules.
    """
    name, base = _module_name(module), _module_name(relative_to)
    if name == base:
        return ""
    if not name.startswith(base + "."):
        raise ValueError(f"`{name}` is not a submodule of `{base}`")
    return name[len(base) + 1 :]


class ComponentsFinder(abc.ABC):
    """Finds components in one source."""

    @abc.abstractmethod
    def find(self, validators: list[ComponentFunctionValidator] | None) -> list[_Component]:
        """Returns the components of this source, valid or not.

        Args:
            validators: linter checks; None means the defaults.
        """


class ModuleComponentsFinder(ComponentsFinder):
    """Finds every function in a package and its submodules (recursively).

    Submodules are found with :mod:`pkgutil`, so directories without ``__init__.py`` are not
    searched. Private submodules (name starting with ``_``) are skipped. A submodule that fails
    to import is skipped with a warning.

    Args:
        module: the package (or module), or its dotted name.
        group: the name prefix (``""`` for none).
    """

    def __init__(self, module: types.ModuleType | str, group: str) -> None:
        self.base_module = module
        self.group = group

    def find(self, validators: list[ComponentFunctionValidator] | None) -> list[_Component]:
        """Imports the package's modules and returns a component per function.

        Args:
            validators: linter checks; None means the defaults.
        """
        base = (
            _import_or_warn(self.base_module)
            if isinstance(self.base_module, str)
            else self.base_module
        )
        if base is None:
            return []
        components: list[_Component] = []
        for module in self._iter_modules(base):
            components.extend(self._components_in(module, base, validators))
        return components

    def _iter_modules(self, module: types.ModuleType) -> Iterator[types.ModuleType]:
        yield module
        if not is_package(module):
            return
        for info in pkgutil.iter_modules(module.__path__):
            qualified = f"{module.__name__}.{info.name}"
            if info.name.startswith("_") or qualified in _NOT_COMPONENT_MODULES:
                continue
            sub = _import_or_warn(qualified)
            if sub is not None:
                yield from self._iter_modules(sub)

    def _components_in(
        self,
        module: types.ModuleType,
        base: types.ModuleType,
        validators: list[ComponentFunctionValidator] | None,
        only: str | None = None,
    ) -> list[_Component]:
        """The components of ``module``; with ``only``, just the one of that name (if any).

        Each component is linted against its file's source, so a lookup of one component
        (``only``) lints one function instead of every function of the module.
        """
        path = getattr(module, "__file__", None)
        if path is None:
            return []
        relname = module_relname(module, base)
        found = []
        for fn_name, fn in inspect.getmembers(module, inspect.isfunction):
            name = ".".join(p for p in (self.group, relname, fn_name) if p)
            if only is None or name == only:
                found.append(_make_component(name, path, fn, validators))
        return found


def _import_or_warn(name: str) -> types.ModuleType | None:
    try:
        return importlib.import_module(name)
    except Exception as e:
        warnings.warn(
            f"Skipping components in module `{name}`: it failed to import ({e!r})."
            " Fix or uninstall it to make its components available.",
            stacklevel=2,
        )
        return None


class CustomComponentsFinder(ComponentsFinder):
    """Finds the function ``function_name`` in the Python file ``filepath``.

    The file is read with ``read_conf_file`` (so builtin files resolve too) and exec'd with
    ``__file__`` set to its absolute path.

    Args:
        filepath: the component file.
        function_name: the component function in it.
    """

    def __init__(self, filepath: str, function_name: str) -> None:
        self._filepath = filepath
        self._function_name = function_name

    def _exec_file(self) -> dict[str, Any]:
        source = file_linter.read_conf_file(self._filepath)
        abspath = os.path.abspath(self._filepath)
        stem = os.path.splitext(os.path.basename(abspath))[0]
        module = types.ModuleType(f"torchx_component_file_{stem}")
        module.__file__ = abspath
        try:
            exec(compile(source, abspath, "exec"), module.__dict__)
        except ImportError as e:  # name the file: the import is the component's, not torchx's
            raise type(e)(
                f"component file {self._filepath}: {e}; install it in this Python environment",
                name=e.name,
                path=e.path,
            ) from e
        return module.__dict__

    def find(self, validators: list[ComponentFunctionValidator] | None) -> list[_Component]:
        """Execs the file and returns the one component.

        Args:
            validators: linter checks; None means the defaults.

        Raises:
            ComponentNotFoundException: the file does not define the function.
        """
        fn = self._exec_file().get(self._function_name)
        if not inspect.isfunction(fn):
            raise ComponentNotFoundException(
                f"Function {self._function_name} does not exist in file {self._filepath}"
            )
        name = f"{self._filepath}:{self._function_name}"
        return [_make_component(name, self._filepath, fn, validators)]


def _load_custom_components(
    validators: list[ComponentFunctionValidator] | None,
) -> list[_Component]:
    group = entrypoints.load_group(_ENTRY_POINT_GROUP, default=None) or {}
    components: list[_Component] = []
    for alias, load_fn in group.items():
        try:
            module = load_fn()
        except Exception as e:
            warnings.warn(
                f"Skipping `[{_ENTRY_POINT_GROUP}]` entry point `{alias}`: it failed to load"
                f" ({e!r}). Fix or uninstall the package that declares it.",
                stacklevel=2,
            )
            continue
        prefix = "" if alias.startswith("_") else alias
        components.extend(ModuleComponentsFinder(module, prefix).find(validators))
    return components


def _find_components(
    validators: list[ComponentFunctionValidator] | None,
) -> dict[str, _Component]:
    components = _load_custom_components(validators)
    if not components:
        components = ModuleComponentsFinder(_BUILTINS_MODULE, "").find(validators)
    return {c.name: c for c in components}


def _load_components(
    validators: list[ComponentFunctionValidator] | None,
) -> dict[str, _Component]:
    global _components
    if not _components:
        _components = _find_components(validators)
    return _components


def get_components(
    validators: list[ComponentFunctionValidator] | None = None,
) -> dict[str, _Component]:
    """Returns the valid builtin and entry-point components by name.

    Args:
        validators: linter checks; None means the defaults.
    """
    components = _load_components(validators)
    return {name: c for name, c in components.items() if not c.validation_errors}


def _not_found_message(name: str, known: list[str]) -> str:
    msg = (
        f"Component `{name}` not found. Please make sure it is one of the builtins:"
        " `torchx builtins`. Or registered via `[torchx.components]` entry point"
        f" (see: {_CONFIGURE_URL})"
    )
    if name.endswith(".py"):  # a file without the function: the most common slip
        return (
            f"Component `{name}` not found: to run a function of a component file, name it"
            f" as `{name}:FUNCTION_NAME`"
        )
    import difflib  # lazy: difflib ~14 ms here, error messages only

    close = difflib.get_close_matches(name, known, n=3)
    if close:
        msg += " Did you mean: " + ", ".join(f"`{c}`" for c in close) + "?"
    return msg


def _find_component(name: str, validators: list[ComponentFunctionValidator] | None) -> _Component:
    if ":" in name:
        parts = name.split(":")
        if len(parts) != 2 or not all(parts):
            raise ValueError(
                f"Invalid custom component: {name}, valid template : `FILEPATH`:`FUNCTION_NAME`"
            )
        return CustomComponentsFinder(parts[0], parts[1]).find(validators)[0]
    if not _components:
        from torchx.specs._builtin_lookup import (  # lazy: 0.2 ms; 'torchx builtins' skips it
            find_builtin,
        )

        found: _Component | None = find_builtin(
            name,
            base_module=_BUILTINS_MODULE,
            skip=_NOT_COMPONENT_MODULES,
            entry_point_group=_ENTRY_POINT_GROUP,
            components_in=lambda m, base: ModuleComponentsFinder(base, "")._components_in(
                m, base, validators, only=name
            ),
        )
        if found is not None:
            return found
    components = _load_components(validators)
    if name not in components:
        valid = [n for n, c in components.items() if not c.validation_errors]
        raise ComponentNotFoundException(_not_found_message(name, valid))
    return components[name]


def get_builtin_source(name: str) -> str:
    """Returns the source of component ``name``: its file's imports, then the function.

    Args:
        name: the component name.

    Raises:
        ComponentNotFoundException: no such component, or its function is not in its file.
    """
    try:
        return component_source(get_component(name).fn)
    except LookupError as e:
        raise ComponentNotFoundException(str(e)) from None


def get_component(
    name: str, validators: list[ComponentFunctionValidator] | None = None
) -> _Component:
    """Returns the component ``name`` (``dist.ddp`` or ``path/to/file.py:fn``).

    Args:
        name: a builtin or entry-point component name, or ``FILEPATH:FUNCTION_NAME``.
        validators: linter checks; None means the defaults.

    Raises:
        ComponentNotFoundException: no such component.
        ComponentValidationException: the component failed the linter.
        ValueError: a malformed ``FILEPATH:FUNCTION_NAME``.
    """
    component = _find_component(name, validators)
    if component.validation_errors:
        errors = "\n".join(component.validation_errors)
        raise ComponentValidationException(f"Component {name} has validation errors: \n {errors}")
    return component
