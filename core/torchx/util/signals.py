"""Signals that cannot be lost: re-delivery until the program has acted on one.

A Python signal handler that raises (``SignalException``, ``SystemExit``) runs between two
bytecodes of the main thread. When those belong to a finalizer (an object's ``__del__``, a
generator closed by the collector, e.g. urllib3 closing a Kubernetes watch's connection), the
interpreter prints "Exception ignored in ..." and goes on: the program never learns of the
signal and keeps waiting. :class:`Redelivery` sends the signal to the main thread again every
``interval`` seconds until the program says it acted on it (:meth:`Redelivery.acknowledge`).
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Optional

__all__ = ["Redelivery"]


class Redelivery:
    """Re-sends a received signal to the main thread until it is acknowledged.

    A handler calls :meth:`received` first and returns at once when it answers False;
    whoever catches the handler's exception calls :meth:`acknowledge` before acting on it.

    Args:
        interval: seconds between two deliveries of an unacknowledged signal.
    """

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._pending: Optional[signal.Signals] = None
        self._resent = False

    @property
    def pending(self) -> Optional[signal.Signals]:
        """The signal received and not yet acknowledged (None: none)."""
        return self._pending

    def received(self, sig: signal.Signals) -> bool:
        """Records ``sig`` (call it first in the handler, in the main thread).

        Takes no lock: the handler may run while the main thread holds it.

        Returns:
            False for a re-delivery that crossed the acknowledgement (ignore it), else True
            (the handler raises); the first call starts the re-delivery.
        """
        resent, self._resent = self._resent, False
        if self._pending is None:
            if resent:
                return False
            self._pending = sig
            threading.Thread(
                target=self._run,
                args=(threading.get_ident(),),
                name=f"torchx-redeliver-{sig.name}",
                daemon=True,
            ).start()
        return True

    def acknowledge(self) -> None:
        """Stops the re-delivery: the signal's exception was caught and is acted upon.

        After it returns no new delivery is sent; one sent just before reaches the handler,
        whose :meth:`received` answers False.
        """
        with self._lock:
            self._pending = None

    def _run(self, main_thread: int) -> None:
        while True:
            time.sleep(self.interval)
            with self._lock:
                sig = self._pending
                if sig is None:
                    return
                self._resent = True
                signal.pthread_kill(main_thread, sig)
