"""SIGTERM/SIGINT handling of the ``torchx`` process (private).

Only :func:`torchx.cli.main.main` installs these handlers; the library never does. A signal
raises ``torchx.schedulers.local_scheduler.SignalException`` when that module is loaded (so
code that catches it keeps working), otherwise this module's :class:`SignalException`.
``torchx run`` catches either, cancels its app and exits with ``128 + signal number``.

A signal's exception can be lost: when the handler runs inside a finalizer (a generator closed
by the garbage collector, an object's ``__del__``, e.g. urllib3 closing a watch's connection),
the interpreter prints "Exception ignored in ..." and goes on, and the command would wait as if
no signal came. So the signal is re-delivered to the main thread every
:data:`REDELIVER_AFTER` seconds until a command catches its exception and calls
:func:`acknowledge`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import FrameType

__all__ = [
    "REDELIVER_AFTER",
    "SignalException",
    "acknowledge",
    "exit_code_for",
    "install_signal_handlers",
    "signal_exception_types",
]

_LOCAL_SCHEDULER = "torchx.schedulers.local_scheduler"

REDELIVER_AFTER = 1.0
"""Seconds after which a signal whose exception was not acknowledged is sent again."""


class _State:
    """The signal whose exception no command has caught yet (module-level, main thread)."""

    pending: signal.Signals | None = None
    resent = False  # the next handler call may be a re-delivery


def acknowledge() -> None:
    """Says a command caught the signal's exception: stops its re-delivery.

    Every ``except`` of :func:`signal_exception_types` in the CLI calls this first.
    """
    _State.pending = None


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


def _redeliver(main_thread: int) -> None:
    """Sends the pending signal to the main thread again until it is acknowledged."""
    while True:
        time.sleep(REDELIVER_AFTER)
        sig = _State.pending
        if sig is None:
            return
        _State.resent = True
        signal.pthread_kill(main_thread, sig)


def _raise_signal_exception(signum: int, frame: FrameType | None) -> None:
    sig = signal.Signals(signum)
    resent, _State.resent = _State.resent, False
    if _State.pending is None:
        if resent:  # a re-delivery that crossed the acknowledgement: the signal is handled
            return
        _State.pending = sig
        threading.Thread(
            target=_redeliver, args=(threading.get_ident(),), name="torchx-signal", daemon=True
        ).start()
    msg = f"Process {os.getpid()} got signal: {sig}"
    local = getattr(sys.modules.get(_LOCAL_SCHEDULER), "SignalException", None)
    if isinstance(local, type) and issubclass(local, BaseException):
        raise local(msg, sig)
    raise SignalException(msg, sig)


def install_signal_handlers() -> None:
    """Makes SIGTERM and SIGINT raise a signal exception in the main thread."""
    signal.signal(signal.SIGTERM, _raise_signal_exception)
    signal.signal(signal.SIGINT, _raise_signal_exception)
