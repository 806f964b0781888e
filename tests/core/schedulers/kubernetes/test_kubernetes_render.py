"""The fast paths give exactly what the slow reference paths give.

``to_plain`` vs ``ApiClient.sanitize_for_serialization``, ``dump_yaml`` vs ``yaml.dump`` and the
shallow macro substitution vs ``macros.Values.apply``: on the golden apps and on seeded random
data (deterministic: the same cases on every run).
"""

from __future__ import annotations

import random
import warnings
from typing import Any

import pytest
import yaml
from _k8s_apps import ddp_2x1, kitchen_sink

from torchx.schedulers._kubernetes.models import api_client
from torchx.schedulers._kubernetes.render import dump_yaml, dump_yaml_all, to_plain
from torchx.schedulers.kubernetes_scheduler import create_scheduler

TRICKY = [
    "0",
    "007",
    "1.5",
    "1e3",
    "0x1f",
    "true",
    "False",
    "yes",
    "on",
    "null",
    "~",
    "",
    " x",
    "x ",
    "a: b",
    "- a",
    "#c",
    "a #b",
    "{x}",
    "[x]",
    "'q'",
    '"d"',
    "é",
    "a\nb",
    "\t",
    "${app_id}",
    "$${x}",
    "*a",
    "&a",
    "!t",
    "%p",
    "@x",
    "`x`",
    "a,b",
    "?",
    "|",
    ">",
    "long text " * 12,
    "2024-01-01",
    "12:30",
    ".inf",
    "NaN",
    "<<",
]


def _random_data(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(6 if depth < 4 else 3)
    if kind == 0:
        return rng.choice(TRICKY) + rng.choice(["", "", str(rng.randrange(100))])
    if kind == 1:
        return rng.choice([0, -7, 12345678901234, True, False, None])
    if kind == 2:
        return rng.choice(TRICKY)
    if kind == 3:
        return [_random_data(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {
        rng.choice(TRICKY) + str(i): _random_data(rng, depth + 1) for i in range(rng.randrange(5))
    }


@pytest.mark.parametrize("seed", range(40))
def test_dump_yaml_equals_yaml_dump(seed: int) -> None:
    data = _random_data(random.Random(seed))
    assert dump_yaml(data) == yaml.dump(data, sort_keys=True)


def test_dump_yaml_falls_back_for_other_types() -> None:
    for data in ({1: "a"}, {"f": 1.5}, {"t": (1, 2)}, False, "x"):
        assert dump_yaml(data) == yaml.dump(data, sort_keys=True)


@pytest.mark.parametrize("make_app", [ddp_2x1, kitchen_sink])
def test_to_plain_equals_api_client(make_app: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        info = create_scheduler("t").submit_dryrun(
            make_app(), {"queue": "q", "validate_spec": False}
        )
    resource = info.request.resource
    assert to_plain(resource) == sanitize(resource)
    assert str(info) == yaml.dump(sanitize(resource))


@pytest.mark.parametrize("make_app", [ddp_2x1, kitchen_sink])
def test_plain_mode_renders_with_the_same_serializer_and_dumper(make_app: Any) -> None:
    info = create_scheduler("t").submit_dryrun(
        make_app(), {"mode": "plain", "validate_spec": False}
    )
    request = info.request.resource
    objects = [request.service, *request.jobs]
    assert [to_plain(o) for o in objects] == [sanitize(o) for o in objects]
    assert str(info) == yaml.dump_all([sanitize(o) for o in objects], sort_keys=True)
    assert str(info).count("\n---\n") == len(request.jobs)


def test_dump_yaml_all_falls_back_like_yaml_dump_all() -> None:
    docs = [{"a": "é" * 50 + " x" * 40}, {"b": 1.5}, {"c": [1, "0"]}]
    assert dump_yaml_all(docs) == yaml.dump_all(docs, sort_keys=True)
    assert dump_yaml_all(docs[2:]) == yaml.dump_all(docs[2:], sort_keys=True)


def sanitize(obj: Any) -> Any:
    """The reference serializer: the kubernetes client's own."""
    return api_client().sanitize_for_serialization(obj)
