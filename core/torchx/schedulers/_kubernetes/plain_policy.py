"""Plain-mode Job policies: Kueue's labels and ``suspend``, and the pod failure policy.

Every plain Job gets the ``podFailurePolicy`` of ``jobset.disruption_policy``: a pod that failed
because of a disruption (preemption, eviction, node drain: the ``DisruptionTarget`` condition)
is retried without counting against ``backoffLimit`` (``max_retries``), while an app error
counts (and fails the Job at once when ``max_retries`` is 0). Kubernetes before 1.26 ignores the
field. A pod template whose ``restartPolicy`` an overlay changed from ``Never`` keeps none (the
API server accepts the policy only with ``Never``).

With the ``queue`` run option each Job is created suspended with Kueue's labels
(``_kubernetes.kueue``); only one-replica apps may use it (``kueue.check_plain``).
"""

from __future__ import annotations

from torchx.schedulers._kubernetes.jobset import ANNOTATION_STARTUP_TIMEOUT, disruption_policy
from torchx.schedulers._kubernetes.kueue import check_plain, kueue_labels
from torchx.schedulers._kubernetes.plain import PlainRequest
from torchx.schedulers._kubernetes.settings import Settings
from torchx.specs.api import AppDef

__all__ = ["apply_policies"]


def apply_policies(app: AppDef, request: PlainRequest, settings: Settings) -> None:
    """Add the failure policy, the startup timeout and Kueue's settings to the Jobs (in place).

    Raises:
        ValueError: a queue with more than one replica (see ``kueue.check_plain``).
    """
    check_plain(app, settings.queue)
    labels = kueue_labels(settings.queue, settings.priority_class)
    for job in request.jobs:
        if job.spec.template.spec.restart_policy == "Never":
            job.spec.pod_failure_policy = disruption_policy()
        if settings.startup_timeout:
            annotations = dict(job.metadata.annotations or {})
            annotations[ANNOTATION_STARTUP_TIMEOUT] = f"{settings.startup_timeout:g}"
            job.metadata.annotations = annotations
        if labels:
            job.metadata.labels = {**(job.metadata.labels or {}), **labels}
            job.spec.suspend = True
