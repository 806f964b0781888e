"""Runs compiled KFP IR the way the open-source backend does, each task in a local container.

For each task of the root DAG, in dependency order (``driver/dag.go``): the driver resolves
its inputs (pipeline parameters, upstream output parameters and artifacts, constants where
only an exact run placeholder is replaced: ``driver/resolve.go``), builds the executor input
(output parameters at ``/tmp/kfp/outputs/<name>``, output artifacts under the pipeline root
``minio://mlpipeline/v2/artifacts/<pipeline>/<run>/<task>/<salt>/<name>``, the executor output
file beside them: ``driver/driver.go``) and resolves command/args (``driver/util.go``); the
launcher resolves the rest (``component/launcher_v2.go``). A task whose argv still holds
``{{$.`` or ``{"Concat"``, or whose env holds ``{{$`` (env is never templated), fails before
it starts. The container runs the executor's image
with the resolved argv and its static env (env is never templated); ``/minio`` is a host
directory, so an upstream artifact's local path is where the producer wrote it, as after the
launcher's upload and download. Outputs come from the executor output file, else from the
output-parameter files (``collectOutputParameters``). From the kfp-kubernetes platform spec,
PVC mounts (``pvcMount``: one host directory per claim name, shared by every task, like a
ReadWriteMany claim) and emptyDir mounts (a tmpfs) are applied; secrets, node selectors and
tolerations are not. Nested DAGs, conditions and loops are not implemented (the example
pipelines have none).
"""

from __future__ import annotations

import json
import os
import random
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from _kfp_backend import (
    BackendRuleError,
    RunContext,
    driver_args,
    launcher_args,
    local_path,
    output_value,
    resolve_constant,
    unresolved_left,
)

__all__ = ["BackendRun", "TaskResult"]

LABEL = "torchx-flow.kfp-backend-rules"


class TaskResult:
    """What one task produced: ``parameters`` (values), ``artifacts`` (name -> uri),
    ``argv`` (as run), ``logs`` and ``seconds``."""

    def __init__(self) -> None:
        self.parameters: dict[str, Any] = {}
        self.artifacts: dict[str, dict[str, Any]] = {}
        self.argv: list[str] = []
        self.logs = ""
        self.seconds = 0.0


def _order(tasks: Mapping[str, Any]) -> list[str]:
    def deps(spec: Mapping[str, Any]) -> set[str]:
        found = set(spec.get("dependentTasks") or [])
        for kind in ("parameters", "artifacts"):
            for value in (spec.get("inputs", {}).get(kind) or {}).values():
                for key in ("taskOutputParameter", "taskOutputArtifact"):
                    if key in value:
                        found.add(value[key]["producerTask"])
        return found

    done: list[str] = []
    pending = dict(tasks)
    while pending:
        ready = sorted(n for n, s in pending.items() if deps(s) <= set(done))
        if not ready:
            raise BackendRuleError(f"tasks {sorted(pending)} wait on each other")
        done += ready
        for name in ready:
            del pending[name]
    return done


class BackendRun:
    """One run of a compiled pipeline under the backend's rules.

    Args:
        ir: the pipeline spec (first YAML document of the compiled file).
        client: a ``docker.DockerClient``.
        root: a host directory for the run (``minio/``, per-task output directories).
        mounts: extra ``docker.types.Mount`` for every task (e.g. a shared tracker volume).
        env: extra env for every container (the cluster's pod env, e.g. ``PATH``).
        timeout: seconds a task may run.
        platform: the kfp-kubernetes platform spec (second YAML document), if any.
    """

    def __init__(
        self,
        ir: Mapping[str, Any],
        client: Any,
        root: Path,
        mounts: Sequence[Any] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = 900,
        platform: Mapping[str, Any] | None = None,
    ) -> None:
        self.ir, self.client, self.root, self.timeout = ir, client, root, timeout
        k8s = ((platform or {}).get("platforms") or {}).get("kubernetes") or {}
        self.k8s = (k8s.get("deploymentSpec") or {}).get("executors") or {}
        self.params: dict[str, Any] = {}
        self.mounts, self.env = list(mounts), dict(env or {})
        name = ir["pipelineInfo"]["name"]
        self.ctx = RunContext(str(uuid.uuid4()), f"{name}-run", random.randint(1000, 99999))
        self.pipeline_root = f"minio://mlpipeline/v2/artifacts/{name}/{self.ctx.run_id}"
        self.results: dict[str, TaskResult] = {}

    def run(self, arguments: Mapping[str, Any]) -> dict[str, TaskResult]:
        """Runs every task; raises :class:`BackendRuleError` at the first failing task."""
        params = {
            n: spec.get("defaultValue")
            for n, spec in (
                self.ir["root"].get("inputDefinitions", {}).get("parameters") or {}
            ).items()
        }
        params.update(arguments)
        self.params = params
        tasks = self.ir["root"]["dag"]["tasks"]
        for name in _order(tasks):
            self.results[name] = self._task(name, tasks[name], params)
        return self.results

    def _inputs(self, name: str, task: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
        comp = self.ir["components"][task["componentRef"]["name"]]
        # Component input defaults are NOT filled in: the 2.17.0 driver leaves an optional
        # input the task does not pass out of the executor input (driver/resolve.go,
        # resolveInputs: "They are resolved internally within the component").
        values: dict[str, Any] = {}
        for key, spec in (task.get("inputs", {}).get("parameters") or {}).items():
            if "componentInputParameter" in spec:
                values[key] = params[spec["componentInputParameter"]]
            elif "taskOutputParameter" in spec:
                ref = spec["taskOutputParameter"]
                values[key] = self.results[ref["producerTask"]].parameters[
                    ref["outputParameterKey"]
                ]
            elif "runtimeValue" in spec:
                values[key] = resolve_constant(spec["runtimeValue"]["constant"], self.ctx, name)
            else:
                raise BackendRuleError(f"task {name}: input {key} {spec} is not implemented here")
        artifacts: dict[str, Any] = {}
        for key, spec in (task.get("inputs", {}).get("artifacts") or {}).items():
            ref = spec["taskOutputArtifact"]
            art = self.results[ref["producerTask"]].artifacts[ref["outputArtifactKey"]]
            artifacts[key] = {"artifacts": [art]}
        return comp, values, artifacts

    def _executor_input(self, name: str, comp: Any, values: Any, artifacts: Any) -> Any:
        task_root = f"{self.pipeline_root}/{name}/{uuid.uuid4().hex[:8]}"
        outs = comp.get("outputDefinitions", {})
        return {
            "inputs": {"parameterValues": values, "artifacts": artifacts},
            "outputs": {
                "parameters": {
                    p: {"outputFile": f"/tmp/kfp/outputs/{p}"} for p in outs.get("parameters", {})
                },
                "artifacts": {
                    a: {
                        "artifacts": [
                            {
                                "name": a,
                                "type": spec["artifactType"],
                                "uri": f"{task_root}/{a}",
                                "metadata": {},
                            }
                        ]
                    }
                    for a, spec in (outs.get("artifacts") or {}).items()
                },
                "outputFile": f"{local_path(task_root)}/output_metadata.json",
            },
        }

    def resolve(self, name: str, task: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
        """The driver's and launcher's passes for one task, without running it.

        Returns:
            ``(component, container, executor input, argv)``.

        Raises:
            BackendRuleError: where the backend's driver fails (e.g. an input the command
                references is not in the executor input).
        """
        comp, values, artifacts = self._inputs(name, task, params)
        container = self.ir["deploymentSpec"]["executors"][comp["executorLabel"]]["container"]
        executor_input = self._executor_input(name, comp, values, artifacts)
        argv = [
            *driver_args(container.get("command") or [], values),
            *driver_args(container.get("args") or [], values),
        ]
        return comp, container, executor_input, launcher_args(argv, executor_input)

    def _task(self, name: str, task: Mapping[str, Any], params: Mapping[str, Any]) -> TaskResult:
        comp, container, executor_input, argv = self.resolve(name, task, params)
        env = {e["name"]: e.get("value", "") for e in container.get("env") or []}
        left = unresolved_left(argv) + [f"{k}={v}" for k, v in env.items() if "{{$" in v]
        if left:
            raise BackendRuleError(
                f"task {name}: the backend would start it with unresolved placeholders: {left[0][:300]}"
            )
        result = TaskResult()
        result.argv = argv
        start = time.monotonic()
        result.logs = self._docker(name, comp["executorLabel"], container, argv, executor_input)
        result.seconds = time.monotonic() - start
        self._collect(comp, executor_input, result, name)
        return result

    def _docker(
        self, name: str, label: str, container: Any, argv: list[str], executor_input: Any
    ) -> str:
        import docker
        from docker.types import Mount

        try:  # never pull: a task's image must exist on this engine (no network here)
            self.client.images.get(container["image"])
        except docker.errors.ImageNotFound:
            raise BackendRuleError(
                f"task {name}: image {container['image']} is not on the local Docker engine"
            ) from None
        minio = self.root / "minio"
        outputs = self.root / "outputs" / name
        for path in (minio, outputs):
            path.mkdir(parents=True, exist_ok=True)
        for listed in executor_input["outputs"]["artifacts"].values():
            host = minio / local_path(listed["artifacts"][0]["uri"]).removeprefix("/minio/")
            host.parent.mkdir(parents=True, exist_ok=True)  # the launcher prepares the parent
        meta = minio / executor_input["outputs"]["outputFile"].removeprefix("/minio/")
        meta.parent.mkdir(parents=True, exist_ok=True)
        env = {e["name"]: e.get("value", "") for e in container.get("env") or []}
        mounts = [
            Mount("/minio", str(minio), type="bind"),
            Mount("/tmp/kfp/outputs", str(outputs), type="bind"),
            *self._platform_mounts(label),
            *self.mounts,
        ]
        box = self.client.containers.run(
            container["image"],
            entrypoint=[argv[0]],
            command=argv[1:],
            environment={**env, **self.env},
            mounts=mounts,
            network_mode="none",
            hostname="localhost",
            labels={LABEL: "1"},
            detach=True,
        )
        try:
            try:
                code = box.wait(timeout=self.timeout)["StatusCode"]
            except Exception as err:  # the engine's read timeout: the task hangs
                raise BackendRuleError(f"task {name} did not end in {self.timeout}s") from err
            logs = box.logs().decode(errors="replace")
        finally:
            box.remove(force=True)
        if code != 0:
            raise BackendRuleError(f"task {name} exited with {code}:\n{logs[-3000:]}")
        return logs

    def _platform_mounts(self, executor: str) -> list[Any]:
        """PVC mounts (a host directory per claim) and emptyDirs (tmpfs) of an executor."""
        from docker.types import Mount

        spec = self.k8s.get(executor) or {}
        mounts = []
        for pvc in spec.get("pvcMount") or []:
            name = self._platform_value(pvc.get("pvcNameParameter") or pvc)
            host = self.root / "pvc" / name
            host.mkdir(parents=True, exist_ok=True)
            mounts.append(Mount(pvc["mountPath"], str(host), type="bind"))
        for empty in spec.get("emptyDirMounts") or []:
            mounts.append(Mount(empty["mountPath"], None, type="tmpfs"))
        return mounts

    def _platform_value(self, spec: Mapping[str, Any]) -> str:
        if "componentInputParameter" in spec:
            return str(self.params[spec["componentInputParameter"]])
        if "taskOutputParameter" in spec:
            ref = spec["taskOutputParameter"]
            return str(self.results[ref["producerTask"]].parameters[ref["outputParameterKey"]])
        if "runtimeValue" in spec:
            return str(spec["runtimeValue"]["constant"])
        if "constant" in spec:
            return str(spec["constant"])
        raise BackendRuleError(f"platform value {spec} is not implemented here")

    def _collect(self, comp: Any, executor_input: Any, result: TaskResult, name: str) -> None:
        meta = self.root / "minio" / executor_input["outputs"]["outputFile"].removeprefix("/minio/")
        output = json.loads(meta.read_text()) if meta.is_file() else {}
        result.parameters.update(output.get("parameterValues") or {})
        outs = comp.get("outputDefinitions", {})
        for pname, spec in (outs.get("parameters") or {}).items():
            if pname not in result.parameters:
                path = self.root / "outputs" / name / pname
                if not path.is_file():
                    raise BackendRuleError(f"task {name}: output parameter {pname} not written")
                result.parameters[pname] = output_value(path.read_text(), spec["parameterType"])
        for aname, listed in executor_input["outputs"]["artifacts"].items():
            art = dict(listed["artifacts"][0])
            written = (output.get("artifacts") or {}).get(aname, {}).get("artifacts") or [{}]
            art["metadata"] = {**art["metadata"], **(written[0].get("metadata") or {})}
            result.artifacts[aname] = art

    def host_path(self, uri: str) -> Path:
        """Where an artifact uri's files are on this machine."""
        return self.root / "minio" / local_path(uri).removeprefix("/minio/")


def docker_client() -> Any:
    """A client of the local Docker engine (``DOCKER_HOST``)."""
    import docker

    return docker.DockerClient(base_url=os.environ["DOCKER_HOST"])
