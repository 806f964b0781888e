"""Log-line handling of the kubernetes scheduler (``_kubernetes/logs.py``), without a cluster.

The HTTP response of ``read_namespaced_pod_log(..., _preload_content=False)`` is stood in for by
a tiny object with the urllib3 ``stream``/``release_conn`` methods; the live tests read real pods.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

pytest.importorskip("kubernetes")

from torchx.schedulers._kubernetes.logs import iter_pod_log, parse_timestamped, within


class _Response:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.released = False

    def stream(self, amt: int, decode_content: bool) -> Any:
        yield from self.chunks

    def release_conn(self) -> None:
        self.released = True


def _reader(chunks: list[bytes], calls: list[dict[str, Any]]) -> Any:
    response = _Response(chunks)

    def read(pod: str, namespace: str, **kwargs: Any) -> _Response:
        calls.append({"pod": pod, "namespace": namespace, **kwargs})
        return response

    read.response = response  # type: ignore[attr-defined]
    return read


def test_lines_cut_between_chunks_come_out_whole_with_one_newline() -> None:
    calls: list[dict[str, Any]] = []
    # a line split mid-word, a multi-byte character split between chunks, an empty line,
    # and a last line without newline
    read = _reader([b"hel", b"lo\nw\xc3", b"\xa9rld\n\nlast"], calls)
    lines = list(iter_pod_log(read, "p", "ns", should_tail=True))
    assert lines == ["hello\n", "w\u00e9rld\n", "\n", "last"]
    assert calls == [{"pod": "p", "namespace": "ns", "follow": True, "_preload_content": False}]
    assert read.response.released


def test_regex_and_container() -> None:
    calls: list[dict[str, Any]] = []
    read = _reader([b"loss=1\nnoise\nloss=0.5\n"], calls)
    lines = list(iter_pod_log(read, "p", "ns", container="c", regex=r"^loss"))
    assert lines == ["loss=1\n", "loss=0.5\n"]
    assert calls[0]["container"] == "c" and calls[0]["follow"] is False


def test_since_until_use_server_timestamps_and_strip_them() -> None:
    base = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    stamps = [base + timedelta(seconds=i) for i in range(4)]
    text = "".join(
        f"{s.strftime('%Y-%m-%dT%H:%M:%S')}.{s.microsecond:06d}123Z line {i}\n"
        for i, s in enumerate(stamps)
    )
    calls: list[dict[str, Any]] = []
    read = _reader([text.encode()], calls)
    lines = list(iter_pod_log(read, "p", "ns", since=stamps[1], until=stamps[2]))
    assert lines == ["line 1\n", "line 2\n"]
    assert calls[0]["timestamps"] is True and calls[0]["since_seconds"] >= 1


def test_parse_timestamped() -> None:
    when, text = parse_timestamped("2026-01-02T03:04:05.123456789Z hello world\n")
    assert when == datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    assert text == "hello world\n"
    # an empty log line is just the stamp
    when, text = parse_timestamped("2026-01-02T03:04:05Z\n")
    assert when is not None and text == "\n"
    assert parse_timestamped("no stamp here\n") == (None, "no stamp here\n")


def test_within_treats_naive_datetimes_as_local_time() -> None:
    utc = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    local_naive = utc.astimezone().replace(tzinfo=None)
    line = "2026-01-02T03:04:05.000000000Z x\n"
    assert list(within([line], since=local_naive, until=None)) == ["x\n"]
    assert list(within([line], since=local_naive + timedelta(seconds=1), until=None)) == []


def test_api_errors_become_one_clear_error() -> None:
    class NotFound(Exception):
        status = 404
        reason = "Not Found"

    def read(pod: str, namespace: str, **kwargs: Any) -> Any:
        raise NotFound()

    with pytest.raises(
        RuntimeError, match="cannot read the log of pod p in namespace ns: HTTP 404"
    ):
        list(iter_pod_log(read, "p", "ns"))
