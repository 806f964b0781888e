"""Which errors of a scheduler call are transient, and retrying a call while they last (private).

A transient error says nothing about the app: the scheduler (or the connection to it) did not
answer this time. The follow layer retries such a call with back-off for ``transient_timeout``
seconds before it gives up (:class:`SchedulerUnreachableError`); any other error is raised at
once. Only ``Exception`` subclasses are ever classified: ``KeyboardInterrupt``, ``SystemExit``,
``asyncio.CancelledError`` and torchx's ``SignalException`` always propagate.
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable
from typing import Optional, TypeVar

__all__ = [
    "DEFAULT_TRANSIENT_TIMEOUT",
    "Backoff",
    "SchedulerUnreachableError",
    "is_transient",
    "retry_transient",
]

T = TypeVar("T")

DEFAULT_TRANSIENT_TIMEOUT = 300.0
"""Seconds a failing status or log call is retried before the follow gives up."""

_FIRST_DELAY = 0.5
_MAX_DELAY = 15.0

_ERRNOS = frozenset(
    {
        errno.ECONNREFUSED,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.ENETDOWN,
        errno.ETIMEDOUT,
        errno.EPIPE,
        errno.EAGAIN,
    }
)

# exception classes (by module prefix and name) of the HTTP clients schedulers use
_CLIENT_ERRORS = {
    "urllib3": {
        "ProtocolError",
        "MaxRetryError",
        "NewConnectionError",
        "ConnectTimeoutError",
        "ReadTimeoutError",
        "TimeoutError",
        "ConnectionError",
        "SSLError",
        "IncompleteRead",
        "ProxyError",
    },
    "requests": {
        "ConnectionError",
        "Timeout",
        "ConnectTimeout",
        "ReadTimeout",
        "ChunkedEncodingError",
    },
    "http.client": {"RemoteDisconnected", "IncompleteRead", "BadStatusLine"},
}

# torchx scheduler errors that mean "no answer this time"
_UNAVAILABLE = {"DockerUnavailableError"}

# what the Slurm commands print when slurmctld/slurmdbd does not answer
_SLURM_TEXT = (
    "unable to contact slurm controller",
    "socket timed out",
    "connection refused",
    "communication connection failure",
    "no answer in",
    "slurm_load_jobs error",
    "slurmdbd",
    "connection reset",
    "zero bytes were transmitted",
)


class SchedulerUnreachableError(RuntimeError):
    """A scheduler call kept failing with transient errors for ``transient_timeout`` seconds.

    The app was left as it is (its state is unknown): it may still be running.

    Args:
        message: the one-line message.
        app_handle: the followed app.
        error: the last transient error.
    """

    def __init__(self, message: str, app_handle: str, error: BaseException) -> None:
        super().__init__(message)
        self.app_handle = app_handle
        self.error = error


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` (or an error it was raised from) means "no answer this time".

    Transient: connection refused/reset/aborted, timeouts, unreachable hosts (``OSError``
    errnos, ``ConnectionError``, ``TimeoutError``), the connection errors of urllib3 and
    requests, a Kubernetes ``ApiException`` (or Docker ``APIError``) with HTTP status 5xx or
    429, a Docker engine that does not answer, a Slurm command that cannot reach slurmctld
    (or timed out). An exception with a boolean ``transient`` attribute decides for itself.
    Never transient: anything that is not an ``Exception`` (interruptions, signals) and
    torchx's ``SignalException``.
    """
    seen: set[int] = set()
    current: Optional[BaseException] = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if not isinstance(current, Exception) or _is_signal(current):
            return False
        verdict = _classify(current)
        if verdict is not None:
            return verdict
        current = current.__cause__ or current.__context__
    return False


def _is_signal(error: BaseException) -> bool:
    return any(cls.__name__ == "SignalException" for cls in type(error).__mro__)


def _classify(error: Exception) -> Optional[bool]:
    """True/False when ``error`` itself decides, None to look at its cause."""
    own = getattr(error, "transient", None)
    if isinstance(own, bool):
        return own
    if isinstance(error, (ConnectionError, TimeoutError)):
        return True
    if isinstance(error, OSError) and error.errno in _ERRNOS:
        return True
    for cls in type(error).__mro__:
        module = cls.__module__ or ""
        for prefix, names in _CLIENT_ERRORS.items():
            if (module == prefix or module.startswith(prefix + ".")) and cls.__name__ in names:
                return True
        if cls.__name__ in _UNAVAILABLE:
            return True
    code = _http_status(error)
    if code is not None:
        return code >= 500 or code == 429 or code == 0
    if type(error).__name__ == "SlurmCommandError":
        text = str(error).lower()
        return getattr(error, "returncode", None) == -1 or any(t in text for t in _SLURM_TEXT)
    if type(error).__name__ == "TimeoutExpired":  # subprocess
        return True
    return None


def _http_status(error: Exception) -> Optional[int]:
    """The HTTP status of a Kubernetes ``ApiException`` or Docker ``APIError`` (else None)."""
    module = type(error).__module__ or ""
    if module.startswith("kubernetes"):
        status = getattr(error, "status", None)
        return status if isinstance(status, int) else None
    if module.startswith("docker"):
        status = getattr(error, "status_code", None)
        return status if isinstance(status, int) else None
    return None


class Backoff:
    """Delays between retries: 0.5 s, doubling up to 15 s, within ``timeout`` from the first.

    Args:
        timeout: seconds from the first failure after which :meth:`failed` says give up.
        clock: the clock (``time.monotonic``).
    """

    def __init__(self, timeout: float, clock: Callable[[], float] = time.monotonic) -> None:
        if timeout < 0:
            raise ValueError(f"`transient_timeout` must be >= 0 seconds, got {timeout}")
        self.timeout = timeout
        self._clock = clock
        self.since: Optional[float] = None
        self._delay = _FIRST_DELAY
        self.failures = 0

    def reset(self) -> None:
        """A call succeeded: the next failure starts a new period."""
        self.since = None
        self._delay = _FIRST_DELAY
        self.failures = 0

    def failed(self, now: Optional[float] = None) -> Optional[float]:
        """Records a failure; returns the seconds to wait before retrying, None to give up."""
        now = self._clock() if now is None else now
        if self.since is None:
            self.since = now
        self.failures += 1
        left = self.since + self.timeout - now
        if left <= 0:
            return None
        delay = min(self._delay, left)
        self._delay = min(self._delay * 2, _MAX_DELAY)
        return delay

    def elapsed(self, now: Optional[float] = None) -> float:
        """Seconds since the first failure of the current period (0 without one)."""
        now = self._clock() if now is None else now
        return 0.0 if self.since is None else now - self.since


def unreachable(
    app_handle: str, what: str, error: BaseException, seconds: float
) -> SchedulerUnreachableError:
    """The error a follow gives up with after ``seconds`` of transient failures."""
    scheduler = app_handle.partition("://")[0] or "the"
    message = (
        f"could not {what} TorchX app {app_handle}: the {scheduler} scheduler did not answer for"
        f" {seconds:.0f}s ({type(error).__name__}: {_first_line(error)}); the app was left as it"
        " is and may still be running (raise `transient_timeout` to wait longer)"
    )
    return SchedulerUnreachableError(message, app_handle, error)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:300] if text else ""


def retry_transient(
    call: Callable[[], T],
    *,
    app_handle: str,
    what: str,
    timeout: float,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Runs ``call``, retrying it on transient errors for at most ``timeout`` seconds.

    Raises:
        SchedulerUnreachableError: it failed transiently for ``timeout`` seconds.
        Exception: a non-transient error of ``call`` (at once).
    """
    backoff = Backoff(timeout)
    while True:
        try:
            return call()
        except Exception as e:
            if not is_transient(e):
                raise
            delay = backoff.failed()
            if delay is None:
                raise unreachable(app_handle, what, e, backoff.elapsed()) from e
            sleep(delay)
