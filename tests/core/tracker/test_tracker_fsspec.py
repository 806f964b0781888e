from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import fsspec
import pytest

from torchx.tracker.api import TrackerArtifact, TrackerSource
from torchx.tracker.backend.fsspec import (
    FsspecTracker,
    _decode_torchx_run_id,
    _encode_torchx_run_id,
    _read_config,
    create,
)

RUN = "local_cwd://torchx/train-abc"
PREP = "local_cwd://torchx/prep-xyz"


@pytest.fixture
def tracker(tmp_path: Path) -> FsspecTracker:
    return create(str(tmp_path / "runs"))


def test_run_id_encoding_roundtrip_keeps_one_path_segment() -> None:
    for run_id in [RUN, "a/b/c", "kubernetes://ns:job", "ümlaut run"]:
        enc = _encode_torchx_run_id(run_id)
        assert "/" not in enc and ":" not in enc
        assert _decode_torchx_run_id(enc) == run_id


def test_metadata_merges_in_order(tracker: FsspecTracker) -> None:
    tracker.add_metadata(RUN, lr=0.1, epochs=3)
    tracker.add_metadata(RUN, lr=0.01)
    assert tracker.metadata(RUN) == {"lr": 0.01, "epochs": 3}
    assert tracker.metadata("never-seen") == {}


def test_artifacts_last_wins(tracker: FsspecTracker) -> None:
    tracker.add_artifact(RUN, "ckpt", "/tmp/a.pt", {"step": 1})
    tracker.add_artifact(RUN, "ckpt", "/tmp/b.pt", {"step": 2})
    tracker.add_artifact(RUN, "report", "s3://bucket/report.html")
    arts = tracker.artifacts(RUN)
    assert arts["ckpt"] == TrackerArtifact("ckpt", "/tmp/b.pt", {"step": 2})
    assert arts["report"] == TrackerArtifact("report", "s3://bucket/report.html", {})


@pytest.mark.parametrize("name", ["../escape", "a/../../b", "/abs", "", "two\nlines"])
def test_artifact_names_cannot_escape(tracker: FsspecTracker, name: str) -> None:
    with pytest.raises(ValueError, match="invalid artifact name"):
        tracker.add_artifact(RUN, name, "/tmp/x")
    with pytest.raises(ValueError, match="invalid artifact name"):
        tracker.add_source(RUN, PREP, artifact_name=name)


def test_sources_and_run_ids(tracker: FsspecTracker) -> None:
    tracker.add_source(RUN, PREP)
    tracker.add_source(RUN, PREP, "dataset")
    tracker.add_source(RUN, PREP, "dataset")  # idempotent
    assert list(tracker.sources(RUN)) == [TrackerSource(PREP, None), TrackerSource(PREP, "dataset")]
    assert list(tracker.sources(RUN, "dataset")) == [TrackerSource(PREP, "dataset")]
    assert set(tracker.run_ids()) == {RUN, PREP}
    assert list(tracker.run_ids(parent_run_id=PREP)) == [RUN]
    assert list(tracker.run_ids(parent_run_id=RUN)) == []


def test_lineage_is_transitive_both_ways(tracker: FsspecTracker) -> None:
    evaluate = "local_cwd://torchx/eval-1"
    tracker.add_artifact(PREP, "dataset", "/data/prepared")
    tracker.add_source(RUN, PREP, "dataset")
    tracker.add_artifact(RUN, "checkpoint", "/ckpt/model.pt")
    tracker.add_source(evaluate, RUN, "checkpoint")

    down = tracker.lineage(PREP)
    assert down.descendants == [RUN, evaluate]
    assert down.ancestors == []
    up = tracker.lineage(evaluate)
    assert up.ancestors == [RUN, PREP]
    assert up.parents == [RUN]
    assert up.artifacts[PREP]["dataset"].path == "/data/prepared"
    mid = tracker.lineage(RUN)
    assert (mid.parents, mid.children) == ([PREP], [evaluate])
    assert {(e.parent, e.child, e.artifact_name) for e in mid.edges} == {
        (PREP, RUN, "dataset"),
        (RUN, evaluate, "checkpoint"),
    }
    assert mid.to_json()["artifacts"][RUN]["checkpoint"]["path"] == "/ckpt/model.pt"


def test_lineage_survives_cycles(tracker: FsspecTracker) -> None:
    tracker.add_source("a", "b")
    tracker.add_source("b", "a")
    lin = tracker.lineage("a")
    assert lin.ancestors == ["b"] and lin.descendants == ["b"]


def test_memory_filesystem_url() -> None:
    t = create("memory://tracker-test-root")
    t.add_metadata(RUN, ok=True)
    assert t.metadata(RUN) == {"ok": True}
    assert isinstance(fsspec.filesystem("memory").ls("/tracker-test-root"), list)


def test_config_file_form(tmp_path: Path) -> None:
    root = tmp_path / "root"
    cfg = tmp_path / "tracker.conf"
    cfg.write_text(f"# fsspec tracker\nprotocol=file\nroot_path={root}\nextra.nested = 1\n")
    assert _read_config(str(cfg)) == {
        "protocol": "file",
        "root_path": str(root),
        "extra": {"nested": "1"},
    }
    cfg.write_text(f"protocol=file\nroot_path={root}\n")
    t = create(str(cfg))
    t.add_metadata(RUN, x=1)
    assert root.is_dir()


def test_config_file_missing_keys(tmp_path: Path) -> None:
    cfg = tmp_path / "tracker.conf"
    cfg.write_text("protocol=file\n")
    with pytest.raises(ValueError, match=r"Missing required key\(s\) \['root_path'\]"):
        create(str(cfg))


def test_no_config_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="needs a config"):
        create(None)


def test_missing_root_dir_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        FsspecTracker(fsspec.filesystem("file"), str(tmp_path / "nope"))


WRITER = """
import sys
from torchx.tracker.backend.fsspec import create
root, worker, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
run = "local_cwd://torchx/train-abc"
t = create(root)
for i in range(n):
    t.add_metadata(run, **{f"w{worker}_{i}": i})
    t.add_artifact(run, f"a{worker}", f"/p/{worker}/{i}")
    t.add_source(run, f"src-{i % 3}", f"art{worker}")
"""


def test_concurrent_writer_processes(tmp_path: Path) -> None:
    root = str(tmp_path / "runs")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, root, str(w), "20"]) for w in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    t = create(root)
    meta = t.metadata(RUN)
    assert len(meta) == 4 * 20
    arts = t.artifacts(RUN)
    assert {a.path for a in arts.values()} == {f"/p/{w}/19" for w in range(4)}
    got = {(s.source_run_id, s.artifact_name) for s in t.sources(RUN)}
    assert got == {(f"src-{i}", f"art{w}") for i in range(3) for w in range(4)}
    leftovers = [p for p in Path(root).rglob(".tmp-*")]
    assert leftovers == []


def test_config_file_given_as_a_url(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    cfg = tmp_path / "tracker.conf"
    cfg.write_text(f"protocol=file\nroot_path={root}\n")
    t = create(f"file://{cfg}")  # an existing file, not a root directory to create
    t.add_metadata(RUN, x=1)
    assert t.metadata(RUN) == {"x": 1}
    assert cfg.is_file() and any(root.iterdir())
    cfg.write_text("protocol=file\n")
    with pytest.raises(ValueError, match="root_path"):
        create(f"file://{cfg}")


def test_config_key_with_an_empty_part(tmp_path: Path) -> None:
    cfg = tmp_path / "tracker.conf"
    cfg.write_text("protocol=file\nroot_path=/x\nclient_kwargs.endpointUrl.=http://h:9000\n")
    with pytest.raises(ValueError, match="empty part"):
        _read_config(str(cfg))
