"""The KFP guide's example (docs/kfp.md) compiles as written (real KFP compiler)."""

import re
from pathlib import Path

import pytest

pytest.importorskip("kfp")

REPO = Path(__file__).resolve().parents[3]


def test_readme_kfp_example_compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (REPO / "docs" / "kfp.md").read_text()
    section = text.split("# Kubeflow Pipelines", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "docs/kfp.md lost its KFP example"
    monkeypatch.chdir(tmp_path)
    exec(compile(match.group(1), "docs/kfp.md", "exec"), {"__name__": "readme_kfp"})
    ir = (tmp_path / "train.yaml").read_text()
    assert "exec-echo" in ir and "exec-train" in ir and "torchx_launch" in ir
