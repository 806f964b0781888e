"""The raw ``batch/v1`` Job of bench_kubernetes_live.py: create, then poll every 0.1 s.

Imported by the bench (a warm client: create -> Complete only), or run as a script, a fresh
interpreter like the CLI: ``python bench/_k8s_raw_job.py NAMESPACE IMAGE`` imports the client,
loads ``$KUBECONFIG``, creates the Job and polls it; prints the JSON ``{"name", "pod", "done"}``
(seconds from the create to the pod's Succeeded and to the Job's Complete condition).
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from typing import Any

POLL = 0.1


def echo_job(name: str, image: str) -> Any:
    """A one-pod Job running ``echo hello`` (no retries, image used as present)."""
    from kubernetes import client as k8s

    container = k8s.V1Container(
        name="echo", image=image, image_pull_policy="IfNotPresent", command=["echo", "hello"]
    )
    pod = k8s.V1PodSpec(restart_policy="Never", containers=[container])
    spec = k8s.V1JobSpec(backoff_limit=0, template=k8s.V1PodTemplateSpec(spec=pod))
    return k8s.V1Job(metadata=k8s.V1ObjectMeta(name=name), spec=spec)


def torchx_job(name: str, namespace: str, image: str) -> Any:
    """The Job ``torchx run -s kubernetes utils.echo`` creates (its pod spec: /dev/shm volume,
    resources, hostname/subdomain, env), renamed ``name``: the pod's own cost apart from the
    CLI's (no Service is created, nothing of torchx runs while it is polled)."""
    from torchx.components.utils import echo
    from torchx.schedulers.kubernetes_scheduler import create_scheduler

    cfg = {"mode": "plain", "namespace": namespace, "image_pull_policy": "IfNotPresent"}
    cfg["validate_spec"] = False
    info = create_scheduler("bench").submit_dryrun(echo(image=image), cfg)
    job = info.request.resource.jobs[0]
    job.metadata.name = name
    job.metadata.labels = job.spec.template.metadata.labels = {"bench": name}
    return job


def _complete(job: Any) -> bool:
    conditions = (job.status.conditions if job.status else None) or []
    return any(c.type == "Complete" and c.status == "True" for c in conditions)


def run_job(api: Any, namespace: str, image: str, same_pod: bool = False) -> dict[str, Any]:
    """Creates the Job, polls it (and its pod) every 0.1 s until Complete.

    Args:
        api: an ``ApiClient``.
        namespace: where to create it.
        image: the container image.
        same_pod: the CLI's Job (:func:`torchx_job`) instead of a bare ``echo`` one.

    Returns:
        ``{"name", "pod", "done"}``: seconds from the create to the pod's Succeeded phase
        and to the Job's Complete condition, as first seen.
    """
    from kubernetes import client as k8s

    batch, core = k8s.BatchV1Api(api), k8s.CoreV1Api(api)
    name = "raw-echo-" + uuid.uuid4().hex[:8]
    job = torchx_job(name, namespace, image) if same_pod else echo_job(name, image)
    start = time.perf_counter()
    batch.create_namespaced_job(namespace, job)
    pod_done = None
    while True:
        job = batch.read_namespaced_job_status(name, namespace)
        if _complete(job):
            done = time.perf_counter() - start
            return {"name": name, "pod": pod_done or done, "done": done}
        if pod_done is None:
            pods = core.list_namespaced_pod(namespace, label_selector=f"job-name={name}").items
            if any(p.status and p.status.phase == "Succeeded" for p in pods):
                pod_done = time.perf_counter() - start
        time.sleep(POLL)


def main() -> None:
    """The fresh-interpreter run (see the module docstring)."""
    from kubernetes import config

    api = config.new_client_from_config()
    try:
        print(json.dumps(run_job(api, sys.argv[1], sys.argv[2])))
    finally:
        api.close()


if __name__ == "__main__":
    main()
