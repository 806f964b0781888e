"""App labels: LaunchRequest(labels=...) -> AppDef.metadata -> scheduler labels -> find_apps.

Live on the local Docker engine and the local Kubernetes cluster (plain mode): two apps with
different labels, and ``find_apps`` returns exactly the one whose labels match.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from torchx.runner.launch import LaunchRequest, build_app
from torchx.schedulers.labels import LABEL_PREFIX, check_label_key, label_value

BUSYBOX = "torchx-flow/busybox:latest"
K8S_IMAGE = "torchx-flow/python:3.11"  # not `latest`: the kubelet never pulls it
VALID = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$")


@pytest.mark.parametrize(
    "value",
    [
        "manual__2025-01-01T00:00:00+00:00",
        "scheduled__2025-01-01T00:00:00.123456+00:00",
        "-leading and trailing-",
        "x" * 200,
        "ünïcode/ids",
        "::",
    ],
)
def test_label_values_are_made_valid_and_stay_distinct(value: str) -> None:
    safe = label_value(value)
    assert VALID.match(safe), safe
    assert safe == label_value(value)  # deterministic: a later try computes the same value
    assert safe != label_value(value + "x")


def test_valid_label_values_are_kept_as_they_are() -> None:
    for value in ("train", "my_dag.v2", "0", "a-b_c"):
        assert label_value(value) == value
    assert label_value(3) == "3"
    assert label_value("") == ""
    assert VALID.match(label_value(-1))  # a map index of -1 starts with `-`: changed, valid


def test_bad_label_keys_are_refused_with_the_rule() -> None:
    with pytest.raises(ValueError, match=r"app label key 'run id' is invalid: use 1-63"):
        check_label_key("run id")
    with pytest.raises(ValueError, match="app label key"):
        LaunchRequest(component="utils.echo", labels={"-x": "1"})


def test_labels_go_into_the_app_metadata_with_safe_values() -> None:
    request = LaunchRequest(
        component="utils.echo", labels={"run": "manual__2025-01-01T00:00:00+00:00", "task": "t"}
    )
    app = build_app(request)
    assert app.metadata[LABEL_PREFIX + "task"] == "t"
    run = app.metadata[LABEL_PREFIX + "run"]
    assert VALID.match(run) and run.startswith("manual__2025-01-01T00-00-00")


def _launch_pair(runner: Any, scheduler: str, cfg: dict[str, Any], image: str) -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    handles = []
    for task in ("train", "eval"):
        request = LaunchRequest(
            component="utils.sh",
            component_args=["--image", image, "sleep", "60"],
            scheduler=scheduler,
            cfg=cfg,
            labels={"test-run": tag, "task": task},
        )
        handles.append(runner.launch(request))
    return handles[0], handles[1]


@pytest.fixture
def runner() -> Iterator[Any]:
    from torchx.runner import get_runner

    with get_runner() as r:
        yield r


@pytest.mark.docker
def test_docker_apps_are_found_by_their_labels(runner: Any) -> None:
    from torchx.runner.labels import find_apps, supports_labels

    assert supports_labels(runner, "local_docker") and not supports_labels(runner, "local_cwd")
    train, other = _launch_pair(runner, "local_docker", {}, BUSYBOX)
    try:
        labels = runner._scheduler("local_docker").describe(train.rpartition("/")[2]).metadata
        run = labels[LABEL_PREFIX + "test-run"]
        found = find_apps(runner, "local_docker", {"test-run": run, "task": "train"})
        assert [f.app_handle for f in found] == [train]
        assert found[0].labels == {"test-run": run, "task": "train"}
        assert found[0].state.name in ("SUBMITTED", "PENDING", "RUNNING")
        both = find_apps(runner, "local_docker", {"test-run": run})
        assert {f.app_handle for f in both} == {train, other}
        assert find_apps(runner, "local_docker", {"test-run": run, "task": "nope"}) == []
        runner.cancel(train)
        (found,) = find_apps(runner, "local_docker", {"test-run": run, "task": "train"})
        assert found.state.name == "CANCELLED"
    finally:
        for handle in (train, other):
            runner.delete(handle)


@pytest.mark.k8s
def test_kubernetes_plain_apps_are_found_by_their_labels(runner: Any) -> None:
    from _k8s_live import api_client, namespace

    from torchx.runner.labels import find_apps, supports_labels

    assert supports_labels(runner, "kubernetes")
    client = api_client()
    with namespace(client) as ns:
        cfg = {"namespace": ns, "mode": "plain"}
        train, other = _launch_pair(runner, "kubernetes", cfg, K8S_IMAGE)
        desc = runner._scheduler("kubernetes").describe(train.rpartition("/")[2])
        run = desc.metadata[LABEL_PREFIX + "test-run"]
        found = find_apps(
            runner, "kubernetes", {"test-run": run, "task": "train"}, {"namespace": ns}
        )
        assert [f.app_handle for f in found] == [train]
        assert found[0].labels["task"] == "train"
        both = find_apps(runner, "kubernetes", {"test-run": run}, {"namespace": ns})
        assert {f.app_handle for f in both} == {train, other}
        assert find_apps(runner, "kubernetes", {"test-run": "x"}, {"namespace": ns}) == []


# ------------------------------------------------------------------ labels added after launch


def test_set_app_labels_needs_a_scheduler_with_labels(runner: Any) -> None:
    from torchx.runner.labels import set_app_labels

    with pytest.raises(ValueError, match="scheduler `local_cwd` does not support app labels"):
        set_app_labels(runner, "local_cwd://s/app-1", {"processed": "true"})


@pytest.mark.docker
def test_docker_labels_added_after_launch_are_found_and_go_with_the_app(runner: Any) -> None:
    from torchx.runner.labels import find_apps, set_app_labels
    from torchx.schedulers._docker._marks import LABEL_LABELS_OF

    train, other = _launch_pair(runner, "local_docker", {}, BUSYBOX)
    sched = runner._scheduler("local_docker")
    app_id = train.rpartition("/")[2]
    try:
        run = sched.describe(app_id).metadata[LABEL_PREFIX + "test-run"]
        set_app_labels(runner, train, {"processed": "true"})
        assert sched.describe(app_id).metadata[LABEL_PREFIX + "processed"] == "true"
        both = {f.app_handle: f for f in find_apps(runner, "local_docker", {"test-run": run})}
        assert both[train].labels["processed"] == "true" and "processed" not in both[other].labels
        kept = find_apps(runner, "local_docker", {"test-run": run}, without=["processed"])
        assert [f.app_handle for f in kept] == [other]
        # the first label wanted is only on the marker: the app is found all the same
        (found,) = find_apps(runner, "local_docker", {"processed": "true", "test-run": run})
        assert found.app_handle == train and found.labels["task"] == "train"
        set_app_labels(runner, train, {"processed": "again"})  # a new value replaces the old
        assert sched.describe(app_id).metadata[LABEL_PREFIX + "processed"] == "again"
        assert find_apps(runner, "local_docker", {"processed": "true", "test-run": run}) == []
        runner.cancel(train)  # the cancel marker and the label marker live side by side
        (found,) = find_apps(runner, "local_docker", {"test-run": run, "task": "train"})
        assert found.state.name == "CANCELLED" and found.labels["processed"] == "again"
        runner.delete(train)
        assert sched._engine.markers(f"{LABEL_LABELS_OF}={app_id}") == []  # gone with the app
        with pytest.raises(ValueError, match=f"local_docker app `{app_id}` does not exist"):
            set_app_labels(runner, train, {"processed": "true"})
    finally:
        for handle in (train, other):
            runner.delete(handle)


@pytest.mark.k8s
def test_kubernetes_labels_added_after_launch_are_found(runner: Any) -> None:
    from _k8s_live import api_client, namespace

    from torchx.runner.labels import find_apps, set_app_labels

    with namespace(api_client()) as ns:
        cfg = {"namespace": ns, "mode": "plain"}
        train, other = _launch_pair(runner, "kubernetes", cfg, K8S_IMAGE)
        sched = runner._scheduler("kubernetes")
        run = sched.describe(train.rpartition("/")[2]).metadata[LABEL_PREFIX + "test-run"]
        set_app_labels(runner, train, {"processed": "true"})
        where = {"namespace": ns}
        (found,) = find_apps(runner, "kubernetes", {"processed": "true"}, where)
        assert found.app_handle == train and found.labels["test-run"] == run
        kept = find_apps(runner, "kubernetes", {"test-run": run}, where, without=["processed"])
        assert [f.app_handle for f in kept] == [other]
        runner.delete(train)
        with pytest.raises(ValueError, match="does not exist"):
            set_app_labels(runner, train, {"processed": "true"})
