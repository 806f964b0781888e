"""``torchx.testing.SchedulerTestSuite`` against the kubernetes scheduler in plain mode, on the
real local cluster (see ``tests/_k8s_live.py`` for what it relies on).

Adaptations, each for a stated reason:

- apps run in the ``default`` namespace: the suite's ``list()`` takes no run config, so it lists
  the kube context's namespace (``default`` in the local cluster's kubeconfig); every test
  deletes what it submitted;
- each pod gets ``/tmp`` from a host directory: the ``retry`` app keeps a marker file in ``/tmp``
  between attempts, and every plain-mode retry is a new pod;
- CPU requests are kept small (``reserved_millicpu``), the node has 2 CPUs;
- unknown app ids are of the ``namespace:name`` form kubernetes app ids have.
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


class TestKubernetesPlain(SchedulerTestSuite):
    timeout = 180.0
    supports_streams = False  # the API server keeps one combined log per container
    omit_unsupported = True  # so the streams test is left out, not reported skipped

    @classmethod
    def setup_class(cls) -> None:
        cls._tmp = tempfile.TemporaryDirectory(prefix="tx-k8s-suite-")

    @classmethod
    def teardown_class(cls) -> None:
        cls._tmp.cleanup()

    def create_scheduler(self) -> Scheduler[Any]:
        from torchx.schedulers.kubernetes_scheduler import create_scheduler

        return create_scheduler("suite", client=api_client())

    def image(self) -> str:
        return IMAGE

    def cfg(self) -> Mapping[str, CfgVal]:
        return {
            "mode": "plain",
            "namespace": "default",
            "rank0_address": "pod_ip",
            "reserved_millicpu": 950,
        }

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
