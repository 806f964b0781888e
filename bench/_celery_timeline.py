"""Timelines for bench_airflow_celery.py: pod events, task-log stamps, Celery slots.

- :class:`PodClock` watches the namespace's pods from the bench's process (a watch per thread)
  and keeps the wall time each pod was first seen in each phase (``Running``, ``Succeeded``);
- :func:`task_log` reads one try's task log as ``(wall time, text)`` pairs (the stamps the
  task process wrote), :func:`first_stamp` finds a line in it;
- :func:`celery_active` lists the Celery tasks a worker runs, each with the DAG and run of its
  Airflow workload; :func:`workload_finished` reads when each worker's supervisor reported a
  workload finished (``Workload finished ... final_state=...`` in the worker's log).

Standard library and the kubernetes client only; every time is a ``time.time()`` wall time
(the cluster, the containers and the bench share the host's clock).
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.parse
from datetime import datetime
from typing import Any, Optional

__all__ = [
    "PodClock",
    "celery_active",
    "first_stamp",
    "stamp",
    "task_log",
    "workload_finished",
]


def stamp(text: Optional[str]) -> Optional[float]:
    """An ISO 8601 time (``...Z`` or with an offset) as a wall time; None for None."""
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class PodClock:
    """Watches the pods of ``namespace``; :meth:`phase_time` says when one reached a phase.

    Args:
        core: a ``CoreV1Api``.
        namespace: the namespace to watch.
    """

    def __init__(self, core: Any, namespace: str) -> None:
        self._core = core
        self._namespace = namespace
        self._seen: dict[str, dict[str, float]] = {}
        self._labels: dict[str, dict[str, str]] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="pod-clock", daemon=True)

    def __enter__(self) -> PodClock:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        from kubernetes import watch

        while not self._stop.is_set():
            stream = watch.Watch().stream(
                self._core.list_namespaced_pod, self._namespace, timeout_seconds=2
            )
            try:
                for event in stream:
                    self._record(event["object"])
                    if self._stop.is_set():
                        break
            except Exception:  # a dropped watch is simply started again
                time.sleep(0.2)
            finally:
                stream.close()

    def _record(self, pod: Any) -> None:
        now = time.time()
        name = pod.metadata.name
        phase = pod.status.phase if pod.status is not None else None
        with self._lock:
            seen = self._seen.setdefault(name, {"Created": now})
            self._labels[name] = dict(pod.metadata.labels or {})
            if phase and phase not in seen:
                seen[phase] = now

    def phase_time(self, label: str, value: str, phase: str) -> Optional[float]:
        """When the first pod labelled ``label=value`` was first seen in ``phase``."""
        with self._lock:
            times = [
                seen[phase]
                for name, seen in self._seen.items()
                if self._labels.get(name, {}).get(label) == value and phase in seen
            ]
        return min(times) if times else None


def task_log(api: Any, dag_id: str, run_id: str, task_id: str, try_number: int = 1) -> list:
    """One try's task log as ``[(wall time or None, text), ...]``."""
    quoted = urllib.parse.quote(run_id)
    path = (
        f"/api/v2/dags/{dag_id}/dagRuns/{quoted}/taskInstances/{task_id}"
        f"/logs/{try_number}?full_content=true"
    )
    content = api.call("GET", path)["content"]
    return [(stamp(line.get("timestamp")), str(line.get("event", ""))) for line in content]


def first_stamp(lines: list, pattern: str, after: Optional[str] = None) -> Optional[float]:
    """The time of the first line matching ``pattern`` (after the first matching ``after``)."""
    armed = after is None
    for when, text in lines:
        if not armed:
            armed = re.search(after, text) is not None  # type: ignore[arg-type]
            continue
        if when is not None and re.search(pattern, text):
            return float(when)
    return None


def _workload(task: dict[str, Any]) -> dict[str, Any]:
    """The Airflow workload (``ti``: dag_id, run_id, ...) of one ``inspect active`` entry."""
    args = task.get("args") or []
    try:
        body = json.loads(args[0]) if args and isinstance(args[0], str) else {}
    except ValueError:
        body = {}
    ti = body.get("ti") or {}
    return {"dag_id": ti.get("dag_id"), "run_id": ti.get("run_id"), "ti_id": ti.get("id")}


def celery_active(container: Any) -> Optional[list[dict[str, Any]]]:
    """The Celery tasks a worker container runs (``celery inspect active``); None: no answer."""
    code, out = container.exec_run(
        ["sh", "-c", 'celery -b "$CELERY_BROKER" inspect active -j -d "celery@$(hostname)"']
    )
    text = out.decode(errors="replace")
    start = text.find("{")
    if code != 0 or start < 0:
        return None
    found = json.loads(text[start:])
    return [{"id": t.get("id"), **_workload(t)} for tasks in found.values() for t in tasks]


_FINISHED = re.compile(r"^(\S+) .*Workload finished.*final_state=(\w+).*workload_id=([0-9a-f-]+)")


def workload_finished(container: Any, since: float) -> dict[str, tuple[float, str]]:
    """``{TI id: (wall time, final state)}`` of the workloads a worker finished after ``since``."""
    text = container.logs(timestamps=True, since=int(since)).decode(errors="replace")
    out = {}
    for line in text.splitlines():
        match = _FINISHED.search(line)
        if match:
            when = stamp(match.group(1)[:26] + "+00:00")
            out[match.group(3)] = (float(when or 0.0), match.group(2))
    return out
