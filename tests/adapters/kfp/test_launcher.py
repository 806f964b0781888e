"""Launcher mode: the task submits the app with a TorchX scheduler and follows it."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("kfp")

from _kfp_support import compile_ir
from _support import SLOW_FINALIZER, signal_in_finalizer
from kfp import dsl

import torchx.specs as specs
from torchx_kfp import TorchXKfpAppError, launcher_from_app
from torchx_kfp._appjson import app_from_json, app_to_json
from torchx_kfp._in_task.launch import launch


def _spec(component: str = "", args: list[str] | None = None, app: str = "") -> dict[str, object]:
    return {"component": component, "args": args or [], "app": app, "overrides": {}}


def test_multi_role_multi_node_app_compiles_as_a_launcher(tmp_path: Path) -> None:
    @dsl.pipeline
    def p(script: str = "train.py") -> None:
        prep = launcher_from_app("utils.echo", params={"msg": "prep"})
        launcher_from_app(
            "dist.ddp",
            ["-j", "2x4", "--script", script],
            scheduler="kubernetes",
            scheduler_cfg="queue=default",
            parent_run_id=prep.outputs["tracker_run_id"],
            resource="cpu.small",
        )

    ir, _ = compile_ir(p, tmp_path)
    tasks = ir["root"]["dag"]["tasks"]
    train = tasks["torchx-launch-2"]["inputs"]["parameters"]
    assert train["scheduler"]["runtimeValue"]["constant"] == "kubernetes"
    assert train["args"]["runtimeValue"]["constant"][:2] == ["-j", "2x4"]
    assert train["overrides"]["runtimeValue"]["constant"] == {"resource": "cpu.small"}
    assert train["parent_run_id"]["taskOutputParameter"]["producerTask"] == "torchx-launch"
    assert tasks["torchx-launch"]["cachingOptions"] == {}
    outputs = ir["components"]["comp-torchx-launch"]["outputDefinitions"]["parameters"]
    assert set(outputs) == {"app_handle", "app_id", "tracker_run_id"}


def test_appdef_round_trips_through_json() -> None:
    app = specs.AppDef(
        name="a",
        roles=[
            specs.Role(
                name="r",
                image="img",
                entrypoint="run",
                args=["x", specs.macros.app_id],
                num_replicas=3,
                retry_policy=specs.RetryPolicy.REPLICA,
                max_retries=2,
                resource=specs.Resource(cpu=2, gpu=1, memMB=10, capabilities={"k": "v"}),
                port_map={"p": 1},
                mounts=[specs.BindMount("/a", "/b", True), specs.VolumeMount("v", "/v")],
            ),
            specs.Role(name="s", image="img", entrypoint="run"),
        ],
        metadata={"m": "1"},
    )
    assert app_from_json(app_to_json(app)) == app


def test_launch_streams_every_replica_and_returns_the_handle(tmp_path: Path) -> None:
    lines: list[str] = []
    args = ["--num_replicas", "2", "echo", "hello"]
    handle = launch(_spec("utils.sh", args), {}, {}, "local_cwd", emit=lines.append)
    assert handle.startswith("local_cwd://")
    assert "[sh/0] hello" in lines and "[sh/1] hello" in lines
    assert lines[-1] == f"TorchX app {handle} SUCCEEDED"


def test_launch_params_and_parent_run_id(tmp_path: Path) -> None:
    tracker = tmp_path / "tracker"
    env = {"TORCHX_TRACKERS": "fsspec", "TORCHX_TRACKER_FSSPEC_CONFIG": str(tracker)}
    lines: list[str] = []
    first = launch(_spec("utils.echo"), {"msg": "from params"}, env, "local_cwd", emit=lines.append)
    assert "[echo/0] from params" in lines
    second = launch(_spec("utils.echo"), {}, env, "local_cwd", parent_run_id=first, emit=print)
    from torchx.tracker.backend.fsspec import create

    assert [s.source_run_id for s in create(str(tracker)).sources(second)] == [first]


def test_failed_app_fails_the_task_with_its_error() -> None:
    app = specs.AppDef(
        name="boom",
        roles=[
            specs.Role(
                name="boom",
                image="",
                entrypoint=sys.executable,
                args=["-c", "import sys; print('about to fail'); sys.exit(3)"],
            )
        ],
    )
    lines: list[str] = []
    with pytest.raises(TorchXKfpAppError, match=r"ended FAILED") as err:
        launch(_spec(app=app_to_json(app)), {}, {}, "local_cwd", emit=lines.append)
    assert err.value.app_handle.startswith("local_cwd://")
    assert "[boom/0] about to fail" in lines
    assert "log lines of boom/0:\n  about to fail" in str(err.value)  # the failed replica's tail


def test_launcher_env_beats_the_roles_env() -> None:
    """``env`` reaches the app and overrides the role's own value (``LaunchRequest.env``)."""
    app = specs.AppDef(
        name="who",
        roles=[
            specs.Role(
                name="who",
                image="",
                entrypoint=sys.executable,
                args=["-c", "import os; print('who', os.environ['WHO'])"],
                env={"WHO": "the role"},
            )
        ],
    )
    lines: list[str] = []
    launch(_spec(app=app_to_json(app)), {}, {"WHO": "the launcher"}, "local_cwd", emit=lines.append)
    assert "[who/0] who the launcher" in lines


def test_launcher_applies_component_defaults_of_the_torchxconfig(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``[component:<name>]`` defaults apply in the launcher as in ``torchx run``."""
    config = tmp_path / ".torchxconfig"
    config.write_text("[component:utils.echo]\nmsg = from the config\n")
    monkeypatch.setenv("TORCHXCONFIG", str(config))
    lines: list[str] = []
    launch(_spec("utils.echo"), {}, {}, "local_cwd", emit=lines.append)
    assert "[echo/0] from the config" in lines
    lines.clear()
    launch(_spec("utils.echo"), {"msg": "from params"}, {}, "local_cwd", emit=lines.append)
    assert "[echo/0] from params" in lines  # run-time params beat the config


def test_sigterm_cancels_the_app(tmp_path: Path) -> None:
    """A terminated launcher task (KFP run cancelled) cancels its app, then exits 143."""
    app = specs.AppDef(
        name="sleeper",
        roles=[specs.Role(name="sleeper", image="", entrypoint="sleep", args=["60"])],
    )
    code = (
        "import json, sys\n"
        "from torchx_kfp._in_task.launch import launch\n"
        "launch(json.loads(sys.argv[1]), {}, {}, 'local_cwd', wait_interval=0.2)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, json.dumps(_spec(app=app_to_json(app)))],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("launched TorchX app "), first
        handle = first.split()[-1]
        from torchx.runner import get_runner

        with get_runner() as runner:
            deadline = time.monotonic() + 30
            while runner.status(handle).state.name != "RUNNING":  # type: ignore[union-attr]
                assert time.monotonic() < deadline
                time.sleep(0.1)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 143
            status = runner.wait(handle, wait_interval=0.2)
            assert status is not None and status.state.name == "CANCELLED"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


EXIT_ON_TERM_IN_A_FINALIZER = """\
import sys, time
from torchx_kfp._in_task.launch import _ExitOnTerm


{slow}

try:
    with _ExitOnTerm("local_cwd://torchx/app", lambda line: print(line, flush=True)):
        Slow()
        while True:
            time.sleep(0.05)
finally:
    print("cancelling", flush=True)  # where the Follower cancels the app
""".replace("{slow}", SLOW_FINALIZER)


def test_a_sigterm_lost_in_a_finalizer_still_ends_the_task(tmp_path: Path) -> None:
    """SIGTERM is sent again until its exit leaves the follow block (the app is cancelled)."""
    script = tmp_path / "task.py"
    script.write_text(EXIT_ON_TERM_IN_A_FINALIZER)
    returncode, out, err = signal_in_finalizer(script, signal.SIGTERM)
    assert "Exception ignored in" in err  # the first SystemExit was lost
    assert out.endswith("cancelling\n"), out
    assert returncode == 143, err


@pytest.mark.docker
def test_launch_on_local_docker() -> None:
    """The launcher submits to ``local_docker`` too (the app is deleted afterwards)."""
    from torchx.runner import get_runner

    lines: list[str] = []
    args = ["--image", "torchx-flow/busybox:latest", "--msg", "from a container"]
    handle = launch(_spec("utils.echo", args), {}, {}, "local_docker", emit=lines.append)
    try:
        assert handle.startswith("local_docker://")
        assert "[echo/0] from a container" in lines
    finally:
        with get_runner() as runner:
            runner.delete(handle)
