"""``Tee``: copy what is written to one or more files into another writer, as it arrives."""

from __future__ import annotations

import threading
import time
from typing import BinaryIO

__all__ = ["Tee"]

_CHUNK = 65536
_IDLE_SLEEP = 0.05


class Tee:
    """Follows the files ``sources`` and writes every byte appended to them to ``out``.

    A background thread reads the sources until :meth:`close`, which copies what is left
    and then closes the sources and ``out``. Since the sources are files, a subprocess can
    write to them directly. Bytes from different sources interleave in arrival order (per
    read chunk), and writes through :meth:`write` are not ordered against them.

    Args:
        out: the binary writer everything goes to.
        sources: paths of the files to follow (at least one; they must exist).

    Raises:
        ValueError: no source given.
    """

    def __init__(self, out: BinaryIO, *sources: str) -> None:
        if not sources:
            raise ValueError("Tee needs at least one source file to follow")
        self.out = out
        self.streams_lock = threading.Lock()
        self.streams: list[BinaryIO] = [open(source, "rb", buffering=0) for source in sources]  # noqa: SIM115
        self._closed = False
        self.thread = threading.Thread(target=self._follow, name="torchx-tee", daemon=True)
        self.thread.start()

    def _follow(self) -> None:
        while True:
            closing = self._closed  # read before the pass: a pass after close() drains all
            copied = False
            for stream in self.streams:
                data = stream.read(_CHUNK)
                if data:
                    copied = True
                    self.write(data)
            if not copied:
                if closing:
                    return
                time.sleep(_IDLE_SLEEP)

    def write(self, data: bytes) -> int:
        """Writes ``data`` to ``out`` (thread-safe); returns the number of bytes written."""
        with self.streams_lock:
            written = self.out.write(data)
            self.out.flush()
            return written if written is not None else len(data)

    def fileno(self) -> int:
        """Returns ``out``'s file descriptor (for a subprocess that writes to it directly)."""
        return self.out.fileno()

    def close(self) -> None:
        """Copies what is left in the sources, stops the thread, closes sources and ``out``."""
        if self._closed:
            return
        self._closed = True
        self.thread.join()
        with self.streams_lock:
            for stream in self.streams:
                stream.close()
            self.out.close()

    def __enter__(self) -> Tee:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
