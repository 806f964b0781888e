"""Run compiled pipelines locally with ``kfp.local``: a DockerRunner that uses this venv.

Container steps need Python and torchx-flow inside their image. For local runs the task's
image (a Debian Python 3.11 image such as ``torchx-flow/torch:2.13.0`` or
``torchx-flow/python:3.11``, built by ``scripts/infra/up.sh``) gets this interpreter's venv,
its base Python installation and the given project directories bind-mounted read-only at
the same paths, and ``PATH`` starting with the venv's ``bin`` (so the steps run this checkout);
no network, nothing pulled.

:func:`collect_output_artifacts` makes kfp.local pass a container task's output artifacts on
as the KFP backend does (the backend's launcher uploads every declared output artifact from
its local path; kfp.local only reads the executor-output file, which a container task that
is not a Python component does not write). :func:`venv_docker_runner` installs it, and keeps
the logs and exit status of a task whose container ends before kfp.local reads them
(``torchx_kfp._local_docker``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from torchx_kfp._local_docker import keep_task_logs_and_status

__all__ = ["LOCAL_LABEL", "collect_output_artifacts", "venv_docker_runner", "venv_mounts"]

LOCAL_LABEL = "torchx-flow.kfp-local"
"""Docker label put on every container a :func:`venv_docker_runner` starts."""
_SYSTEM_PREFIXES = ("/usr", "/usr/local", "/")


def venv_mounts(read_only: Sequence[str] = (), read_write: Sequence[str] = ()) -> list[Any]:
    """Docker mounts of this venv, its base Python and the given host directories.

    Args:
        read_only: host directories mounted read-only at the same path (the project).
        read_write: host directories mounted read-write at the same path (outputs).
    """
    from docker.types import Mount  # lazy: the docker SDK, only for these mounts

    paths = [sys.prefix, *read_only]
    if os.path.realpath(sys.base_prefix) not in _SYSTEM_PREFIXES:
        paths.append(sys.base_prefix)
    mounts = {os.path.realpath(p): True for p in paths}
    mounts.update({os.path.realpath(p): False for p in read_write})
    return [
        Mount(target=p, source=p, type="bind", read_only=ro) for p, ro in sorted(mounts.items())
    ]


def venv_docker_runner(
    read_only: Sequence[str] = (),
    read_write: Sequence[str] = (),
    env: Optional[Mapping[str, str]] = None,
    labels: Optional[Mapping[str, str]] = None,
) -> Any:
    """A ``kfp.local.DockerRunner`` whose containers run this venv's Python (no network).

    Args:
        read_only: project directories the steps read (mounted at the same path).
        read_write: directories the steps write (mounted at the same path).
        env: variables for every container (over the components' env).
        labels: labels for every container (``torchx-flow.kfp-local=1`` is always set).
    """
    from kfp import local  # lazy: kfp.local, only when running locally

    collect_output_artifacts()
    keep_task_logs_and_status()
    path = os.pathsep.join([os.path.join(sys.prefix, "bin"), "/usr/local/bin", "/usr/bin", "/bin"])
    return local.DockerRunner(
        mounts=venv_mounts(read_only, read_write),
        network_mode="none",
        hostname="localhost",  # torchrun resolves its host name; no network: only lo
        environment={"PATH": path, **(env or {})},
        labels={LOCAL_LABEL: "1", **(labels or {})},
    )


def collect_output_artifacts() -> None:
    """Makes kfp.local return the output artifacts a container task wrote (idempotent).

    A declared output artifact missing from the task's executor output is added with the
    uri kfp.local assigned it, when something exists at that path (the backend's launcher
    uploads it from there whatever the container did).
    """
    from kfp.local import executor_output_utils as utils  # lazy: as above

    if getattr(utils.get_outputs_for_task, "_torchx_kfp", False):
        return
    original = utils.get_outputs_for_task

    def get_outputs_for_task(executor_input: Any, component_spec: Any) -> Any:
        outputs = original(executor_input=executor_input, component_spec=component_spec)
        output = utils.load_executor_output(executor_input.outputs.output_file)
        for name, artifacts in executor_input.outputs.artifacts.items():
            if name in outputs or name in output.artifacts or not artifacts.artifacts:
                continue
            if os.path.exists(artifacts.artifacts[0].uri):
                output.artifacts[name].CopyFrom(artifacts)
                outputs[name] = utils.artifact_list_to_dsl_artifact(artifacts, False)
        return outputs

    get_outputs_for_task._torchx_kfp = True  # type: ignore[attr-defined]
    utils.get_outputs_for_task = get_outputs_for_task
