"""Test-only start-up hook: plain-mode Kubernetes submission sleeps between two Job creations.

Never installed: a test that kills a submitter half-way puts this folder on ``PYTHONPATH`` of
the process it starts (``tests/_k8s_job_delay.py`` gives that environment; the Celery stack's
tests mount it into the workers only). Python imports ``sitecustomize`` at start-up; this one
waits until ``torchx.schedulers._kubernetes.plain_submit`` is imported and then wraps each
``PlainSubmitter``'s Batch API so that every Job created after the submission's first one is
preceded by a sleep. torchx itself reads no variable for it.

- ``TXFLOW_TEST_K8S_JOB_DELAY``: seconds to sleep (unset or empty: the hook does nothing);
- ``TXFLOW_TEST_K8S_JOB_DELAY_DAG``: only the Jobs of this Airflow DAG (their
  ``airflow-dag-id`` label) are delayed; unset: every Job.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

TARGET = "torchx.schedulers._kubernetes.plain_submit"
DAG_LABEL = "labels.torchx.pytorch.org/airflow-dag-id"


class DelayedJobs:
    """A Batch API whose ``create_namespaced_job`` sleeps before every Job after the first.

    Dry-run creates (``dry_run=...``) pass straight through and do not count.

    Args:
        batch: the real ``BatchV1Api``.
        delay: seconds to sleep.
        dag_id: only Jobs labelled with this DAG id are delayed ("" : every Job).
    """

    def __init__(self, batch: Any, delay: float, dag_id: str) -> None:
        self._batch, self._delay, self._dag_id = batch, delay, dag_id
        self._created = 0

    def create_namespaced_job(self, namespace: str, body: Any, **kwargs: Any) -> Any:
        """Sleeps before a real create that is not the submission's first, then creates."""
        if not kwargs.get("dry_run"):
            if self._created and self._matches(body):
                print(f"[test hook] sleeping {self._delay:g} s before Job", flush=True)
                time.sleep(self._delay)
            self._created += 1
        return self._batch.create_namespaced_job(namespace, body, **kwargs)

    def _matches(self, body: Any) -> bool:
        labels = getattr(getattr(body, "metadata", None), "labels", None) or {}
        return not self._dag_id or labels.get(DAG_LABEL) == self._dag_id

    def __getattr__(self, name: str) -> Any:
        return getattr(self._batch, name)


def patch(module: ModuleType, delay: float, dag_id: str) -> None:
    """Makes every ``PlainSubmitter`` of ``module`` create its Jobs through :class:`DelayedJobs`."""
    submitter = module.PlainSubmitter
    init = submitter.__init__

    def delayed_init(self: Any, batch: Any, *args: Any, **kwargs: Any) -> None:
        init(self, DelayedJobs(batch, delay, dag_id), *args, **kwargs)

    submitter.__init__ = delayed_init


class _Loader(importlib.abc.Loader):
    """Runs the real loader, then :func:`patch`."""

    def __init__(self, real: Any, delay: float, dag_id: str) -> None:
        self._real, self._delay, self._dag_id = real, delay, dag_id

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._real.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._real.exec_module(module)
        patch(module, self._delay, self._dag_id)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds :data:`TARGET` as usual and swaps its loader for :class:`_Loader`."""

    def __init__(self, delay: float, dag_id: str) -> None:
        self._delay, self._dag_id = delay, dag_id

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader, self._delay, self._dag_id)
        return spec


def install() -> None:
    """Installs the hook when ``TXFLOW_TEST_K8S_JOB_DELAY`` is set."""
    value = os.environ.get("TXFLOW_TEST_K8S_JOB_DELAY", "")
    if not value:
        return
    finder = _Finder(float(value), os.environ.get("TXFLOW_TEST_K8S_JOB_DELAY_DAG", ""))
    if TARGET in sys.modules:
        patch(sys.modules[TARGET], finder._delay, finder._dag_id)
    else:
        sys.meta_path.insert(0, finder)


install()
