"""Smoke check of the local KFP backend (scripts/infra/kfp-backend.sh), run with the project venv.

1. Argo: a one-step Workflow in the namespace ``kubeflow`` under the ``pipeline-runner`` account
   whose output artifact goes to the object store (SeaweedFS) must reach ``Succeeded``.
2. KFP (when ``KFP_HOST`` is set): the smallest pipeline submitted with
   ``kfp.Client(host=...).create_run_from_pipeline_func`` must end ``SUCCEEDED``.

    KUBECONFIG=... .venv/bin/python scripts/infra/kfp-smoke.py [--argo-only]

Exit 0 when every check passed, 1 with one line saying what failed otherwise. It deletes what it
created. This is a script, not a test module, until the KFP part can run (see docs/kfp-backend.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from typing import Any

NAMESPACE = "kubeflow"
TIMEOUT_S = 300.0


def _workflow(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "entrypoint": "main",
            "serviceAccountName": "pipeline-runner",
            "templates": [
                {
                    "name": "main",
                    "container": {
                        "image": "torchx-flow/busybox:latest",
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["sh", "-c", "echo smoke > /tmp/out.txt"],
                    },
                    "outputs": {"artifacts": [{"name": "out", "path": "/tmp/out.txt"}]},
                }
            ],
        },
    }


def check_argo() -> str | None:
    """Runs one Workflow to its end; returns None when it succeeded, else why not."""
    from kubernetes import client, config

    config.load_kube_config()
    api = client.CustomObjectsApi()
    name = f"smoke-{uuid.uuid4().hex[:8]}"
    args = ("argoproj.io", "v1alpha1", NAMESPACE, "workflows")
    api.create_namespaced_custom_object(*args, _workflow(name))
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            status = api.get_namespaced_custom_object(*args, name).get("status", {})
            phase = status.get("phase")
            if phase == "Succeeded":
                return None
            if phase in ("Failed", "Error"):
                return f"Argo workflow {name} ended {phase}: {status.get('message')}"
            time.sleep(2)
        return f"Argo workflow {name} did not end within {TIMEOUT_S:.0f} s"
    finally:
        api.delete_namespaced_custom_object(*args, name)


def check_kfp(host: str) -> str | None:
    """Runs the smallest pipeline through the KFP API server; None when it SUCCEEDED."""
    import kfp
    from kfp import dsl

    @dsl.component(base_image="torchx-flow/python:3.11")
    def hello() -> str:
        return "hello"

    @dsl.pipeline(name="smoke")
    def smoke() -> None:
        hello()

    run = kfp.Client(host=host).create_run_from_pipeline_func(smoke, arguments={})
    detail = run.wait_for_run_completion(timeout=int(TIMEOUT_S))
    state = str(getattr(detail, "state", ""))
    return None if state == "SUCCEEDED" else f"KFP run {run.run_id} ended {state}"


def main(argv: list[str]) -> int:
    """Runs the checks; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--argo-only", action="store_true", help="skip the KFP run")
    args = parser.parse_args(argv)
    if not os.environ.get("KUBECONFIG"):
        print("KUBECONFIG is not set: run scripts/infra/k8s-current.sh env", file=sys.stderr)
        return 1
    error = check_argo()
    if error is None and not args.argo_only:
        host = os.environ.get("KFP_HOST")
        error = check_kfp(host) if host else "KFP_HOST is not set: no KFP API server runs"
    if error:
        print(error, file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
