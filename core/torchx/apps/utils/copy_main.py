"""Copies one file between fsspec locations: ``python -m torchx.apps.utils.copy_main``.

Example::

    python -m torchx.apps.utils.copy_main --src s3://bucket/in.txt --dst /tmp/out.txt
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys

import fsspec

__all__ = ["main", "parse_args"]

logger: logging.Logger = logging.getLogger(__name__)

_CHUNK_SIZE = 1024 * 1024


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Parses ``--src`` and ``--dst``.

    Args:
        argv: the arguments (without the program name).
    """
    parser = argparse.ArgumentParser(description="copy a file between fsspec locations")
    parser.add_argument("--src", type=str, required=True, help="fsspec location of the source")
    parser.add_argument("--dst", type=str, required=True, help="fsspec location of the target")
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    """Copies ``--src`` to ``--dst`` in chunks.

    Args:
        argv: the arguments (without the program name).
    """
    args = parse_args(argv)
    logger.info("copying %s to %s", args.src, args.dst)
    with fsspec.open(args.src, "rb") as src, fsspec.open(args.dst, "wb") as dst:
        shutil.copyfileobj(src, dst, _CHUNK_SIZE)
    logger.info("done")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main(sys.argv[1:])
