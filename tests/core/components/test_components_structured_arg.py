"""Tests for torchx.components.structured_arg."""

from __future__ import annotations

import pytest

from torchx.components import structured_arg
from torchx.components.structured_arg import StructuredJArgument, StructuredNameArgument


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("exp/run", ("exp", "run")),
        ("exp/", ("exp", "train")),
        ("/run", ("default-experiment", "run")),
        ("run", ("default-experiment", "run")),
        ("/", ("default-experiment", "train")),
    ],
)
def test_name_argument(name: str, expected: tuple[str, str]) -> None:
    parsed = StructuredNameArgument.parse_from(name, script="dir/train.py")
    assert (parsed.experiment_name, parsed.run_name) == expected


def test_name_argument_from_module_and_errors() -> None:
    assert StructuredNameArgument.parse_from("/", m="a.b.c").run_name == "c"
    with pytest.raises(ValueError, match="usage"):
        StructuredNameArgument.parse_from("a/b/c", m="x")
    # as TorchX: exactly one of -m and --script, even when the name has a run part
    with pytest.raises(ValueError, match="No main module or script specified"):
        StructuredNameArgument.parse_from("exp/run")
    with pytest.raises(ValueError, match="Both main module and script set"):
        StructuredNameArgument.parse_from("exp/run", m="a.b", script="a/b.py")


def test_j_argument_infers_from_gpus() -> None:
    assert str(StructuredJArgument.parse_from("gpu.large", "3")) == "3x4"
    assert StructuredJArgument.parse_from("gpu.small", "2x1") == StructuredJArgument(2, 1)


def test_j_argument_not_a_gpu_instance() -> None:
    with pytest.raises(ValueError) as e:
        StructuredJArgument.parse_from("cpu.small", "2")
    assert str(e.value).startswith(
        "nproc_per_node cannot be inferred from GPU count. `cpu.small` is not a GPU instance."
    )


def test_j_argument_warns_on_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    class _Warnings:
        @staticmethod
        def warn(msg: str, *args: object, **kwargs: object) -> None:
            seen.append(msg)

    monkeypatch.setattr(structured_arg, "warnings", _Warnings)
    assert str(StructuredJArgument.parse_from("gpu.small", "1x4")) == "1x4"
    assert len(seen) == 1 and "differ from the GPU count (1)" in seen[0]


@pytest.mark.parametrize("j", ["", "x", "1:2x4", "2x"])
def test_j_argument_bad_format(j: str) -> None:
    with pytest.raises(ValueError, match="Invalid format for `-j"):
        StructuredJArgument.parse_from("gpu.small", j)
