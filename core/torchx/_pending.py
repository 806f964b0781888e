"""Clear import errors for TorchX module paths that torchx-flow does not provide yet.

A finder appended to the end of ``sys.meta_path`` answers only for the module paths in
:data:`PENDING`, and only when no other finder found them: once a real module exists at one of
these paths, the normal finders import it and this finder is never asked. Until then
``import torchx.schedulers.slurm_scheduler`` raises ``ModuleNotFoundError`` saying which
scheduler is not there yet, instead of a bare "No module named ...".
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

__all__ = ["PENDING", "install", "is_pending"]

PENDING: dict[str, str] = {
    "torchx.schedulers.slurm_scheduler": "the slurm scheduler",
}
"""Module path -> what it provides in TorchX."""


class _PendingLoader:
    """Loader whose every load fails with the message of a pending module path."""

    torchx_pending = True  # lets the scheduler registry leave pending builtins out

    def __init__(self, fullname: str, what: str) -> None:
        self.message = f"{fullname}: {what} is not available in torchx-flow yet"
        self.fullname = fullname

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        """Fails the import with the clear message."""
        raise ModuleNotFoundError(self.message, name=self.fullname)

    def exec_module(self, module: ModuleType) -> None:
        """Never reached: :meth:`create_module` raises."""
        raise ModuleNotFoundError(self.message, name=self.fullname)


class _PendingFinder:
    """Finds the module paths of :data:`PENDING` (when nothing else did) with a failing loader.

    ``importlib.util.find_spec`` returns a spec for them, as it would for a stub module that
    raises on import; use :func:`is_pending` to tell them apart.
    """

    @classmethod
    def find_spec(
        cls,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        """Return a spec with a failing loader for a pending module path, else None."""
        what = PENDING.get(fullname)
        if what is None:
            return None
        from importlib.machinery import ModuleSpec

        return ModuleSpec(fullname, _PendingLoader(fullname, what))  # type: ignore[arg-type]


def is_pending(spec: ModuleSpec | None) -> bool:
    """Returns whether ``spec`` is a pending module path's (its import fails)."""
    return spec is not None and bool(getattr(spec.loader, "torchx_pending", False))


def install() -> None:
    """Append the finder to ``sys.meta_path`` (once)."""
    if _PendingFinder not in sys.meta_path:
        sys.meta_path.append(_PendingFinder)
