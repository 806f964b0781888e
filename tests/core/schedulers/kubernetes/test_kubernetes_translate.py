"""Unit tests of the AppDef -> Volcano Job translation (no cluster: validate_spec=False)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from _k8s_apps import kitchen_sink

from torchx.schedulers import kubernetes_scheduler as ks
from torchx.schedulers._kubernetes.extras import parse_toleration
from torchx.schedulers._kubernetes.names import clean_label, rank0_env_name
from torchx.schedulers._kubernetes.request import sanitize_for_serialization
from torchx.specs.api import (
    AppDef,
    DeviceMount,
    InvalidRunConfigException,
    Resource,
    RetryPolicy,
    Role,
    macros,
)
from torchx.specs.overlays import DEL, set_overlay


def _role(**kw: Any) -> Role:
    base: dict[str, Any] = {
        "name": "trainer",
        "image": "img",
        "entrypoint": "run",
        "resource": Resource(cpu=1, gpu=0, memMB=2048),
    }
    return Role(**{**base, **kw})


def _dryrun(app: AppDef, **cfg: Any) -> dict[str, Any]:
    scheduler = ks.create_scheduler("test")
    info = scheduler.submit_dryrun(app, {"queue": "q", "validate_spec": False, **cfg})
    data: dict[str, Any] = sanitize_for_serialization(info.request.resource)
    return data


def _containers(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [t["template"]["spec"]["containers"][0] for t in job["spec"]["tasks"]]


def test_one_task_per_replica_with_replica_macros() -> None:
    role = _role(num_replicas=3, args=["--id", macros.replica_id, "--app", macros.app_id])
    job = _dryrun(AppDef("app", [role]))
    name = job["metadata"]["name"]
    assert [t["name"] for t in job["spec"]["tasks"]] == ["trainer-0", "trainer-1", "trainer-2"]
    assert all(t["replicas"] == 1 for t in job["spec"]["tasks"])
    commands = [c["command"] for c in _containers(job)]
    assert commands == [["run", "--id", str(i), "--app", name] for i in range(3)]


def test_job_name_is_normalized_unique_app_name() -> None:
    job = _dryrun(AppDef("My_App.v2", [_role()]))
    assert job["metadata"]["name"].startswith("myappv2-")
    other = _dryrun(AppDef("My_App.v2", [_role()]))
    assert other["metadata"]["name"] != job["metadata"]["name"]


def test_make_unique_is_late_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ks, "make_unique", lambda name: f"{name}-fixed")
    assert _dryrun(AppDef("app", [_role()]))["metadata"]["name"] == "app-fixed"


def test_role_to_pod_is_late_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = ks.role_to_pod

    def spy(name: str, role: Role, *args: Any) -> Any:
        seen.append(name)
        return real(name, role, *args)

    monkeypatch.setattr(ks, "role_to_pod", spy)
    _dryrun(AppDef("app", [_role(num_replicas=2)]))
    assert seen == ["trainer-0", "trainer-1"]


def test_rank0_env_and_torchx_env() -> None:
    roles = [
        _role(name="my-master", args=[macros.rank0_env]),
        _role(name="w", args=[macros.rank0_env]),
    ]
    job = _dryrun(AppDef("app", roles))
    rank0, other = _containers(job)
    assert rank0["command"] == ["run", "TORCHX_RANK0_HOST"]
    # Volcano's svc plugin turns "-" into "_" (TorchX produced VC_MY-MASTER_0_HOSTS)
    assert other["command"] == ["run", "VC_MY_MASTER_0_HOSTS"]
    assert {"name": "TORCHX_RANK0_HOST", "value": "localhost"} in rank0["env"]
    assert all(e["name"] != "TORCHX_RANK0_HOST" for e in other["env"])
    assert {"name": "TORCHX_IMAGE", "value": "img"} in other["env"]
    assert rank0_env_name("trainer") == "VC_TRAINER_0_HOSTS"


def test_job_id_env_is_the_apps_handle_with_its_namespace() -> None:
    # the runner sets TORCHX_JOB_ID=kubernetes://torchx/${app_id}; the handle's app id is
    # `{namespace}:{name}` (TorchX left the namespace out, so the value named no app)
    role = _role(env={"TORCHX_JOB_ID": f"kubernetes://torchx/{macros.app_id}"}, num_replicas=2)
    job = _dryrun(AppDef("app", [role]), namespace="ml")
    name = job["metadata"]["name"]
    for container in _containers(job):
        assert {"name": "TORCHX_JOB_ID", "value": f"kubernetes://torchx/ml:{name}"} in container[
            "env"
        ]
    # TorchX's signature alone (no namespace) keeps TorchX's value
    plain = ks.app_to_resource(AppDef("app", [role]), "q", None)
    env = plain["spec"]["tasks"][0]["template"].spec.containers[0].env
    value = next(e.value for e in env if e.name == "TORCHX_JOB_ID")
    assert value == f"kubernetes://torchx/{plain['metadata']['name']}"


def test_field_path_keeps_the_whole_path() -> None:
    role = _role(env={"IP": "[FIELD_PATH]status.podIP", "HOST": "[FIELD_PATH]spec.nodeName"})
    env = _containers(_dryrun(AppDef("app", [role])))[0]["env"]
    assert env[0] == {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    assert env[1] == {"name": "HOST", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}


@pytest.mark.parametrize(
    ("cpu", "mem", "reserved", "limits", "requests"),
    [
        (2, 4096, {}, {"cpu": "2000m", "memory": "4096M"}, {"cpu": "1900m", "memory": "3072M"}),
        (0.05, 512, {}, {"cpu": "50m", "memory": "512M"}, {"cpu": "0m", "memory": "0M"}),
        (
            1,
            2048,
            {"reserved_millicpu": 0, "reserved_memmb": 0},
            {"cpu": "1000m", "memory": "2048M"},
            {"cpu": "1000m", "memory": "2048M"},
        ),
        (0, 0, {}, {}, {}),
    ],
)
def test_resources_reserve_rules(
    cpu: float, mem: int, reserved: dict[str, int], limits: dict[str, str], requests: dict[str, str]
) -> None:
    role = _role(resource=Resource(cpu=cpu, gpu=0, memMB=mem))  # type: ignore[arg-type]
    resources = _containers(_dryrun(AppDef("app", [role]), **reserved))[0]["resources"]
    assert resources == {"limits": limits, "requests": requests}


def test_gpu_and_devices() -> None:
    res = Resource(cpu=0, gpu=4, memMB=0, devices={"vpc.amazonaws.com/efa": 2, "x.io/fpga": 1})
    for efa, expected in ((None, "2"), (0, None), (8, "8")):
        cfg = {} if efa is None else {"efa_device_count": efa}
        got = _containers(_dryrun(AppDef("app", [_role(resource=res)]), **cfg))[0]["resources"]
        assert got["requests"] == {"nvidia.com/gpu": "4"}
        assert got["limits"]["nvidia.com/gpu"] == "4" and got["limits"]["x.io/fpga"] == "1"
        assert got["limits"].get("vpc.amazonaws.com/efa") == expected


def test_node_selector_from_instance_type_capability() -> None:
    res = Resource(cpu=1, gpu=0, memMB=1, capabilities={"node.kubernetes.io/instance-type": "m5"})
    spec = _dryrun(AppDef("app", [_role(resource=res)]))["spec"]["tasks"][0]["template"]["spec"]
    assert spec["nodeSelector"] == {"node.kubernetes.io/instance-type": "m5"}


def test_device_mount_permissions_and_privilege() -> None:
    mounts = [DeviceMount("/dev/a", "/dev/a", "rw"), DeviceMount("/dev/b", "/dev/b", "r")]
    container = _containers(_dryrun(AppDef("app", [_role(mounts=mounts)])))[0]
    assert container["securityContext"] == {"privileged": True}
    assert [(m["name"], m.get("readOnly")) for m in container["volumeMounts"]] == [
        ("dshm", None),
        ("mount-0", False),
        ("mount-1", True),
    ]


def test_retry_policies() -> None:
    app = AppDef("app", [_role(max_retries=2), _role(name="b", max_retries=5)])
    with pytest.warns(UserWarning, match="volcano-sh/volcano/issues/1651"):
        job = _dryrun(app)
    assert job["spec"]["maxRetry"] == 2
    assert job["spec"]["tasks"][0]["policies"] == [
        {"event": "PodEvicted", "action": "RestartJob"},
        {"event": "PodFailed", "action": "RestartJob"},
    ]
    with pytest.warns(UserWarning):
        replica = _dryrun(AppDef("app", [_role(max_retries=1, retry_policy=RetryPolicy.REPLICA)]))
    assert replica["spec"]["tasks"][0]["policies"] == []


def test_role_retry_policy_is_a_clear_value_error() -> None:
    app = AppDef("app", [_role(max_retries=1, retry_policy=RetryPolicy.ROLE)])
    with pytest.raises(
        ValueError, match=r"ROLE is not supported .* use one of: REPLICA, APPLICATION"
    ):
        _dryrun(app)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # without retries the policy is irrelevant: no warning
        _dryrun(AppDef("app", [_role(retry_policy=RetryPolicy.ROLE)]))


def test_min_replicas_sets_min_available() -> None:
    job = _dryrun(AppDef("app", [_role(num_replicas=3, min_replicas=2)]))
    assert [t["minAvailable"] for t in job["spec"]["tasks"]] == [1, 1, 0]
    assert "minAvailable" not in _dryrun(AppDef("app", [_role()]))["spec"]["tasks"][0]


def test_job_settings() -> None:
    job = _dryrun(
        AppDef("app", [_role()]), queue="gpu", priority_class="high", service_account="sa"
    )
    assert job["spec"]["queue"] == "gpu" and job["spec"]["priorityClassName"] == "high"
    assert job["spec"]["schedulerName"] == "volcano"
    assert job["spec"]["plugins"] == {"svc": ["--publish-not-ready-addresses"], "env": []}
    assert job["spec"]["tasks"][0]["template"]["spec"]["serviceAccountName"] == "sa"
    assert "priorityClassName" not in _dryrun(AppDef("app", [_role()]))["spec"]


def test_overlay_applies_before_labels_and_can_use_operators() -> None:
    role = _role()
    set_overlay(
        role,
        "kubernetes",
        "V1Pod",
        {"metadata": {"labels": {"torchx.pytorch.org/role-name": "x", "team": "ml"}}},
    )
    set_overlay(role, "kubernetes", "V1Pod", {"spec": {DEL("volumes"): None, "hostNetwork": True}})
    template = _dryrun(AppDef("app", [role]))["spec"]["tasks"][0]["template"]
    assert template["metadata"]["labels"]["team"] == "ml"
    assert template["metadata"]["labels"]["torchx.pytorch.org/role-name"] == "trainer"
    assert template["spec"]["hostNetwork"] is True
    assert "volumes" not in template["spec"]


def test_overlay_and_runopts_tolerations_compose() -> None:
    role = _role()
    set_overlay(
        role,
        "kubernetes",
        "V1Pod",
        {"spec": {"tolerations": [{"key": "extra", "operator": "Exists"}]}},
    )
    spec = _dryrun(AppDef("app", [role]), tolerations=["a=b:NoExecute"])["spec"]["tasks"][0][
        "template"
    ]["spec"]
    assert spec["tolerations"] == [
        {"key": "a", "operator": "Equal", "value": "b", "effect": "NoExecute"},
        {"key": "extra", "operator": "Exists"},
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gpu", {"key": "gpu", "operator": "Exists"}),
        ("gpu:NoSchedule", {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}),
        ("pool=train", {"key": "pool", "operator": "Equal", "value": "train"}),
        (
            "pool=t:NoExecute",
            {"key": "pool", "operator": "Equal", "value": "t", "effect": "NoExecute"},
        ),
        (
            "pool:t:NoExecute",
            {"key": "pool", "operator": "Equal", "value": "t", "effect": "NoExecute"},
        ),
        ("pool:t:", {"key": "pool", "operator": "Equal", "value": "t"}),
    ],
)
def test_toleration_forms(text: str, expected: dict[str, str]) -> None:
    assert sanitize_for_serialization(parse_toleration(text)) == expected


def test_tolerations_through_the_cli_cfg_grammar() -> None:
    opts = ks.create_scheduler("t").run_opts()
    cfg = opts.cfg_from_str("queue=q,validate_spec=False,tolerations=gpu:NoSchedule;pool:train:")
    spec = _dryrun(AppDef("app", [_role()]), **cfg)["spec"]["tasks"][0]["template"]["spec"]
    assert spec["tolerations"] == [
        {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "pool", "operator": "Equal", "value": "train"},
    ]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("=v:NoSchedule", "has no key"),
        ("k:NoSchedul", "did you mean `NoSchedule`"),
        ("k:Bogus", "use one of"),
        ("k:v:NoExecut", "did you mean `NoExecute`"),
        ("a:b:c:d", "too many `:`"),
    ],
)
def test_bad_tolerations(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_toleration(text)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0.1.0", "0.1.0"),
        ("my app!", "my.app"),
        ("__x__", "x"),
        ("-a-", "a"),
        ("a" * 70, "a" * 63),
        ("a" * 62 + "-b", "a" * 62),
        ("", ""),
        ("***", ""),
    ],
)
def test_clean_label_gives_valid_label_values(value: str, expected: str) -> None:
    assert clean_label(value) == expected


def test_labels() -> None:
    labels = _dryrun(AppDef("app name", [_role(name="Role A", num_replicas=2)]))["spec"]["tasks"][
        1
    ]["template"]["metadata"]["labels"]
    assert labels["torchx.pytorch.org/app-name"] == "app.name"
    assert labels["torchx.pytorch.org/role-name"] == "Role.A"
    assert labels["torchx.pytorch.org/replica-id"] == "1"
    assert labels["torchx.pytorch.org/role-index"] == "0"
    assert labels["app.kubernetes.io/managed-by"] == "torchx.pytorch.org"


def test_pod_name_limit_checked_without_cluster() -> None:
    app = AppDef("a" * 40, [_role(name="r" * 20)])
    with pytest.raises(
        ValueError, match=r"exceeds 63 character limit\. Shorten app\.name or role names"
    ):
        _dryrun(app)


def test_no_roles_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="has no roles"):
        _dryrun(AppDef("app", []))


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({"queue": None}, "`queue` is required in volcano mode"),
        ({"mode": "kueue"}, "`mode` must be one of volcano, plain"),
        ({"reserved_memmb": -1}, "`reserved_memmb` must be >= 0"),
    ],
)
def test_bad_run_options(cfg: dict[str, Any], match: str) -> None:
    scheduler = ks.create_scheduler("test")
    full = {"queue": "q", "validate_spec": False, **cfg}
    if full["queue"] is None:
        del full["queue"]
    with pytest.raises(InvalidRunConfigException, match=match):
        scheduler.submit_dryrun(AppDef("app", [_role()]), full)


def test_runopts_keep_torchx_order_then_extras() -> None:
    opts = ks.create_scheduler("test").run_opts()
    names = [name for name, _ in opts]
    assert names[:10] == [
        "queue",
        "namespace",
        "service_account",
        "priority_class",
        "validate_spec",
        "reserved_millicpu",
        "reserved_memmb",
        "image_repo",
        "efa_device_count",
        "quiet",
    ]
    assert names[10:] == [
        "mode",
        "image_pull_secrets",
        "tolerations",
        "rank0_address",
        "image_pull_policy",
        "startup_timeout",
    ]
    assert opts.get("namespace").default == "default"  # type: ignore[union-attr]
    assert opts.get("validate_spec").default is True  # type: ignore[union-attr]


def test_dryrun_yaml_is_torchx_layout() -> None:
    with pytest.warns(UserWarning, match="restarts"):
        info = ks.create_scheduler("t").submit_dryrun(
            kitchen_sink(), {"queue": "q", "validate_spec": False}
        )
    text = str(info)
    assert text.startswith(
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n  name: kitchensink-"
    )
    assert "securityContext: {}" in text and "sidecar.istio.io/inject: 'false'" in text


def test_workspace_images_are_renamed_to_image_repo_and_planned_for_push() -> None:
    app = AppDef("app", [_role(image="sha256:abc123"), _role(name="b", image="plain:1")])
    info = ks.create_scheduler("t").submit_dryrun(
        app, {"queue": "q", "validate_spec": False, "image_repo": "registry.local/me"}
    )
    assert info.request.images_to_push == {"sha256:abc123": ("registry.local/me", "abc123")}
    images = [c["image"] for c in _containers(sanitize_for_serialization(info.request.resource))]
    assert images == ["registry.local/me:abc123", "plain:1"]
    with pytest.raises(KeyError, match="image_repo"):
        _dryrun(AppDef("app", [_role(image="sha256:abc123")]))


def test_plain_mode_also_renames_and_pushes_workspace_images() -> None:
    app = AppDef("app", [_role(image="sha256:abc123")])
    info = ks.create_scheduler("t").submit_dryrun(
        app, {"mode": "plain", "validate_spec": False, "image_repo": "registry.local/me"}
    )
    assert info.request.images_to_push == {"sha256:abc123": ("registry.local/me", "abc123")}
    assert "sha256:" not in str(info) and "image: registry.local/me:abc123" in str(info)


def test_is_a_docker_workspace_scheduler() -> None:
    from torchx.workspace.docker_workspace import DockerWorkspaceMixin

    assert isinstance(ks.create_scheduler("t"), DockerWorkspaceMixin)


def test_importing_the_scheduler_does_not_import_the_client() -> None:
    import subprocess
    import sys

    code = (
        "import sys, torchx.schedulers.kubernetes_scheduler\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'kubernetes', 'yaml', 'docker'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("names", "error"),
    [
        (
            ["data_reader", "DataReader"],
            "roles `data_reader` and `DataReader` both become task names `datareader-N`",
        ),
        (["__"], "role name `__` has no letters or digits"),
    ],
)
def test_role_names_that_cannot_be_task_names(names: list[str], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        _dryrun(AppDef("app", [_role(name=n) for n in names]))


def test_job_name_must_start_with_a_letter() -> None:
    with pytest.raises(ValueError, match="start the app name `1st-run` with a letter"):
        _dryrun(AppDef("1st-run", [_role()]))
