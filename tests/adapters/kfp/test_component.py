"""component_from_app / container_from_app compiled with the real KFP compiler."""
# no `from __future__ import annotations`: KFP reads real annotations of pipeline functions

from pathlib import Path

import pytest

pytest.importorskip("kfp")

from _kfp_support import compile_ir, executor, k8s_executor
from kfp import dsl

import torchx.specs as specs
from torchx_kfp import ACCELERATOR_TYPE, component_from_app, container_from_app


def test_echo_msg_is_a_pipeline_input(tmp_path: Path) -> None:
    comp = component_from_app("utils.echo", image="torchx-flow/busybox:latest")
    assert [i.name for i in comp.inputs] == ["msg"]

    @dsl.pipeline
    def hello(msg: str = "hi") -> None:
        container_from_app("utils.echo", msg=msg, image="torchx-flow/busybox:latest")

    ir, _ = compile_ir(hello, tmp_path)
    c = executor(ir, "echo")
    assert c["image"] == "torchx-flow/busybox:latest"
    assert c["args"] == ["{{$.inputs.parameters['msg']}}"]
    assert c["command"][-2:] == ["--", "echo"]
    inputs = ir["components"]["comp-echo"]["inputDefinitions"]["parameters"]
    assert inputs["msg"] == {
        "defaultValue": "hello world",
        "isOptional": True,
        "parameterType": "STRING",
    }
    task = ir["root"]["dag"]["tasks"]["echo"]
    assert task["inputs"]["parameters"]["msg"] == {"componentInputParameter": "msg"}
    assert task["cachingOptions"] == {}  # caching off by default
    assert task["taskInfo"]["name"] == "echo"


def test_env_argument_beats_the_roles_env() -> None:
    """``env=`` overrides the role's env, as ``LaunchRequest.env`` does in every other path."""
    app = specs.AppDef(
        name="a",
        roles=[specs.Role(name="a", image="img", entrypoint="run", env={"FOO": "role", "K": "v"})],
    )
    comp = component_from_app(app, env={"FOO": "argument", "NEW": "1"})
    env = dict(comp.component_spec.implementation.container.env or {})
    assert env["FOO"] == "argument" and env["NEW"] == "1" and env["K"] == "v"
    assert app.roles[0].env == {"FOO": "role", "K": "v"}  # the caller's AppDef is untouched


def test_resources_retries_env_display_name(tmp_path: Path) -> None:
    app = specs.AppDef(
        name="trainer",
        roles=[
            specs.Role(
                name="trainer",
                image="img:1",
                entrypoint="python",
                args=["-m", "train", "--id", specs.macros.app_id],
                env={"FOO": "bar", "RUN": "run-${app_id}"},
                resource=specs.Resource(cpu=2, gpu=2, memMB=4096),
                max_retries=3,
            )
        ],
    )

    @dsl.pipeline
    def p() -> None:
        container_from_app(app, display_name="Train it")

    ir, platform = compile_ir(p, tmp_path)
    c = executor(ir, "trainer")
    # run/task ids are task inputs whose constants the backend resolves (never in args)
    task_id = "{{$.inputs.parameters['pipeline_task_name']}}-" + (
        "{{$.inputs.parameters['pipeline_task_uuid']}}"
    )
    assert c["args"] == ["-m", "train", "--id", task_id]
    assert {"name": "FOO", "value": "bar"} in c["env"]
    assert f"RUN=run-{task_id}" in c["command"]  # placeholder env via argv
    job_id = "{{$.inputs.parameters['pipeline_job_uuid']}}"
    assert f"TORCHX_JOB_ID=kfp://{job_id}/{task_id}" in c["command"]
    task_inputs = ir["root"]["dag"]["tasks"]["trainer"]["inputs"]["parameters"]
    assert task_inputs["pipeline_task_uuid"] == {
        "runtimeValue": {"constant": "{{$.pipeline_task_uuid}}"}
    }
    res = c["resources"]
    # the kubernetes scheduler's sizing: limits = the resource, requests less the reserve
    assert (res["resourceCpuLimit"], res["resourceCpuRequest"]) == ("2000m", "1900m")
    assert (res["resourceMemoryLimit"], res["resourceMemoryRequest"]) == ("4096M", "3072M")
    assert res["accelerator"]["resourceType"] == "nvidia.com/gpu"
    assert res["accelerator"]["resourceCount"] == "2"
    task = ir["root"]["dag"]["tasks"]["trainer"]
    assert task["retryPolicy"]["maxRetryCount"] == 3
    assert task["taskInfo"]["name"] == "Train it"
    assert k8s_executor(platform, "trainer")["emptyDirMounts"] == [
        {"medium": "Memory", "mountPath": "/dev/shm", "volumeName": "dshm"}
    ]


def test_macros_replica_img_root_rank0(tmp_path: Path) -> None:
    app = specs.AppDef(
        name="m",
        roles=[
            specs.Role(
                name="m",
                image="img",
                entrypoint="run",
                args=[
                    specs.macros.replica_id,
                    f"{specs.macros.img_root}/x",
                    specs.macros.rank0_env,
                ],
            )
        ],
    )
    comp = component_from_app(app)
    spec = comp.component_spec.implementation.container
    assert spec.args == ["0", "/x", "TORCHX_RANK0_HOST"]
    assert spec.env["TORCHX_RANK0_HOST"] == "localhost"


def test_named_resource_capabilities_and_kubernetes(tmp_path: Path) -> None:
    app = specs.AppDef(
        name="gpu",
        roles=[
            specs.Role(
                name="gpu",
                image="img",
                entrypoint="run",
                resource=specs.Resource(
                    cpu=8, gpu=1, memMB=1000, capabilities={ACCELERATOR_TYPE: "TPU_V3"}
                ),
                mounts=[specs.VolumeMount(src="data-pvc", dst_path="/data")],
            )
        ],
    )

    @dsl.pipeline
    def p() -> None:
        container_from_app(
            app,
            tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            secrets={"creds": {"token": "API_TOKEN"}},
        )
        container_from_app(app, resource="aws_p3.2xlarge", display_name="aws")

    ir, platform = compile_ir(p, tmp_path)
    assert executor(ir, "gpu")["resources"]["accelerator"]["resourceType"] == "TPU_V3"
    k8s = k8s_executor(platform, "gpu")
    assert k8s["tolerations"] == [{"effect": "NoSchedule", "key": "gpu", "operator": "Exists"}]
    assert k8s["secretAsEnv"][0]["secretName"] == "creds"
    assert k8s["secretAsEnv"][0]["keyToEnv"] == [{"envVar": "API_TOKEN", "secretKey": "token"}]
    assert k8s["pvcMount"][0]["mountPath"] == "/data"
    aws = k8s_executor(platform, "gpu-2")
    assert aws["nodeSelector"]["labels"] == {"node.kubernetes.io/instance-type": "p3.2xlarge"}
    res = executor(ir, "gpu-2")["resources"]
    assert res["accelerator"]["resourceType"] == "nvidia.com/gpu"


@pytest.mark.parametrize("resource", ["aws_g5.2xlarge", "aws_p3.2xlarge", "cpu.small"])
def test_named_resource_sized_like_the_kubernetes_scheduler(tmp_path: Path, resource: str) -> None:
    """KFP requests and limits equal those of the pod the kubernetes scheduler would create."""
    from torchx.schedulers.kubernetes_scheduler import role_to_pod

    app = _one_role(resource=specs.resource(h=resource))

    @dsl.pipeline
    def p() -> None:
        container_from_app(app)

    ir, _ = compile_ir(p, tmp_path)
    res = executor(ir, "a")["resources"]
    pod = role_to_pod("a-0", app.roles[0], None)
    limits, requests = (
        pod.spec.containers[0].resources.limits,
        pod.spec.containers[0].resources.requests,
    )
    assert res["resourceCpuLimit"] == limits["cpu"]
    assert res["resourceCpuRequest"] == requests["cpu"]
    assert res["resourceMemoryLimit"] == limits["memory"]
    assert res.get("resourceMemoryRequest", "0M") == requests["memory"]  # KFP drops a 0 request
    assert requests["cpu"] != limits["cpu"]  # the reserve was subtracted


def _one_role(**kw: object) -> specs.AppDef:
    role = specs.Role(name="r", image="img", entrypoint="run")
    for key, value in kw.items():
        setattr(role, key, value)
    return specs.AppDef(name="a", roles=[role])


@pytest.mark.parametrize(
    ("app", "field"),
    [
        (_one_role(num_replicas=2), "Role.num_replicas"),
        (specs.AppDef(name="a", roles=[_one_role().roles[0]] * 2), "AppDef.roles"),
        (_one_role(resource=specs.Resource(1, 0, 10, devices={"efa": 1})), "Resource.devices"),
        (_one_role(mounts=[specs.BindMount("/a", "/b")]), "Role.mounts"),
        (_one_role(mounts=[specs.DeviceMount("/dev/x", "/dev/x")]), "Role.mounts"),
        (
            _one_role(max_retries=2, retry_policy=specs.RetryPolicy.REPLICA),
            "Role.retry_policy",
        ),
        (_one_role(resource=specs.Resource(1, 0, 10, capabilities={"x y": 1})), "capabilities"),
    ],
)
def test_what_one_task_cannot_express_is_an_error(app: specs.AppDef, field: str) -> None:
    with pytest.raises(ValueError, match=field) as err:
        component_from_app(app)
    assert "launcher_from_app" in str(err.value)


def test_ddp_multi_node_points_to_launcher() -> None:
    with pytest.raises(ValueError, match="num_replicas.*launcher_from_app"):
        component_from_app("dist.ddp", ["-j", "2x2", "--script", "train.py"])


def test_file_component_and_function(tmp_path: Path) -> None:
    path = tmp_path / "comps.py"
    path.write_text(
        "import torchx.specs as specs\n"
        "def hi(who: str, times: int = 2, loud: bool = False) -> specs.AppDef:\n"
        '    """Says hi.\n\n    Args:\n        who: name\n        times: n\n        loud: x\n    """\n'
        "    return specs.AppDef(name='hi', roles=[specs.Role(name='hi', image='img',\n"
        "        entrypoint='echo', args=['hi', who, '--times', str(times)],\n"
        "        env={'WHO': who})])\n"
    )
    comp = component_from_app(f"{path}:hi")
    assert {i.name: i.kfp_type for i in comp.inputs} == {"who": "String", "times": "Integer"}
    c = comp.component_spec.implementation.container
    assert [str(a) for a in c.args][:2] == ["hi", "{{$.inputs.parameters['who']}}"]
    import yaml

    command = yaml.safe_load(comp.component_yaml)["implementation"]["container"]["command"]
    assert "WHO={{$.inputs.parameters['who']}}" in command  # env from an input

    import importlib.util

    spec = importlib.util.spec_from_file_location("comps", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fixed = component_from_app(module.hi, ["--who", "bob"])
    assert [i.name for i in fixed.inputs] == ["times"]


def test_string_annotations_become_typed_inputs(tmp_path: Path) -> None:
    # `from __future__ import annotations` (the builtin components have it): the types are
    # evaluated, so an Optional[int] parameter is still an Integer input, not dropped
    path = tmp_path / "later.py"
    path.write_text(
        "from __future__ import annotations\n"
        "from typing import Optional\n"
        "import torchx.specs as specs\n"
        "def hi(who: str, times: Optional[int] = None) -> specs.AppDef:\n"
        '    """Says hi.\n\n    Args:\n        who: name\n        times: n\n    """\n'
        "    return specs.AppDef(name='hi', roles=[specs.Role(name='hi', image='img',\n"
        "        entrypoint='echo', args=['hi', who, '--times', str(times)])])\n"
    )
    comp = component_from_app(f"{path}:hi")
    assert {i.name: i.kfp_type for i in comp.inputs} == {"who": "String", "times": "Integer"}


def test_value_inside_shell_code_reaches_the_shell_as_a_variable(tmp_path: Path) -> None:
    def shell(word: str = "x", other: str = "y") -> specs.AppDef:
        import shlex

        script = f"echo {shlex.quote(word)} 'a {other}' \"{word}\""
        return specs.AppDef(
            name="s",
            roles=[specs.Role(name="s", image="i", entrypoint="sh", args=["-c", script])],
        )

    import yaml

    comp = component_from_app(shell)
    assert [i.name for i in comp.inputs] == ["word", "other"]
    container = yaml.safe_load(comp.component_yaml)["implementation"]["container"]
    assert container["args"][1] == (
        "echo \"${TORCHX_KFP_INPUT_WORD}\" 'a '\"${TORCHX_KFP_INPUT_OTHER}\"''"
        ' "${TORCHX_KFP_INPUT_WORD}"'
    )
    assert "TORCHX_KFP_INPUT_WORD={{$.inputs.parameters['word']}}" in container["command"]


@pytest.mark.docker
def test_shell_input_with_quotes_runs_literally(tmp_path: Path) -> None:
    """A hostile input value is printed, not executed (real sh in a container)."""
    from kfp import local

    def shell(word: str = "x") -> specs.AppDef:
        return specs.AppDef(
            name="s",
            roles=[
                specs.Role(
                    name="s",
                    image="torchx-flow/busybox:latest",
                    entrypoint="sh",
                    args=["-c", f"echo got {word} > {tmp_path}/out.txt"],
                )
            ],
        )

    @dsl.pipeline
    def p(word: str) -> None:
        container_from_app(shell, word=word)

    from torchx_kfp.local import venv_docker_runner

    local.init(
        runner=venv_docker_runner(read_write=[str(tmp_path)]),
        pipeline_root=str(tmp_path / "root"),
    )
    hostile = f"$(touch {tmp_path}/pwned); `touch {tmp_path}/pwned2` ' \" ;touch {tmp_path}/p3"
    p(word=hostile)
    assert (tmp_path / "out.txt").read_text() == f"got {hostile}\n"
    assert not list(tmp_path.glob("pwned*")) and not (tmp_path / "p3").exists()


def test_plugin_component_from_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A component shipped by a plugin package (``torchx.components`` entry point)."""
    from _support import write_dist, write_file

    from torchx.specs import finder

    write_file(tmp_path, "kfpplug/__init__.py", "")
    write_file(
        tmp_path,
        "kfpplug/comps.py",
        '''
        import torchx.specs as specs


        def fit(lr: str = "0.1") -> specs.AppDef:
            """Fits.

            Args:
                lr: learning rate
            """
            role = specs.Role(name="fit", image="img", entrypoint="fit", args=["--lr", lr])
            return specs.AppDef(name="fit", roles=[role])
        ''',
    )
    write_dist(tmp_path, "kfpplug", {"torchx.components": {"plug": "kfpplug"}})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(finder, "_components", {})
    comp = component_from_app("plug.comps.fit")
    assert [(i.name, i.default) for i in comp.inputs] == [("lr", "0.1")]


def test_bad_toleration_key_suggests_the_right_one() -> None:
    with pytest.raises(ValueError, match=r"unknown key `efect` \(did you mean `effect`\?\)"):
        component_from_app(_one_role(), tolerations=[{"key": "gpu", "efect": "NoSchedule"}])


def test_unknown_component_is_one_clear_error() -> None:
    with pytest.raises(Exception, match="not found.*Did you mean: `utils.echo`"):
        component_from_app("utils.ech")


def test_building_a_component_leaves_the_appdef_as_it_was() -> None:
    """Macros, env= and overrides go into copies: the caller's AppDef is not touched."""
    import copy

    app = specs.AppDef(
        name="keep",
        roles=[
            specs.Role(
                name="keep",
                image="img",
                entrypoint="echo",
                args=["${app_id}", "${replica_id}"],
                env={"A": "${app_id}"},
                metadata={"m": "${img_root}x"},
            )
        ],
    )
    before = copy.deepcopy(app)
    component = component_from_app(app, env={"B": "1"})
    assert app == before
    container = component.spec["implementation"]["container"]
    assert container["args"][1] == "0" and "A" not in container.get("env", {})
    component_from_app(app, image="other", resource="cpu.small", max_retries=2)
    assert app == before


def test_kubernetes_settings_made_once_are_copied_into_each_task() -> None:
    """kfp-kubernetes runs once per distinct plain-text settings; every task gets its own
    copy (a later change to one task's config leaves the others as they were)."""
    from kfp import kubernetes

    app = specs.AppDef(
        name="a",
        roles=[
            specs.Role(
                name="a",
                image="img",
                entrypoint="run",
                mounts=[specs.VolumeMount(src="data-pvc", dst_path="/data")],
            )
        ],
    )
    tasks = []

    @dsl.pipeline
    def p() -> None:
        tasks.append(container_from_app(app))
        tasks[0].platform_config["kubernetes"]["pvcMount"][0]["mountPath"] = "/changed"
        tasks.append(container_from_app(app))
        kubernetes.add_pod_annotation(tasks[1], "only", "second")
        tasks.append(container_from_app(app))

    first, second, third = (t.platform_config["kubernetes"] for t in tasks)
    assert first["pvcMount"][0]["mountPath"] == "/changed"
    assert second["podMetadata"] == {"annotations": {"only": "second"}}
    assert "podMetadata" not in third and third["pvcMount"][0]["mountPath"] == "/data"
    assert third["pvcMount"] == [
        {
            "constant": "data-pvc",
            "mountPath": "/data",
            "pvcNameParameter": {"runtimeValue": {"constant": "data-pvc"}},
        }
    ]
    assert third["emptyDirMounts"] == [
        {"volumeName": "dshm", "mountPath": "/dev/shm", "medium": "Memory"}
    ]
