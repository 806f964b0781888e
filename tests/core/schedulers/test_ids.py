from __future__ import annotations

import re

import pytest

from torchx.schedulers.ids import get_len_random_id, make_unique, random_id


def test_random_id_alphabet() -> None:
    for _ in range(200):
        rid = random_id()
        assert re.fullmatch(r"[bcdfghjklmnpqrstvwxz][bcdfghjklmnpqrstvwxz012345679]+", rid)
        assert 2 <= len(rid) <= 14


def test_make_unique() -> None:
    name = make_unique("trainer")
    assert name.startswith("trainer-") and len(name) > len("trainer-")
    assert make_unique("a") != make_unique("a")
    assert len(make_unique("a", string_length=5)) == len("a-") + 5


def test_get_len_random_id() -> None:
    assert len(get_len_random_id(40)) == 40
    with pytest.raises(ValueError):
        get_len_random_id(0)


def test_random_id_max_length(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.urandom", lambda n: bytes(range(n)))
    full = random_id()
    assert random_id(max_length=6) == full[:6]
    assert random_id(max_length=100) == full
    assert random_id(max_length=0) == "" and random_id(-3) == ""
