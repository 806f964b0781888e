"""The tour's example component (docs/tour.md) runs unchanged, through a real `torchx` subprocess."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _support import run_torchx

REPO = Path(__file__).resolve().parents[2]


def readme_component_source() -> str:
    text = (REPO / "docs" / "tour.md").read_text()
    match = re.search(
        r"<!-- example-component:start -->\s*```python\n(.*?)```\s*<!-- example-component:end -->",
        text,
        re.S,
    )
    assert match, "docs/tour.md lost its example component block"
    return match.group(1)


def test_readme_block_is_the_shipped_example_file() -> None:
    shipped = (REPO / "examples" / "components.py").read_text()
    # the shipped file adds only a module docstring on top of the tour's block
    assert shipped.endswith(readme_component_source())


def test_readme_component_runs_unchanged(tmp_path: Path) -> None:
    comp = tmp_path / "components.py"
    comp.write_text(readme_component_source())
    proc = run_torchx(
        "run", "-s", "local_cwd", f"{comp}:greet", "--name", "tour", "--times", "2", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith("local_cwd://torchx/greet-")
    assert "hello tour 0" in proc.stderr
    assert "hello tour 1" in proc.stderr


def test_readme_component_args_are_not_shell_interpreted(tmp_path: Path) -> None:
    comp = tmp_path / "components.py"
    comp.write_text(readme_component_source())
    marker = tmp_path / "pwned"
    evil = f"$(touch {marker}); `touch {marker}`"
    proc = run_torchx("run", "-s", "local_cwd", f"{comp}:greet", "--name", evil, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"hello {evil} 0" in proc.stderr
    assert not marker.exists()


@pytest.mark.parametrize("shout", ["True", "False"])
def test_readme_component_dryrun(tmp_path: Path, shout: str) -> None:
    comp = tmp_path / "components.py"
    comp.write_text(readme_component_source())
    proc = run_torchx(
        "run", "--dryrun", "-s", "local_cwd", f"{comp}:greet", "--shout", shout, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    expected = "HELLO WORLD" if shout == "True" else "hello world"
    assert "=== APPLICATION ===" in proc.stdout
    assert expected in proc.stdout
