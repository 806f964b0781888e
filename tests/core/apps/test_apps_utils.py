"""Tests for torchx.apps.utils (copy_main, booth_main) and torchx.runtime.tracking."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from torchx.apps.utils import booth_main, copy_main
from torchx.runtime.tracking import FsspecResultTracker


def test_copy_main_subprocess(tmp_path: Path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(256)) * 10000)
    dst = tmp_path / "out" / "dst.bin"
    dst.parent.mkdir()
    subprocess.run(
        [sys.executable, "-m", "torchx.apps.utils.copy_main", "--src", str(src), "--dst",
         f"file://{dst}"],
        check=True,
        timeout=60,
    )  # fmt: skip
    assert dst.read_bytes() == src.read_bytes()


def test_copy_main_fsspec_memory(tmp_path: Path) -> None:
    import fsspec

    with fsspec.open("memory://torchx-test/in.txt", "wb") as f:
        f.write(b"payload")
    copy_main.main(["--src", "memory://torchx-test/in.txt", "--dst", str(tmp_path / "o.txt")])
    assert (tmp_path / "o.txt").read_bytes() == b"payload"


def test_copy_main_missing_source(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        copy_main.main(["--src", str(tmp_path / "nope"), "--dst", str(tmp_path / "o")])


def test_booth_function() -> None:
    assert booth_main.booth(1, 3) == 0
    assert booth_main.booth(0, 0) == 74


def test_booth_main_writes_tracker(tmp_path: Path) -> None:
    base = str(tmp_path / "b")
    booth_main.main(["--x1", "0", "--x2", "0", "--trial_idx", "2", "--tracker_base", base])
    assert FsspecResultTracker(base)[2] == {"booth_eval": 74.0}


def test_tracker_roundtrip_and_errors(tmp_path: Path) -> None:
    tracker = FsspecResultTracker(f"file://{tmp_path}/t/")
    tracker[0] = {"loss": 0.5}
    tracker["best"] = {"trial": 0}
    assert tracker[0] == {"loss": 0.5} and tracker["0"] == {"loss": 0.5}
    assert tracker["best"] == {"trial": 0}
    assert tracker[7] == {} and tracker.get("missing") == {}  # TorchX: nothing stored -> {}
    tracker.put("trial_1/eval", l2norm=1.5)
    assert tracker["trial_1/eval"] == {"l2norm": 1.5}
    with pytest.raises(ValueError, match="invalid tracker key"):
        tracker["../x"] = {}


def test_tracker_memory_filesystem() -> None:
    tracker = FsspecResultTracker("memory://torchx-tracker")
    tracker[1] = {"v": 1}
    assert FsspecResultTracker("memory://torchx-tracker")[1] == {"v": 1}
