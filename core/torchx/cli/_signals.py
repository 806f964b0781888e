"""SIGTERM/SIGINT handling of the ``torchx`` process (private).

Only :func:`torchx.cli.main.main` installs these handlers; the library never does. A signal
raises ``torchx.schedulers.local_scheduler.SignalException`` when that module is loaded (so
code that catches it keeps working), otherwise this module's :class:`SignalException`.
``torchx run`` catches either, cancels its app and exits with ``128 + signal number``.

A signal whose exception a finalizer swallowed is sent again
(:class:`torchx.util.signals.Redelivery`) until a command catches it and calls
:func:`acknowledge`.
"""

from __future__ import annotations

import os
import signal
import sys

from torchx.util.signals import Redelivery

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType

__all__ = [
    "SignalException",
    "acknowledge",
    "exit_code_for",
    "install_signal_handlers",
    "signal_exception_types",
]

_LOCAL_SCHEDULER = "torchx.schedulers.local_scheduler"

_REDELIVERY = Redelivery(interval=1.0)
"""Sends a signal whose exception no command caught yet again every second."""


def acknowledge() -> None:
    """Says a command caught the signal's exception: stops its re-delivery.

    Every ``except`` of :func:`signal_exception_types` in the CLI calls this first.
    """
    _REDELIVERY.acknowledge()


class SignalException(Exception):
    """Raised in the main thread of ``torchx`` when it receives SIGTERM or SIGINT.

    Args:
        msg: the message.
        sigval: the signal received.
    """

    def __init__(self, msg: str, sigval: signal.Signals) -> None:
        super().__init__(msg)
        self.sigval = sigval


def signal_exception_types() -> tuple[type[BaseException], ...]:
    """Returns the exception types a signal may raise (plus ``KeyboardInterrupt``)."""
    types: list[type[BaseException]] = [SignalException, KeyboardInterrupt]
    local = getattr(sys.modules.get(_LOCAL_SCHEDULER), "SignalException", None)
    if isinstance(local, type) and issubclass(local, BaseException):
        types.append(local)
    return tuple(types)


def exit_code_for(e: BaseException) -> int:
    """Returns ``128 + signal number`` for a signal exception (130 for ``KeyboardInterrupt``).

    Args:
        e: an exception of :func:`signal_exception_types`.
    """
    sigval = getattr(e, "sigval", signal.SIGINT)
    try:
        return 128 + int(sigval)
    except (TypeError, ValueError):
        return 128 + int(signal.SIGINT)


def _raise_signal_exception(signum: int, frame: FrameType | None) -> None:
    sig = signal.Signals(signum)
    if not _REDELIVERY.received(sig):  # a re-delivery that crossed the acknowledgement
        return
    msg = f"Process {os.getpid()} got signal: {sig}"
    local = getattr(sys.modules.get(_LOCAL_SCHEDULER), "SignalException", None)
    if isinstance(local, type) and issubclass(local, BaseException):
        raise local(msg, sig)
    raise SignalException(msg, sig)


def install_signal_handlers() -> None:
    """Makes SIGTERM and SIGINT raise a signal exception in the main thread."""
    signal.signal(signal.SIGTERM, _raise_signal_exception)
    signal.signal(signal.SIGINT, _raise_signal_exception)
