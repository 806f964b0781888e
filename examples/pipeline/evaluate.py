"""Step 3 of the example training DAG: evaluate the checkpoint the training step saved.

Rebuilds the model of ``examples/train.py``, loads ``--checkpoint`` and reports the mean
squared error on the dataset described by ``--data`` (the manifest of the prepare step).

    python examples/pipeline/evaluate.py --checkpoint out/<app id>/model.pt \
        --data /tmp/torchx_training/data/dataset.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import torch
from torch import nn


def _train_module() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "train.py"
    spec = importlib.util.spec_from_file_location("torchx_example_train", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True, help="model.pt saved by train.py")
    parser.add_argument("--data", required=True, help="dataset.json written by prepare.py")
    args = parser.parse_args(argv)

    ckpt = Path(args.checkpoint)
    if not ckpt.is_file():
        sys.exit(f"evaluate: no checkpoint at {ckpt}; did the train step succeed?")
    manifest = json.loads(Path(args.data).read_text())
    x, y = _train_module().synthetic_dataset(
        manifest["samples"], manifest["features"], manifest["seed"]
    )
    model = nn.Sequential(nn.Linear(manifest["features"], 32), nn.ReLU(), nn.Linear(32, 1))
    state = torch.load(ckpt, weights_only=True)
    model.load_state_dict(state["model"])
    with torch.no_grad():
        mse = nn.functional.mse_loss(model(x), y).item()
    print(f"evaluated {ckpt} (trained {state['steps']} steps): mse {mse:.4f}", flush=True)
    return mse


if __name__ == "__main__":
    main()
