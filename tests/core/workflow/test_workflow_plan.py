"""The public plan: one set of reference rules, rendered with each runner's callbacks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("pydantic", reason="pydantic is not installed (pip install -e '.[workflow]')")

from torchx.workflow import Pipeline, Step, validate_pipeline
from torchx.workflow.plan import (
    Ref,
    Renderer,
    TemplateError,
    ValueRenderer,
    build_step,
    has_refs,
    order,
    parent_of,
    referenced_steps,
)


def _pipeline(source: str = "") -> Pipeline:
    return validate_pipeline(
        Pipeline(
            name="plan",
            source=source,
            params={"word": "hi", "flag": True},
            steps={
                "a": Step(
                    component="utils.echo",
                    args=["--msg", "{{ params.word }}"],
                    outputs={"ckpt": "{{ pipeline.dir }}/{{ steps.a.app_id }}.pt"},
                ),
                "b": Step(component="utils.echo", args=["--msg", "x"], depends_on=["a"]),
                "c": Step(
                    component="utils.echo",
                    args={"msg": "{{ steps.a.outputs.ckpt }} {{ params.flag }}"},
                    env={"RUN": "{{ steps.b.tracker_run_id }}", "N": "{{ pipeline.name }}"},
                ),
            },
        )
    )


def _tagged() -> Renderer:
    return Renderer(_pipeline("/p/plan.yaml"), lambda name: f"P({name})", lambda r: f"S({r.expr})")


def test_renderer_applies_the_rules_and_the_runner_callbacks() -> None:
    r = _tagged()
    # a declared output expands in place; pipeline.dir is the pipeline file's directory
    assert r.render("{{ steps.a.outputs.ckpt }}") == "/p/S(steps.a.app_id).pt"
    assert r.render("{{params.word}}-{{ pipeline.name }}") == "P(word)-plan"
    nested = {"k": ["{{ params.word }}", 3, {"d": "{{ steps.b.state }}"}], "n": None}
    assert r.render_value(nested) == {"k": ["P(word)", 3, {"d": "S(steps.b.state)"}], "n": None}
    assert r(Ref("steps", "b", "app_handle", "{{ steps.b.app_handle }}")) == "S(steps.b.app_handle)"


def test_without_expansion_the_step_callback_gets_the_output_reference() -> None:
    seen: list[str] = []

    def step(ref: Ref) -> str:
        seen.append(ref.expr)
        return "out"

    r = Renderer(_pipeline(), str.upper, step, expand_outputs=False)
    assert r.render("{{ steps.a.outputs.ckpt }}") == "out"
    assert seen == ["steps.a.outputs.ckpt"]


def test_pipeline_dir_defaults_to_the_cwd_without_a_file() -> None:
    assert _tagged().render("{{ pipeline.dir }}") == "/p"
    r = Renderer(_pipeline(), str, str)
    assert r.render("{{ pipeline.dir }}") == os.getcwd()


def test_unsupported_expressions_are_refused() -> None:
    with pytest.raises(TemplateError, match=r"unsupported expression `\{\{ steps.a \}\}`"):
        _tagged().render("{{ steps.a }}")


def test_value_renderer_uses_known_results_or_placeholders() -> None:
    p = _pipeline()
    results = {"a": {"app_id": "a-1"}}
    r = ValueRenderer(p, {"word": "hi", "flag": True}, results)
    assert r.render("{{ params.flag }} {{ params.word }}") == "True hi"
    assert r.outputs_of("a") == {"ckpt": f"{os.getcwd()}/a-1.pt"}
    with pytest.raises(ValueError, match="`{{ steps.b.app_id }}` is not known yet"):
        r.render("{{ steps.b.app_id }}")
    dry = ValueRenderer(p, {"word": "hi", "flag": False}, placeholder=True)
    assert dry.render("{{ steps.b.app_id }} {{ params.flag }}") == "<steps.b.app_id> False"


def test_order_parents_and_references() -> None:
    p = _pipeline()
    assert order(p) == ["a", "b", "c"]
    assert [parent_of(p, s) for s in order(p)] == [None, "a", "b"]
    # c uses b directly and a through the declared output it names
    assert sorted(referenced_steps(p, "c")) == ["a", "b"]
    assert referenced_steps(p, "a") == []  # a's output naming a itself is not a reference
    assert has_refs({"x": ["no", "{{ params.word }}"]}) and not has_refs(["plain", 1])


def test_build_step_renders_and_sets_the_tracker_parent(tmp_path: Path) -> None:
    p = _pipeline(str(tmp_path / "plan.yaml"))
    results: dict[str, dict[str, str]] = {"a": {"app_id": "a-1"}, "b": {"tracker_run_id": "run-b"}}
    # a finished step's declared outputs join its results (what the local executor records)
    outs = ValueRenderer(p, p.param_defaults(), results).outputs_of("a")
    results["a"].update({f"outputs.{k}": v for k, v in outs.items()})
    request = build_step(p, "c", ValueRenderer(p, p.param_defaults(), results), {})
    assert request.parent_run_id == "run-b"
    assert request.app is not None
    role = request.app.roles[0]
    assert role.env["RUN"] == "run-b" and role.env["N"] == "plan"
    assert f"{tmp_path}/a-1.pt True" in role.args
