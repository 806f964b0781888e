"""``configparser`` is imported only when a ``.torchxconfig`` file is read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """\
import contextlib, io, json, runpy, sys
sys.argv = ["torchx", *json.loads(sys.argv[1])]
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    try:
        runpy.run_module("torchx.cli.main", run_name="__main__")
    except SystemExit:
        pass
print(json.dumps([out.getvalue(), "configparser" in sys.modules]))
"""
DRYRUN = ["run", "--dryrun", "-s", "local_cwd", "utils.sh", "echo", "hi"]


def _dryrun(cwd: Path, **env: str) -> tuple[str, bool]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(DRYRUN)],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        env={**os.environ, **env},
    )
    out, imported = json.loads(proc.stdout)
    return out, imported


def test_no_config_file_no_configparser(tmp_path: Path) -> None:
    out, imported = _dryrun(tmp_path, TORCHXCONFIG="")
    assert "'echo hi'" in out
    assert not imported


def test_a_config_file_is_still_read(tmp_path: Path) -> None:
    config = tmp_path / "x.torchxconfig"
    config.write_text(f"[local_cwd]\nlog_dir = {tmp_path}/logs-from-config\n")
    out, imported = _dryrun(tmp_path, TORCHXCONFIG=str(config))
    assert imported
    assert "logs-from-config" in out
