"""Helpers for ``dist.ddp``: ``-j`` parsing, the ``torchrun`` command line and the env.

Private module: the component finder skips modules whose name starts with ``_``.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from torchx import specs

__all__ = [
    "DEBUG_ENV",
    "RDZV_ID_ENV",
    "JSpec",
    "as_int",
    "build_env",
    "parse_j",
    "role_name",
    "torchrun_command",
]

DEBUG_ENV = {
    "CUDA_LAUNCH_BLOCKING": "1",
    "NCCL_DESYNC_DEBUG": "1",
    "TORCH_DISTRIBUTED_DEBUG": "DETAIL",
    "TORCH_SHOW_CPP_STACKTRACES": "1",
}

# The app id reaches torchrun through this env var (macros are substituted in env values), so
# no scheduler-generated value is ever spliced into the shell command.
RDZV_ID_ENV = "TORCHX_RDZV_ID"

_ELASTIC = re.compile(r"^(\d+):(\d+)x(\d+)$")
_FIXED = re.compile(r"^(\d+)x(\d+)$")
_NPROC = re.compile(r"^(\d+)$")


@dataclass(frozen=True)
class JSpec:
    """A parsed ``-j``: node range, processes per node and the ``--nnodes`` value."""

    min_nnodes: int
    max_nnodes: int
    nproc_per_node: int
    nnodes_rep: str


def parse_j(j: str) -> JSpec:
    """Parses ``A:BxN``, ``BxN`` or ``N``.

    Args:
        j: the ``-j`` value.

    Returns:
        The parsed value.

    Raises:
        ValueError: any other format.
    """
    if m := _ELASTIC.match(j):
        lo, hi, nproc = (int(g) for g in m.groups())
        return JSpec(lo, hi, nproc, f"{lo}:{hi}")
    if m := _FIXED.match(j):
        nodes, nproc = (int(g) for g in m.groups())
        return JSpec(nodes, nodes, nproc, str(nodes))
    if m := _NPROC.match(j):
        return JSpec(1, 1, int(m.group(1)), "1")
    raise ValueError(f"Invalid format for -j, usage example: 1:2x4 or 1x4 or 4. Given: {j}")


def role_name(script: str | None, m: str | None) -> str:
    """Returns the role name: the script stem, else the last dotted part of the module."""
    if script:
        return Path(script).stem
    return (m or "").rpartition(".")[2]


def as_int(value: object, name: str) -> int:
    """Returns ``value`` as an int, or raises a ``ValueError`` naming the parameter."""
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            return int(str(value))
        except ValueError:
            raise ValueError(f"`{name}` must be an integer, got {value!r}") from None
    return value


def _rdzv_args(backend: str, rdzv_port: int, conf: str | None, jspec: JSpec) -> list[str]:
    """Returns the rendezvous part of the command, each element already shell-safe."""
    q = shlex.quote
    conf_args = ["--rdzv_conf", q(conf)] if conf else []
    if jspec.max_nnodes == 1 and backend == "c10d":
        return ["--standalone", *conf_args]
    if jspec.max_nnodes == 1:
        endpoint = q(f"localhost:{rdzv_port}")
    else:
        # Built only from a validated int and the macro; bash expands it (so not quoted).
        endpoint = f"$${{{specs.macros.rank0_env}:=localhost}}:{rdzv_port}"
    return [
        "--rdzv_backend",
        q(backend),
        *conf_args,
        "--rdzv_endpoint",
        endpoint,
        "--rdzv_id",
        f'"${RDZV_ID_ENV}"',
    ]


def torchrun_command(
    *,
    script: str | None,
    m: str | None,
    script_args: list[str],
    jspec: JSpec,
    rdzv_backend: str,
    rdzv_port: object,
    rdzv_conf: str | None,
    tee: object,
) -> str:
    """Returns the ``bash -c`` command that runs ``torchrun``; every value is shell-quoted.

    Args:
        script: the script to run (exclusive with ``m``).
        m: the module to run.
        script_args: the arguments of the script or module.
        jspec: the parsed ``-j``.
        rdzv_backend: the rendezvous backend.
        rdzv_port: the rendezvous port (multi-node).
        rdzv_conf: extra rendezvous config.
        tee: the ``--tee`` value.

    Returns:
        The command string.
    """
    q = shlex.quote
    port = as_int(rdzv_port, "rdzv_port")
    parts = ["torchrun", *_rdzv_args(rdzv_backend, port, rdzv_conf, jspec)]
    parts += ["--nnodes", q(jspec.nnodes_rep), "--nproc_per_node", q(str(jspec.nproc_per_node))]
    parts += ["--tee", q(str(as_int(tee, "tee"))), "--role", q("")]
    if rdzv_backend == "static":
        parts += ["--node_rank", q(specs.macros.replica_id)]
    parts += [q(script)] if script else ["-m", q(m or "")]
    parts += [q(arg) for arg in script_args]
    return " ".join(parts)


def build_env(env: dict[str, str] | None, experiment: str, run: str, debug: bool) -> dict[str, str]:
    """Returns a new env dict (the caller's is not mutated) with the ddp defaults.

    Args:
        env: the user's env.
        experiment: ``TORCHX_TRACKING_EXPERIMENT_NAME``.
        run: ``TORCHX_TRACKING_RUN_NAME``.
        debug: add the torch/NCCL debug variables.

    Returns:
        The env.
    """
    out = dict(env) if env else {}
    out.setdefault("TORCHX_TRACKING_EXPERIMENT_NAME", experiment)
    out.setdefault("TORCHX_TRACKING_RUN_NAME", run)
    out.setdefault("LOGLEVEL", os.getenv("LOGLEVEL", "WARNING"))
    out.setdefault(RDZV_ID_ENV, specs.macros.app_id)
    if debug:
        for key, value in DEBUG_ENV.items():
            out.setdefault(key, value)
    return out
