"""Plugin types, the registration error record and plugin descriptions."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Protocol

__all__ = ["NAMESPACES", "PluginInfo", "PluginType", "RegistrationError", "ResourceLike"]


class PluginType(str, Enum):  # noqa: UP042 (Python 3.10 has no StrEnum)
    """Kinds of plugins; each value is the entry-point group of that kind."""

    SCHEDULER = "torchx.schedulers"
    NAMED_RESOURCE = "torchx.named_resources"
    TRACKER = "torchx.tracker"


NAMESPACES: dict[PluginType, str] = {
    PluginType.SCHEDULER: "torchx_plugins.schedulers",
    PluginType.NAMED_RESOURCE: "torchx_plugins.named_resources",
    PluginType.TRACKER: "torchx_plugins.tracker",
}
"""The namespace package that holds the plugins of each type."""


class RegistrationError(Exception):
    """A plugin that could not be registered; recorded by the registry, never raised by it.

    As TorchX's ``RegistrationError``, ``error`` is the text of the problem (``"Type: message"``
    for an exception); the exception itself is ``cause`` (and ``__cause__``).

    Args:
        module: the module (or entry point ``name = value``) the problem comes from.
        error: the underlying exception or a description of the problem.
        name: the plugin name, when known.
        plugin_type: the plugin type, when known.
    """

    def __init__(
        self,
        module: str,
        error: BaseException | str,
        name: str | None = None,
        plugin_type: PluginType | None = None,
    ) -> None:
        self.module = module
        self.cause: BaseException | None = error if isinstance(error, BaseException) else None
        self.error: str = f"{type(error).__name__}: {error}" if self.cause else str(error)
        self.name = name
        self.plugin_type = plugin_type
        super().__init__(str(self))
        self.__cause__ = self.cause

    def __str__(self) -> str:
        what = f"plugin `{self.name}` from `{self.module}`" if self.name else f"`{self.module}`"
        kind = f" ({self.plugin_type.value})" if self.plugin_type else ""
        return f"could not register {what}{kind}: {self.error}"

    def __repr__(self) -> str:
        return (
            f"RegistrationError(module={self.module!r}, error={self.error!r},"
            f" name={self.name!r}, plugin_type={self.plugin_type!r})"
        )

    def to_dict(self) -> dict[str, str | None]:
        """Returns a plain-dict form (used by ``PluginRegistry.to_dict``)."""
        return {
            "module": self.module,
            "name": self.name,
            "plugin_type": self.plugin_type.value if self.plugin_type else None,
            "error": self.error,
        }


@dataclass(frozen=True)
class PluginInfo:
    """Where a registered plugin comes from.

    Attributes:
        name: the name it is registered under.
        plugin_type: its type.
        source: ``"namespace"`` (a ``torchx_plugins.*`` module) or ``"entry_point"``.
        module: the module that defines it.
        target: ``module:attribute`` of the callable.
    """

    name: str
    plugin_type: PluginType
    source: str
    module: str
    target: str

    def to_dict(self) -> dict[str, str]:
        """Returns ``{"source", "module", "target"}``."""
        return {"source": self.source, "module": self.module, "target": self.target}


class ResourceLike(Protocol):
    """What the plugins read of a :class:`torchx.specs.Resource` (a dataclass).

    Typed structurally because ``torchx.plugins`` sits below ``torchx.specs`` (which looks
    named resources up in the plugin registry): the plugins never import the spec types.
    """

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def gpu(self) -> int:
        """Number of GPUs."""
        ...

    @property
    def memMB(self) -> int:
        """MB of RAM."""
        ...

    @property
    def tags(self) -> dict[str, object]:
        """Descriptive tags (the named resource a value came from)."""
        ...
