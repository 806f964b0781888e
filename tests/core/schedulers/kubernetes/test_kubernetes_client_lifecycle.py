"""The scheduler closes the API client it loaded itself, never one it was given."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchx.schedulers.kubernetes_scheduler import KubernetesScheduler


class _Client:
    closed = False

    def close(self) -> None:
        self.closed = True


def test_close_releases_the_loaded_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
    )
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    sched = KubernetesScheduler("test")
    client = sched._api_client()
    assert client.configuration.host == "https://127.0.0.1:1"
    pool = client.pool  # the thread pool a client starts on first use
    sched.close()
    assert sched._client is None
    assert client._pool is None and pool._state != "RUN"  # closed by close()
    assert sched._api_client() is not client  # a later use loads a new one
    sched.close()


def test_close_keeps_an_injected_client() -> None:
    given = _Client()
    sched = KubernetesScheduler("test", client=given)
    sched.close()
    assert not given.closed
    assert sched._api_client() is given
