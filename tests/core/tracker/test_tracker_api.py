from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import write_dist

from torchx.tracker import app_run_from_env
from torchx.tracker.api import AppRun, build_trackers, tracker_config_env_var_name
from torchx.tracker.backend.fsspec import FsspecTracker

MY_TRACKER = '''
import json
from pathlib import Path
from torchx.tracker.api import TrackerBase, Lineage, build_lineage


class MyTracker(TrackerBase):
    """The seed documentation's custom tracker, storing into one JSON file."""

    def __init__(self, connection_str):
        self._path = Path(connection_str)

    def _load(self):
        return json.loads(self._path.read_text()) if self._path.exists() else {}

    def _save(self, data):
        self._path.write_text(json.dumps(data))

    def add_artifact(self, run_id, name, path, metadata=None):
        d = self._load(); d.setdefault(run_id, {}).setdefault("artifacts", {})[name] = path
        self._save(d)

    def artifacts(self, run_id):
        return self._load().get(run_id, {}).get("artifacts", {})

    def add_metadata(self, run_id, **kwargs):
        d = self._load(); d.setdefault(run_id, {}).setdefault("metadata", {}).update(kwargs)
        self._save(d)

    def metadata(self, run_id):
        return self._load().get(run_id, {}).get("metadata", {})

    def add_source(self, run_id, source_id, artifact_name=None):
        d = self._load(); d.setdefault(run_id, {}).setdefault("sources", []).append(source_id)
        self._save(d)

    def sources(self, run_id, artifact_name=None):
        return []

    def lineage(self, run_id):
        return build_lineage(self, run_id)

    def run_ids(self, **kwargs):
        return list(self._load())


def create(config):
    return MyTracker(connection_str=config or "default.json")
'''


@pytest.fixture
def my_tracker_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "my_package").mkdir(parents=True)
    (site / "my_package" / "__init__.py").write_text("")
    (site / "my_package" / "tracking.py").write_text(MY_TRACKER)
    write_dist(site, "my_package", {"torchx.tracker": {"my_tracker": "my_package.tracking:create"}})
    return site


def test_config_env_var_name() -> None:
    assert tracker_config_env_var_name("my_tracker") == "TORCHX_TRACKER_MY_TRACKER_CONFIG"


def test_builtin_fsspec_tracker_resolves_by_name(tmp_path: Path) -> None:
    (tracker,) = build_trackers({"fsspec": str(tmp_path / "t")})
    assert isinstance(tracker, FsspecTracker)


def test_module_path_factory(tmp_path: Path) -> None:
    (tracker,) = build_trackers({"torchx.tracker.backend.fsspec:create": str(tmp_path / "t")})
    assert isinstance(tracker, FsspecTracker)


def test_unknown_tracker_is_skipped_with_a_suggestion(caplog: pytest.LogCaptureFixture) -> None:
    assert build_trackers({"fspec": "/tmp/x"}) == []
    assert "Did you mean `fsspec`?" in caplog.text


def test_app_run_outside_a_job_has_undefined_id() -> None:
    AppRun.run_from_env.cache_clear()
    try:
        run = app_run_from_env()
        assert run.job_id() == "<UNDEFINED>"
        run.add_metadata(x=1)  # no backends: a no-op, not an error
    finally:
        AppRun.run_from_env.cache_clear()


JOB = """
from torchx.tracker import app_run_from_env
run = app_run_from_env()
run.add_metadata(lr=0.5)
run.add_artifact("ckpt", "/ckpt/model.pt")
print(run.job_id())
"""


def test_seed_custom_tracker_and_fsspec_activated_from_env(
    tmp_path: Path, my_tracker_site: Path
) -> None:
    """The seed page's activation example: TORCHX_TRACKERS=my_tracker,fsspec plus per-tracker config."""
    env = os.environ.copy()
    env.update(
        PYTHONPATH=str(my_tracker_site),
        TORCHX_TRACKERS="my_tracker,fsspec",
        TORCHX_TRACKER_MY_TRACKER_CONFIG=str(tmp_path / "my.json"),
        TORCHX_TRACKER_FSSPEC_CONFIG=str(tmp_path / "tracker_data"),
        TORCHX_JOB_ID="local_cwd://torchx/train-1",
        TORCHX_PARENT_RUN_ID="local_cwd://torchx/prep-1",
    )
    out = subprocess.run(
        [sys.executable, "-c", JOB], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "local_cwd://torchx/train-1"
    mine = json.loads((tmp_path / "my.json").read_text())["local_cwd://torchx/train-1"]
    assert mine == {
        "sources": ["local_cwd://torchx/prep-1"],
        "metadata": {"lr": 0.5},
        "artifacts": {"ckpt": "/ckpt/model.pt"},
    }
    fs_tracker = build_trackers({"fsspec": str(tmp_path / "tracker_data")})[0]
    lineage = fs_tracker.lineage("local_cwd://torchx/prep-1")
    assert lineage.descendants == ["local_cwd://torchx/train-1"]
    assert fs_tracker.metadata("local_cwd://torchx/train-1") == {"lr": 0.5}
