"""``component_from_app`` / ``container_from_app``: a TorchX app as one KFP v2 container task.

Example::

    from kfp import dsl
    from torchx_kfp import container_from_app

    @dsl.pipeline
    def hello(msg: str = "hi"):
        container_from_app("utils.echo", msg=msg)   # utils.echo's --msg is a pipeline input
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from torchx_kfp._errors import import_kfp

import_kfp()

from kfp.dsl import pipeline_context  # noqa: E402
from kfp.dsl.base_component import BaseComponent  # noqa: E402
from kfp.dsl.pipeline_channel import (  # noqa: E402
    PipelineArtifactChannel,
    PipelineChannel,
    extract_pipeline_channels_from_any,
)

from torchx.runner.launch import LaunchRequest, build_app  # noqa: E402
from torchx.specs.api import AppDef  # noqa: E402
from torchx.specs.finder import get_component  # noqa: E402
from torchx_kfp._compile.artifacts import (  # noqa: E402
    OUTPUT_PATH,
    ArtifactRef,
    artifact_channels,
    artifact_type,
    split_outputs,
    token_input,
    with_artifacts,
)
from torchx_kfp._compile.checks import check_single_task  # noqa: E402
from torchx_kfp._compile.macros import RUN_INPUTS, substitute_macros  # noqa: E402
from torchx_kfp._compile.params import ComponentInput, component_with_inputs, probe_token  # noqa: E402
from torchx_kfp._compile.spec import component_yaml, env_input_name, yaml_text  # noqa: E402
from torchx_kfp._compile.structures import component_spec  # noqa: E402
from torchx_kfp._compile.task_settings import task_settings  # noqa: E402

if TYPE_CHECKING:
    from kfp.dsl.pipeline_task import PipelineTask

    from torchx_kfp._compile.task_settings import TaskSettings

__all__ = ["AppOrComponent", "TorchXComponent", "component_from_app", "container_from_app"]

AppOrComponent = Union["AppDef", str, Callable[..., "AppDef"]]
"""An AppDef, a component name (``utils.echo``, ``path/file.py:fn``) or a component function."""


class TorchXComponent(BaseComponent):
    """A KFP component made from a TorchX app; each task it creates gets the app's settings.

    Calling it inside a ``@dsl.pipeline`` returns a ``PipelineTask`` with the role's resources,
    accelerator, retries, caching, display name and Kubernetes settings applied.

    Attributes:
        spec: the component as a KFP YAML component dict (``component_yaml`` dumps it).
        app: the AppDef the component runs (input values appear as probe tokens).
        inputs: the KFP inputs made from component parameters and argument channels.
        settings: the per-task settings.
        channels: ``{input: pipeline channel}`` found in ``component_args``; passed to every
            task this component creates.
    """

    def __init__(
        self,
        spec: Mapping[str, Any],
        app: AppDef,
        inputs: Sequence[ComponentInput],
        settings: TaskSettings,
        channels: Optional[Mapping[str, PipelineChannel]] = None,
    ) -> None:

        super().__init__(component_spec=component_spec(spec, settings))
        self.spec = dict(spec)
        self.app = app
        self.inputs = list(inputs)
        self.settings = settings
        self.channels = dict(channels or {})

    @property
    def component_yaml(self) -> str:
        """The component as KFP (v1-style) component YAML, e.g. to save and share it."""
        return yaml_text(self.spec)

    @property
    def pipeline_spec(self) -> Any:
        """The component's pipeline spec (compiling the component alone)."""
        return self.component_spec.to_pipeline_spec()

    def execute(self, *args: Any, **kwargs: Any) -> Any:
        """Not used: KFP runs the container."""
        raise NotImplementedError

    def __call__(self, *args: Any, **kwargs: Any) -> PipelineTask:
        """Creates the task (keyword arguments are the inputs) and applies the settings.

        Every input the command references is passed: a component parameter the caller
        leaves out gets its default as the task's value, since the KFP backend (2.17+) leaves
        an unpassed optional input out of the executor input and its driver then fails on
        the reference. ``parent_run_id`` stays unpassed when not given: the command guards
        it with an IfPresent placeholder.
        """
        for name, channel in self.channels.items():
            kwargs.setdefault(name, channel)
        positional = set(list(self.component_spec.inputs or {})[: len(args)])
        for inp in self.inputs:
            if inp.default is not None and inp.name not in positional:
                kwargs.setdefault(inp.name, inp.default)
        for name, placeholder in RUN_INPUTS.items():  # resolved by KFP as task inputs only
            kwargs.setdefault(name, placeholder)
        task = super().__call__(*args, **kwargs)
        if pipeline_context.Pipeline.get_default_pipeline() is not None:
            self.settings.apply(task)
        return task


def _channel_name(channel: PipelineChannel) -> str:

    raw = f"{channel.task_name}_{channel.name}" if channel.task_name else channel.name
    return re.sub(r"\W", "_", raw)


def _channel_args(
    args: Sequence[Any],
) -> tuple[list[str], list[ComponentInput], dict[str, PipelineChannel], list[ArtifactRef]]:
    """Replaces pipeline channels (or f-strings of them) in ``args`` by probe tokens.

    An artifact channel (an upstream task's output artifact) and ``output_path(name)`` are
    artifact paths: string inputs while the component is built (see
    :mod:`torchx_kfp._compile.artifacts`), returned as artifact references too.
    """
    out: list[str] = []
    found: dict[str, ComponentInput] = {}
    channels: dict[str, PipelineChannel] = {}
    refs: dict[str, ArtifactRef] = {}

    def token(name: str, kind: str = "String") -> str:
        found.setdefault(name, ComponentInput(name, kind, None, probe_token(name, "String")))
        return found[name].token

    for arg in args:
        text = str(arg)
        for channel in [*extract_pipeline_channels_from_any(text), *artifact_channels(text)]:
            name = _channel_name(channel)
            channels.setdefault(name, channel)
            kind = str(channel.channel_type)
            if isinstance(channel, PipelineArtifactChannel):
                kind = artifact_type(channel.channel_type)
                refs.setdefault(name, ArtifactRef(name, name, kind, output=False))
            text = text.replace(channel.pattern, token(name, kind))
        for name in OUTPUT_PATH.findall(text):
            key = token_input(name, output=True)
            refs.setdefault(key, ArtifactRef(name, key, None, output=True))
            text = text.replace(f"{{{{$.outputs.artifacts['{name}'].path}}}}", token(key))
        out.append(text)
    return out, list(found.values()), channels, list(refs.values())


def resolve_app(
    app: AppOrComponent,
    component_args: Optional[Sequence[Any]],
    inputs: Optional[Sequence[str]],
) -> tuple[AppDef, list[ComponentInput], dict[str, PipelineChannel], list[ArtifactRef]]:
    """Returns the AppDef, its inputs, the channels and the input artifacts of its args.

    Inputs come from the component's typed parameters and from pipeline channels (or
    f-strings of them) inside ``component_args``; artifact channels there are input artifacts.
    An AppDef is returned as given (not copied): building a component never mutates it
    (overrides go through ``build_app``, which copies; macros are substituted into new
    containers).
    """
    if isinstance(app, AppDef):
        if component_args or inputs:
            raise ValueError(
                f"app `{app.name}` is an AppDef: component_args and inputs need a component"
                " (a name such as 'utils.echo', 'file.py:fn', or a component function)"
            )
        return app, [], {}, []
    if isinstance(app, str):
        fn = get_component(app).fn
    elif callable(app):
        fn = app
    else:
        raise TypeError(f"expected an AppDef, a component name or function, got {app!r}")
    bound, arg_inputs, channels, artifacts = _channel_args(component_args or [])
    resolved, found = component_with_inputs(fn, bound, inputs)
    _check_tokens(resolved, arg_inputs)
    return resolved, [*found, *arg_inputs], channels, artifacts


def _copied_paths(
    copied: Mapping[str, Any],
    found: Sequence[ComponentInput],
    channels: Mapping[str, PipelineChannel],
) -> tuple[dict[str, str], list[ComponentInput], dict[str, PipelineChannel]]:
    """Tokenizes the paths of copied output artifacts; their channels become inputs too."""
    if not copied:
        return {}, list(found), dict(channels)
    paths, more, chans, refs = _channel_args(list(copied.values()))
    if refs:
        raise ValueError(
            "the path of a copied output artifact may hold pipeline parameters, but no"
            f" artifact: {list(copied.values())}"
        )
    names = {i.name for i in found}
    merged = [*found, *(i for i in more if i.name not in names)]
    return dict(zip(copied, paths, strict=True)), merged, {**channels, **chans}


def _check_tokens(app: AppDef, inputs: Sequence[ComponentInput]) -> None:
    """Channel tokens may reach args and env only (not the image, resources, names...)."""
    for inp in inputs:
        rest = copy.deepcopy(app)
        for role in rest.roles:
            role.args, role.env = [], {}
        if inp.token in repr(rest):
            raise ValueError(
                f"pipeline channel `{inp.name}` in component_args reaches a field other than the"
                " role's args or env; pass a constant for it"
            )


def _override(
    app: AppDef, image: Optional[str], resource: Optional[str], max_retries: Optional[int]
) -> AppDef:
    """Applies the overrides through core's launch path (``torchx.runner.launch``)."""
    if not (image or resource or max_retries is not None):
        return app

    request = LaunchRequest(app=app, image=image, resource=resource, max_retries=max_retries)
    return build_app(request)


def component_from_app(
    app: AppOrComponent,
    component_args: Optional[Sequence[Any]] = None,
    *,
    inputs: Optional[Sequence[str]] = None,
    image: Optional[str] = None,
    resource: Optional[str] = None,
    max_retries: Optional[int] = None,
    env: Optional[Mapping[str, str]] = None,
    env_inputs: Sequence[str] = (),
    enable_caching: bool = False,
    display_name: str = "",
    node_selector: Optional[Mapping[str, str]] = None,
    tolerations: Optional[Sequence[Mapping[str, Any]]] = None,
    secrets: Optional[Mapping[str, Mapping[str, str]]] = None,
    shm: bool = True,
    outputs: Optional[Mapping[str, Any]] = None,
) -> TorchXComponent:
    """Returns a KFP v2 container component that runs a single-role, single-replica app.

    The image, entrypoint, args and env come from the role (env is baked into the component,
    so it reaches the compiled IR); macros become KFP placeholders (``${app_id}`` ->
    ``<task name>-<task uuid>`` from run-id task inputs), ``${replica_id}`` -> ``0``,
    ``${img_root}`` -> ``""``,
    ``${rank0_env}`` -> ``TORCHX_RANK0_HOST=localhost``). The component has the outputs
    ``app_id`` and ``tracker_run_id`` (``TORCHX_JOB_ID`` inside the task, the id trackers
    record the run under) and the input ``parent_run_id`` (tracker lineage).

    Args:
        app: an AppDef, a component name (``utils.echo``, ``file.py:fn``) or a function.
        component_args: the component's CLI-style arguments; an element may be (or be an
            f-string of) a pipeline channel, which becomes an input of the component.
        inputs: component parameters to expose as KFP inputs (None: every parameter whose
            value flows verbatim into args or env and is not in ``component_args``).
        image: replaces the role's image.
        resource: a named resource (``cpu.small``, ``aws_g5.2xlarge``) for the role, sized as
            the kubernetes scheduler sizes it (requests less the node-reserved share).
            Resources with ``devices`` (EFA: ``aws_p4d.24xlarge``) need the launcher.
        max_retries: replaces ``Role.max_retries`` (the task's KFP retries).
        env: variables set in the role's env (they beat the role's own values).
        env_inputs: env vars whose values are extra string inputs (``env_<name>``).
        enable_caching: KFP result caching (off: TorchX steps have side effects).
        display_name: the task's display name (default: the app name).
        node_selector: node labels added to those from the resource's capabilities.
        tolerations: Kubernetes tolerations (``{key, operator, value, effect}``).
        secrets: ``{secret name: {secret key: env var}}`` exposed as env.
        shm: mount a memory emptyDir at ``/dev/shm``.
        outputs: output artifacts the app writes, ``{name: artifact type}`` (``Dataset``,
            ``Model``, ``Metrics``, ... from ``kfp.dsl``); the args give the app the local path
            of each with :func:`torchx_kfp.output_path` and KFP stores what it wrote there.
            An upstream output artifact in ``component_args`` (``train.outputs["model"]``,
            or an f-string of it) becomes an input artifact, replaced by its local path.
            ``{name: (type, path)}`` declares an artifact the app writes at ``path`` (a file
            or directory; pipeline channels or f-strings of them allowed): once the app
            succeeded, the task copies it to the artifact's local path (a missing path fails
            the task).

    Raises:
        ValueError: the app needs more than one KFP task (several roles or replicas, ports,
            devices, bind or device mounts, ...): use :func:`torchx_kfp.launcher_from_app`.
    """
    kinds, copied = split_outputs(outputs or {})
    resolved, found, channels, artifacts = resolve_app(app, component_args, inputs)
    copies, found, channels = _copied_paths(copied, found, channels)
    resolved = _override(resolved, image, resource, max_retries)
    role = substitute_macros(resolved, check_single_task(resolved))
    role.env.update(env or {})  # `env=` beats the role's own values, as LaunchRequest.env does
    spec = component_yaml(resolved, role, found, env_inputs, copies=copies)
    spec = with_artifacts(spec, artifacts, kinds)
    settings = task_settings(
        resolved,
        role,
        enable_caching=enable_caching,
        display_name=display_name,
        node_selector=node_selector,
        tolerations=tolerations,
        secrets=secrets,
        shm=shm,
    )
    return TorchXComponent(spec, resolved, found, settings, channels)


_OPTIONS = (
    "component_args",
    "inputs",
    "image",
    "resource",
    "max_retries",
    "enable_caching",
    "display_name",
    "node_selector",
    "tolerations",
    "secrets",
    "shm",
    "outputs",
)


def _check_env_channels(channels: Mapping[str, PipelineChannel]) -> None:

    for var, channel in channels.items():
        if isinstance(channel, PipelineArtifactChannel):
            raise ValueError(
                f"env `{var}` is an artifact ({channel.name}): pass artifacts in component_args,"
                " where they become the artifact's local path"
            )


def container_from_app(app: AppOrComponent, *args: Any, **kwargs: Any) -> PipelineTask:
    """Creates the KFP task of a TorchX app inside a ``@dsl.pipeline``.

    ``component_from_app(app, ...)(*args, **kwargs)``: keyword arguments named like
    :func:`component_from_app` options configure the component; ``env`` values may be
    pipeline channels (they become ``env_<name>`` inputs); every other keyword argument is a
    component input (a component parameter, or ``parent_run_id``).

    Example (data between the tasks as KFP artifacts)::

        from kfp.dsl import Dataset, Model
        from torchx_kfp import output_path

        prep = container_from_app(
            "utils.python", ["--script", "prep.py", "--", "--out", output_path("data")],
            outputs={"data": Dataset}, image="torchx-flow/torch:2.13.0",
        )
        train = container_from_app(
            "dist.ddp", ["-j", "1x2", "--script", "train.py", "--",
                         "--data", f"{prep.outputs['data']}/dataset.json",
                         "--output-dir", output_path("model")],
            outputs={"model": Model}, resource="cpu.small", image="torchx-flow/torch:2.13.0",
            parent_run_id=prep.outputs["tracker_run_id"],
        )
    """
    if args and isinstance(args[0], list | tuple):
        kwargs["component_args"], args = list(args[0]), args[1:]
    options = {k: kwargs.pop(k) for k in _OPTIONS if k in kwargs}
    env = dict(kwargs.pop("env", None) or {})
    channels = {k: v for k, v in env.items() if isinstance(v, PipelineChannel)}
    _check_env_channels(channels)
    static = {k: str(v) for k, v in env.items() if k not in channels}
    component = component_from_app(app, env=static, env_inputs=sorted(channels), **options)

    kwargs.update({env_input_name(k): v for k, v in channels.items()})
    return component(*args, **kwargs)
