"""Golden manifests: ``--dryrun`` YAML of the kubernetes scheduler (every mode) for fixed AppDefs.

Regenerate after an intended change with ``make goldens``
and review the diff. The random job name and the package version are replaced by placeholders.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _golden import check_golden
from _k8s_apps import ddp_2x1, kitchen_sink

from torchx.schedulers.kubernetes_scheduler import create_scheduler
from torchx.specs.api import AppDef, CfgVal, Role
from torchx.version import __version__

GOLDEN = Path(__file__).parent / "golden"


def echo_1() -> AppDef:
    return AppDef(
        name="echo",
        roles=[Role(name="echo", image="busybox:1.36", entrypoint="echo", args=["${replica_id}"])],
    )


CASES: dict[str, tuple[Callable[[], AppDef], dict[str, CfgVal]]] = {
    "volcano_ddp_2x1": (ddp_2x1, {"queue": "default"}),
    "volcano_kitchen_sink": (
        kitchen_sink,
        {
            "queue": "train-q",
            "namespace": "ml",
            "service_account": "trainer-sa",
            "priority_class": "high",
            "reserved_millicpu": 200,
            "reserved_memmb": 2048,
            "image_pull_secrets": ["regcred", "other"],
            "tolerations": ["nvidia.com/gpu:NoSchedule", "pool=train", "spot"],
        },
    ),
    "volcano_efa_removed": (kitchen_sink, {"queue": "q", "efa_device_count": 0}),
    "plain_ddp_2x1": (ddp_2x1, {"mode": "plain"}),
    "plain_kitchen_sink_pod_ip": (
        kitchen_sink,
        {
            "mode": "plain",
            "rank0_address": "pod_ip",
            "namespace": "ml",
            "service_account": "trainer-sa",
            "image_pull_secrets": ["regcred"],
            "tolerations": ["nvidia.com/gpu:NoSchedule", "spot"],
        },
    ),
    "plain_kueue_echo": (
        echo_1,
        {"mode": "plain", "queue": "team-a", "priority_class": "high", "startup_timeout": 120.0},
    ),
    "jobset_ddp_2x1": (ddp_2x1, {"mode": "jobset"}),
    "jobset_kitchen_sink_kueue": (
        kitchen_sink,
        {
            "mode": "jobset",
            "queue": "team-a",
            "priority_class": "high",
            "namespace": "ml",
            "service_account": "trainer-sa",
            "image_pull_policy": "IfNotPresent",
            "image_pull_secrets": ["regcred"],
            "tolerations": ["nvidia.com/gpu:NoSchedule"],
            "startup_timeout": 0.0,
        },
    ),
}


def render(app: AppDef, cfg: dict[str, CfgVal]) -> str:
    scheduler = create_scheduler("test")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Volcano retry warning
        info = scheduler.submit_dryrun(app, {"validate_spec": False, **cfg})
    resource: Any = info.request.resource
    job = resource["metadata"]["name"] if isinstance(resource, dict) else resource.app_id
    return str(info).replace(job, "APP_ID").replace(f": {__version__}\n", ": VERSION\n")


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_manifest(case: str) -> None:
    make_app, cfg = CASES[case]
    text = render(make_app(), cfg)
    path = GOLDEN / f"{case}.yaml"
    check_golden(path, text)
