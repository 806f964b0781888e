"""The pipeline model: steps, dependencies, parameters, defaults (pydantic v2).

A pipeline is written in YAML (:func:`torchx.workflow.load_pipeline`) or in Python::

    from torchx.workflow import Pipeline, Step

    pipeline = Pipeline(
        name="demo",
        params={"msg": "hello"},
        steps={
            "first": Step(component="utils.echo", args=["--msg", "{{ params.msg }}"]),
            "second": Step(component="utils.echo", args=["--msg", "{{ steps.first.app_id }}"]),
        },
    )

A step depends on the steps it names in ``depends_on`` and on the steps its strings reference
(``{{ steps.first.app_id }}``). Its tracker parent run is ``parent`` or else its first direct
dependency. Step values left unset come from ``defaults``.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ArtifactKind", "Param", "Pipeline", "RetryPolicyName", "Step", "StepDefaults"]

RetryPolicyName = Literal["APPLICATION", "REPLICA", "ROLE"]
ArtifactKind = Literal["Artifact", "Dataset", "Model", "Metrics", "HTML", "Markdown"]
"""What a declared output holds, for orchestrators that keep typed artifacts (KFP)."""
ParamType = Literal["string", "integer", "number", "boolean"]
_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
_TYPES: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}


class Param(BaseModel):
    """A pipeline parameter (a DAG param in Airflow, a pipeline input in KFP).

    ``params: {steps: 50}`` is short for ``params: {steps: {default: 50}}``; the type is
    inferred from the default when not given.

    Attributes:
        default: the value used when a run does not set the parameter.
        type: ``string``, ``integer``, ``number`` or ``boolean``.
        description: shown in ``--help``-like listings and the Airflow UI.
        minimum: the smallest accepted number.
        maximum: the largest accepted number.
        enum: the accepted values.
    """

    model_config = ConfigDict(extra="forbid")

    default: Union[bool, int, float, str, None] = None
    type: ParamType = "string"
    description: str = ""
    minimum: Optional[float] = None
    maximum: Optional[float] = None
    enum: Optional[list[Union[bool, int, float, str]]] = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            data = {"default": data}
        if "type" not in data and data.get("default") is not None:
            data = {**data, "type": _TYPES.get(type(data["default"]), "string")}
        return data


class StepDefaults(BaseModel):
    """What every step inherits unless it sets its own value.

    Attributes:
        scheduler: the TorchX scheduler (templated; default: ``local_cwd``).
        cfg: scheduler run options, merged under the step's own.
        resource: a named resource for every role (templated).
        image: an image for every role (templated).
        env: variables added to every role, merged under the step's own.
        max_retries: scheduler-side retries of every role (``Role.max_retries``).
        retry_policy: ``APPLICATION``, ``REPLICA`` or ``ROLE`` (``Role.retry_policy``).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    scheduler: Optional[str] = None
    cfg: dict[str, Any] = Field(default_factory=dict)
    resource: Optional[str] = None
    image: Optional[str] = None
    env: dict[str, str] = Field(default_factory=dict)
    max_retries: Optional[int] = Field(default=None, ge=0)
    retry_policy: Optional[RetryPolicyName] = None


class Step(StepDefaults):
    """One step: a TorchX component with its arguments, or a prebuilt AppDef.

    Attributes:
        component: a builtin (``dist.ddp``), a plugin component or ``path/file.py:fn``.
        app: a prebuilt ``torchx.specs.AppDef`` (Python only) instead of ``component``.
        args: the component's CLI-style arguments (a list) or ``{param: value}``; templated.
        depends_on: steps that must succeed first (references add dependencies too).
        parent: the step whose run is this step's tracker parent (default: the first
            direct dependency).
        outputs: declared output paths, ``{name: templated path}``; a step's own
            ``{{ steps.SELF.app_id }}`` may appear in them.
        artifacts: declared outputs that orchestrators with an artifact store keep as typed
            artifacts, ``{output name: Artifact|Dataset|Model|Metrics|HTML|Markdown}``. On KFP
            the output becomes an output artifact of the step's task (container or launcher;
            shown in the UI) and downstream container steps read it as an input artifact;
            the local executor, Airflow and downstream KFP launcher steps use the path.
    """

    component: Optional[str] = None
    app: Optional[Any] = None
    args: Union[list[str], dict[str, Any]] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)
    parent: Optional[str] = None
    outputs: dict[str, str] = Field(default_factory=dict)
    artifacts: dict[str, ArtifactKind] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _stringify_args(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("args"), list):
            data = {**data, "args": [_scalar_text(a) for a in data["args"]]}
        return data

    @model_validator(mode="after")
    def _one_source(self) -> Step:
        if (self.component is None) == (self.app is None):
            raise ValueError("set exactly one of `component` (e.g. utils.echo) or `app`")
        if self.app is not None:
            from torchx.specs.api import (  # lazy: specs.api ~8 ms; import torchx.workflow skips it
                AppDef,
            )

            if not isinstance(self.app, AppDef):
                raise ValueError(f"`app` must be a torchx.specs.AppDef, got {type(self.app)}")
            if self.args:
                raise ValueError("`args` needs `component`; an `app` is used as is")
        return self

    @model_validator(mode="after")
    def _artifacts_are_outputs(self) -> Step:
        for name in self.artifacts:
            if name not in self.outputs:
                raise ValueError(
                    f"`artifacts` names `{name}`, which is not a declared output:"
                    f" add `{name}: <path>` to `outputs`"
                )
        return self


def _scalar_text(value: Any) -> Any:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, float)):
        return str(value)
    return value


class Pipeline(BaseModel):
    """A named set of steps with parameters and step defaults.

    Attributes:
        name: the pipeline name (the Airflow dag_id, the KFP pipeline name).
        description: free text.
        params: ``{name: Param}`` (or ``{name: default}``).
        defaults: values every step inherits.
        steps: ``{name: Step}``, in definition order.
        source: the file the pipeline was read from ("" for Python).
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=_NAME)
    description: str = ""
    params: dict[str, Param] = Field(default_factory=dict)
    defaults: StepDefaults = Field(default_factory=StepDefaults)
    steps: dict[str, Step] = Field(min_length=1)
    source: str = ""

    def effective(self, name: str) -> Step:
        """Returns step ``name`` with every unset value filled from ``defaults``.

        Args:
            name: the step name.
        """
        step = self.steps[name]
        d = self.defaults
        return step.model_copy(
            update={
                "scheduler": step.scheduler or d.scheduler or "local_cwd",
                "cfg": {**d.cfg, **step.cfg},
                "resource": step.resource or d.resource,
                "image": step.image or d.image,
                "env": {**d.env, **step.env},
                "max_retries": d.max_retries if step.max_retries is None else step.max_retries,
                "retry_policy": step.retry_policy or d.retry_policy,
            }
        )

    def param_defaults(self) -> dict[str, Any]:
        """Returns ``{param: default}``."""
        return {k: p.default for k, p in self.params.items()}
