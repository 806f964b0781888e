"""The scheduler asks only the mode of an app it knows (the current local
cluster, 1.35; requests counted).

``_kubernetes.routing``: after ``schedule``, ``describe`` and ``wait_for_change`` of the app go
to its mode alone (no Volcano ``GET``, no JobSet read, no ``has_app`` probe); an app deleted
behind the scheduler's back is forgotten (``describe`` -> None, then every mode is asked again);
a scheduler that did not create the app finds it by probing once, then asks its mode alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _k8s_current import module_client
from _k8s_live import IMAGE, leftovers, namespace, wait_until

from torchx.specs.api import AppDef, Resource, Role

pytestmark = [pytest.mark.k8s]

# pid 1 traps TERM so that a stop does not wait out the grace period
SLEEP = "trap 'exit 143' TERM; sleep 600 & wait"


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    yield from module_client()


@pytest.fixture(scope="module")
def ns(client: Any) -> Iterator[str]:
    with namespace(client, prefix="tx-route") as name:
        yield name


class Recorder:
    """Records the path of every request an ``ApiClient`` makes (its real REST client)."""

    def __init__(self, api: Any) -> None:
        self.paths: list[str] = []
        rest = api.rest_client
        request = rest.request

        def recorded(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            self.paths.append(f"{method} {url.split('//', 1)[-1].split('/', 1)[-1]}")
            return request(method, url, *args, **kwargs)

        rest.request = recorded

    def take(self) -> list[str]:
        out, self.paths = self.paths, []
        return out


@pytest.fixture
def counted() -> Iterator[tuple[Any, Recorder]]:
    from _k8s_live import api_client

    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    api = api_client()
    recorder = Recorder(api)
    yield create_scheduler("test", client=api), recorder
    api.close()


def sleeper() -> AppDef:
    role = Role(
        name="main",
        image=IMAGE,
        entrypoint="sh",
        args=["-c", SLEEP],
        resource=Resource(cpu=0.1, gpu=0, memMB=32),
    )
    return AppDef(name="route", roles=[role])


def other_modes(paths: list[str]) -> list[str]:
    return [p for p in paths if "volcano.sh" in p or "jobset.x-k8s.io" in p]


def test_a_scheduled_app_is_read_through_its_mode_only(
    client: Any, ns: str, counted: tuple[Any, Recorder]
) -> None:
    sched, recorder = counted
    cfg = {"mode": "plain", "namespace": ns, "rank0_address": "pod_ip"}
    app_id = sched.schedule(sched.submit_dryrun(sleeper(), cfg))
    name = app_id.split(":", 1)[1]
    try:
        recorder.take()
        assert sched.describe(app_id) is not None
        sched.wait_for_change(app_id, 1)
        seen = recorder.take()
        assert seen and not other_modes(seen), seen
        assert not any("limit=1" in p for p in seen)  # no has_app probe either

        # a second scheduler (another process, say) probes once, then knows the mode
        from _k8s_live import api_client

        from torchx.schedulers.kubernetes_scheduler import create_scheduler

        api = api_client()
        fresh = Recorder(api)
        try:
            other = create_scheduler("test", client=api)
            assert other.describe(app_id) is not None
            assert any("volcano.sh" in p for p in fresh.take())  # probed (volcano first)
            assert other.describe(app_id) is not None
            other.wait_for_change(app_id, 1)
            assert not other_modes(fresh.take())

            other.delete(app_id)  # behind the first scheduler's back
        finally:
            api.close()
        wait_until("the app's Jobs to go", lambda: not leftovers(client, ns, name).get("jobs"))
        recorder.take()
        assert sched.describe(app_id) is None
        assert other_modes(recorder.take())  # forgotten: every mode was asked again
    finally:
        sched.delete(app_id)
