"""A loopback TCP proxy that can cut its connections for a while (network faults in tests).

:class:`TcpProxy` listens on ``127.0.0.1`` and forwards every connection to one target (e.g. a
Kubernetes API server: TLS passes through untouched, and a kubeconfig whose server is moved to
the proxy's port still verifies, since the certificate names the loopback address, not a
port). :meth:`TcpProxy.outage` then resets every open connection and, for the outage's length,
answers new ones in one of two ways:

- ``refuse``: accepted and reset at once (the client sees its connection refused or reset);
- ``blackhole``: accepted and left unanswered (the client's bytes wait in the socket); at the
  end of the outage they are forwarded, like packets delivered once a partition heals.

After the outage the proxy forwards again by itself. One thread serves every connection; it
stops by itself after ``lifetime`` seconds at most, and :meth:`TcpProxy.close` stops it, closes
every socket and joins the thread (nothing is left running).
"""

from __future__ import annotations

import selectors
import socket
import struct
import threading
import time
from types import TracebackType

__all__ = ["TcpProxy"]

_MODES = ("refuse", "blackhole")
_CHUNK = 65536
_TICK = 0.2  # seconds between two looks at the clock when nothing happens


def _reset(sock: socket.socket) -> None:
    """Closes ``sock`` with a TCP reset (SO_LINGER 0), never raises."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class TcpProxy:
    """Forwards loopback TCP connections to ``target``; :meth:`outage` cuts them for a while.

    Args:
        target: ``(host, port)`` every connection is forwarded to.
        lifetime: seconds after which the proxy stops by itself (a bound for a forgotten one).

    Attributes:
        port: the loopback port clients connect to.
        accepted: connections accepted so far (all modes).
        recovered: connections opened since the last outage ended whose target answered (the
            clients are talking to the target again).
    """

    def __init__(self, target: tuple[str, int], lifetime: float = 3600.0) -> None:
        self.target = target
        self._end = time.monotonic() + lifetime
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self._listener.setblocking(False)
        self.port = int(self._listener.getsockname()[1])
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._peers: dict[socket.socket, socket.socket] = {}
        self._fresh: set[socket.socket] = set()  # target sides opened since the last outage
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._cut: tuple[str, float] | None = None  # (mode, end) of the outage asked for
        self._mode = ""  # the outage in force ("" = forwarding)
        self._until = 0.0
        self._stop = threading.Event()
        self._over = threading.Event()
        self._over.set()
        self.accepted = 0
        self.recovered = 0
        self._thread = threading.Thread(target=self._serve, name=f"tcp-proxy-{self.port}")
        self._thread.daemon = True
        self._thread.start()

    # -- control (any thread) ----------------------------------------------------------------

    def outage(self, seconds: float, mode: str = "refuse") -> None:
        """Resets every open connection, then ``mode`` for new ones during ``seconds``.

        Returns at once; :meth:`wait_restored` waits for the end.
        """
        if mode not in _MODES:
            raise ValueError(f"outage mode must be one of {', '.join(_MODES)}, got {mode!r}")
        with self._lock:
            self._over.clear()
            self._cut = (mode, time.monotonic() + seconds)

    def wait_restored(self, timeout: float) -> bool:
        """Waits until the outage is over (the proxy forwards again); False on timeout."""
        return self._over.wait(timeout)

    @property
    def running(self) -> bool:
        """Whether the proxy still serves (not closed, ``lifetime`` not over)."""
        return self._thread.is_alive()

    def close(self) -> None:
        """Stops the proxy: every socket closed, the thread joined."""
        self._stop.set()
        self._thread.join(timeout=10)
        assert not self._thread.is_alive(), "the proxy thread did not stop"

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the serving thread --------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            while not self._stop.is_set() and time.monotonic() < self._end:
                self._apply_cut()
                for key, _ in self._selector.select(timeout=_TICK):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    if sock is self._listener:
                        self._accept()
                    elif sock in self._peers:
                        self._pump(sock)
        finally:
            self._shutdown()

    def _apply_cut(self) -> None:
        with self._lock:
            cut, self._cut = self._cut, None
        if cut is not None:
            self._mode, self._until = cut
            self._drop_all()
        if self._mode and time.monotonic() >= self._until:
            self._mode = ""
            self.recovered = 0
            held, self._held = self._held, []
            for client in held:
                self._connect(client)
            self._over.set()

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        self.accepted += 1
        if self._mode == "refuse":
            _reset(client)
        elif self._mode == "blackhole":
            self._held.append(client)
        else:
            self._connect(client)

    def _connect(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=5)
        except OSError:
            _reset(client)
            return
        for sock in (client, upstream):
            sock.settimeout(10)  # a send to a stuck peer ends the pair instead of the proxy
        self._peers[client], self._peers[upstream] = upstream, client
        self._fresh.add(upstream)
        self._selector.register(client, selectors.EVENT_READ)
        self._selector.register(upstream, selectors.EVENT_READ)

    def _pump(self, sock: socket.socket) -> None:
        peer = self._peers[sock]
        try:
            data = sock.recv(_CHUNK)
            if data:
                peer.sendall(data)
        except OSError:
            self._drop(sock, reset=True)
            return
        if not data:
            self._drop(sock, reset=False)
        elif sock in self._fresh:
            self._fresh.discard(sock)
            self.recovered += 1

    def _drop(self, sock: socket.socket, reset: bool) -> None:
        """Ends a forwarded pair (both sides), with a reset or an orderly close."""
        peer = self._peers.pop(sock)
        del self._peers[peer]
        for s in (sock, peer):
            self._fresh.discard(s)
            self._selector.unregister(s)
            if reset:
                _reset(s)
            else:
                s.close()

    def _drop_all(self) -> None:
        for sock in list(self._peers):
            if sock in self._peers:  # not dropped yet as the other side of a pair
                self._drop(sock, reset=True)

    def _shutdown(self) -> None:
        self._drop_all()
        for client in self._held:
            _reset(client)
        self._held = []
        self._selector.close()
        self._listener.close()
        self._over.set()
