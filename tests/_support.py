"""Helpers shared by tests (importable as ``_support``: pytest puts ``tests/`` on ``sys.path``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[1]


def write_dist(root: Path, name: str, groups: dict[str, dict[str, str]]) -> Path:
    """Writes a minimal installed distribution (``NAME-0.1.dist-info``) declaring entry points.

    Put ``root`` on ``sys.path`` (or ``PYTHONPATH`` for a subprocess) and ``importlib.metadata``
    finds the entry points for real.

    Args:
        root: the directory that plays site-packages.
        name: the distribution name.
        groups: ``{group: {entry point name: "module:attr"}}``.

    Returns:
        ``root``.
    """
    info = root / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines: list[str] = []
    for group, eps in groups.items():
        lines.append(f"[{group}]")
        lines += [f"{k} = {v}" for k, v in eps.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    return root


def write_file(root: Path, rel: str, src: str) -> Path:
    """Writes ``textwrap.dedent(src)`` to ``root/rel``, creating parent directories."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(src))
    return path


TORCHX = str(Path(sys.executable).parent / "torchx")
"""The ``torchx`` console script of the interpreter running the tests."""


def run_torchx(
    *args: str,
    env: dict[str, str] | None = None,
    stdin: str = "",
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Runs the real ``torchx`` command and captures its output.

    Args:
        *args: the command line after ``torchx``.
        env: variables set over the test's environment.
        stdin: text fed to standard input (empty: an immediate EOF).
        cwd: the working directory.
        timeout: seconds before the test fails instead of hanging.
    """
    return subprocess.run(
        [TORCHX, *args],
        capture_output=True,
        text=True,
        input=stdin,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=timeout,
    )


def wait_until(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.25) -> T:
    """Asks ``predicate`` every ``interval`` s until it returns a truthy value, and returns it.

    Not a timed assertion: ``timeout`` only bounds a hung test.

    Args:
        predicate: what to ask (no argument); its first truthy answer is returned.
        timeout: seconds before giving up.
        what: what the test waits for, for the failure message.
        interval: seconds between two asks.

    Raises:
        AssertionError: ``predicate`` said nothing truthy in ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)
    return value


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or before the read
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def run_training_dag(
    home: Path,
    template: Path,
    conf: dict[str, object],
    extra_env: dict[str, str] | None = None,
    timeout: float = 280,
) -> tuple[dict[str, Any], str]:
    """Runs ``dags/torchx_training.py`` under ``dag.test()`` on a throwaway SQLite home.

    Args:
        home: the Airflow home to create.
        template: a cached, migrated home that ``prepare_home`` copies (faster than a migration).
        conf: the DAG run's conf.
        extra_env: more environment (connections, for example).
        timeout: seconds before the run is killed.

    Returns:
        The summary JSON the run prints last, and its stdout + stderr.
    """
    import json

    from torchx_airflow.local import dag_test_argv, prepare_home

    env = {
        **os.environ,
        **prepare_home(home, template=template),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "PATH": f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}",
        **(extra_env or {}),
    }
    proc = subprocess.run(
        dag_test_argv(REPO / "dags" / "torchx_training.py", "torchx_training", conf),
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    summary: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return summary, output


def gate_command(gate_dir: str, then: str) -> str:
    """A shell command that waits until ``gate_dir/open`` exists, then runs ``then``.

    An app with this command runs until the test says (:func:`open_gate`), so a fault can land
    while it runs and the app ends at once afterwards, with no fixed ``sleep``. Mount
    ``gate_dir`` at the same path into a container (:func:`gate_mount`).
    """
    return f"until [ -e {gate_dir}/open ]; do sleep 0.5; done; {then}"


def gate_mount(gate_dir: Path) -> str:
    """The ``--mounts`` value that shows ``gate_dir`` (created here) at the same path inside
    a container or pod."""
    gate_dir.mkdir(parents=True, exist_ok=True)
    gate_dir.chmod(0o755)
    return f"type=bind,src={gate_dir},dst={gate_dir},readonly"


def open_gate(gate_dir: Path) -> None:
    """Lets every app waiting on ``gate_dir`` (:func:`gate_command`) go on."""
    (gate_dir / "open").touch()


def run_opening_gate(
    cmd: list[str], env: dict[str, str], log: Path, text: str, gate_dir: Path, timeout: float = 300
) -> tuple[int, str]:
    """Runs ``cmd`` (output in ``log``) and opens the gate once ``text`` is in its output.

    The gate also opens when the command ends first or after ``timeout`` seconds (then the
    command is killed): the caller's assertions on the output say what went wrong. Not a timed
    assertion: the bound only stops a hung run.

    Returns:
        The command's exit code (-9 when killed at the timeout) and its output.
    """
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and text not in log.read_text():
            if time.monotonic() > deadline:
                proc.kill()
            time.sleep(0.1)
        open_gate(gate_dir)
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        open_gate(gate_dir)
        proc.kill()
        code = proc.wait()
    return code, log.read_text()


SLOW_FINALIZER = """\
class Slow:
    def __del__(self):
        print("in finalizer", flush=True)
        end = time.monotonic() + 3
        while time.monotonic() < end:  # the signal's handler runs here: its exception is ignored
            pass
"""
"""A class whose ``__del__`` prints ``in finalizer`` and then spins 3 s (needs ``import time``)."""


def signal_in_finalizer(script: Path, sig: int) -> tuple[int, str, str]:
    """Runs ``script``, sends ``sig`` once it prints ``in finalizer``; returns (rc, out, err).

    The script's first line of output must be ``in finalizer`` (see :data:`SLOW_FINALIZER`).
    """
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "in finalizer\n"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err
