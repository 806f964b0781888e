"""tests/conftest.py's infrastructure markers, run in a child pytest over a stub ``_infra``.

A marked test gets the address in its environment for its run only (fixtures' teardown
included), never the tests after it; missing infrastructure is a skip with the reason, and a
failure under ``CI=true``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
FAKE_HOST = "unix:///fake/docker.sock"
STUBS = f"""

def docker_host():
    return {FAKE_HOST!r}, ""


def k8s_cluster():
    return None, "no cluster in this stub"
"""
CASES = f"""
import os
import pytest

@pytest.fixture
def checks_at_teardown():
    yield
    assert os.environ["DOCKER_HOST"] == {FAKE_HOST!r}

@pytest.mark.docker
def test_1_marked(checks_at_teardown):
    assert os.environ["DOCKER_HOST"] == {FAKE_HOST!r}

def test_2_unmarked_after_it():
    assert os.environ.get("DOCKER_HOST") == "tcp://outer:1"

@pytest.mark.k8s
def test_3_no_cluster():
    pass
"""


def _run(tmp_path: Path, ci: str) -> str:
    shutil.copy(TESTS / "conftest.py", tmp_path / "conftest.py")
    shutil.copy(TESTS / "_group_times.py", tmp_path / "_group_times.py")
    shutil.copy(TESTS / "_machine.py", tmp_path / "_machine.py")
    (tmp_path / "_infra.py").write_text((TESTS / "_infra.py").read_text() + STUBS)
    (tmp_path / "test_cases.py").write_text(CASES)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    docker\n    k8s\n")
    env = {**os.environ, "DOCKER_HOST": "tcp://outer:1", "CI": ci}
    argv = [sys.executable, "-m", "pytest", "-rsf", "-p", "no:randomly", "-p", "no:cacheprovider"]
    out = subprocess.run(
        [*argv, "test_cases.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    return out.stdout + out.stderr


def test_marker_env_lasts_one_test_and_missing_infra_skips(tmp_path: Path) -> None:
    out = _run(tmp_path, ci="")
    assert "2 passed, 1 skipped" in out, out
    assert "no cluster in this stub" in out, out


def test_missing_infra_fails_in_ci(tmp_path: Path) -> None:
    out = _run(tmp_path, ci="true")
    assert "2 passed, 1 error" in out, out  # the failure is in the test's setup
    assert "CI needs the k8s infrastructure: no cluster in this stub" in out, out
