"""docker-compose.yml: its structure and the compose tool's check (test_dags_compose_stack.py runs it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from _infra import missing

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
        assert service["image"] == "torchx-flow/airflow:3.3.2", name  # compose-images.sh
        env = service["environment"]
        assert "_PIP_ADDITIONAL_REQUIREMENTS" not in env  # installed in the image, offline
        assert env["AIRFLOW__CORE__DAGS_FOLDER"] == "/opt/airflow/dags"
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql")
        assert "${TORCHX_FLOW_DAGS:-./dags}:/opt/airflow/dags:ro" in service["volumes"]
        assert "./examples:/opt/torchx-flow/examples:ro" in service["volumes"]
        assert "./pipelines:/opt/torchx-flow/pipelines:ro" in service["volumes"]
        assert env["TORCHX_FLOW_PIPELINES"] == "/opt/torchx-flow/pipelines"  # dags/ reads it
        assert "torchx-home:/opt/torchx-home" in service["volumes"]
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert set(compose["volumes"]) >= {"postgres-db", "torchx-home"}
    assert compose["services"]["postgres"]["image"] == "torchx-flow/postgres:15"


def test_images_are_built_from_the_repos_dockerfiles() -> None:
    script = (REPO / "scripts/infra/compose-images.sh").read_text()
    for image, dockerfile in [
        ("torchx-flow/airflow:3.3.2", "compose/airflow/Dockerfile"),
        ("torchx-flow/postgres:15", "compose/postgres/Dockerfile"),
    ]:
        assert image in script
        assert (REPO / dockerfile).read_text().startswith("#")
        assert "FROM torchx-flow/python:3.11" in (REPO / dockerfile).read_text()


def test_only_loopback_ports_are_published(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), name


def test_scheduler_alone_takes_the_deferrable_switch(compose: dict[str, Any]) -> None:
    key = "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE"
    services = compose["services"]
    assert services["airflow-scheduler"]["environment"][key] == "${TORCHX_FLOW_DEFERRABLE:-false}"
    for name in ["airflow-apiserver", "airflow-dag-processor", "airflow-triggerer"]:
        assert key not in services[name]["environment"], name


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
        missing("docker-compose", "neither docker-compose nor `docker compose` is installed")
    out = subprocess.run(
        [*tool, "-f", str(REPO / "docker-compose.yml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
