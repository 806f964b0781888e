"""Utility components: echo, touch, sh, python, binary, copy, booth and hydra.

Example::

    torchx run -s local_cwd utils.sh echo "hello world"
    torchx run -s local_cwd utils.python --script train.py -- --lr 0.1
"""

# annotations stay strings until a parser asks (builders resolve them): evaluating them
# at import cost ~2.5 ms of every ``torchx run`` start
from __future__ import annotations

import os
import shlex
from typing import Annotated, Optional

import torchx
from torchx import specs
from torchx.components import _hydra

__all__ = ["binary", "booth", "copy", "echo", "hydra", "python", "sh", "touch"]

_BOOTH_TRACKER_BASE = "/tmp/torchx-util-booth"


def echo(
    msg: str = "hello world", image: str = torchx.IMAGE, num_replicas: int = 1
) -> specs.AppDef:
    """Echos a message to stdout (calls echo)

    Args:
        msg: message to echo
        image: image to use
        num_replicas: number of replicas to run
    """  # noqa: D415 (TorchX's description of utils.echo: no final period)
    return specs.AppDef(
        name="echo",
        roles=[
            specs.Role(
                name="echo",
                image=image,
                entrypoint="echo",
                args=[msg],
                num_replicas=num_replicas,
                resource=specs.Resource(cpu=1, gpu=0, memMB=1024),
            )
        ],
    )


def touch(file: str, image: str = torchx.IMAGE) -> specs.AppDef:
    """Touches a file (calls touch)

    Args:
        file: file to create
        image: the image to use
    """  # noqa: D415 (TorchX's description of utils.touch: no final period)
    return specs.AppDef(
        name="touch",
        roles=[
            specs.Role(
                name="touch",
                image=image,
                entrypoint="touch",
                args=[file],
                num_replicas=1,
                resource=specs.Resource(cpu=1, gpu=0, memMB=1024),
            )
        ],
    )


def sh(
    *args: str,
    image: str = torchx.IMAGE,
    num_replicas: int = 1,
    cpu: int = 1,
    gpu: int = 0,
    memMB: int = 1024,
    h: Optional[str] = None,
    env: Optional[dict[str, str]] = None,
    max_retries: int = 0,
    mounts: Optional[list[str]] = None,
    entrypoint: Optional[str] = None,
) -> specs.AppDef:
    """Runs the provided command via sh (``sh -c "<args>"``; each arg is shell-quoted).

    Args:
        args: the command and its arguments
        image: the image to use
        num_replicas: number of replicas to run
        cpu: number of cpus per replica
        gpu: number of gpus per replica
        memMB: cpu memory in MB per replica
        h: a registered named resource (if specified takes precedence over cpu, gpu, memMB)
        env: environment variables to be passed to the run (e.g. ENV1=v1,ENV2=v2,ENV3=v3)
        max_retries: the number of scheduler retries allowed
        mounts: mounts to mount into the worker environment/container
            (ex. type=<bind/volume>,src=/host,dst=/job[,readonly]).
        entrypoint: the shell to run the command with instead of ``sh`` (as ``{entrypoint} -c``)
    """
    escaped_args = " ".join(shlex.quote(arg) for arg in args)
    role_env = dict(env) if env else {}
    role_env.setdefault("LOGLEVEL", os.getenv("LOGLEVEL", "WARNING"))
    return specs.AppDef(
        name="sh",
        roles=[
            specs.Role(
                name="sh",
                image=image,
                entrypoint=entrypoint or "sh",
                args=["-c", escaped_args],
                num_replicas=num_replicas,
                resource=specs.resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h),
                env=role_env,
                max_retries=max_retries,
                mounts=specs.parse_mounts(mounts) if mounts else [],
            )
        ],
    )


def python(
    *args: str,
    m: Optional[str] = None,
    c: Optional[str] = None,
    script: Optional[str] = None,
    image: str = torchx.IMAGE,
    name: str = "torchx_utils_python",
    cpu: int = 1,
    gpu: int = 0,
    memMB: int = 1024,
    h: Optional[str] = None,
    num_replicas: int = 1,
    mounts: Optional[list[str]] = None,
) -> specs.AppDef:
    """Runs ``python`` with the given module, command or script and arguments.

    Exactly one of ``-m``, ``-c`` and ``--script`` must be given.

    Args:
        args: arguments passed to the program in sys.argv[1:] (ignored with `--c`)
        m: run library module as a script
        c: program passed as string (may error if scheduler has a length limit on args)
        script: .py script to run
        image: image to run on
        name: name of the job
        cpu: number of cpus per replica
        gpu: number of gpus per replica
        memMB: cpu memory in MB per replica
        h: a registered named resource (if specified takes precedence over cpu, gpu, memMB)
        num_replicas: number of copies to run (each on its own container)
        mounts: mounts to mount into the worker environment/container
            (ex. type=<bind/volume>,src=/host,dst=/job[,readonly]).
    """
    if sum(x is not None for x in (m, c, script)) != 1:
        raise ValueError("exactly one of `-m`, `-c` and `--script` needs to be specified")
    if script:
        cmd = [script]
    elif m:
        cmd = ["-m", m]
    else:
        cmd = ["-c", c or ""]
    return specs.AppDef(
        name=name,
        roles=[
            specs.Role(
                name="python",
                image=image,
                entrypoint="python",
                num_replicas=num_replicas,
                resource=specs.resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h),
                args=[*cmd, *args],
                env={"HYDRA_MAIN_MODULE": m} if m else {},
                mounts=specs.parse_mounts(mounts) if mounts else [],
            )
        ],
    )


def binary(
    *args: str,
    entrypoint: str,
    name: str = "torchx_utils_binary",
    num_replicas: int = 1,
    cpu: int = 1,
    gpu: int = 0,
    memMB: int = 1024,
    h: Optional[str] = None,
) -> specs.AppDef:
    """Runs the given binary (no image: for schedulers that run on the host).

    Args:
        args: arguments passed to the program in sys.argv[1:]
        entrypoint: the binary to run
        name: name of the job
        num_replicas: number of copies to run
        cpu: number of cpus per replica
        gpu: number of gpus per replica
        memMB: cpu memory in MB per replica
        h: a registered named resource (if specified takes precedence over cpu, gpu, memMB)
    """
    return specs.AppDef(
        name=name,
        roles=[
            specs.Role(
                name="binary",
                image=specs.NONE,
                entrypoint=entrypoint,
                num_replicas=num_replicas,
                resource=specs.resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h),
                args=list(args),
            )
        ],
    )


def copy(
    src: str, dst: str, image: str = torchx.IMAGE, mounts: Optional[list[str]] = None
) -> specs.AppDef:
    """Copies a file from src to dst; both may be fsspec URLs (e.g. ``s3://bucket/key``).

    Args:
        src: the source fsspec file location
        dst: the destination fsspec file location
        image: the image that contains the copy app
        mounts: mounts to mount into the worker environment/container
            (ex. type=<bind/volume>,src=/host,dst=/job[,readonly]).
    """
    return specs.AppDef(
        name="torchx-utils-copy",
        roles=[
            specs.Role(
                name="torchx-utils-copy",
                image=image,
                entrypoint="python",
                args=["-m", "torchx.apps.utils.copy_main", "--src", src, "--dst", dst],
                resource=specs.Resource(cpu=1, gpu=0, memMB=1024),
                mounts=specs.parse_mounts(mounts) if mounts else [],
            )
        ],
    )


def booth(
    x1: float,
    x2: float,
    trial_idx: int = 0,
    tracker_base: str = _BOOTH_TRACKER_BASE,
    image: str = torchx.IMAGE,
) -> specs.AppDef:
    """Evaluates the booth function, ``f(x1, x2) = (x1 + 2*x2 - 7)^2 + (2*x1 + x2 - 5)^2``.

    The output is written to ``{tracker_base}/{trial_idx}.json`` as ``{"booth_eval": f}``.

    Args:
        x1: x1
        x2: x2
        trial_idx: ignore if not running hpo
        tracker_base: URI of the tracker's base output directory (e.g. s3://foo/bar)
        image: the image that contains the booth app
    """
    return specs.AppDef(
        name="torchx-utils-booth",
        roles=[
            specs.Role(
                name="torchx-utils-booth",
                image=image,
                entrypoint="python",
                args=[
                    "-m",
                    "torchx.apps.utils.booth_main",
                    "--x1",
                    str(x1),
                    "--x2",
                    str(x2),
                    "--trial_idx",
                    str(trial_idx),
                    "--tracker_base",
                    tracker_base,
                ],
                resource=specs.Resource(cpu=1, gpu=0, memMB=1024),
            )
        ],
    )


def hydra(
    *overrides: str,
    config_name: Annotated[str, "-cn"],
    config_dir: Annotated[str, "-cd"] = ".torchx",
) -> specs.AppDef:
    """Builds the AppDef described by a Hydra config (needs ``hydra-core`` installed).

    Composes ``{config_dir}/{config_name}`` with the overrides and instantiates ``cfg.app``.
    The resolvers ``${torchx.app_id:}``, ``${torchx.replica_id:}``, ``${torchx.rank0_env:}``
    and ``${torchx.img_root:}`` emit the corresponding macros. Set ``TORCHX_DEBUG`` to print
    the composed config.

    Args:
        overrides: Hydra overrides (e.g. ``app.roles.0.num_replicas=2``)
        config_name: name of the config file (without ``.yaml``)
        config_dir: directory that holds the config files
    """
    return _hydra.compose_appdef(config_name, config_dir, list(overrides))
