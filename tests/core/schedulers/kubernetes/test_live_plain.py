"""The kubernetes scheduler's plain mode against the current local cluster (1.35): real Jobs,
pods, logs.

Relies on what ``tests/_k8s_live.py`` states (local image, checkout mounted read-only, one
namespace per module); replicas reach rank 0 by ``rank0_address=pod_ip`` here (the DNS default
is what the DDP and JobSet tests use).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _k8s_current import module_client
from _k8s_live import IMAGE, docker_env, leftovers, namespace, wait_until

from torchx.specs.api import AppDef, AppState, Resource, Role, is_terminal

pytestmark = [pytest.mark.k8s, pytest.mark.slow]

SMALL = Resource(cpu=0.2, gpu=0, memMB=64)
# a pod's PID 1 ignores SIGTERM unless it traps it: without the trap every stop waits out the
# 30 s grace period
SLEEP = "trap 'exit 143' TERM; sleep 600 & wait"


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    yield from module_client()


@pytest.fixture(scope="module")
def ns(client: Any) -> Iterator[str]:
    with namespace(client) as name:
        yield name


@pytest.fixture
def sched(client: Any) -> Any:
    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    return create_scheduler("test", client=client)


def cfg(ns: str, **extra: Any) -> dict[str, Any]:
    return {"mode": "plain", "namespace": ns, "rank0_address": "pod_ip", **extra}


def sh_app(name: str, script: str, replicas: int = 1, role: str = "main") -> AppDef:
    return AppDef(
        name=name,
        roles=[
            Role(
                name=role,
                image=IMAGE,
                entrypoint="sh",
                args=["-c", script],
                num_replicas=replicas,
                resource=SMALL,
            )
        ],
    )


def wait_state(sched: Any, app_id: str, done: Any = is_terminal, timeout: float = 180) -> Any:
    def check() -> Any:
        resp = sched.describe(app_id)
        return resp if resp is not None and done(resp.state) else None

    return wait_until(f"{app_id} to reach the expected state", check, timeout)


def app_name(app_id: str) -> str:
    return app_id.split(":", 1)[1]


def _listed_end(sched: Any, ns: str, app_id: str) -> Any:
    state = {a.app_id: a.state for a in sched.list({"namespace": ns})}.get(app_id)
    return state if state is not None and is_terminal(state) else None


def test_success_logs_list_and_delete(sched: Any, client: Any, ns: str) -> None:
    app_id = sched.submit(sh_app("hello", "echo hello; echo; echo world"), cfg(ns))
    assert app_id.startswith(f"{ns}:hello-")

    resp = wait_state(sched, app_id)
    assert resp.state == AppState.SUCCEEDED, resp
    (role,) = resp.roles_statuses
    assert [(r.id, r.state) for r in role.replicas] == [(0, AppState.SUCCEEDED)]
    assert role.replicas[0].hostname  # the pod IP
    assert [(r.name, r.image, r.num_replicas) for r in resp.roles] == [("main", IMAGE, 1)]

    assert list(sched.log_iter(app_id, "main", 0)) == ["hello\n", "\n", "world\n"]
    assert list(sched.log_iter(app_id, "main", 0, regex="^w")) == ["world\n"]
    # list reads the Jobs only: on 1.35 their counts trail the pods by a moment
    listed = wait_until("list to show the app's end", lambda: _listed_end(sched, ns, app_id), 30)
    assert listed == AppState.SUCCEEDED

    sched.delete(app_id)
    wait_until("the app's objects to go", lambda: not leftovers(client, ns, app_name(app_id)))
    assert sched.describe(app_id) is None
    assert app_id not in {a.app_id for a in sched.list({"namespace": ns})}


def test_failed_replica_fails_app_and_enforce_fail_fast_stops_the_others(
    sched: Any, client: Any, ns: str
) -> None:
    script = (
        'if [ "${replica_id}" = 1 ]; then echo "about to fail" >&2; exit 3; fi; '
        f"echo waiting; {SLEEP}"
    )
    app_id = sched.submit(sh_app("failfast", script, replicas=2, role="worker"), cfg(ns))
    resp = wait_state(sched, app_id)
    assert resp.state == AppState.FAILED, resp
    error = json.loads(resp.structured_error_msg)
    assert error["errorCode"] == 3
    assert "about to fail" in error["message"]
    assert "worker[1] exited with code 3" in resp.msg

    def replica0_pods() -> list[str]:
        pods = leftovers(client, ns, app_name(app_id)).get("pods", [])
        return [p for p in pods if "-worker-0-" in p]

    # describe is a read: replica 0 (sleeping for 10 minutes) is left alone
    for _ in range(3):
        resp = sched.describe(app_id)
        states = {r.id: r.state for r in resp.roles_statuses[0].replicas}
        assert states[1] == AppState.FAILED
        assert not is_terminal(states[0]), states
    assert replica0_pods()
    sched.wait_for_change(app_id, 60)  # the app is terminal: returns without waiting for a pod

    sched.enforce_fail_fast(app_id)
    states = {r.id: r.state for r in sched.describe(app_id).roles_statuses[0].replicas}
    assert states == {0: AppState.CANCELLED, 1: AppState.FAILED}
    wait_until("replica 0's pod to be stopped", lambda: not replica0_pods())
    sched.enforce_fail_fast(app_id)  # idempotent
    assert sched.describe(app_id).state == AppState.FAILED
    sched.delete(app_id)
    wait_until("the app's objects to go", lambda: not leftovers(client, ns, app_name(app_id)))


def test_runner_wait_returning_failed_stops_the_other_replicas(client: Any, ns: str) -> None:
    from torchx.runner import get_runner

    script = f'if [ "${{replica_id}}" = 1 ]; then sleep 2; exit 3; fi; {SLEEP}'
    with get_runner() as runner:
        handle = runner.run(sh_app("waitff", script, replicas=2), "kubernetes", cfg(ns))
        name = app_name(handle.rsplit("/", 1)[1])
        try:
            status = runner.wait(handle, wait_interval=5)
            assert status is not None and status.state == AppState.FAILED
            replicas = {r.id: r.state for r in status.roles[0].replicas}
            assert replicas[1] == AppState.FAILED
            # wait stopped replica 0 before returning; Kubernetes then deletes its pod
            stopped = runner.status(handle)
            assert stopped is not None
            assert {r.id: r.state for r in stopped.roles[0].replicas}[0] == AppState.CANCELLED
            wait_until(
                "replica 0's pod to go",
                lambda: (
                    not [p for p in leftovers(client, ns, name).get("pods", []) if "-main-0-" in p]
                ),
            )
        finally:
            runner.delete(handle)


def test_enforce_fail_fast_leaves_an_app_that_did_not_fail_alone(sched: Any, ns: str) -> None:
    app_id = sched.submit(sh_app("healthy", f"echo up; {SLEEP}", replicas=2), cfg(ns))

    def running() -> bool:
        resp = sched.describe(app_id)
        return resp is not None and resp.state == AppState.RUNNING

    wait_until("the app to run", running)
    sched.enforce_fail_fast(app_id)
    resp = sched.describe(app_id)
    assert resp.state == AppState.RUNNING
    assert all(not is_terminal(r.state) for r in resp.roles_statuses[0].replicas)
    sched.delete(app_id)


def test_cancel_stops_pods_then_delete_leaves_nothing(sched: Any, client: Any, ns: str) -> None:
    app_id = sched.submit(sh_app("sleeper", f"echo up; {SLEEP}", replicas=2), cfg(ns))

    def all_running() -> bool:
        resp = sched.describe(app_id)
        states = [r.state for rs in resp.roles_statuses for r in rs.replicas] if resp else []
        return states == [AppState.RUNNING] * 2

    # (a pod stopped while its container is still being created waits out its grace period)
    wait_until("both replicas to run", all_running)
    sched.cancel(app_id)
    resp = sched.describe(app_id)
    assert resp is not None and resp.state == AppState.CANCELLED
    name = app_name(app_id)
    wait_until("the pods to stop", lambda: "pods" not in leftovers(client, ns, name))
    # cancel keeps the Jobs and the Service, so the app still reads CANCELLED
    assert set(leftovers(client, ns, name)) == {"jobs", "services"}
    assert sched.describe(app_id).state == AppState.CANCELLED
    sched.cancel(app_id)  # idempotent
    sched.delete(app_id)
    wait_until("the app's objects to go", lambda: not leftovers(client, ns, name))
    assert sched.describe(app_id) is None


def test_tailing_keeps_lines_whole_and_since_filters(sched: Any, ns: str) -> None:
    # a line written in two pieces a second apart must come out once, whole
    script = "printf 'par'; sleep 1; printf 'tial\\n'; echo loss=1; sleep 1; echo loss=2"
    started = datetime.now()
    app_id = sched.submit(sh_app("tail", script), cfg(ns))
    lines = list(sched.log_iter(app_id, "main", 0, should_tail=True))
    assert lines == ["partial\n", "loss=1\n", "loss=2\n"]
    assert wait_state(sched, app_id).state == AppState.SUCCEEDED
    assert list(sched.log_iter(app_id, "main", 0, regex="loss")) == ["loss=1\n", "loss=2\n"]
    assert list(sched.log_iter(app_id, "main", 0, since=started - timedelta(minutes=1))) == lines
    assert (
        list(sched.log_iter(app_id, "main", 0, since=datetime.now() + timedelta(seconds=5))) == []
    )
    with pytest.raises(ValueError, match="no replica main/7"):
        list(sched.log_iter(app_id, "main", 7))
    sched.delete(app_id)


def test_torchx_cli_runs_logs_and_lists(ns: str, client: Any, tmp_path: Path) -> None:
    from _support import run_torchx

    opts = f"mode=plain,namespace={ns},rank0_address=pod_ip"
    # `torchx run` builds the cwd into the image (a workspace) for kubernetes, as TorchX does;
    # from an empty directory the image is used as it is (the engine is still asked about it)
    empty = tmp_path / "empty"
    empty.mkdir()
    run = run_torchx(
        "run", "-s", "kubernetes", "--workspace", "", "-cfg", opts, "utils.sh", "--image", IMAGE,
        "sh", "-c", "echo one; echo two",
        env={"DOCKER_HOST": docker_env()["DOCKER_HOST"]}, cwd=empty,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    handle = run.stdout.strip().splitlines()[-1]
    assert handle.startswith("kubernetes://torchx/")
    status = run_torchx("status", handle)
    assert status.returncode == 0, status.stderr
    wait_until("the app to finish", lambda: "SUCCEEDED" in run_torchx("status", handle).stdout)
    log = run_torchx("log", f"{handle}/sh/0")
    assert log.returncode == 0, log.stderr
    assert log.stdout.splitlines()[-2:] == ["sh/0 one", "sh/0 two"]
    # without a role: every replica of every role the app has
    assert run_torchx("log", handle).stdout.splitlines()[-2:] == ["sh/0 one", "sh/0 two"]
    listed = run_torchx("list", "-s", "kubernetes", "-cfg", f"namespace={ns}")
    assert handle.rsplit("/", 1)[-1] in listed.stdout
    assert run_torchx("delete", handle).returncode == 0


def test_server_side_validation_rejects_a_bad_spec(sched: Any, ns: str) -> None:
    bad = sh_app("bad", "true")
    bad.roles[0].port_map = {"c10d": 99999}  # not a valid container port
    with pytest.raises(ValueError, match="Invalid job spec"):
        sched.submit_dryrun(bad, cfg(ns))
    # the same spec passes without validation (nothing is stored either way)
    sched.submit_dryrun(bad, cfg(ns, validate_spec=False))
