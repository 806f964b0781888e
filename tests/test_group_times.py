"""The per-group time summary of a ``--dist loadgroup`` run (tests/_group_times.py)."""

from __future__ import annotations

from _group_times import group_of


def test_the_group_is_the_part_after_the_last_at_sign_past_the_parameters() -> None:
    assert group_of("tests/dags/test_dags_celery.py::test_x@stack") == "stack"
    assert group_of("tests/a.py::test_y[p@q]@/work/main/tests/a.py") == "/work/main/tests/a.py"


def test_a_test_without_a_group_has_none() -> None:
    assert group_of("tests/a.py::test_y") == ""
    assert group_of("tests/a.py::test_y[user@host]") == ""
