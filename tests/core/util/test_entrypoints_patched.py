"""Entry-point lookups see a replaced ``importlib.metadata.entry_points`` (tests of code written
against TorchX patch ``torchx.util.entrypoints.metadata.entry_points``)."""

from __future__ import annotations

import importlib.metadata
from unittest import mock

from torchx.util import entrypoints

EPS = importlib.metadata.EntryPoints(
    [importlib.metadata.EntryPoint("foo", "json:dumps", "torchx_flow.test.nobody_declares_this")]
)


def test_module_exposes_importlib_metadata() -> None:
    assert entrypoints.metadata is importlib.metadata


def test_patched_entry_points_are_seen() -> None:
    group = "torchx_flow.test.nobody_declares_this"
    assert entrypoints.select(group) == []  # the file scan answers: nobody declares it
    with mock.patch("torchx.util.entrypoints.metadata.entry_points", return_value=EPS):
        assert [ep.name for ep in entrypoints.select(group)] == ["foo"]
        assert entrypoints.load(group, "foo") is __import__("json").dumps
    assert entrypoints.select(group) == []
