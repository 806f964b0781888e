"""``_wire.glob_matcher`` answers as ``any(glob_match(name, p) for p in patterns)`` does."""

from __future__ import annotations

import fnmatch
import itertools

import pytest

from torchx.schedulers._local._wire import allowed_env, glob_match, glob_matcher, spawn_env

PATTERNS = [
    [],
    ["PATH"],
    ["*"],
    ["TORCHX_*", "HOME", "LANG"],
    ["A?", "A*", "AB"],
    ["*_TOKEN", "AWS_*", "?X*", "K*Y", "LC_*"],
    ["A*B*", "*", "X"],
]
NAMES = ["", "A", "AB", "ABC", "AXB", "X", "XX", "HOME", "TORCHX_", "TORCHX_JOB_ID", "GH_TOKEN",
         "AWS_SECRET", "LC_ALL", "KEY", "KY", "PATH", "a", "TORCHX"]  # fmt: skip


@pytest.mark.parametrize("patterns", PATTERNS)
def test_the_matcher_agrees_with_glob_match_and_fnmatch(patterns: list[str]) -> None:
    match = glob_matcher(patterns)
    for name in NAMES:
        expected = any(glob_match(name, p) for p in patterns)
        assert match(name) is expected, (name, patterns)
        assert expected is any(fnmatch.fnmatchcase(name, p) for p in patterns), (name, patterns)


def test_allow_and_drop_keep_their_meaning() -> None:
    env = {n: n.lower() for n in NAMES if n}
    kept = allowed_env(env, ["TORCHX_*", "A?", "HOME"], ["*_ID"])
    assert kept is not None
    assert set(kept) == {"PATH", "TORCHX_", "AB", "HOME"}
    spawned = spawn_env({"TORCHX_JOB_ID": "x"}, env, drop=["AWS_*", "*TOKEN", "A?"])
    assert not {"AWS_SECRET", "GH_TOKEN", "AB"} & set(spawned)
    assert spawned["TORCHX_JOB_ID"] == "x" and "ABC" in spawned and "KEY" in spawned


def test_every_pair_of_patterns() -> None:
    pool = ["A*", "A?", "*B", "AB", "*", "?", "A*B", "X"]
    for patterns in itertools.combinations(pool, 2):
        match = glob_matcher(list(patterns))
        for name in NAMES:
            assert match(name) is any(glob_match(name, p) for p in patterns), (name, patterns)
