"""Structured component arguments: ``--name exp/run`` and ``-j NNODESxNPROC``.

``dist.ddp`` parses ``--name`` with :class:`StructuredNameArgument`; ``dist.spmd`` infers the
processes per node from the named resource with :class:`StructuredJArgument`.

Example::

    >>> str(StructuredJArgument.parse_from("gpu.small", "2"))
    '2x1'
"""

import dataclasses
import re
import warnings
from pathlib import Path
from typing import Optional

from torchx import specs

__all__ = ["StructuredJArgument", "StructuredNameArgument"]

_DEFAULT_EXPERIMENT = "default-experiment"
_NAME_USAGE = "usage: `exp/run`, `exp/`, `/run` or `run`"


@dataclasses.dataclass
class StructuredNameArgument:
    """An ``{experiment_name}/{run_name}`` pair.

    Attributes:
        experiment_name: the experiment (``default-experiment`` when empty).
        run_name: the run (the script stem or module tail when empty).
    """

    experiment_name: str
    run_name: str

    def __str__(self) -> str:
        return f"{self.experiment_name}/{self.run_name}"

    @staticmethod
    def parse_from(
        name: str,
        m: Optional[str] = None,
        script: Optional[str] = None,
        default_experiment_name: str = _DEFAULT_EXPERIMENT,
    ) -> "StructuredNameArgument":
        """Parses ``exp/run``, ``exp/``, ``/run`` or ``run``.

        Args:
            name: the ``--name`` value.
            m: the ``-m`` module; its last dotted part is the default run name.
            script: the ``--script`` path; its stem is the default run name (wins over ``m``).
            default_experiment_name: used when the experiment part is empty.

        Returns:
            The parsed name.

        Raises:
            ValueError: not exactly one of ``m`` and ``script`` (as TorchX), or more than one
                ``/``.
        """
        if not m and not script:
            raise ValueError(
                "No main module or script specified. Specify either a main module (-m) or a"
                " script path (--script)"
            )
        if m and script:
            raise ValueError(
                "Both main module and script set. Specify exactly one of: main module (-m) or"
                " script (--script), but not both"
            )
        if name.count("/") > 1:
            raise ValueError(f"Invalid --name `{name}`, {_NAME_USAGE}")
        experiment, _, run = name.rpartition("/")
        if not run:
            run = Path(script).stem if script else str(m).rpartition(".")[2]
        return StructuredNameArgument(experiment or default_experiment_name, run)


_NNODES_X_NPROC = re.compile(r"^(\d+)x(\d+)$")
_NNODES = re.compile(r"^\d+$")


@dataclasses.dataclass
class StructuredJArgument:
    """A ``-j {nnodes}x{nproc_per_node}`` value.

    Attributes:
        nnodes: number of nodes.
        nproc_per_node: processes (usually one per GPU) on each node.
    """

    nnodes: int
    nproc_per_node: int

    def __str__(self) -> str:
        return f"{self.nnodes}x{self.nproc_per_node}"

    @staticmethod
    def parse_from(h: str, j: str) -> "StructuredJArgument":
        """Parses ``-j NxM`` or ``-j N`` (processes per node = GPUs of named resource ``h``).

        Args:
            h: the named resource (e.g. ``gpu.small``).
            j: ``NxM`` or ``N``.

        Returns:
            The parsed value.

        Raises:
            ValueError: a malformed ``j``, or ``-j N`` with a named resource that has no GPU.
        """
        match = _NNODES_X_NPROC.match(j)
        if match:
            nnodes, nproc = int(match.group(1)), int(match.group(2))
            gpu = specs.resource(h=h).gpu
            if nproc != gpu:
                warnings.warn(
                    f"In `-j {j}` the processes per node ({nproc}) differ from the GPU count"
                    f" ({gpu}) of `-h {h}`; some GPUs may be idle or shared."
                    f" Use `-j {nnodes}` to run one process per GPU.",
                    stacklevel=2,
                )
            return StructuredJArgument(nnodes, nproc)
        if _NNODES.match(j):
            gpu = specs.resource(h=h).gpu
            if gpu <= 0:
                raise ValueError(
                    f"nproc_per_node cannot be inferred from GPU count. `{h}` is not a GPU"
                    f" instance. Specify `-j {{nnodes}}x{{nproc_per_node}}` (e.g. `-j {j}x1`)."
                )
            return StructuredJArgument(int(j), gpu)
        raise ValueError(
            f"Invalid format for `-j $NNODESx$NPROCS_PER_NODE` (e.g. `-j 1x8`, or `-j 2` to"
            f" infer the processes from the GPUs of `-h`). Given: {j}"
        )
