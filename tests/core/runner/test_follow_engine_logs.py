"""Log streaming of the follow engine on real local_cwd apps: skipping lines already shown.

A resumed reader (the Airflow worker after its trigger logged part of the app's output)
passes ``log_skip``: it gets only the rest, while a failed replica's tail is still its whole
last lines, and ``logs_shown`` counts every line of each replica.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator

import pytest

from torchx.runner import Runner, get_runner
from torchx.runner.follow import afollow, follow
from torchx.specs import macros
from torchx.specs.api import AppDef, Role

TEN_THEN_FAIL = "for i in range(10): print('line', i, flush=True)\nraise SystemExit('broke')\n"


@pytest.fixture
def runner() -> Iterator[Runner]:
    with get_runner() as r:
        yield r


def app(code: str) -> AppDef:
    role = Role("worker", image="", entrypoint=sys.executable, args=["-c", code, macros.replica_id])
    return AppDef("skip", roles=[role])


@pytest.mark.parametrize("driver", ["follow", "afollow"])
def test_log_skip_shows_only_the_rest_and_keeps_a_whole_tail(runner: Runner, driver: str) -> None:
    handle = runner.run(app(TEN_THEN_FAIL), "local_cwd")
    lines: list[str] = []
    kwargs = {
        "on_log": lines.append,
        "log_tail": 5,
        "wait_interval": 0.2,
        "log_skip": {"worker/0": 8},
    }
    if driver == "follow":
        result = follow(runner, handle, **kwargs)  # type: ignore[arg-type]
    else:
        result = asyncio.run(afollow(runner, handle, **kwargs))  # type: ignore[arg-type]
    assert result.state == "FAILED"
    # lines 0-7 were shown before: the rest only (the error text goes to stderr, also logged)
    assert [x for x in lines if x.startswith("worker/0 line")] == [
        "worker/0 line 8",
        "worker/0 line 9",
    ]
    assert result.logs_shown["worker/0"] >= 10
    assert result.tails["worker/0"][-1] == "broke"
    assert len(result.tails["worker/0"]) == 5  # the whole tail, not only what was streamed
