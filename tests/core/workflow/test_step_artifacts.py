"""``Step.artifacts``: declared outputs kept as typed artifacts by orchestrators that can."""

from pathlib import Path

import pytest

pytest.importorskip("pydantic")

from torchx.workflow import load_pipeline
from torchx.workflow.errors import WorkflowError

YAML = """\
name: t
steps:
  a:
    component: utils.echo
    outputs: {x: /tmp/x}
    artifacts: {ARTIFACTS}
"""


def _load(tmp_path: Path, artifacts: str) -> object:
    path = tmp_path / "p.yaml"
    path.write_text(YAML.replace("ARTIFACTS", artifacts))
    return load_pipeline(path)


def test_artifacts_of_declared_outputs_load(tmp_path: Path) -> None:
    pipeline = _load(tmp_path, "x: Model")
    step = pipeline.steps["a"]  # type: ignore[attr-defined]
    assert step.artifacts == {"x": "Model"} and step.outputs == {"x": "/tmp/x"}


def test_an_artifact_of_an_undeclared_output_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(WorkflowError) as err:
        _load(tmp_path, "y: Model")
    assert str(err.value).endswith(
        "step `a`: `artifacts` names `y`, which is not a declared output:"
        " add `y: <path>` to `outputs`"
    )


def test_an_unknown_kind_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(WorkflowError, match="'Artifact', 'Dataset', 'Model', 'Metrics'"):
        _load(tmp_path, "x: Parquet")
