"""``torchx.testing.SchedulerTestSuite`` on the current cluster (1.35, CoreDNS, Kueue, JobSet), in
JobSet mode and in plain mode.

Adaptations, each for a stated reason:

- apps run in the ``default`` namespace: the suite's ``list()`` takes no run config, so it lists
  the kube context's namespace (``default`` in the local cluster's kubeconfig); every test
  deletes what it submitted;
- each pod gets ``/tmp`` from a host directory: the ``retry`` app keeps a marker file in ``/tmp``
  between attempts, and every plain-mode retry or JobSet restart makes new pods;
- CPU requests are kept small (``reserved_millicpu``), the node has 2 CPUs;
- unknown app ids are of the ``namespace:name`` form kubernetes app ids have.

Rank 0 is reached by DNS (the default ``rank0_address``), which this cluster serves.
``torchx-flow/python:3.11`` is loaded into the cluster's containerd by the start script (its tag
is not ``latest``: never pulled).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from typing import Any

import pytest
from _k8s_live import IMAGE, api_client

from torchx.schedulers.api import Scheduler
from torchx.specs.api import AppDef, BindMount, CfgVal
from torchx.testing import SchedulerTestSuite

pytestmark = [pytest.mark.k8s, pytest.mark.slow]


class _CurrentCluster(SchedulerTestSuite):
    timeout = 180.0
    supports_streams = False  # the API server keeps one combined log per container
    omit_unsupported = True
    mode = ""

    @classmethod
    def setup_class(cls) -> None:
        cls._tmp = tempfile.TemporaryDirectory(prefix=f"tx-k8s-{cls.mode}-suite-")

    @classmethod
    def teardown_class(cls) -> None:
        cls._tmp.cleanup()

    def create_scheduler(self) -> Scheduler[Any]:
        from torchx.schedulers.kubernetes_scheduler import create_scheduler

        return create_scheduler("suite", client=api_client())

    def image(self) -> str:
        return IMAGE

    def cfg(self) -> Mapping[str, CfgVal]:
        return {"mode": self.mode, "namespace": "default", "reserved_millicpu": 950}

    def make_app(self, kind: str) -> AppDef:
        app = super().make_app(kind)
        for role in app.roles:
            role.mounts.append(BindMount(src_path=self._tmp.name, dst_path="/tmp"))
        return app

    def test_unknown_app(self) -> None:
        unknown = "default:tx-no-such-app-b0b0b0"
        assert self.scheduler.describe(unknown) is None
        assert not self.scheduler.exists(unknown)
        self.scheduler.cancel(unknown)  # a no-op


class TestCurrentJobset(_CurrentCluster):
    mode = "jobset"


class TestCurrentPlain(_CurrentCluster):
    mode = "plain"
