"""scripts/_kfp_log.py: kfp.local's output goes to a log file; the terminal gets task lines."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_kfp_log", REPO / "scripts" / "_kfp_log.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_output_to_takes_this_process_and_its_children(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    kfp_log = _module()
    log = tmp_path / "sub" / "run.log"
    print("before")
    with kfp_log.output_to(log):
        print("printed")
        os.write(2, b"raw stderr\n")
        subprocess.run([sys.executable, "-c", "print('from a child')"], check=True)
    print("after")
    assert log.read_text().splitlines() == ["printed", "raw stderr", "from a child"]
    out, err = capfd.readouterr()
    assert (out, err) == ("before\nafter\n", "")


def test_summary_lines_per_task_and_the_log_end_on_failure(tmp_path: Path) -> None:
    kfp_log = _module()
    log = tmp_path / "run.log"
    cyan, green, red, reset = "\x1b[96m", "\x1b[92m", "\x1b[91m", "\x1b[0m"
    log.write_text(
        f"12:00:00.000 - INFO - Task {cyan}'prepare-data'{reset} finished with status"
        f" {green}SUCCESS{reset}\n"
        + "".join(f"noise {i}\n" for i in range(30))
        + f"12:00:01.000 - ERROR - Task {cyan}'train'{reset} finished with status {red}FAILURE{reset}\n"
    )
    assert kfp_log.task_states(log) == [("prepare-data", "SUCCESS"), ("train", "FAILURE")]
    assert kfp_log.summary_lines(log, failed=False) == [
        "  task prepare-data: SUCCESS",
        "  task train: FAILURE",
    ]
    lines = kfp_log.summary_lines(log, failed=True, tail=3)
    assert lines[2:] == [
        f"  last 3 lines of {log}:",
        "    noise 28",
        "    noise 29",
        "    12:00:01.000 - ERROR - Task 'train' finished with status FAILURE",
    ]
    assert kfp_log.task_states(tmp_path / "none.log") == []


def test_a_real_kfp_local_run_prints_only_the_summary(tmp_path: Path) -> None:
    pytest.importorskip("kfp", reason="kfp is not installed (pip install -e '.[kfp]')")
    code = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(REPO / "scripts")!r})
        from pathlib import Path
        from kfp import dsl, local
        from _kfp_log import output_to, summary_lines, task_names

        @dsl.component
        def shout(word: str) -> str:
            print("executor says", word)
            return word.upper()

        @dsl.pipeline
        def tiny(word: str = "hi"):
            shout(word=word).set_display_name("say it")

        log = Path({str(tmp_path / "kfp.log")!r})
        local.init(runner=local.SubprocessRunner(use_venv=False),
                   pipeline_root={str(tmp_path / "root")!r})
        with output_to(log):
            tiny()
        print("\\n".join(summary_lines(log, False, task_names(tiny))))
    """)
    (tmp_path / "tiny.py").write_text(code)  # kfp reads a component's source from its file
    out = subprocess.run(
        [sys.executable, "tiny.py"], capture_output=True, text=True, cwd=tmp_path, timeout=240
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == "  task say it: SUCCESS\n", out.stdout
    assert "executor says hi" in (tmp_path / "kfp.log").read_text()
