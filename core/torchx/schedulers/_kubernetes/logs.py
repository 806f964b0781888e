"""Reading a replica's log from the API server (both modes), as whole lines.

The mode that has the app names the pod (``Mode.log_pod``): plain mode the newest pod of the
replica's Job, volcano mode ``{job}-{task}-0``.

Lines keep their own newline exactly once, whether the log is read at once or followed: the
stream's byte chunks are decoded incrementally and re-split into lines, so a line cut between
two chunks comes out whole and no newline is added or lost (TorchX appended a newline to every
streamed piece, doubling or splitting lines, TorchX #983). ``since`` and ``until`` are applied
to the API server's per-line timestamps (RFC 3339, nanoseconds), which are then stripped.
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Optional

from torchx.schedulers._kubernetes.names import task_name
from torchx.schedulers.api import Stream, filter_regex, split_lines_iterator

if TYPE_CHECKING:
    from torchx.schedulers._kubernetes.modes import Mode

__all__ = ["LOG_WAIT_TIMEOUT", "iter_pod_log", "parse_timestamped", "replica_log", "within"]

LOG_WAIT_TIMEOUT = 600.0
"""Seconds a follow (``should_tail``) waits for the replica's container to start."""


def _chunks(response: Any) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        for chunk in response.stream(amt=64 * 1024, decode_content=True):
            text = decoder.decode(chunk)
            if text:
                yield text
        tail = decoder.decode(b"", final=True)
        if tail:
            yield tail
    finally:
        response.release_conn()


def _open(read_log: Callable[..., Any], pod: str, namespace: str, kwargs: dict[str, Any]) -> Any:
    try:
        return read_log(pod, namespace, **kwargs)
    except Exception as e:
        status = getattr(e, "status", None)  # the client's ApiException
        if status is None:
            raise
        reason = getattr(e, "reason", "") or ""
        raise RuntimeError(
            f"cannot read the log of pod {pod} in namespace {namespace}: HTTP {status} {reason}"
            " (is the pod there? `kubectl get pods` lists them)"
        ) from e


def parse_timestamped(line: str) -> tuple[Optional[datetime], str]:
    """Split ``"2024-01-01T00:00:00.123456789Z text"`` into ``(time, "text")``.

    A line without a parsable timestamp comes back as ``(None, line)``.
    """
    stamp, sep, rest = line.partition(" ")
    if not sep:
        stamp, rest = line.rstrip("\n"), "\n" if line.endswith("\n") else ""
    try:
        head, _, frac = stamp.rstrip("Z").partition(".")
        when = datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError:
        return None, line
    micros = int((frac + "000000")[:6]) if frac.isdigit() else 0
    return when.replace(microsecond=micros), rest


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.astimezone()


def within(
    lines: Iterable[str], since: Optional[datetime], until: Optional[datetime]
) -> Iterator[str]:
    """Strip the timestamps of ``lines``, keeping those in ``[since, until]``.

    Following stops at the first line after ``until``.
    """
    lo = _aware(since) if since is not None else None
    hi = _aware(until) if until is not None else None
    for line in lines:
        when, text = parse_timestamped(line)
        if when is not None and lo is not None and when < lo:
            continue
        if when is not None and hi is not None and when > hi:
            return
        yield text


def iter_pod_log(
    read_log: Callable[..., Any],
    pod: str,
    namespace: str,
    container: Optional[str] = None,
    regex: Optional[str] = None,
    since: Optional[datetime] = None,
    until: Optional[datetime] = None,
    should_tail: bool = False,
) -> Iterator[str]:
    """Yield the lines of a pod's log, each ending in its own newline (the last may not).

    Args:
        read_log: ``CoreV1Api.read_namespaced_pod_log``.
        pod: the pod name.
        namespace: its namespace.
        container: the container (None: the pod's only one).
        regex: keep only lines matching it (``re.search``).
        since: drop lines logged before it (naive datetimes are local time).
        until: stop at the first line logged after it.
        should_tail: follow the log until the container exits.

    Yields:
        The log lines.
    """
    kwargs: dict[str, Any] = {"follow": should_tail, "_preload_content": False}
    if container:
        kwargs["container"] = container
    timed = since is not None or until is not None
    if timed:
        kwargs["timestamps"] = True
    if since is not None:
        # coarse server-side cut (whole seconds, with a second of slack); exact one below
        kwargs["since_seconds"] = max(int(time.time() - _aware(since).timestamp()) + 1, 1)
    lines: Iterable[str] = split_lines_iterator(_chunks(_open(read_log, pod, namespace, kwargs)))
    if timed:
        lines = within(lines, since, until)
    if regex:
        lines = filter_regex(regex, lines)
    yield from lines


def replica_log(
    mode: Mode,
    namespace: str,
    name: str,
    role: str,
    k: int,
    regex: Optional[str] = None,
    since: Optional[datetime] = None,
    until: Optional[datetime] = None,
    should_tail: bool = False,
    streams: Optional[Stream] = None,
) -> Iterator[str]:
    """The log lines of replica ``k`` of ``role`` of the app ``mode`` has.

    Following (``should_tail``) waits up to :data:`LOG_WAIT_TIMEOUT` for the container to
    start; a replica that ended without starting it has no lines.

    Raises:
        ValueError: a stream other than COMBINED, or no such replica (plain mode).
    """
    if streams not in (None, Stream.COMBINED):
        raise ValueError("KubernetesScheduler only supports COMBINED log stream")
    pod = mode.log_pod(namespace, name, role, k, LOG_WAIT_TIMEOUT if should_tail else 0.0)
    if pod is None:
        return iter(())
    read = mode.read_log()
    # jobset mode: one container per role template (``JobSetOps.log_container``)
    named = getattr(mode, "log_container", None)
    container = named(role, k) if named is not None else task_name(role, k)
    return iter_pod_log(read, pod, namespace, container, regex, since, until, should_tail)
