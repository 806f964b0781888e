"""The deferred task's trigger on the live cluster: PENDING reasons logged, startup_timeout applied.

An app whose image cannot be pulled (tag ``latest`` of a local image: the kubelet tries to pull
it and cannot) waits PENDING. The trigger, run with ``asyncio`` as the triggerer runs it, logs
the pull error once it appears and, at its ``startup_timeout``, cancels the app and ends with
an event that gives the scheduler's reason; no object of the app is left.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest
from _airflow_support import import_airflow_isolated
from _k8s_current import module_client
from _k8s_live import leftovers, namespace, wait_until

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("airflow") is None,
        reason="apache-airflow is not installed (pip install -e '.[airflow]')",
    ),
    pytest.mark.k8s,
    pytest.mark.slow,
]

UNPULLABLE = "torchx-flow/busybox:latest"
PULL_ERRORS = ("ErrImagePull", "ImagePullBackOff")


@pytest.fixture(scope="module", autouse=True)
def _airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    import_airflow_isolated(
        tmp_path_factory.mktemp("airflow_home"), "torchx_airflow.triggers.torchx"
    )
    yield


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    yield from module_client()


@pytest.fixture(scope="module")
def ns(client: Any) -> Iterator[str]:
    with namespace(client, prefix="tx-trig") as name:
        yield name


def test_the_trigger_logs_why_the_app_waits_and_gives_up_at_its_startup_timeout(
    client: Any, ns: str
) -> None:
    from torchx.runner import get_runner
    from torchx_airflow.triggers.torchx import TorchXJobTrigger

    cfg = {"mode": "plain", "namespace": ns, "rank0_address": "pod_ip"}
    with get_runner() as runner:
        handle = runner.run_component(
            "utils.echo", ["--image", UNPULLABLE], "kubernetes", cfg=cfg, workspace=""
        )
        try:
            trigger = TorchXJobTrigger(handle, None, poll_interval=1, startup_timeout=20)
            logged: list[str] = []
            trigger.log.info = lambda fmt, *a: logged.append(fmt % a)  # type: ignore[method-assign]

            async def first_event() -> dict[str, Any]:
                async for event in trigger.run():
                    return event.payload
                raise AssertionError("no event")

            event = asyncio.run(first_event())
            assert event["status"] == "failed" and event["cancelled"], event
            assert event["startup_reason"].startswith("did not start within 20s (PENDING: ")
            assert any(e in event["startup_reason"] for e in PULL_ERRORS), event
            reasons = [x for x in logged if x.startswith(f"TorchX app {handle} is PENDING: ")]
            assert any(e in x for x in reasons for e in PULL_ERRORS), logged
            assert len(reasons) == len(set(reasons))  # each reason once
            status = runner.status(handle)
            assert status is not None and status.state.name == "CANCELLED"
        finally:
            runner.delete(handle)
    name = handle.rsplit(":", 1)[1]
    wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))
