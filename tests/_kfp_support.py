"""Helpers for the KFP adapter tests: compile a pipeline for real and read its IR."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def compile_ir(pipeline: Any, tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Compiles ``pipeline`` with the real KFP compiler; returns (IR, platform spec or {})."""
    from kfp import compiler

    out = tmp_path / "pipeline.yaml"
    compiler.Compiler().compile(pipeline, str(out))
    docs = list(yaml.safe_load_all(out.read_text()))
    return docs[0], (docs[1] if len(docs) > 1 else {})


def executor(ir: dict[str, Any], name: str) -> dict[str, Any]:
    """The container spec of executor ``exec-<name>``."""
    return ir["deploymentSpec"]["executors"][f"exec-{name}"]["container"]


def k8s_executor(platform: dict[str, Any], name: str) -> dict[str, Any]:
    """The kubernetes platform spec of executor ``exec-<name>``."""
    return platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"][f"exec-{name}"]
