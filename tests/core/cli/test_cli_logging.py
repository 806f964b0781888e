"""The ``torchx`` command's logging set-up, deferred until ``logging`` is imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROBE = textwrap.dedent(
    """
    import importlib.util, sys
    assert "logging" not in sys.modules
    from torchx.cli import _logging
    _logging.configure("DEBUG")
    assert "logging" not in sys.modules
    importlib.util.find_spec("logging")  # a probe alone neither imports nor configures
    assert "logging" not in sys.modules
    import logging
    root = logging.getLogger()
    assert root.level == logging.DEBUG, root.level
    (handler,) = root.handlers
    assert "%(levelname)-8s %(message)s" in handler.formatter._fmt
    assert not any(type(f).__name__ == "_ConfigureOnImport" for f in sys.meta_path)
    logging.getLogger("x").info("hello")
    """
)


def test_configured_when_logging_is_first_imported() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("\x1b[90mtorchx\x1b[0m ") or line.startswith("torchx ")
    assert line.endswith(" INFO     hello")


def test_configured_at_once_when_logging_is_imported() -> None:
    code = (
        "import logging\nfrom torchx.cli import _logging\n_logging.configure('WARNING')\n"
        "assert logging.getLogger().level == logging.WARNING\n"
        "assert len(logging.getLogger().handlers) == 1"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
