"""A single-role AppDef -> the KFP component YAML (image, command, args, env, inputs, outputs).

The container runs a small POSIX ``sh`` wrapper before the role's entrypoint. It exports the
env values that hold input placeholders (KFP resolves placeholders in argv, not in env),
drops an empty ``TORCHX_PARENT_RUN_ID``, writes the ``app_id`` and ``tracker_run_id``
outputs, then ``exec``s the entrypoint. A component with output artifacts copied from paths
the app writes (``outputs={"model": (Model, path)}``) runs :data:`WRAPPER_COPY` instead: the
entrypoint as a child (SIGTERM/SIGINT forwarded to it), then, when it succeeded, each path
copied to its artifact's local path. Every value reaches the wrapper as a positional
argument: no user string is ever parsed as shell code. Every argument is one string with
input placeholders embedded (the backend implements no Concat placeholder), and run/task ids
come from the :data:`~torchx_kfp._compile.macros.RUN_INPUTS` inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

import yaml

from torchx.settings import ENV_TORCHX_JOB_ID, ENV_TORCHX_PARENT_RUN_ID
from torchx_kfp._compile.macros import (
    has_input,
    input_placeholder,
    job_id_expr,
    run_inputs,
    to_placeholders,
)
from torchx_kfp._compile.shell import (
    input_var,
    rewrite_artifact_paths,
    rewrite_shell_script,
    shell_script_indices,
)

if TYPE_CHECKING:
    from torchx.specs.api import AppDef, Role
    from torchx_kfp._compile.macros import Element
    from torchx_kfp._compile.params import ComponentInput

__all__ = [
    "OUTPUTS",
    "PARENT_INPUT",
    "WRAPPER",
    "WRAPPER_COPY",
    "component_yaml",
    "env_input_name",
]

PARENT_INPUT = "parent_run_id"
OUTPUTS = ("app_id", "tracker_run_id")

WRAPPER = (
    'set -e; id_out="$1"; run_out="$2"; shift 2; '
    'while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do export "$1"; shift; done; shift; '
    '[ -n "${TORCHX_PARENT_RUN_ID:-}" ] || unset TORCHX_PARENT_RUN_ID; '
    'mkdir -p "$(dirname "$id_out")" "$(dirname "$run_out")"; '
    'printf "%s" "${TORCHX_JOB_ID##*/}" > "$id_out"; '
    'printf "%s" "$TORCHX_JOB_ID" > "$run_out"; '
    'exec "$@"'
)

_PROLOGUE = WRAPPER.rsplit("[ -n ", 1)[0]
WRAPPER_COPY = (
    _PROLOGUE + 'n=0; while [ "$1" != "--" ]; do eval "src_$n=\\$1 dst_$n=\\$2"; '
    "n=$((n + 1)); shift 2; done; shift; "
    + WRAPPER[len(_PROLOGUE) :].replace('exec "$@"', "")
    + "pid=; term=; intr=; "
    + 'trap \'term=1; intr=1; [ -z "${pid:-}" ] || kill -TERM "$pid" 2>/dev/null || :\' TERM INT; '
    '"$@" & pid=$!; [ -z "${term:-}" ] || kill -TERM "$pid" 2>/dev/null || :; '
    'rc=0; intr=; wait "$pid" || rc=$?; '
    # a trap ends `wait` early (128+signal) with the app's status still kept by the shell: wait
    # again for it; an unknown pid (127, already reported) with no process keeps the status read
    'while [ -n "$intr" ]; do intr=; r=0; wait "$pid" || r=$?; '
    '[ "$r" -eq 127 ] && ! kill -0 "$pid" 2>/dev/null && break; rc=$r; done; '
    '[ "$rc" -eq 0 ] || exit "$rc"; i=0; while [ "$i" -lt "$n" ]; do '
    'eval "src=\\$src_$i dst=\\$dst_$i"; '
    '[ -e "$src" ] || { echo "torchx-kfp: the app did not write $src (declared output)" >&2; '
    "exit 1; }; "
    'mkdir -p "$(dirname "$dst")"; rm -rf "$dst"; cp -R "$src" "$dst"; i=$((i + 1)); done'
)
"""The wrapper of a component with copied output artifacts: ``... -- src dst ... -- argv``."""


def env_input_name(var: str) -> str:
    """The KFP input that carries env var ``var`` when its value is a pipeline channel."""
    return f"env_{var.lower()}"


def _input_specs(inputs: Sequence[ComponentInput], env_inputs: Sequence[str]) -> list[Any]:
    specs: list[dict[str, Any]] = []
    for i in inputs:
        spec: dict[str, Any] = {"name": i.name, "type": i.kfp_type}
        if i.default is not None:
            spec.update(default=i.default, optional=True)
        specs.append(spec)
    specs.append({"name": PARENT_INPUT, "type": "String", "default": "", "optional": True})
    specs += [{"name": env_input_name(v), "type": "String"} for v in env_inputs]
    return specs


def _parent_export() -> Element:
    """The ``TORCHX_PARENT_RUN_ID=...`` export, guarded: only a task that passes the input has it.

    A task without an upstream does not pass the optional ``parent_run_id``; the KFP backend
    (2.17+) leaves it out of the executor input, so an unguarded reference fails the driver.
    """
    export = f"{ENV_TORCHX_PARENT_RUN_ID}={input_placeholder(PARENT_INPUT)}"
    return {"if": {"cond": {"isPresent": PARENT_INPUT}, "then": [export]}}


def _split_env(
    role: Role, app: AppDef, inputs: Sequence[ComponentInput], env_inputs: Sequence[str]
) -> tuple[dict[str, str], list[Element]]:

    static: dict[str, str] = {}
    exports: list[Element] = [
        to_placeholders(f"{ENV_TORCHX_JOB_ID}={job_id_expr(app)}", inputs),
        _parent_export(),
    ]
    for key, value in sorted(role.env.items()):
        if key in (ENV_TORCHX_JOB_ID, ENV_TORCHX_PARENT_RUN_ID) or key in env_inputs:
            continue
        if has_input(value, inputs) or "{{$" in value:
            exports.append(to_placeholders(f"{key}={value}", inputs))
        else:
            static[key] = value
    for var in env_inputs:
        exports.append(f"{var}={input_placeholder(env_input_name(var))}")
    return static, exports


def _args(role: Role, inputs: Sequence[ComponentInput]) -> tuple[list[Element], list[Element]]:

    scripts = shell_script_indices(role)
    args: list[Element] = []
    exports: dict[str, Element] = {}
    for k, arg in enumerate(role.args):
        if k in scripts:
            arg, used = rewrite_shell_script(str(arg), inputs)
            arg, paths = rewrite_artifact_paths(arg)
            exports.update({var: f"{var}={value}" for var, value in paths.items()})
            for inp in used:
                exports[inp.name] = f"{input_var(inp.name)}={input_placeholder(inp.name)}"
        args.append(to_placeholders(str(arg), inputs))
    return args, list(exports.values())


def component_yaml(
    app: AppDef,
    role: Role,
    inputs: Sequence[ComponentInput],
    env_inputs: Sequence[str] = (),
    description: str = "",
    copies: Optional[Mapping[str, str]] = None,
) -> dict[str, Any]:
    """Returns the component as a KFP YAML component (a dict ready for ``yaml.safe_dump``).

    Args:
        app: the AppDef (for its name).
        role: its single role, macros already substituted.
        inputs: component inputs whose tokens appear in the role's args and env.
        env_inputs: env var names whose values come from extra string inputs.
        description: the component description.
        copies: ``{output artifact: path the app writes}`` (input tokens allowed), copied to
            the artifact's local path once the app succeeded (:data:`WRAPPER_COPY`).
    """
    inputs = [*inputs, *run_inputs()]
    static_env, exports = _split_env(role, app, inputs, env_inputs)
    args, shell_exports = _args(role, inputs)
    pairs: list[Element] = []
    for name, path in (copies or {}).items():
        pairs += [to_placeholders(path, inputs), "{{$.outputs.artifacts['" + name + "'].path}}"]
    container: dict[str, Any] = {
        "image": role.image,
        "command": [
            "sh",
            "-c",
            WRAPPER_COPY if copies else WRAPPER,
            "torchx-kfp",
            *({"outputPath": name} for name in OUTPUTS),
            *exports,
            *shell_exports,
            "--",
            *([*pairs, "--"] if copies else []),
            role.entrypoint,
        ],
        "args": args,
    }
    if static_env:
        container["env"] = static_env
    return {
        "name": app.name,
        "description": description or f"TorchX app `{app.name}`, role `{role.name}`",
        "inputs": _input_specs(inputs, env_inputs),
        "outputs": [{"name": name, "type": "String"} for name in OUTPUTS],
        "implementation": {"container": container},
    }


def yaml_text(spec: Mapping[str, Any]) -> str:
    """Dumps a component spec as YAML (keys kept in order)."""
    return yaml.safe_dump(dict(spec), sort_keys=False)
