"""Behaviour of the TorchX module paths and names added for the public surface."""

from __future__ import annotations

import ast
import io
import os
import time
import warnings
from pathlib import Path

import pytest


def test_deprecated_warns_on_each_call_and_keeps_the_name() -> None:
    from torchx.deprecations import deprecated, deprecated_module

    @deprecated(replacement="new_fn")
    def old_fn(x: int) -> int:
        """Doc."""
        return x + 1

    with pytest.warns(UserWarning, match=r"old_fn is deprecated; use new_fn instead"):
        assert old_fn(1) == 2
    assert old_fn.__name__ == "old_fn" and old_fn.__doc__ == "Doc."
    with pytest.warns(UserWarning, match="torchx.a has moved to torchx.b"):
        deprecated_module("torchx.a", "torchx.b")


def test_session_id_from_env_then_stable(monkeypatch: pytest.MonkeyPatch) -> None:
    from torchx.runner import events
    from torchx.util import session

    monkeypatch.setattr(session, "CURRENT_SESSION_ID", None)
    monkeypatch.setattr(session, "_created", None)
    monkeypatch.delenv(session.TORCHX_INTERNAL_SESSION_ID, raising=False)
    assert session.get_torchx_session_id() is None
    created = session.get_session_id_or_create_new()
    assert (
        created == session.get_session_id_or_create_new() == events.get_session_id_or_create_new()
    )
    assert session.get_torchx_session_id() == created
    monkeypatch.setenv(session.TORCHX_INTERNAL_SESSION_ID, "from-launcher")
    assert events.get_session_id_or_create_new() == "from-launcher"
    assert session.get_torchx_session_id() == "from-launcher"


def test_cuda_and_datetime() -> None:
    from torchx.util.cuda import has_cuda_devices
    from torchx.util.datetime import get_past_epoch_time

    assert has_cuda_devices() is False  # CPU-only machine and torch
    assert abs(get_past_epoch_time(14) - (time.time() - 14 * 86400)) < 5


def test_tee_copies_every_source_until_closed(tmp_path: Path) -> None:
    from torchx.schedulers.streams import Tee

    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"")
    b.write_bytes(b"")
    out = io.BytesIO()
    out.close = lambda: None  # type: ignore[method-assign]  # keep it readable after close()
    tee = Tee(out, str(a), str(b))  # type: ignore[arg-type]
    with a.open("ab") as fa, b.open("ab") as fb:
        for i in range(200):
            fa.write(f"a{i}\n".encode())
            fb.write(f"b{i}\n".encode())
    tee.close()
    lines = out.getvalue().decode().splitlines()
    assert sorted(lines) == sorted([f"a{i}" for i in range(200)] + [f"b{i}" for i in range(200)])
    assert not tee.thread.is_alive()
    with pytest.raises(ValueError, match="at least one source"):
        Tee(out)  # type: ignore[arg-type]


def test_devices_and_ids() -> None:
    from torchx.schedulers import devices, ids

    mounts = devices.to_devicemounts(2, "/dev/x")
    assert [(m.src_path, m.dst_path) for m in mounts] == [("/dev/x0", "/dev/x0"), ("/dev/x1",) * 2]
    assert devices.efa_to_devicemounts(1)[0].src_path == "/dev/infiniband/uverbs0"
    assert devices.neuron_to_devicemounts(0) == []
    assert 0 <= ids.random_uint64() < 2**64
    rid = ids.random_id()
    assert rid[0] in ids.START_CANDIDATES and set(rid[1:]) <= set(ids.END_CANDIDATES)


def test_dist_helpers() -> None:
    from torchx.components.dist import get_role_name, parse_nnodes

    assert parse_nnodes("1:2x4") == (1, 2, 4, "1:2")
    assert parse_nnodes("2x3") == (2, 2, 3, "2")
    assert parse_nnodes("4") == (1, 1, 4, "1")
    with pytest.raises(ValueError, match="Invalid format for -j"):
        parse_nnodes("x4")
    assert get_role_name("path/to/train.py", None) == "train"
    assert get_role_name(None, "pkg.mod.main") == "main"
    with pytest.raises(ValueError, match="failed to compute role_name"):
        get_role_name(None, None)


def test_cli_helpers() -> None:
    from torchx.cli.cmd_list import APP_NAME_HEADER, NAME_HEADER
    from torchx.cli.cmd_run import MISSING_COMPONENT_ERROR_MSG
    from torchx.cli.cmd_status import parse_list_arg
    from torchx.util.types import to_list

    assert parse_list_arg("") is None and parse_list_arg("a,,b") == ["a", "b"]
    assert to_list("") == [] and to_list(" a, b ,c") == ["a", "b", "c"]
    assert NAME_HEADER == APP_NAME_HEADER == "APP NAME"
    assert "missing component name" in MISSING_COMPONENT_ERROR_MSG


def test_linter_ast_helpers() -> None:
    from torchx.specs.file_linter import (
        ComponentFnVisitor,
        get_generic_type,
        get_optional_type,
        is_primitive,
    )

    def ann(src: str) -> ast.expr:
        return ast.parse(src, mode="eval").body

    for src in ("Optional[int]", "int | None", "None | int"):
        found = get_optional_type(ann(src))
        assert found is not None and ast.unparse(found) == "int", src
    assert get_optional_type(ann("list[int]")) is None
    assert ast.unparse(get_generic_type(ann("list[str]"))) == "str"
    with pytest.raises(TypeError, match="subscripted"):
        get_generic_type(ann("int"))
    assert is_primitive(ann("int")) and not is_primitive(ann("list[int]"))

    module = ast.parse("def good(x: int) -> AppDef: ...\ndef bad(x) -> int: ...\n")
    visitor = ComponentFnVisitor("bad", None)
    visitor.visit(module)
    assert visitor.visited_function and len(visitor.linter_errors) == 2
    visitor = ComponentFnVisitor("good", None)
    visitor.visit(module)
    assert visitor.visited_function and visitor.linter_errors == []


def test_io_helpers_and_plugin_tags() -> None:
    from torchx.plugins import resource_tags
    from torchx.tracker.backend.fsspec import generate_filename
    from torchx.util.io import COMPONENTS_DIR, get_abspath

    assert os.path.isfile(get_abspath(str(COMPONENTS_DIR / "dist.py")))
    first, second = generate_filename(), generate_filename()
    assert first != second and first < second
    assert resource_tags.RESOURCE_NAME == "torchx/named_resources.name"
    assert resource_tags.IS_FRACTIONAL == "torchx/named_resources.is_fractional"


def test_local_scheduler_aliases_and_log_iterator(tmp_path: Path) -> None:
    from torchx.schedulers import local_scheduler as ls
    from torchx.specs import AppDef, Role

    assert (ls.STDOUT_LOG, ls.STDERR_LOG, ls.COMBINED_LOG) == (
        "stdout.log",
        "stderr.log",
        "combined.log",
    )
    scheduler = ls.create_scheduler("surface", state_dir=str(tmp_path / "state"))
    app = AppDef(
        name="it",
        roles=[Role("r", image=str(tmp_path), entrypoint="sh", args=["-c", "echo one; echo two"])],
    )
    try:
        app_id = scheduler.submit(app, {})
        log = str(tmp_path / "state" / "surface" / app_id / "r" / "0" / ls.COMBINED_LOG)
        lines = list(ls.LogIterator(app_id, log, scheduler, should_tail=True))
    finally:
        scheduler.close()
    assert lines == ["one\n", "two\n"]


def test_runtime_tracking_api(tmp_path: Path) -> None:
    from torchx.runtime.tracking import FsspecResultTracker as Reexported
    from torchx.runtime.tracking.api import FsspecResultTracker, ResultTracker

    assert Reexported is FsspecResultTracker and issubclass(FsspecResultTracker, ResultTracker)
    tracker = FsspecResultTracker(str(tmp_path))
    tracker.put(3, loss=0.5, name="x")
    assert tracker[3] == {"loss": 0.5, "name": "x"} and tracker["3"] == tracker.get(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tracker["nothing"] == {}
