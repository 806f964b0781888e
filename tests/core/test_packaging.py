"""Packaging facts: single-sourced version, declared extras and console script."""

from __future__ import annotations

import tomllib
from pathlib import Path

import torchx

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def test_version_matches_pyproject() -> None:
    assert torchx.__version__ == PYPROJECT["project"]["version"]


def test_extras_declared() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    for name in ("kubernetes", "docker", "airflow", "kfp", "examples", "all", "dev"):
        assert name in extras
    assert "kfp==2.17.0" in extras["kfp"]
    assert "apache-airflow==3.3.2" in extras["airflow"]
    assert any(dep.startswith("kubernetes") and "<31" in dep for dep in extras["kfp"])
    assert "torch==2.13.0" in extras["examples"]


def test_console_script_and_wheel_packages() -> None:
    assert PYPROJECT["project"]["scripts"]["torchx"] == "torchx.cli.main:main"
    packages = PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    assert packages == ["core/torchx", "adapters/torchx_airflow", "adapters/torchx_kfp"]


def test_image_default_uses_version() -> None:
    assert torchx.IMAGE == f"ghcr.io/pytorch/torchx:{torchx.__version__}"
