"""OpenLineage facets of TorchXOperator (``torchx_airflow._lineage``), from real AppDefs.

The lineage of whole task runs (events in the file transport, the parent id in a replica's
env) is tested in ``test_lineage_dag_runs.py``.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from _airflow_support import import_airflow_isolated

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("airflow.providers.openlineage") is None,
    reason="the OpenLineage provider is not installed (pip install -e '.[airflow]')",
)


@pytest.fixture(scope="module", autouse=True)
def _airflow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    import_airflow_isolated(
        tmp_path_factory.mktemp("airflow_home"),
        "torchx_airflow.operators.torchx",
        "airflow.providers.openlineage.extractors",
    )
    yield


def operator(**kwargs: Any) -> Any:
    from torchx_airflow.operators.torchx import TorchXOperator

    return TorchXOperator(task_id="train", torchx_conn_id=None, **kwargs)


@pytest.fixture
def openlineage_on(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[None]:
    """A file transport configured (the provider's settings are cached: cleared around)."""
    from airflow.providers.openlineage import conf

    def clear() -> None:
        for fn in vars(conf).values():
            if hasattr(fn, "cache_clear"):
                fn.cache_clear()

    transport = '{"type": "file", "log_file_path": "%s"}' % (tmp_path / "events")
    monkeypatch.setenv("AIRFLOW__OPENLINEAGE__TRANSPORT", transport)
    clear()
    assert not conf.is_disabled()
    yield
    monkeypatch.delenv("AIRFLOW__OPENLINEAGE__TRANSPORT")
    clear()


class FakeTI:
    """The two task-instance calls the lineage makes (the real ones: test_lineage_dag_runs)."""

    task_id, map_index = "train", -1

    def __init__(self, xcom: dict[str, Any]) -> None:
        self.xcom = xcom

    def xcom_pull(self, task_ids: str, key: str, map_indexes: int) -> Any:
        assert (task_ids, map_indexes) == ("train", -1)
        return self.xcom.get(key)

    def get_template_context(self) -> dict[str, Any]:
        return {"run_id": "manual__1", "params": {"workdir": "/data/w"}}


DDP = ["-j", "2x3", "--cpu", "3", "--gpu", "0", "--memMB", "2048", "--script", "train.py"]


def test_start_facet_names_scheduler_roles_images_replicas_resources() -> None:
    op = operator(
        component="dist.ddp",
        component_args=DDP,
        scheduler="local_docker",
        image="registry:5000/trainer:1",
        lineage_inputs=["s3://data-bucket/sets/mnist", "/data/tokenizer"],
        lineage_outputs=["gs://ckpt/runs/${app_id}/model.pt", "{{ params.workdir }}/m.pt"],
    )
    lineage = op.get_openlineage_facets_on_start()
    facet = lineage.run_facets["torchx"]
    assert facet.scheduler == "local_docker"
    assert facet.component == "dist.ddp"
    assert facet.appHandle is None and facet.state is None
    assert facet.roles == [
        {
            "name": "train",
            "image": "registry:5000/trainer:1",
            "replicas": 2,
            "resources": {"cpu": 3, "gpu": 0, "memMB": 2048},
        }
    ]
    assert [(d.namespace, d.name) for d in lineage.inputs] == [
        ("s3://data-bucket", "sets/mnist"),
        ("file", "/data/tokenizer"),
    ]
    # unknown before the launch: the app id; outside a task run: the Jinja context
    assert lineage.outputs == []
    assert facet._schemaURL and facet._producer  # a real OpenLineage facet


def test_complete_facet_carries_the_app_and_resolved_outputs() -> None:
    op = operator(
        component="utils.echo",
        lineage_outputs=["gs://ckpt/runs/${app_id}/model.pt", "{{ params.workdir }}/m.pt"],
        outlets=[],
    )
    xcom = {
        "return_value": {
            "app_handle": "local_cwd://torchx/echo-abc",
            "app_id": "echo-abc",
            "state": "SUCCEEDED",
            "ui_url": "file:///tmp/echo-abc",
        }
    }
    lineage = op.get_openlineage_facets_on_complete(FakeTI(xcom))
    facet = lineage.run_facets["torchx"]
    assert (facet.appHandle, facet.appId, facet.state) == (
        "local_cwd://torchx/echo-abc",
        "echo-abc",
        "SUCCEEDED",
    )
    assert facet.scheduler == "local_cwd"  # the default
    assert [(d.namespace, d.name) for d in lineage.outputs] == [
        ("gs://ckpt", "runs/echo-abc/model.pt"),
        ("file", "/data/w/m.pt"),
    ]
    assert "torchx_error" not in lineage.run_facets


def test_assets_in_inlets_and_outlets_are_datasets_too() -> None:
    from airflow.sdk import Asset

    op = operator(
        component="utils.echo",
        inlets=[Asset("s3://raw/events")],
        outlets=[Asset("file:///models/latest")],
    )
    lineage = op.get_openlineage_facets_on_start()
    assert [(d.namespace, d.name) for d in lineage.inputs] == [("s3://raw", "events")]
    assert [(d.namespace, d.name) for d in lineage.outputs] == [("file", "/models/latest")]


def test_failure_facet_has_the_real_app_error() -> None:
    from torchx.runner import get_runner

    runner = get_runner()
    handle = runner.run_component(
        "utils.python", ["-c", "raise SystemExit('checkpoint dir not writable')"], "local_cwd"
    )
    status = runner.wait(handle, wait_interval=0.2)
    assert status is not None and status.state.name == "FAILED"
    op = operator(component="utils.python", component_args=["-c", "pass"])
    xcom = {"app_handle": handle, "app_id": handle.rsplit("/", 1)[-1], "state": "FAILED"}
    lineage = op.get_openlineage_facets_on_failure(FakeTI(xcom))
    error = lineage.run_facets["torchx_error"]
    assert (error.appHandle, error.state) == (handle, "FAILED")
    assert error.message.startswith(f"TorchX app {handle} ended FAILED")
    assert error.message.endswith(": exited with code 1")  # the status's error summary
    assert lineage.run_facets["torchx"].state == "FAILED"


def test_failure_before_launch_says_so() -> None:
    op = operator(component="utils.echo")
    lineage = op.get_openlineage_facets_on_failure(FakeTI({}))
    error = lineage.run_facets["torchx_error"]
    assert error.appHandle is None and "before a TorchX app was launched" in error.message


def test_bad_component_args_do_not_break_lineage() -> None:
    op = operator(component="dist.ddp", component_args=["--no-such-flag"])
    lineage = op.get_openlineage_facets_on_start()
    assert lineage.run_facets["torchx"].roles == []  # the launch reports the bad args


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("s3://b/k/x.pt", ("s3://b", "k/x.pt")),
        ("s3a://b/k", ("s3://b", "k")),
        ("gs://b/k", ("gs://b", "k")),
        ("hdfs://nn:8020/p/q", ("hdfs://nn:8020", "/p/q")),
        ("file:///p/q", ("file", "/p/q")),
        ("file://host/p", ("file://host", "/p")),
        ("/abs/path", ("file", "/abs/path")),
    ],
)
def test_uri_to_dataset(uri: str, expected: tuple[str, str]) -> None:
    from torchx_airflow._lineage_facets import to_dataset

    ds = to_dataset(uri)
    assert (ds.namespace, ds.name) == expected


def test_rendering_reads_the_lineage_facts_so_the_listener_needs_no_api_call(
    openlineage_on: None,
) -> None:
    op = operator(
        component="dist.ddp",
        component_args=DDP,
        lineage_inputs=["{{ params.workdir }}/data"],
        lineage_outputs=["s3://ckpt/{{ run_id }}/${app_id}"],
    )
    op.render_template_fields({"run_id": "manual__1", "params": {"workdir": "/w"}})
    started = op.get_openlineage_facets_on_start()  # no context outside a task run
    assert [(d.namespace, d.name) for d in started.inputs] == [("file", "/w/data")]
    assert started.outputs == []  # no app id yet
    assert started.run_facets["torchx"].roles[0]["replicas"] == 2

    class NoContextTI(FakeTI):
        def get_template_context(self) -> dict[str, Any]:
            raise AssertionError("the rendered facts are used")

    done = op.get_openlineage_facets_on_complete(
        NoContextTI({"return_value": {"app_handle": "local_cwd://torchx/ddp-x", "app_id": "ddp-x"}})
    )
    assert [(d.namespace, d.name) for d in done.outputs] == [("s3://ckpt", "manual__1/ddp-x")]


def test_rendering_reads_nothing_when_openlineage_is_off() -> None:
    op = operator(component="utils.echo", lineage_inputs=["{{ params.x }}"])
    op.render_template_fields({"params": {"x": "/x"}})
    assert op._lineage_facts is None


def test_no_parent_env_when_openlineage_is_off() -> None:
    from torchx_airflow._lineage import parent_env

    assert parent_env(operator(component="utils.echo"), object()) == {}


def test_importing_the_operator_does_not_import_openlineage() -> None:
    code = (
        "import sys, torchx_airflow.operators.torchx, torchx_airflow._lineage;"
        "print([m for m in sys.modules if m.split('.')[0] == 'openlineage'"
        " or m == 'torchx_airflow._lineage_facets'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_pipeline_step_lineage_of_the_example_pipeline() -> None:
    from pathlib import Path

    from torchx.workflow import load_pipeline
    from torchx_airflow._lineage_pipeline import step_lineage

    root = Path(__file__).resolve().parents[3]
    pipeline = load_pipeline(root / "pipelines" / "pipeline.yaml")
    assert step_lineage(pipeline, "train") == {
        "lineage_inputs": [],
        "lineage_outputs": ["{{ params.workdir }}/out/${app_id}/model.pt"],
    }
    per_run = {"workdir": "{{ params.workdir }}/{{ run_id }}"}
    assert step_lineage(pipeline, "evaluate", per_run)["lineage_inputs"] == [
        "{{ params.workdir }}/{{ run_id }}/out/"
        "{{ ti.xcom_pull(task_ids='train')['app_id'] }}/model.pt",
        "{{ params.workdir }}/{{ run_id }}/data/dataset.json",
    ]
