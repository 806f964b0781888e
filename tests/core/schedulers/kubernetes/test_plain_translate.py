"""Plain mode's dry run (``mode=plain``): the Service and the per-replica Jobs, no cluster needed."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

pytest.importorskip("kubernetes")

from torchx.schedulers._kubernetes.plain import RANK0_IP_PLACEHOLDER, fill_rank0_ip
from torchx.schedulers.kubernetes_scheduler import create_scheduler
from torchx.specs.api import AppDef, InvalidRunConfigException, Resource, Role, macros

CFG = {"mode": "plain", "validate_spec": False, "namespace": "ml"}


def app(replicas: int = 2, roles: int = 1, name: str = "trainer") -> AppDef:
    return AppDef(
        name=name,
        roles=[
            Role(
                name=f"role{r}" if r else "trainer",
                image="img:1",
                entrypoint="sh",
                args=["-c", f"echo {macros.replica_id} {macros.rank0_env}"],
                num_replicas=replicas,
                resource=Resource(cpu=1, gpu=0, memMB=2048),
                port_map={"c10d": 29500},
                max_retries=2,
            )
            for r in range(roles)
        ],
    )


def dryrun(a: AppDef, **cfg: Any) -> tuple[Any, list[dict[str, Any]]]:
    info = create_scheduler("test").submit_dryrun(a, {**CFG, **cfg})
    return info.request.resource, list(yaml.safe_load_all(str(info.request)))


def env_of(job: dict[str, Any]) -> dict[str, str]:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value") for e in container["env"]}


def test_one_job_per_replica_and_a_headless_service() -> None:
    request, docs = dryrun(app(replicas=2, roles=2))
    service, *jobs = docs
    app_id = request.app_id
    assert service["kind"] == "Service" and service["metadata"]["name"] == app_id
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"] == {"app.kubernetes.io/instance": app_id}
    assert [j["metadata"]["name"] for j in jobs] == [
        f"{app_id}-trainer-0",
        f"{app_id}-trainer-1",
        f"{app_id}-role1-0",
        f"{app_id}-role1-1",
    ]
    for job in jobs:
        assert job["apiVersion"] == "batch/v1" and job["metadata"]["namespace"] == "ml"
        spec = job["spec"]
        assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 2)
        pod = spec["template"]["spec"]
        assert pod["subdomain"] == app_id and pod["restartPolicy"] == "Never"
        assert pod["hostname"] == job["metadata"]["name"][len(app_id) + 1 :]
        labels = spec["template"]["metadata"]["labels"]
        assert labels["app.kubernetes.io/instance"] == app_id
        assert labels["torchx.pytorch.org/kubernetes-mode"] == "plain"
        assert pod["containers"][0]["terminationMessagePolicy"] == "FallbackToLogsOnError"


def test_rank_and_rank0_host_per_replica_with_dns() -> None:
    request, (_, *jobs) = dryrun(app(replicas=2))
    rank0 = f"trainer-0.{request.app_id}.ml.svc"
    commands = [j["spec"]["template"]["spec"]["containers"][0]["command"] for j in jobs]
    assert commands == [
        ["sh", "-c", "echo 0 TORCHX_RANK0_HOST"],
        ["sh", "-c", "echo 1 TORCHX_RANK0_HOST"],
    ]
    assert env_of(jobs[0])["TORCHX_RANK0_HOST"] == "localhost"
    assert env_of(jobs[1])["TORCHX_RANK0_HOST"] == rank0
    assert env_of(jobs[1])["TORCHX_IMAGE"] == "img:1"
    assert "PET_LOCAL_ADDR" not in env_of(jobs[1])  # with DNS, torchrun's FQDN resolves


def test_pod_ip_mode_leaves_a_placeholder_filled_at_submit() -> None:
    request, (_, *jobs) = dryrun(app(replicas=2), rank0_address="pod_ip")
    assert env_of(jobs[0])["TORCHX_RANK0_HOST"] == "localhost"
    assert env_of(jobs[1])["TORCHX_RANK0_HOST"] == RANK0_IP_PLACEHOLDER
    # torchrun advertises the pod IP to its peers (no DNS for its FQDN)
    (container,) = jobs[1]["spec"]["template"]["spec"]["containers"]
    (local_addr,) = [e for e in container["env"] if e["name"] == "PET_LOCAL_ADDR"]
    assert local_addr["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    fill_rank0_ip(request.jobs[1], "172.17.0.5")
    env = {e.name: e.value for e in request.jobs[1].spec.template.spec.containers[0].env}
    assert env["TORCHX_RANK0_HOST"] == "172.17.0.5"


def test_bad_rank0_address_and_long_names_are_one_clear_error() -> None:
    with pytest.raises(InvalidRunConfigException, match="rank0_address.*dns, pod_ip"):
        dryrun(app(), rank0_address="ip")
    with pytest.raises(ValueError, match="exceeds the 63 character limit.*shorten"):
        dryrun(app(name="x" * 50))


def test_plain_mode_needs_no_queue_and_keeps_pod_settings() -> None:
    _, (_, job, _) = dryrun(app(), tolerations=["gpu:NoSchedule"], service_account="sa")
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "sa"
    assert pod["tolerations"] == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    resources = pod["containers"][0]["resources"]
    assert resources["limits"] == {"cpu": "1000m", "memory": "2048M"}
    assert resources["requests"] == {"cpu": "900m", "memory": "1024M"}


def test_job_id_env_is_the_apps_real_handle() -> None:
    # the runner sets TORCHX_JOB_ID=kubernetes://torchx/${app_id}; a scheduler dry run alone does not
    info = create_scheduler("test").submit_dryrun(
        AppDef(
            name="trainer",
            roles=[
                Role(
                    name="trainer",
                    image="img:1",
                    entrypoint="sh",
                    env={"TORCHX_JOB_ID": f"kubernetes://torchx/{macros.app_id}"},
                )
            ],
        ),
        CFG,
    )
    (_, job) = yaml.safe_load_all(str(info.request))
    assert env_of(job)["TORCHX_JOB_ID"] == f"kubernetes://torchx/ml:{info.request.resource.app_id}"
