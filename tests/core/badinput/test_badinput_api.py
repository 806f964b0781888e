"""Bad input through the Python API (runner, specs): a typed exception with one clear line."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from torchx import specs
from torchx.runner import Runner, get_runner
from torchx.specs.finder import ComponentNotFoundException


@pytest.fixture
def runner() -> Iterator[Runner]:
    with get_runner() as r:
        yield r


def _one_line_error(fn: Callable[[], Any], exc: type[BaseException], *fragments: str) -> None:
    with pytest.raises(exc) as info:
        fn()
    text = info.value.args[0] if info.value.args else str(info.value)
    assert isinstance(text, str) and "\n" not in text.strip(), text
    for fragment in fragments:
        assert fragment in text, text


def test_runner_unknown_component(runner: Runner) -> None:
    _one_line_error(
        lambda: runner.dryrun_component("utils.ech", [], "local_cwd"),
        ComponentNotFoundException,
        "`utils.echo`",
    )


def test_runner_unknown_scheduler(runner: Runner) -> None:
    _one_line_error(
        lambda: runner.dryrun_component("utils.echo", [], "local_cwdd"),
        specs.UnknownSchedulerException,
        "Did you mean `local_cwd`?",
    )


def test_runner_run_option_of_the_wrong_type(runner: Runner) -> None:
    _one_line_error(
        lambda: runner.dryrun_component("utils.echo", [], "local_cwd", cfg={"detach": "maybe"}),
        specs.InvalidRunConfigException,
        "detach, must be of type: bool",
    )


def test_runner_unknown_component_argument(runner: Runner) -> None:
    _one_line_error(
        lambda: runner.dryrun_component("utils.echo", ["--bad"], "local_cwd"),
        ValueError,
        "unrecognized arguments: --bad",
    )


def test_runner_malformed_handle(runner: Runner) -> None:
    _one_line_error(lambda: runner.status("nope"), specs.MalformedAppHandleException, "nope")


def test_specs_unknown_named_resource() -> None:
    _one_line_error(lambda: specs.resource(h="gpu.smal"), KeyError, "Did you mean `gpu.small`?")


def test_specs_unknown_mount_type() -> None:
    _one_line_error(
        lambda: specs.parse_mounts(["type=nope", "src=a", "dst=b"]),
        ValueError,
        "invalid mount type 'nope'",
    )


def test_specs_mount_option_before_type() -> None:
    _one_line_error(lambda: specs.parse_mounts(["src=a"]), KeyError, "type must be specified first")


def test_specs_required_run_option_missing() -> None:
    opts = specs.runopts()
    opts.add("namespace", type_=str, help="the namespace", required=True)
    _one_line_error(lambda: opts.resolve({}), specs.InvalidRunConfigException, "namespace")
