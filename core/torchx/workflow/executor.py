"""The local executor: run a pipeline's steps through the TorchX Runner.

Independent steps run in parallel (each is launched as soon as its upstream steps succeeded).
By default the first failure cancels the running steps and skips the rest (``fail_fast``);
with ``fail_fast=False`` only the failed step's downstream steps are skipped. An exception in
the calling thread (Ctrl-C: ``KeyboardInterrupt``, or the CLI's signal exception) cancels
every running step and waits for it to end before it propagates, so nothing is left running.

Example::

    from torchx.workflow import load_pipeline
    from torchx.workflow.executor import run_pipeline

    run = run_pipeline(load_pipeline("pipelines/pipeline.yaml"), {"steps": 20})
    print(run.summary())
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Optional, Union

from torchx.runner import get_runner
from torchx.runner.follow import follow
from torchx.schedulers.ids import random_id
from torchx.specs.api import parse_app_handle
from torchx.workflow._validate import coerce_param
from torchx.workflow.errors import did_you_mean
from torchx.workflow.model import Pipeline
from torchx.workflow.plan import ValueRenderer as Resolver
from torchx.workflow.plan import build_step, dependencies, order, render_value
from torchx.workflow.run import PipelineRun, StepRun

if TYPE_CHECKING:
    from torchx.runner.api import Runner
    from torchx.specs.api import AppDryRunInfo, AppStatus

__all__ = ["OnChange", "dryrun_pipeline", "resolve_params", "run_pipeline"]

OnChange = Callable[[PipelineRun, StepRun], None]
_FAILED = ("FAILED", "CANCELLED", "SKIPPED")


def resolve_params(pipeline: Pipeline, values: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """Returns the defaults overridden by ``values``, each converted to its declared type.

    Args:
        pipeline: the pipeline.
        values: ``{param: value}`` (strings from the command line are converted).

    Raises:
        ValueError: an unknown parameter, a value of the wrong type, or a missing value.
    """
    out = pipeline.param_defaults()
    for key, value in (values or {}).items():
        if key not in pipeline.params:
            hint = did_you_mean(key, pipeline.params)
            known = ", ".join(pipeline.params) or "none"
            raise ValueError(f"unknown parameter `{key}`{hint}; the pipeline takes: {known}")
        out[key] = value
    for key, value in out.items():
        if value is None:
            raise ValueError(f"parameter `{key}` has no default; set it with `-p {key}=VALUE`")
        out[key] = coerce_param(key, pipeline.params[key], value)
    return out


def dryrun_pipeline(
    pipeline: Pipeline, params: Optional[Mapping[str, Any]] = None, runner: Optional[Runner] = None
) -> list[tuple[str, AppDryRunInfo[Any]]]:
    """Returns ``[(step, dry-run info)]`` in run order; upstream results are ``<steps.x.y>``.

    Args:
        pipeline: a validated pipeline.
        params: parameter values over the defaults.
        runner: the Runner (default: ``get_runner()``, closed afterwards).
    """
    resolve = Resolver(pipeline, resolve_params(pipeline, params), placeholder=True)
    own = runner is None
    runner = runner or get_runner()
    try:
        cdefaults = runner.config.component_defaults()
        infos = []
        for name in order(pipeline):
            request = build_step(pipeline, name, resolve, cdefaults)
            infos.append((name, runner.dryrun_request(request)))
        return infos
    finally:
        if own:
            runner.close()


def run_pipeline(
    pipeline: Pipeline,
    params: Optional[Mapping[str, Any]] = None,
    *,
    runner: Optional[Runner] = None,
    fail_fast: bool = True,
    resume: Union[str, PipelineRun, None] = None,
    on_change: Optional[OnChange] = None,
    wait_interval: float = 5.0,
) -> PipelineRun:
    """Runs the pipeline locally and returns the finished run (its state is on disk).

    Args:
        pipeline: a validated pipeline.
        params: parameter values over the defaults (over the resumed run's values).
        runner: the Runner (default: ``get_runner()``, closed afterwards).
        fail_fast: cancel the running steps at the first failure.
        resume: a previous run (or its id): its succeeded steps are kept, the others rerun.
        on_change: called after every state change of a step.
        wait_interval: the longest time between two status checks of a step, in seconds.

    Raises:
        ValueError: bad parameter values.
        LookupError: ``resume`` names no run.
    """
    own = runner is None
    runner = runner or get_runner()
    try:
        run = _new_or_resumed(pipeline, params, resume, runner)
        _Executor(pipeline, run, runner, fail_fast, on_change, wait_interval).run()
        return run
    finally:
        if own:
            runner.close()


def _new_or_resumed(
    pipeline: Pipeline,
    params: Optional[Mapping[str, Any]],
    resume: Union[str, PipelineRun, None],
    runner: Runner,
) -> PipelineRun:

    if resume is None:
        run = PipelineRun(f"{pipeline.name}-{random_id()}", pipeline.name, pipeline.source)
        run.params = resolve_params(pipeline, params)
        run.steps = {name: StepRun(name) for name in order(pipeline)}
        return run
    run = resume if isinstance(resume, PipelineRun) else PipelineRun.load(resume)
    if run.pipeline != pipeline.name:
        raise ValueError(
            f"run `{run.run_id}` is of pipeline `{run.pipeline}`, not `{pipeline.name}`"
        )
    run.params = resolve_params(pipeline, {**run.params, **(params or {})})
    previous = run.steps
    run.steps = {}
    for name in order(pipeline):
        step = previous.get(name)
        if step is not None and step.state == "RUNNING":
            status = runner.status(step.app_handle) if step.app_handle else None
            step.state = status.state.name if status is not None else "FAILED"
        if step is not None and step.state == "SUCCEEDED":
            step.reused = True
            run.steps[name] = step
        else:
            run.steps[name] = StepRun(name)
    run.state, run.started, run.ended = "RUNNING", time.time(), 0.0
    return run


class _Executor:
    """Launches ready steps, collects their ends from waiter threads, applies the policy."""

    def __init__(
        self,
        pipeline: Pipeline,
        run: PipelineRun,
        runner: Runner,
        fail_fast: bool,
        on_change: Optional[OnChange],
        wait_interval: float,
    ) -> None:
        self.pipeline = pipeline
        self.run_ = run
        self.runner = runner
        self.fail_fast = fail_fast
        self.on_change = on_change
        self.wait_interval = wait_interval
        self.deps = dependencies(pipeline)
        self.done: queue.Queue[tuple[str, Optional[AppStatus], str]] = queue.Queue()
        self.stopping = False
        self.cdefaults = runner.config.component_defaults()

    def _changed(self, step: StepRun) -> None:
        self.run_.save()
        if self.on_change is not None:
            self.on_change(self.run_, step)

    def run(self) -> None:
        self.run_.save()
        try:
            self._loop()
        except BaseException:
            self.stopping = True
            self._cancel_running("interrupted")
            self._finish_run("CANCELLED")
            raise
        failed = any(s.state != "SUCCEEDED" for s in self.run_.steps.values())
        self._finish_run("FAILED" if failed else "SUCCEEDED")

    def _finish_run(self, state: str) -> None:
        for step in self.run_.steps.values():
            if step.state == "PENDING":
                step.state, step.msg = "SKIPPED", step.msg or "the run stopped first"
        self.run_.state, self.run_.ended = state, time.time()
        self.run_.save()

    def _loop(self) -> None:
        while True:
            if not self.stopping:
                self._launch_ready()
            if not any(s.state == "RUNNING" for s in self.run_.steps.values()):
                return
            try:
                name, status, error = self.done.get(timeout=1.0)
            except queue.Empty:
                continue
            self._ended(name, status, error)

    def _launch_ready(self) -> None:
        steps = self.run_.steps
        for name, step in steps.items():
            if step.state != "PENDING":
                continue
            ups = [steps[u] for u in self.deps[name]]
            bad = [u.name for u in ups if u.state in _FAILED]
            if bad:
                step.state, step.msg = "SKIPPED", f"upstream step `{bad[0]}` did not succeed"
                self._changed(step)
            elif all(u.state == "SUCCEEDED" for u in ups):
                self._launch(step)
                if self.stopping:
                    return

    def _resolver(self) -> Resolver:
        results = {n: s.results() for n, s in self.run_.steps.items() if s.state == "SUCCEEDED"}
        return Resolver(self.pipeline, self.run_.params, results)

    def _launch(self, step: StepRun) -> None:

        step.started = time.time()
        try:
            request = build_step(self.pipeline, step.name, self._resolver(), self.cdefaults)
            handle = self.runner.launch(request)
        except Exception as e:
            self._ended(step.name, None, f"could not launch: {type(e).__name__}: {e}")
            return
        step.app_handle, step.app_id = handle, parse_app_handle(handle).app_id
        step.parent_run_id = request.parent_run_id or ""
        step.state = "RUNNING"
        self._changed(step)
        threading.Thread(
            target=self._wait, args=(step.name, handle), name=f"pipeline-{step.name}", daemon=True
        ).start()

    def _wait(self, name: str, handle: str) -> None:
        """Follows one step's app (``torchx.runner.follow``) in its waiter thread."""
        try:
            result = follow(self.runner, handle, wait_interval=self.wait_interval, log_tail=0)
            self.done.put((name, result.status, result.reason))
        except Exception as e:
            self.done.put((name, None, f"lost the app: {type(e).__name__}: {e}"))

    def _ended(self, name: str, status: Optional[AppStatus], error: str) -> None:
        step = self.run_.steps[name]
        step.ended = time.time()
        state = status.state.name if status is not None else "FAILED"
        step.state = "SUCCEEDED" if state == "SUCCEEDED" else state
        if step.state not in ("SUCCEEDED", "CANCELLED"):
            step.state = "FAILED"
        if step.state == "SUCCEEDED":
            results = {**self._resolver().results, name: step.results()}
            resolve = Resolver(self.pipeline, self.run_.params, results)
            step.outputs = render_value(dict(self.pipeline.steps[name].outputs), resolve)
        else:
            step.msg = error or (status.msg if status is not None else "") or step.state
        self._changed(step)
        if step.state != "SUCCEEDED" and self.fail_fast and not self.stopping:
            self.stopping = True
            self._cancel_running(f"step `{name}` failed")

    def _cancel_running(self, why: str) -> None:
        running = [s for s in self.run_.steps.values() if s.state == "RUNNING"]
        for step in running:
            try:
                self.runner.cancel(step.app_handle)
            except Exception as e:  # keep cancelling the others
                step.msg = f"cancel failed: {e}"
        for step in running:
            try:
                status = self.runner.wait(step.app_handle, wait_interval=0.5)
            except Exception:
                status = None
            step.state = "CANCELLED" if status is None else status.state.name
            if step.state not in ("SUCCEEDED", "FAILED"):
                step.state = "CANCELLED"
            step.ended, step.msg = time.time(), step.msg or why
            self._changed(step)
