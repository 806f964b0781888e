"""Scheduler-name arguments with close-match suggestions (private)."""

from __future__ import annotations

import argparse

from torchx.cli._errors import CliError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

__all__ = [
    "add_scheduler_argument",
    "check_scheduler",
    "scheduler_names",
    "unknown_scheduler_message",
]


def scheduler_names() -> list[str]:
    """Returns the registered scheduler names, in registry order (the first is the default)."""
    from torchx.schedulers import (  # lazy: its entry points, only when listed
        get_scheduler_factories,
    )

    return list(get_scheduler_factories())


def unknown_scheduler_message(name: str, names: Sequence[str]) -> str:
    """Returns the one-line error for an unknown scheduler name.

    Args:
        name: the name the user gave.
        names: the registered names.
    """
    import difflib  # lazy: only for the error (difflib ~2 ms)

    close = difflib.get_close_matches(name, list(names), n=1)
    hint = f" Did you mean `{close[0]}`?" if close else ""
    return f"unknown scheduler `{name}`.{hint} Registered schedulers: {', '.join(names)}"


def check_scheduler(name: str) -> None:
    """Raises a one-line ``CliError`` when ``name`` is not a registered scheduler.

    Args:
        name: the scheduler name.
    """
    names = scheduler_names()
    if name not in names:
        raise CliError(unknown_scheduler_message(name, names))


def _scheduler_type(names: Sequence[str]) -> Callable[[str], str]:
    def scheduler(value: str) -> str:
        if value not in names:
            raise argparse.ArgumentTypeError(unknown_scheduler_message(value, names))
        return value

    return scheduler


def add_scheduler_argument(
    parser: argparse.ArgumentParser, *flags: str, names: Sequence[str], **kwargs: Any
) -> argparse.Action:
    """Adds a scheduler-name argument whose choices are ``names``.

    An unknown name is an argparse usage error (exit 2) that lists the registered names and
    suggests the closest one.

    Args:
        parser: the parser to add to.
        *flags: the option strings (none for a positional named by ``dest``).
        names: the registered scheduler names.
        **kwargs: other ``add_argument`` arguments.

    Returns:
        The added action.
    """
    return parser.add_argument(*flags, type=_scheduler_type(names), choices=list(names), **kwargs)
