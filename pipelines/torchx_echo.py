"""One-step KFP pipeline of a builtin: ``utils.echo``, whose ``--msg`` is a pipeline input."""

# no `from __future__ import annotations`: KFP reads the pipeline function's real annotations
from kfp import dsl

from torchx_kfp import container_from_app


@dsl.pipeline(name="torchx-echo", description=__doc__.splitlines()[0])
def torchx_echo(msg: str = "hello from kfp") -> None:
    """Echoes ``msg`` in one KFP container task."""
    container_from_app("utils.echo", msg=msg, image="torchx-flow/busybox:latest")
