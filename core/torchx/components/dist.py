"""Distributed training components: ``dist.ddp`` and ``dist.spmd``.

Both launch the script or module with ``torchrun`` (``torch.distributed.run``), one replica
per node. Example::

    torchx run -s local_cwd dist.ddp -j 1x2 --script train.py -- --lr 0.1

**Rendezvous.** For a single node (``-j N``, ``-j 1xN``) with the default ``c10d`` backend the
command uses ``torchrun --standalone`` (TorchX uses ``--rdzv_endpoint localhost:0``, which can
abort at exit with gloo). With another backend a single node uses ``localhost:{rdzv_port}``.
Multi-node jobs rendezvous at ``${TORCHX_RANK0_HOST:=localhost}:{rdzv_port}``, where the
scheduler names the rank-0 host variable through the ``rank0_env`` macro.

**Shell safety.** The role runs ``bash -c <cmd>``; every value in ``cmd`` is ``shlex.quote``d
except the multi-node endpoint, which is built only from the validated port and the macro.
The rendezvous id is the app id, passed as ``--rdzv_id "$TORCHX_RDZV_ID"`` with
``TORCHX_RDZV_ID=${app_id}`` in the role env, so a scheduler-generated app id (derived from a
user-chosen name) is never spliced into the command.
"""

# annotations stay strings until a parser asks (builders resolve them): evaluating them
# at import cost ~2.5 ms of every ``torchx run`` start
from __future__ import annotations

from typing import Optional

import torchx
from torchx import specs
from torchx.components import _ddp
from torchx.components.structured_arg import StructuredJArgument, StructuredNameArgument

__all__ = ["ddp", "get_role_name", "parse_nnodes", "spmd"]

# TorchX's name for the debug env vars that ``debug=True`` sets (CUDA_LAUNCH_BLOCKING, ...).
_TORCH_DEBUG_FLAGS: dict[str, str] = _ddp.DEBUG_ENV


def parse_nnodes(j: str) -> tuple[int, int, int, str]:
    """Parses ``-j`` (``[[MIN:]MAX x]NPROC``, e.g. ``1:2x4``, ``2x4`` or ``4``).

    Returns:
        ``(min_nnodes, max_nnodes, nproc_per_node, nnodes_rep)``; ``nnodes_rep`` is the
        ``--nnodes`` value for torchrun (``"1:2"`` or ``"2"``).

    Raises:
        ValueError: any other format.
    """
    spec = _ddp.parse_j(j)
    return spec.min_nnodes, spec.max_nnodes, spec.nproc_per_node, spec.nnodes_rep


def get_role_name(script: Optional[str], m: Optional[str]) -> str:
    """Returns the role name: the script's file stem, else the last part of the module name.

    Raises:
        ValueError: neither ``script`` nor ``m`` is given.
    """
    if not script and not m:
        raise ValueError("failed to compute role_name: give a script or a module (-m)")
    return _ddp.role_name(script, m)


def ddp(
    *script_args: str,
    script: Optional[str] = None,
    m: Optional[str] = None,
    image: str = torchx.IMAGE,
    name: str = "/",
    h: Optional[str] = None,
    cpu: int = 2,
    gpu: int = 0,
    memMB: int = 1024,
    j: str = "1x2",
    env: Optional[dict[str, str]] = None,
    metadata: Optional[dict[str, str]] = None,
    max_retries: int = 0,
    rdzv_port: int = 29500,
    rdzv_backend: str = "c10d",
    rdzv_conf: Optional[str] = None,
    mounts: Optional[list[str]] = None,
    debug: bool = False,
    tee: int = 3,
) -> specs.AppDef:
    """Distributed data parallel style application (one role, multi-replica).

    Uses `torchrun <https://pytorch.org/docs/stable/elastic/run.html>`_ to launch and
    coordinate PyTorch worker processes. Exactly one of ``--script`` and ``-m`` is required.
    A single node with the ``c10d`` backend uses ``torchrun --standalone`` (a free port).

    Args:
        script_args: arguments to the main module
        script: script or binary to run within the image
        m: the python module path to run
        image: image (e.g. docker)
        name: job name override in the format ``{experimentname}/{runname}``,
            ``{experimentname}/``, ``/{runname}`` or ``{runname}``; an empty run name
            defaults to the script stem or module tail
        h: a registered named resource (if specified takes precedence over cpu, gpu, memMB)
        cpu: number of cpus per replica
        gpu: number of gpus per replica
        memMB: cpu memory in MB per replica
        j: [{min_nnodes}:]{nnodes}x{nproc_per_node}, for gpu hosts, nproc_per_node must not
            exceed num gpus
        env: environment variables to be passed to the run (e.g. ENV1=v1,ENV2=v2,ENV3=v3)
        metadata: metadata to be passed to the scheduler (e.g. KEY1=v1,KEY2=v2,KEY3=v3)
        max_retries: the number of scheduler retries allowed
        rdzv_port: the port on rank0's host to use for hosting the c10d store used for
            rendezvous (multi-node jobs, or a single node with a non-c10d backend)
        rdzv_backend: the rendezvous backend to use
        rdzv_conf: additional rendezvous configuration (e.g. join_timeout=600,close_timeout=600)
        mounts: mounts to mount into the worker environment/container
            (ex. type=<bind/volume>,src=/host,dst=/job[,readonly]).
        debug: whether to run with preset debug flags enabled
        tee: tees the specified std stream(s) to console + file. 0: none, 1: stdout,
            2: stderr, 3: both
    """
    if (script is None) == (m is None):
        raise ValueError("exactly one of --script and -m must be specified")
    jspec = _ddp.parse_j(j)
    names = StructuredNameArgument.parse_from(name=name, m=m, script=script)
    cmd = _ddp.torchrun_command(
        script=script,
        m=m,
        script_args=list(script_args),
        jspec=jspec,
        rdzv_backend=rdzv_backend,
        rdzv_port=rdzv_port,
        rdzv_conf=rdzv_conf,
        tee=tee,
    )
    role = specs.Role(
        name=_ddp.role_name(script, m),
        image=image,
        min_replicas=jspec.min_nnodes,
        entrypoint="bash",
        num_replicas=jspec.max_nnodes,
        resource=specs.resource(cpu=cpu, gpu=gpu, memMB=memMB, h=h),
        args=["-c", cmd],
        env=_ddp.build_env(env, names.experiment_name, names.run_name, debug),
        port_map={"c10d": _ddp.as_int(rdzv_port, "rdzv_port")},
        max_retries=max_retries,
        mounts=specs.parse_mounts(mounts) if mounts else [],
    )
    return specs.AppDef(names.run_name, roles=[role], metadata=dict(metadata or {}))


def spmd(
    *args: str,
    script: Optional[str] = None,
    m: Optional[str] = None,
    image: str = torchx.IMAGE,
    name: str = "/",
    h: str = "gpu.small",
    j: str = "1x1",
    env: Optional[dict[str, str]] = None,
    metadata: Optional[dict[str, str]] = None,
    max_retries: int = 0,
    mounts: Optional[list[str]] = None,
    debug: bool = False,
) -> specs.AppDef:
    """Single program multiple data (SPMD) application: ``dist.ddp`` sized by a named resource.

    ``-j N`` runs N nodes with one process per GPU of the named resource ``-h``;
    ``-j NxM`` runs M processes per node (with a warning when M differs from the GPU count).

    Args:
        args: the arguments to the main module or script
        script: script or binary to run within the image
        m: the python module path to run
        image: the base docker image of the workspace
        name: job name override in the format ``{experimentname}/{runname}``
        h: a registered named resource with GPUs
        j: {nnodes}x{nproc_per_node} or {nnodes} (one process per GPU)
        env: environment variables to be passed to the run (e.g. ENV1=v1,ENV2=v2,ENV3=v3)
        metadata: metadata to be passed to the scheduler (e.g. KEY1=v1,KEY2=v2,KEY3=v3)
        max_retries: the number of scheduler retries allowed
        mounts: mounts to mount into the worker environment/container
            (ex. type=<bind/volume>,src=/host,dst=/job[,readonly]).
        debug: whether to run with preset debug flags enabled
    """
    return ddp(
        *args,
        script=script,
        m=m,
        image=image,
        name=name,
        h=h,
        j=str(StructuredJArgument.parse_from(h, j)),
        env=env,
        metadata=metadata,
        max_retries=max_retries,
        mounts=mounts,
        debug=debug,
    )
