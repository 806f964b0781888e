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
    parser.add_argument("--metrics-out", default="", help="also write {mse, checkpoint} here")
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
    record(mse, ckpt, args.metrics_out)
    return mse


def record(mse: float, ckpt: Path, metrics_out: str) -> None:
    """Writes the metrics file (if asked) and records them on the configured trackers."""
    from torchx.tracker import app_run_from_env

    if metrics_out:
        out = Path(metrics_out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"mse": mse, "checkpoint": str(ckpt)}))
    app_run_from_env().add_metadata(mse=mse, checkpoint=str(ckpt))


if __name__ == "__main__":
    main()
