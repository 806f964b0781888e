"""Plain mode as the scheduler uses it: the dry-run request, log reading and change waits.

Log reading covers both modes: a plain-mode replica's pod is the newest pod of its Job; a
Volcano task's pod is ``{job}-{task}-0``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Optional

from torchx.schedulers._kubernetes.logs import LOG_WAIT_TIMEOUT, iter_pod_log
from torchx.schedulers._kubernetes.names import task_name
from torchx.schedulers._kubernetes.plain import PlainRequest, app_to_plain
from torchx.schedulers._kubernetes.plain_ops import PlainOps
from torchx.schedulers._kubernetes.replicas import Replica
from torchx.schedulers._kubernetes.request import KubernetesJob
from torchx.schedulers.api import Stream
from torchx.schedulers.ids import make_unique
from torchx.specs.api import AppDef, AppDryRunInfo
from torchx.util.strings import normalize_str

__all__ = ["PlainJob", "plain_dryrun", "replica_log"]


@dataclass
class PlainJob(KubernetesJob):
    """The plain-mode request; ``resource`` is a :class:`PlainRequest`.

    ``str()`` (what ``--dryrun`` prints) is a YAML stream: the Service, then one Job per
    replica, ready for ``kubectl apply -f -``.
    """

    def __str__(self) -> str:
        request: PlainRequest = self.resource
        return _render_yaml_all(request.manifests())

    def __repr__(self) -> str:
        return str(self)


def _render_yaml_all(docs: list[Any]) -> str:
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump_all(docs, Dumper=dumper, sort_keys=True)


def plain_dryrun(
    app: AppDef,
    namespace: str,
    rank0_address: str,
    pod_factory: Callable[[str, Replica], Any],
    ops: Optional[PlainOps],
) -> AppDryRunInfo[KubernetesJob]:
    """Build (and with ``ops``, validate on the API server) the plain-mode request.

    Args:
        app: the application.
        namespace: the namespace of its objects.
        rank0_address: ``dns`` or ``pod_ip``.
        pod_factory: ``(app_id, replica) -> V1Pod`` with labels, pod settings and overlay.
        ops: the cluster operations to validate with (server-side dry run), or None.

    Returns:
        The dry-run info.
    """
    app_id = normalize_str(make_unique(app.name))
    request = app_to_plain(
        app, app_id, namespace, lambda replica: pod_factory(app_id, replica), rank0_address
    )
    if ops is not None:
        ops.validate(request)
    job: KubernetesJob = PlainJob(images_to_push={}, resource=request)
    return AppDryRunInfo(job, repr)


def replica_log(
    ops: PlainOps,
    namespace: str,
    name: str,
    role: str,
    k: int,
    regex: Optional[str],
    since: Optional[datetime],
    until: Optional[datetime],
    should_tail: bool,
    streams: Optional[Stream],
) -> Iterator[str]:
    """The log lines of replica ``k`` of ``role`` (plain or Volcano mode).

    Raises:
        ValueError: a stream other than COMBINED, or no such replica (plain mode).
    """
    if streams not in (None, Stream.COMBINED):
        raise ValueError("KubernetesScheduler only supports COMBINED log stream")
    container = task_name(role, k)
    if ops.has_app(namespace, name):
        pod = ops.log_pod(namespace, name, role, k, wait=LOG_WAIT_TIMEOUT if should_tail else 0)
        if pod is None:
            return iter(())
    else:
        pod = normalize_str(f"{name}-{container}-0")
    return iter_pod_log(ops.read_log(), pod, namespace, container, regex, since, until, should_tail)
