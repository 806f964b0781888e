"""Step 1 of the example training DAG: write the dataset manifest the training step uses.

The data itself is synthetic (``examples/train.py`` generates it from a seed), so "preparing"
means fixing its shape and seed in ``<output-dir>/dataset.json``, which the evaluate step reads.

    python examples/pipeline/prepare.py --output-dir /tmp/torchx_training/data
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", required=True, help="where dataset.json goes")
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    out = Path(args.output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "samples": args.samples,
        "features": args.features,
        "seed": args.seed,
        "prepared_by": os.environ.get("TORCHX_JOB_ID", "local"),
    }
    path = out / "dataset.json"
    path.write_text(json.dumps(manifest, indent=2))
    print(f"dataset manifest written to {path}", flush=True)
    return path


if __name__ == "__main__":
    main()
