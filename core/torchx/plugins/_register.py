"""The ``register`` decorators that mark plugin callables in ``torchx_plugins.*`` modules.

Example (``torchx_plugins/named_resources/my_cluster.py``)::

    from torchx.plugins import register, powers_of_two_gpus
    from torchx.specs import Resource

    @register.named_resource(aliases=["big"], fractionals=powers_of_two_gpus)
    def gpu_host(fractional: float = 1.0) -> ResourceLike:
        return Resource(cpu=int(64 * fractional), gpu=int(8 * fractional), memMB=...)

    @register.scheduler()
    def my_scheduler(session_name: str, **kwargs: object) -> Scheduler: ...
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, Union, overload

from torchx.plugins._fractionals import WHOLE
from torchx.plugins._types import PluginType, ResourceLike

__all__ = ["FRACTIONAL_TAG", "NAME_TAG", "PLUGIN_NAME_ATTR", "PLUGIN_TYPE_ATTR", "register"]

PLUGIN_TYPE_ATTR = "_plugin_type"
PLUGIN_NAME_ATTR = "_plugin_name"
NAME_TAG = "torchx/named_resources.name"
FRACTIONAL_TAG = "torchx/named_resources.is_fractional"

F = TypeVar("F", bound=Callable[..., Any])
# a resource is a torchx.specs.Resource; typed structurally (the plugins sit below torchx.specs)
R = TypeVar("R", bound=ResourceLike)
Fractionals = Union[Mapping[float, str], Callable[[Any], Mapping[float, str]]]
ResourceFn = Callable[..., ResourceLike]


def _mark(fn: F, plugin_type: PluginType, name: str) -> F:
    setattr(fn, PLUGIN_TYPE_ATTR, plugin_type)
    setattr(fn, PLUGIN_NAME_ATTR, name)
    return fn


def _tagged(make: Callable[[], ResourceLike], name: str, fractional: bool) -> ResourceLike:
    res = make()
    tags = {**res.tags, NAME_TAG: name, FRACTIONAL_TAG: fractional}
    return dataclasses.replace(res, tags=tags)


def _factory(
    fn: ResourceFn, module: str, name: str, call: Callable[[], ResourceLike]
) -> Callable[[], ResourceLike]:
    """Wraps ``call`` as a plugin factory named ``name`` that looks defined in ``module``."""

    def factory() -> ResourceLike:
        return call()

    factory.__name__ = factory.__qualname__ = name.replace(".", "_").replace("-", "_")
    factory.__module__ = module
    factory.__doc__ = fn.__doc__
    factory.__wrapped__ = fn  # type: ignore[attr-defined]
    return _mark(factory, PluginType.NAMED_RESOURCE, name)


class _NamedResourceRegistrar:
    """Registers one decorated function and its aliases/fractions into its module."""

    def __init__(self, fn: ResourceFn, name: str | None) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.module = sys.modules[fn.__module__]
        table = self.module.__dict__.setdefault("NAMED_RESOURCES", {})
        if not isinstance(table, dict):
            raise TypeError(
                f"`{fn.__module__}.NAMED_RESOURCES` must be a dict to register named resources"
                f" into it, got {type(table).__name__}"
            )
        self.table: dict[str, Callable[[], ResourceLike]] = table

    def add(self, name: str, factory: Callable[[], ResourceLike]) -> None:
        if name in self.table:
            raise ValueError(
                f"duplicate named resource `{name}` in module `{self.module.__name__}`"
            )
        self.table[name] = factory

    def set_attr(self, name: str, factory: Callable[[], ResourceLike]) -> None:
        """Makes ``factory`` the module attribute ``name`` (as TorchX does)."""
        if hasattr(self.module, name):
            raise AttributeError(
                f"cannot add `{name}` (named resource `{self.name}`): module"
                f" `{self.module.__name__}` already has an attribute `{name}`"
            )
        setattr(self.module, name, factory)

    def base(self, fractional: bool) -> Callable[[], ResourceLike]:
        fn, name = self.fn, self.name
        make: Callable[[], ResourceLike] = (lambda: fn(WHOLE)) if fractional else fn
        factory = _factory(fn, self.module.__name__, name, lambda: _tagged(make, name, False))
        self.add(name, factory)
        if name != fn.__name__:
            self.set_attr(name, factory)
        return factory

    def alias(self, alias: str, base: Callable[[], ResourceLike]) -> None:
        factory = _factory(self.fn, self.module.__name__, alias, base)
        factory._plugin_base_name = self.name  # type: ignore[attr-defined]
        factory._plugin_is_alias = True  # type: ignore[attr-defined]
        self.add(alias, factory)
        self.set_attr(alias, factory)

    def fraction(self, fraction: float, suffix: str) -> None:
        fn, name = self.fn, f"{self.name}_{suffix}"
        call = lambda: _tagged(lambda: fn(fraction), name, fraction != WHOLE)  # noqa: E731
        factory = _factory(fn, self.module.__name__, name, call)
        factory._plugin_base_name = self.name  # type: ignore[attr-defined]
        self.add(name, factory)
        self.set_attr(name, factory)


class _Register:
    """``register``: decorators that mark plugin callables (see the module docstring)."""

    def __call__(self, plugin_type: PluginType, name: str | None = None) -> Callable[[F], F]:
        """Generic form: ``@register(PluginType.SCHEDULER, "name")``.

        Args:
            plugin_type: the kind of plugin.
            name: the registered name (default: the function name).

        Returns:
            The decorator.
        """
        if PluginType(plugin_type) is PluginType.NAMED_RESOURCE:
            return self.named_resource(name)  # type: ignore[return-value]
        return lambda fn: _mark(fn, PluginType(plugin_type), name or fn.__name__)

    @overload
    def scheduler(self, name: F) -> F: ...
    @overload
    def scheduler(self, name: str | None = None) -> Callable[[F], F]: ...
    def scheduler(self, name: Any = None) -> Any:
        """Marks a scheduler factory ``(session_name, **kwargs) -> Scheduler``.

        Args:
            name: the scheduler name (default: the function name).

        Returns:
            The decorator (or the marked function when used without parentheses).
        """
        if callable(name):
            return _mark(name, PluginType.SCHEDULER, name.__name__)
        return self(PluginType.SCHEDULER, name)

    @overload
    def tracker(self, name: F) -> F: ...
    @overload
    def tracker(self, name: str | None = None) -> Callable[[F], F]: ...
    def tracker(self, name: Any = None) -> Any:
        """Marks a tracker factory ``(config: str | None) -> TrackerBase``.

        Args:
            name: the tracker name (default: the function name).

        Returns:
            The decorator (or the marked function when used without parentheses).
        """
        if callable(name):
            return _mark(name, PluginType.TRACKER, name.__name__)
        return self(PluginType.TRACKER, name)

    @overload
    def named_resource(self, name: Callable[..., R]) -> Callable[[], R]: ...
    @overload
    def named_resource(
        self,
        name: str | None = None,
        aliases: list[str] | None = None,
        fractionals: Fractionals | None = None,
    ) -> Callable[[Callable[..., R]], Callable[[], R]]: ...
    def named_resource(
        self,
        name: str | ResourceFn | None = None,
        aliases: list[str] | None = None,
        fractionals: Fractionals | None = None,
    ) -> Any:
        """Registers a named-resource factory in its module's ``NAMED_RESOURCES`` dict.

        The base factory (returned in place of the function) tags its resource with
        ``torchx/named_resources.name = name`` and ``is_fractional = False``. Each alias is a
        wrapper of the base factory (same tags). For each ``{fraction: suffix}`` of
        ``fractionals`` (a mapping, or a function of the whole resource) a factory
        ``{name}_{suffix}`` calling ``fn(fraction)`` is added, tagged with its own name and
        ``is_fractional = fraction != 1.0``. As TorchX, every generated name (a ``name`` other
        than the function's, aliases, fractions) is also set as a module attribute, and alias
        and fraction factories carry ``_plugin_base_name``.

        Args:
            name: the registered name (default: the function name).
            aliases: extra names for the base factory.
            fractionals: fractions to generate; the function must then accept
                ``fractional: float`` (the base factory calls it with ``1.0``).

        Returns:
            The decorator (or the base factory when used without parentheses).

        Raises:
            ValueError: a name is already in the module's ``NAMED_RESOURCES``.
            AttributeError: a generated name is already an attribute of the module.
        """
        if callable(name):
            return self.named_resource()(name)

        def decorator(fn: ResourceFn) -> Callable[[], ResourceLike]:
            reg = _NamedResourceRegistrar(fn, name)
            base = reg.base(fractional=fractionals is not None)
            for alias in aliases or []:
                reg.alias(alias, base)
            if fractionals is not None:
                spec = fractionals(fn(WHOLE)) if callable(fractionals) else fractionals
                for fraction, suffix in spec.items():
                    reg.fraction(float(fraction), str(suffix))
            return base

        return decorator


register = _Register()
"""Decorators: ``register.scheduler``, ``register.tracker``, ``register.named_resource`` and the
generic ``register(PluginType, name)``."""
