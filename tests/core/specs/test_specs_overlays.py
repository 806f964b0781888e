import json
import logging
from pathlib import Path
from typing import Any

import pytest

from torchx.specs.api import AppDef, Role
from torchx.specs.overlays import (
    DEL,
    JOIN,
    OVERLAYS_MARKER,
    PUT,
    OverlaySpec,
    apply_overlay,
    get_overlay,
    set_overlay,
    validate_overlay,
)


def test_operator_keys() -> None:
    assert PUT("a") == "__put__:a"
    assert DEL("a") == "__del__:a"
    assert JOIN("containers", on="name") == "__join__:containers:name"


def test_apply_overlay_merge_rules() -> None:
    base = {"a": {"b": 1, "c": [1]}, "d": "x", "e": [1, 2], "n": 1}
    apply_overlay(base, {"a": {"c": [2], "z": 0}, "d": 5, "e": (9,), "n": "s", "new": [{"k": 1}]})
    assert base == {
        "a": {"b": 1, "c": [1, 2], "z": 0},
        "d": 5,
        "e": [9],
        "n": "s",
        "new": [{"k": 1}],
    }


def test_apply_overlay_copies_values() -> None:
    overlay = {"l": [{"x": 1}]}
    base: dict[str, object] = {}
    apply_overlay(base, overlay)
    base["l"][0]["x"] = 2  # type: ignore[index]
    assert overlay == {"l": [{"x": 1}]}


def test_apply_overlay_type_mismatch() -> None:
    with pytest.raises(
        TypeError, match=r"^type mismatch for attr: `a`\. <class 'dict'> != <class 'str'>$"
    ):
        apply_overlay({"a": {}}, {"a": "x"})
    with pytest.raises(TypeError, match="type mismatch for attr: `b`"):
        apply_overlay({"b": "x"}, {"b": [1]})


def test_apply_overlay_operators() -> None:
    base = {
        "spec": {
            "tolerations": [{"a": 1}],
            "nodeSelector": {"x": "y"},
            "containers": [{"name": "c1", "env": [{"name": "A"}]}, {"name": "c2"}],
        }
    }
    apply_overlay(
        base,
        {
            "spec": {
                PUT("tolerations"): [{"b": 2}],
                DEL("nodeSelector"): None,
                JOIN("containers", on="name"): [
                    {"name": "c1", "env": [{"name": "B"}]},
                    {"name": "c3"},
                ],
            }
        },
    )
    assert base == {
        "spec": {
            "tolerations": [{"b": 2}],
            "containers": [
                {"name": "c1", "env": [{"name": "A"}, {"name": "B"}]},
                {"name": "c2"},
                {"name": "c3"},
            ],
        }
    }


def test_join_errors() -> None:
    with pytest.raises(TypeError):
        apply_overlay({"a": "x"}, {JOIN("a", on="k"): [{"k": 1}]})
    with pytest.raises(TypeError):
        apply_overlay({"a": [1]}, {JOIN("a", on="k"): [{"k": 1}]})
    with pytest.raises(ValueError, match="malformed overlay key"):
        apply_overlay({"a": []}, {"__join__:a": []})


def test_set_and_get_overlay_accumulate() -> None:
    role = Role("r", "img")
    set_overlay(role, "kubernetes", "V1Pod", {"spec": {"a": 1, "l": [1]}})
    set_overlay(role, "kubernetes", "V1Pod", {"spec": {"b": 2, "l": [2]}})
    assert role.metadata["kubernetes"]["__torchx_overlays__"] is True
    assert get_overlay(role, "kubernetes", "V1Pod") == {"spec": {"a": 1, "b": 2, "l": [1, 2]}}
    assert get_overlay(role, "kubernetes", "V1Service") == {}
    assert get_overlay(role, "other", "V1Pod") == {}


def test_last_operator_wins_when_accumulating() -> None:
    app = AppDef("a")
    set_overlay(app, "k8s", "V1Pod", {"spec": {"x": [1]}})
    set_overlay(app, "k8s", "V1Pod", {"spec": {PUT("x"): [2]}})
    assert get_overlay(app, "k8s", "V1Pod") == {"spec": {PUT("x"): [2]}}
    set_overlay(app, "k8s", "V1Pod", {"spec": {DEL("x"): None}})
    assert get_overlay(app, "k8s", "V1Pod") == {"spec": {DEL("x"): None}}


def test_set_overlay_replaces_non_dict_namespace(caplog: pytest.LogCaptureFixture) -> None:
    role = Role("r", "img", metadata={"kubernetes": "oops"})
    with caplog.at_level(logging.WARNING):
        set_overlay(role, "kubernetes", "V1Pod", {"a": 1})
    assert "non-dict" in caplog.text
    assert get_overlay(role, "kubernetes", "V1Pod") == {"a": 1}


def test_reserved_kind() -> None:
    with pytest.raises(ValueError, match="reserved"):
        set_overlay(Role("r", "i"), "ns", "__torchx_overlays__", {})


def test_legacy_flat_fallback(caplog: pytest.LogCaptureFixture) -> None:
    role = Role("r", "img", metadata={"kubernetes": {"spec": {"a": 1}}})
    with caplog.at_level(logging.WARNING):
        assert get_overlay(role, "kubernetes", "V1Pod") == {"spec": {"a": 1}}
    assert "legacy flat overlay" in caplog.text
    assert get_overlay(role, "kubernetes", "V1Pod", flat_fallback=False) == {}
    nested = Role("r", "img", metadata={"kubernetes": {"V1Service": {"a": 1}}})
    assert get_overlay(nested, "kubernetes", "V1Pod") == {}
    marked = Role("r", "img")
    set_overlay(marked, "kubernetes", "V1Service", {"a": 1})
    assert get_overlay(marked, "kubernetes", "V1Pod") == {}


def test_overlay_from_uri(tmp_path: Path) -> None:
    as_json = tmp_path / "o.json"
    as_json.write_text(json.dumps({"V1Pod": {"spec": {"a": 1}}}))
    role = Role("r", "img", metadata={"kubernetes": str(as_json)})
    assert get_overlay(role, "kubernetes", "V1Pod") == {"spec": {"a": 1}}
    as_yaml = tmp_path / "o.yaml"
    as_yaml.write_text("V1Pod:\n  spec:\n    t: !!python/tuple [1, 2]\n")
    role = Role("r", "img", metadata={"kubernetes": f"file://{as_yaml}"})
    assert get_overlay(role, "kubernetes", "V1Pod") == {"spec": {"t": (1, 2)}}
    bad = tmp_path / "bad.yaml"
    bad.write_text("- 1\n")
    with pytest.raises(ValueError, match="must contain a mapping"):
        get_overlay(Role("r", "i", metadata={"kubernetes": str(bad)}), "kubernetes", "V1Pod")


def test_validate_overlay() -> None:
    validate_overlay({"spec": {"a": 1}}, blocklist=["spec.containers"], forbidden_keys={"V1Pod"})
    with pytest.raises(
        ValueError, match=r"^disallowed overlay attributes `pod.spec.containers`, since"
    ):
        validate_overlay(
            {"spec": {PUT("containers"): []}}, blocklist=["spec.containers"], overlay_name="pod"
        )
    with pytest.raises(
        ValueError, match=r"^overlay overlay contains misplaced keys: \{'V1Pod'\}\. use X$"
    ):
        validate_overlay({"V1Pod": {}}, forbidden_keys={"V1Pod"}, suggestion="use X")


def test_overlay_spec() -> None:
    spec = OverlaySpec("kubernetes", "V1Pod", blocklist=("spec.image",))
    role = Role("r", "img")
    spec.set(role, {"spec": {"a": 1}})
    assert spec.get(role) == {"spec": {"a": 1}}
    with pytest.raises(ValueError, match="disallowed"):
        spec.set(role, {"spec": {"image": "x"}})
    flat = Role("r", "img", metadata={"kubernetes": {"spec": {"a": 1}}})
    assert spec.get(flat) == {}


@pytest.mark.parametrize(
    ("base", "overlay", "want"),
    [
        ({PUT("tags"): ["old"]}, {"tags": ["new"]}, {"tags": ["new"]}),
        ({DEL("f"): None}, {PUT("f"): "new"}, {"f": "new"}),
        ({JOIN("c", on="name"): [{"name": "m"}]}, {DEL("c"): None}, {}),
        (
            {"c": [{"name": "m"}], PUT("c"): []},
            {JOIN("c", on="name"): [{"name": "m", "x": 1}]},
            {"c": [{"name": "m", "x": 1}]},
        ),
    ],
)
def test_operator_keys_in_base_are_replaced(
    base: dict[str, Any], overlay: dict[str, Any], want: dict[str, Any]
) -> None:
    # merging an overlay into an overlay: the last operation for a field wins (as TorchX)
    apply_overlay(base, overlay)
    assert base == want


def test_kind_missing_from_a_marked_namespace_is_a_debug_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    role = Role(name="w", image="img")
    set_overlay(role, "sched", "JobSpec", {"priority": "high"})
    with caplog.at_level(logging.DEBUG, logger="torchx.specs.overlays"):
        assert get_overlay(role, "sched", "JobConfig") == {}
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    assert "JobSpec" in caplog.text and OVERLAYS_MARKER not in caplog.text
