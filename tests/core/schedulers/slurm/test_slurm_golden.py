"""Golden dry runs: the ``sbatch`` command and script of the slurm scheduler for fixed AppDefs.

The dry run is byte-stable (no random id, no version, no time). Regenerate after an intended
change with ``make goldens`` and review the diff.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Optional

import pytest
from _golden import check_golden

from torchx.components.dist import ddp
from torchx.schedulers.slurm_scheduler import SlurmClient, SlurmScheduler
from torchx.specs.api import AppDef, CfgVal, Resource, Role, macros

GOLDEN = Path(__file__).parent / "golden"


class NoSinfo(SlurmClient):
    """A client whose partitions have ``memmb`` MB (no Slurm command runs)."""

    def __init__(self, memmb: Optional[int] = 4096) -> None:
        self.memmb = memmb

    def partition_memmb(self, partition: Optional[str]) -> Optional[int]:
        return self.memmb


def kitchen_sink() -> AppDef:
    trainer = Role(
        "trainer",
        image="/shared/code",
        entrypoint="python",
        args=[
            "-m", "train", "--run", f"{macros.app_id}-{macros.replica_id}",
            "--root", macros.img_root, "--master", f"$${{{macros.rank0_env}}}",
            "it's; $(not run)",
        ],
        env={"OMP_NUM_THREADS": "2", "TAGS": "a,b c", "RUN": f"run-{macros.app_id}"},
        num_replicas=2,
        resource=Resource(cpu=4, gpu=2, memMB=8192),
    )  # fmt: skip
    ps = Role(
        "ps",
        image="/shared/code",
        entrypoint="sh",
        args=["-c", 'echo "ps on $SLURM_JOB_NODELIST_HET_GROUP_0"'],
        resource=Resource(cpu=1, gpu=0, memMB=512),
    )
    return AppDef("kitchen", roles=[trainer, ps])


def ddp_2x1() -> AppDef:
    return ddp("--steps", "10", script="train.py", j="2x1", cpu=1, memMB=1024, name="ddp")


CASES: dict[str, tuple[Callable[[], AppDef], dict[str, CfgVal], Optional[int]]] = {
    "kitchen_sink": (
        kitchen_sink,
        {
            "account": "ml",
            "partition": "gpu",
            "time": "1:00:00",
            "comment": "nightly run",
            "constraint": "a100",
            "mail-user": "me@example.com",
            "mail-type": "END,FAIL",
            "qos": "high",
            "exclusive": True,
            "job_dir": "/shared/jobs/k1",
        },
        4096,
    ),
    "small_partition_nomem": (kitchen_sink, {}, 1000),
    "ddp_2x1": (ddp_2x1, {}, None),
}


def render(name: str) -> str:
    make, cfg, memmb = CASES[name]
    scheduler = SlurmScheduler("test", client=NoSinfo(memmb))
    return str(scheduler.submit_dryrun(make(), cfg))


@pytest.mark.parametrize("name", sorted(CASES))
def test_dryrun_matches_golden(name: str) -> None:
    path = GOLDEN / f"{name}.txt"
    text = render(name)
    check_golden(path, text)


def test_dryrun_is_byte_stable() -> None:
    assert render("kitchen_sink") == render("kitchen_sink")
