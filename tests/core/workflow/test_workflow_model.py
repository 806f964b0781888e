"""Pipeline model and validation: YAML and Python, errors with file, line and step."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pydantic", reason="pydantic is not installed (pip install -e '.[workflow]')")

from torchx.workflow import Pipeline, Step, WorkflowError, load_pipeline, validate_pipeline
from torchx.workflow.executor import resolve_params
from torchx.workflow.plan import dependencies, order, parent_of

REPO = Path(__file__).resolve().parents[3]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def _errors(path: Path) -> list[str]:
    with pytest.raises(WorkflowError) as info:
        load_pipeline(path)
    return info.value.lines()


def test_example_pipeline_loads_in_order_with_parents() -> None:
    p = load_pipeline(REPO / "pipelines" / "pipeline.yaml")
    assert order(p) == ["prepare_data", "train", "evaluate"]
    # evaluate references prepare_data and train; the reduction keeps the direct edge only
    assert dependencies(p) == {"prepare_data": [], "train": ["prepare_data"], "evaluate": ["train"]}
    assert [parent_of(p, s) for s in order(p)] == [None, "prepare_data", "train"]
    train = p.effective("train")
    assert train.scheduler == "{{ params.scheduler }}"
    assert (train.max_retries, train.retry_policy) == (1, "APPLICATION")
    assert p.effective("evaluate").max_retries == 0


def test_python_pipeline_same_model() -> None:
    p = validate_pipeline(
        Pipeline(
            name="py",
            params={"msg": "hi"},
            steps={
                "a": Step(component="utils.echo", args=["--msg", "{{ params.msg }}"]),
                "b": Step(component="utils.echo", args={"msg": "{{ steps.a.app_id }}"}),
            },
        )
    )
    assert dependencies(p) == {"a": [], "b": ["a"]}
    assert p.params["msg"].type == "string"


def test_params_are_typed_and_checked() -> None:
    p = load_pipeline(REPO / "pipelines" / "pipeline.yaml")
    assert resolve_params(p, {"steps": "7"})["steps"] == 7
    assert resolve_params(p, {"steps": 7.0})["steps"] == 7
    with pytest.raises(ValueError, match="must be integer, got `7.5`"):
        resolve_params(p, {"steps": 7.5})
    with pytest.raises(ValueError, match="must be >= 1"):
        resolve_params(p, {"steps": "0"})
    with pytest.raises(ValueError, match="unknown parameter `stpes` \\(did you mean `steps`"):
        resolve_params(p, {"stpes": "3"})
    with pytest.raises(ValueError, match="must be integer"):
        resolve_params(p, {"steps": "many"})


def test_cycle_is_named_with_file_line_and_step(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        name: cyc
        steps:
          a:
            component: utils.echo
            depends_on: [c]
          b:
            component: utils.echo
            args: [--msg, "{{ steps.a.app_id }}"]
          c:
            component: utils.echo
            depends_on: [b]
        """,
    )
    [error] = _errors(path)
    assert error.startswith(
        f"{path}:3: step `a`: dependency cycle a -> b -> c -> a (each feeds the next)"
    )


def test_unknown_names_suggest_close_matches(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        name: names
        params:
          steps: 5
        steps:
          a:
            component: utils.ech
          b:
            component: utils.echo
            resource: cpu.smal
            scheduler: local_cdw
            args:
              - --mesg
              - hi
        """,
    )
    errors = _errors(path)
    assert (
        f"{path}:6: step `a`: unknown component `utils.ech` (did you mean `utils.echo`?)"
        in (errors[0])
    )
    assert any(
        e.startswith(f"{path}:12: step `b`: unknown argument `mesg` (did you mean `msg`?)")
        for e in errors
    )
    assert any(
        f"{path}:10: step `b`: unknown scheduler `local_cdw` (did you mean `local_cwd`?)" in e
        for e in errors
    )
    assert any(
        f"{path}:9: step `b`: unknown named resource `cpu.smal` (did you mean `cpu.small`?)" in e
        for e in errors
    )


def test_missing_inputs_and_bad_references(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        name: refs
        params:
          steps: 5
        steps:
          a:
            component: utils.python
            outputs: {data: /tmp/x}
          b:
            component: utils.echo
            args:
              msg: "{{ steps.a.outputs.dat }} {{ params.stpes }}"
            depends_on: [aa]
        """,
    )
    errors = _errors(path)
    assert errors[0] == (
        f"{path}:11: step `b`: missing input `{{{{ steps.a.outputs.dat }}}}`: step `a` declares"
        " no output `dat` (did you mean `data`?); add it to the outputs of `a`"
    )
    assert "unknown parameter `stpes` (did you mean `steps`?)" in errors[1]
    assert (
        errors[2]
        == f"{path}:12: step `b`: `depends_on` names an unknown step `aa` (did you mean `a`?)"
    )


def test_required_component_argument_is_a_missing_input(tmp_path: Path) -> None:
    path = _write(tmp_path, "name: req\nsteps:\n  t:\n    component: utils.touch\n")
    [error] = _errors(path)
    assert error == f"{path}:3: step `t`: missing input: required argument `--file`"


def test_schema_errors_are_located(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        name: schema
        steps:
          a:
            component: utils.echo
            max_retry: 2
          b:
            component: utils.echo
            max_retries: -1
        """,
    )
    errors = _errors(path)
    assert (
        errors[0] == f"{path}:5: step `a`: unknown field `max_retry` (did you mean `max_retries`?)"
    )
    assert errors[1].startswith(f"{path}:8: step `b`: `max_retries`: Input should be greater")


def test_bad_yaml_and_bad_expression(tmp_path: Path) -> None:
    path = _write(tmp_path, "name: y\nsteps: [\n")
    with pytest.raises(ValueError, match=rf"^{path}:3: invalid YAML"):
        load_pipeline(path)
    path = _write(
        tmp_path,
        "name: y\nsteps:\n  a:\n    component: utils.echo\n"
        "    args: [--msg, '{{ ti.xcom_pull() }}']\n",
    )
    [error] = _errors(path)
    assert error.startswith(
        f"{path}:5: step `a`: unsupported expression `{{{{ ti.xcom_pull() }}}}`"
    )


def test_unquoted_reference_as_a_mapping_key_is_one_clear_line(tmp_path: Path) -> None:
    # `{{x: Model}}` parses as a mapping inside a mapping: YAML accepts it, a dict key cannot be one
    path = _write(
        tmp_path,
        "name: y\nsteps:\n  a:\n    component: utils.echo\n    artifacts: {{x: Model}}\n",
    )
    with pytest.raises(ValueError) as info:
        load_pipeline(path)
    message = str(info.value)
    assert message.startswith(f"{path}:5: invalid YAML: a mapping key must be a plain value")
    assert "\n" not in message


def test_step_needs_exactly_one_of_component_or_app() -> None:
    with pytest.raises(ValueError, match="set exactly one of `component`"):
        Step()


def test_readme_pipeline_block_is_the_example_file(tmp_path: Path) -> None:
    import re

    text = (REPO / "docs" / "pipelines.md").read_text()
    block = re.search(r"# Pipelines.*?```yaml\n(.*?)```", text, re.S)
    assert block, "docs/pipelines.md lost its YAML block"
    path = tmp_path / "readme.yaml"
    path.write_text(block.group(1))
    readme = load_pipeline(path, registries=False)
    example = load_pipeline(REPO / "pipelines" / "pipeline.yaml", registries=False)
    for field in ("params", "defaults", "steps"):
        assert getattr(readme, field) == getattr(example, field), field


def test_options_after_the_first_varargs_token_belong_to_the_command() -> None:
    ok = Pipeline(name="v", steps={"t": Step(component="utils.sh", args=["test", "-f", "/x"])})
    validate_pipeline(ok)
    bad = Pipeline(name="v", steps={"t": Step(component="utils.sh", args=["--cpus", "2", "true"])})
    with pytest.raises(WorkflowError, match="unknown argument `cpus` \\(did you mean `cpu`\\?\\)"):
        validate_pipeline(bad)
