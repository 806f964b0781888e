"""The conformance suite (``torchx.testing.SchedulerTestSuite``) over the local Slurm, for real.

Each app is one heterogeneous job on ``scripts/infra/slurm.sh``'s cluster; its replicas write
their logs in a per-test ``job_dir``. Slurm keeps a job's record after ``delete`` (it only ends
it), and a retry requeues the whole job, which Slurm starts again after ``cred_expire`` seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from torchx.schedulers.slurm_scheduler import SlurmScheduler, create_scheduler
from torchx.specs.api import CfgVal
from torchx.testing import SchedulerTestSuite

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]


class TestSlurmScheduler(SchedulerTestSuite):
    delete_removes = False

    @pytest.fixture(autouse=True)
    def _job_dirs(self, tmp_path: Path) -> None:
        self._tmp = tmp_path
        self._n = 0

    def create_scheduler(self) -> SlurmScheduler:
        return create_scheduler("test")

    def cfg(self) -> dict[str, CfgVal]:
        self._n += 1
        return {"job_dir": str(self._tmp / f"job{self._n}")}

    def test_job_dir_holds_the_script_and_the_logs(self) -> None:
        app_id = self.submit("echo")
        self.wait_terminal(app_id)
        job_dir = self._tmp / f"job{self._n}"
        assert (job_dir / "torchx-sbatch.sh").read_text().startswith("#!/bin/bash")
        assert (job_dir / f"slurm-{app_id}-echo-1.out").read_text() == "hello 1\n"
        assert (job_dir / f"slurm-{app_id}-echo-1.err").read_text() == "oops 1\n"

    def test_replicas_are_heterogeneous_components(self, **_: Any) -> None:
        app_id = self.submit("sleep")
        desc = self.wait_running(app_id)
        replicas = [r for rs in desc.roles_statuses for r in rs.replicas]
        assert sorted(r.id for r in replicas) == [0, 1]
        assert all(r.hostname for r in replicas), replicas  # the node each component runs on
        self.scheduler.cancel(app_id)
        assert self.wait_terminal(app_id).state.name == "CANCELLED"
