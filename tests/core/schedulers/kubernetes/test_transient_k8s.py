"""A follow survives the Kubernetes API server dropping off, live on the current
local cluster (1.35, plain mode).

The runner talks to the local cluster through a loopback TCP proxy (TLS passes through: the
server's certificate names 127.0.0.1). While the app prints its lines the test drops every
connection and refuses new ones for several seconds, then lets them through again: the
follow retries its status and log calls, the app is not cancelled, it succeeds, and every
line is shown once. An outage longer than ``transient_timeout`` ends the follow with
``SchedulerUnreachableError`` and leaves the app running.
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _k8s_current import module_client
from _k8s_live import IMAGE, leftovers, namespace, wait_until

from torchx.runner import Runner
from torchx.runner.follow import SchedulerUnreachableError, follow
from torchx.specs.api import AppDef, AppState, Resource, Role

pytestmark = [pytest.mark.k8s, pytest.mark.slow]

COUNT = "i=0; while [ $i -lt 40 ]; do echo n $i; i=$((i+1)); sleep 0.25; done"


class Proxy:
    """Forwards 127.0.0.1:<port> to ``target``; :meth:`drop` cuts and refuses connections."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.up = threading.Event()
        self.up.set()
        self.refused = 0
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            if not self.up.is_set():
                self.refused += 1
                conn.close()
                continue
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._open.update((conn, upstream))
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                self._close(s)

    def _close(self, s: socket.socket) -> None:
        with self._lock:
            self._open.discard(s)
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()

    def drop(self) -> None:
        """Cuts every open connection and refuses new ones until :meth:`restore`."""
        self.up.clear()
        with self._lock:
            conns = list(self._open)
        for s in conns:
            self._close(s)

    def restore(self) -> None:
        self.up.set()

    def close(self) -> None:
        self._closed = True
        self.drop()
        self.listener.close()


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    yield from module_client()


@pytest.fixture(scope="module")
def ns(client: Any) -> Iterator[str]:
    with namespace(client, prefix="tx-flaky") as name:
        yield name


@pytest.fixture
def proxied(tmp_path: Path, client: Any) -> Iterator[tuple[Runner, Proxy]]:
    """A runner whose kubernetes client goes through a :class:`Proxy` to the API server."""
    import os

    from kubernetes import config

    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    text = Path(os.environ["KUBECONFIG"]).read_text()
    match = re.search(r"https://127\.0\.0\.1:(\d+)", text)
    assert match, "the local cluster's kubeconfig names https://127.0.0.1:<port>"
    proxy = Proxy(("127.0.0.1", int(match.group(1))))
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(text.replace(match.group(0), f"https://127.0.0.1:{proxy.port}"))
    api = config.new_client_from_config(config_file=str(kubeconfig))
    factories = {
        "kubernetes": lambda session_name, **kw: create_scheduler(session_name, client=api)
    }
    try:
        with Runner("flaky", factories) as runner:
            yield runner, proxy
    finally:
        proxy.close()
        api.close()


def counter(name: str) -> AppDef:
    role = Role(
        "worker", image=IMAGE, entrypoint="sh", args=["-c", COUNT],
        resource=Resource(cpu=0.2, gpu=0, memMB=64),
    )  # fmt: skip
    return AppDef(name, roles=[role])


def cfg(ns: str) -> dict[str, Any]:
    return {"mode": "plain", "namespace": ns, "rank0_address": "pod_ip"}


def test_an_api_outage_during_the_follow_is_ridden_out(
    proxied: tuple[Runner, Proxy], client: Any, ns: str
) -> None:
    runner, proxy = proxied
    handle = runner.run(counter("flaky-ok"), "kubernetes", cfg(ns))
    lines: list[str] = []
    outage_done = threading.Event()

    def on_log(line: str) -> None:
        lines.append(line)
        if line.endswith(" n 3") and not outage_done.is_set():
            outage_done.set()
            proxy.drop()  # in the middle of the app's output
            threading.Timer(6.0, proxy.restore).start()

    try:
        result = follow(runner, handle, on_log=on_log, wait_interval=0.5, transient_timeout=120)
        assert outage_done.is_set() and proxy.refused > 0  # the outage really hit the follow
        assert result.succeeded and not result.cancelled, result.failure_message()
        assert lines == [f"worker/0 n {i}" for i in range(40)]  # all, once each, in order
    finally:
        proxy.restore()
        runner.delete(handle)
    name = handle.rsplit(":", 1)[1]
    wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))


def test_an_outage_longer_than_transient_timeout_fails_and_keeps_the_app(
    proxied: tuple[Runner, Proxy], client: Any, ns: str
) -> None:
    runner, proxy = proxied
    handle = runner.run(counter("flaky-gone"), "kubernetes", cfg(ns))
    try:
        proxy.drop()
        with pytest.raises(SchedulerUnreachableError, match="did not answer for"):
            follow(runner, handle, wait_interval=0.5, transient_timeout=3)
        proxy.restore()
        status = runner.status(handle)
        assert status is not None and status.state != AppState.CANCELLED  # left as it was
    finally:
        proxy.restore()
        runner.delete(handle)
    name = handle.rsplit(":", 1)[1]
    wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))
