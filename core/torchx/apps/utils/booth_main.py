"""Evaluates the booth function and records it: ``python -m torchx.apps.utils.booth_main``.

``f(x1, x2) = (x1 + 2*x2 - 7)^2 + (2*x1 + x2 - 5)^2`` (minimum 0 at ``(1, 3)``). The result is
stored as ``{"booth_eval": f}`` for ``--trial_idx`` in an
:class:`~torchx.runtime.tracking.FsspecResultTracker` rooted at ``--tracker_base``.
"""

from __future__ import annotations

import argparse
import sys

from torchx.runtime.tracking import FsspecResultTracker

__all__ = ["booth", "main", "parse_args"]


def booth(x1: float, x2: float) -> float:
    """Returns the booth function at ``(x1, x2)``."""
    return (x1 + 2 * x2 - 7) ** 2 + (2 * x1 + x2 - 5) ** 2


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parses ``--x1 --x2 --trial_idx --tracker_base``.

    Args:
        argv: the arguments (without the program name).
    """
    parser = argparse.ArgumentParser(description="evaluates the booth function")
    parser.add_argument("--x1", type=float, required=True, help="x1")
    parser.add_argument("--x2", type=float, required=True, help="x2")
    parser.add_argument("--trial_idx", type=int, default=0, help="trial index (hpo)")
    parser.add_argument(
        "--tracker_base", type=str, default="/tmp/torchx-util-booth", help="tracker base URI"
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    """Evaluates booth and writes ``{"booth_eval": f}`` for the trial.

    Args:
        argv: the arguments (without the program name).
    """
    args = parse_args(argv)
    tracker = FsspecResultTracker(args.tracker_base)
    tracker[args.trial_idx] = {"booth_eval": booth(args.x1, args.x2)}


if __name__ == "__main__":
    main(sys.argv[1:])
