"""Golden files: compared in every test run, rewritten only by ``make goldens``.

``make goldens`` runs the golden tests with ``--regen-goldens`` (a pytest option of
``tests/conftest.py``), which rewrites each golden file from the current output before the
comparison. No environment variable switches it on, and under ``CI=true`` the option is refused,
so a test run can never bless its own output.
"""

from __future__ import annotations

from pathlib import Path

REGENERATE = False
"""Set by ``tests/conftest.py`` from ``--regen-goldens`` (never under CI)."""


def check_golden(path: Path, text: str) -> None:
    """Asserts that ``text`` equals the golden file ``path`` (rewritten first under ``make goldens``).

    Args:
        path: the golden file.
        text: the output the code produces now.
    """
    if REGENERATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"missing golden file {path}: run `make goldens` and review the diff"
    assert text == path.read_text(), (
        f"output differs from the golden file {path}; after an intended change run "
        "`make goldens` and review the diff"
    )
