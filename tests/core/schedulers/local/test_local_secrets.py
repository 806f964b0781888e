"""No secrets on disk or in dry runs: the inherited environment is applied at spawn only."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest
from _support import run_torchx

from torchx.runner import get_runner
from torchx.specs import AppDef, AppState, Resource, Role

SECRET = "s3cr3t-token-value-4f9a"
DIGEST = hashlib.sha256(SECRET.encode()).hexdigest()
# the replica prints a digest of what it sees, so the secret itself is in no argument or log
CODE = (
    "import hashlib, os; e = os.environ;"
    " print('sees', hashlib.sha256(e.get('FAKE_API_TOKEN', '').encode()).hexdigest(),"
    " e.get('PYTHONPATH', '<unset>'), e['ROLE_VAR'])"
)


def _files_containing(root: Path, needle: str) -> list[str]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and needle.encode() in path.read_bytes():
            hits.append(str(path))
    return hits


@pytest.mark.parametrize("pythonpath", [None, "/some/where"])
def test_secret_reaches_the_replica_but_no_state_file(
    pythonpath: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FAKE_API_TOKEN", SECRET)
    if pythonpath is None:
        monkeypatch.delenv("PYTHONPATH", raising=False)
    else:
        monkeypatch.setenv("PYTHONPATH", pythonpath)
    role = Role(
        "w",
        "unused",
        entrypoint=sys.executable,
        args=["-c", CODE],
        env={"ROLE_VAR": "from-role"},
        resource=Resource(1, 0, 64),
    )
    with get_runner() as runner:
        info = runner.dryrun(AppDef("secret", roles=[role]), "local_cwd")
        assert SECRET not in repr(info) and SECRET not in str(info.request)
        handle = runner.schedule(info)
        status = runner.wait(handle, wait_interval=60)
        assert status is not None and status.state == AppState.SUCCEEDED
        lines = list(runner.log_lines(handle, "w", 0))
    # the replica got the launcher's environment: the secret and its own PYTHONPATH
    assert lines == [f"sees {DIGEST} {pythonpath or '<unset>'} from-role\n"]
    state_root = Path(os.environ["TORCHX_HOME"])
    assert (state_root / "local").is_dir()
    assert _files_containing(state_root, SECRET) == []


def test_dryrun_output_has_no_inherited_env(tmp_path: Path) -> None:
    out = run_torchx(
        "run",
        "--dryrun",
        "-s",
        "local_cwd",
        "utils.echo",
        "--msg",
        "hi",
        env={"FAKE_API_TOKEN": SECRET},
    )
    assert out.returncode == 0, out.stderr
    assert "TORCHX_JOB_ID" in out.stdout  # the env torchx sets is shown
    assert SECRET not in out.stdout and SECRET not in out.stderr
    assert "FAKE_API_TOKEN" not in out.stdout


ENV_CODE = "import os; print(' '.join(sorted(k for k in os.environ if k.startswith('FAKE_'))))"


def test_env_drop_keeps_matching_inherited_variables_from_the_replicas(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_API_TOKEN", SECRET)
    monkeypatch.setenv("FAKE_CONN_DB", "postgres://u:p@db")
    monkeypatch.setenv("FAKE_PLAIN", "kept")
    role = Role(
        "w",
        "unused",
        entrypoint=sys.executable,
        args=["-c", ENV_CODE],
        env={"FAKE_CONN_SET_BY_APP": "the AppDef's own value is kept"},
        resource=Resource(1, 0, 64),
    )
    with get_runner() as runner:
        cfg = runner.cfg_from_str("local_cwd", "env_drop=FAKE_*TOKEN*;FAKE_CONN_*")
        assert cfg["env_drop"] == ["FAKE_*TOKEN*", "FAKE_CONN_*"]
        handle = runner.run(AppDef("envdrop", roles=[role]), "local_cwd", cfg=cfg)
        status = runner.wait(handle, wait_interval=60)
        assert status is not None and status.state == AppState.SUCCEEDED
        lines = list(runner.log_lines(handle, "w", 0))
    assert lines == ["FAKE_CONN_SET_BY_APP FAKE_PLAIN\n"]


@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        (n, p)
        for n in ("", "a", "AIRFLOW_CONN_X", "AIRFLOW__CORE__FERNET_KEY", "aXbYc", "aab")
        for p in ("AIRFLOW_CONN_*", "AIRFLOW__*KEY*", "*", "?", "a*b?c", "*a*a*", "", "a?b")
    ],
)
def test_env_drop_globs_match_like_fnmatch(name: str, pattern: str) -> None:
    import fnmatch

    from torchx.schedulers._local._wire import glob_match

    assert glob_match(name, pattern) == fnmatch.fnmatchcase(name, pattern)
