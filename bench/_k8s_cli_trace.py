"""Runs the ``torchx`` CLI with a timeline of its Kubernetes work (for bench_kubernetes_live.py).

``python bench/_k8s_cli_trace.py OUT.json ARGS...`` runs ``torchx ARGS...`` in this process and
writes to ``OUT.json`` (epoch seconds): ``main`` (this script started), ``k8s`` (the
``kubernetes`` package's import: start, end), ``config`` (each kubeconfig load: start, end) and
``requests`` (each API request: start, end, method, path, ``dryRun``/``watch``). Nothing of the
CLI changes: the hooks wrap the client's functions when their modules first load, so the
timeline costs a few microseconds per request.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import sys
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

EVENTS: dict[str, Any] = {"main": time.time(), "k8s": [], "config": [], "requests": []}


def _timed(fn: Callable[..., Any], record: Callable[[float, float, tuple, dict], None]) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.time()
        try:
            return fn(*args, **kwargs)
        finally:
            record(start, time.time(), args, kwargs)

    return wrapper


def _request(start: float, end: float, args: tuple, kwargs: dict) -> None:
    method, url = args[1], args[2]
    query = dict(kwargs.get("query_params") or [])
    kind = "watch" if query.get("watch") else "dryrun" if query.get("dryRun") else ""
    path = url.split("//", 1)[-1].split("/", 1)[-1]
    EVENTS["requests"].append([start, end, method, path, kind])


def _config(start: float, end: float, args: tuple, kwargs: dict) -> None:
    EVENTS["config"].append([start, end])


PATCHES: dict[str, Callable[[ModuleType], None]] = {
    "kubernetes.client.rest": lambda m: setattr(
        m.RESTClientObject, "request", _timed(m.RESTClientObject.request, _request)
    ),
    "kubernetes.config.kube_config": lambda m: setattr(
        m, "load_kube_config", _timed(m.load_kube_config, _config)
    ),
}


class _Hook(importlib.abc.MetaPathFinder):
    """Wraps the loaders of ``kubernetes`` and the modules in PATCHES."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != "kubernetes" and name not in PATCHES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            start = time.time()
            run(module)
            if name == "kubernetes":
                EVENTS["k8s"] = [start, time.time()]
            else:
                PATCHES[name](module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def main() -> None:
    """Runs the CLI; writes the timeline at exit (also on SystemExit)."""
    out = sys.argv[1]
    sys.meta_path.insert(0, _Hook())
    from torchx.cli.main import main as torchx_main

    sys.argv = ["torchx", *sys.argv[2:]]
    try:
        torchx_main()
    finally:
        EVENTS["end"] = time.time()
        with open(out, "w") as f:
            json.dump(EVENTS, f)


if __name__ == "__main__":
    main()
