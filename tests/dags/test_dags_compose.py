"""docker-compose.yml: an Airflow 3.3 stack with this project and dags/ (never started here)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
AIRFLOW_SERVICES = [
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_services_present_with_healthchecks(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert {"postgres", "airflow-init", *AIRFLOW_SERVICES} <= set(services)
    for name in ["postgres", *AIRFLOW_SERVICES]:
        assert services[name]["healthcheck"]["test"], name


def test_airflow_services_run_this_project_with_dags_mounted(compose: dict[str, Any]) -> None:
    for name in ["airflow-init", *AIRFLOW_SERVICES]:
        service = compose["services"][name]
        assert service["image"].startswith("apache/airflow:3.3.2"), name
        env = service["environment"]
        assert env["_PIP_ADDITIONAL_REQUIREMENTS"] == "-e /opt/torchx-flow"
        assert env["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/airflow/dags"
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql")
        assert "./dags:/opt/airflow/dags:ro" in service["volumes"]
        assert ".:/opt/torchx-flow:ro" in service["volumes"]
        assert "torchx-home:/opt/torchx-home" in service["volumes"]
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert set(compose["volumes"]) >= {"postgres-db", "torchx-home"}


def test_only_loopback_ports_are_published(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), name


def _compose_tool() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    return None


def test_compose_tool_accepts_the_file() -> None:
    tool = _compose_tool()
    if tool is None:
        pytest.skip("neither docker-compose nor `docker compose` is installed")
    out = subprocess.run(
        [*tool, "-f", str(REPO / "docker-compose.yml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
