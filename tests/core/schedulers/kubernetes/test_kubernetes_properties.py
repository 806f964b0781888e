"""Property tests (hypothesis, derandomized: the same examples on every run, never flaky)."""

from __future__ import annotations

import re
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from torchx.schedulers._kubernetes.names import clean_label, rank0_env_name, task_name
from torchx.schedulers._kubernetes.render import dump_yaml

STABLE = settings(derandomize=True, deadline=None, max_examples=200, database=None)

LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)?$")
DNS_LABEL_CHARS = re.compile(r"^[a-z0-9-]*$")
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


@STABLE
@given(st.text())
def test_clean_label_is_always_a_valid_label_value(value: str) -> None:
    cleaned = clean_label(value)
    assert len(cleaned) <= 63 and LABEL_VALUE.match(cleaned), cleaned


@STABLE
@given(st.from_regex(r"[A-Za-z][A-Za-z0-9_.-]*", fullmatch=True), st.integers(0, 10_000))
def test_task_names_and_rank0_env(role: str, replica: int) -> None:
    assert DNS_LABEL_CHARS.match(task_name(role, replica))
    assert task_name(role, replica).endswith(f"-{replica}")
    env = rank0_env_name(role)
    assert ENV_NAME.match(env) or env.startswith("VC__"), env  # a shell can expand it


SCALARS = st.one_of(
    st.text(),
    st.text(st.characters(max_codepoint=127), max_size=300),  # long ASCII: line folding
    st.integers(),
    st.booleans(),
    st.none(),
    st.sampled_from(["0", "1.5", "true", "no", "~", "null", "", "- x", "a: b", "#", "0x10"]),
)
JSON_LIKE: Any = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=25,
)


@STABLE
@given(st.dictionaries(st.text(), JSON_LIKE, max_size=5) | st.lists(JSON_LIKE, max_size=5))
def test_dump_yaml_is_exactly_yaml_dump(data: Any) -> None:
    assert dump_yaml(data) == yaml.dump(data, sort_keys=True)
