"""Train a small regression model with DistributedDataParallel on CPU (gloo, synthetic data).

Run it the way ``make run`` does::

    torchx run -s local_cwd dist.ddp -j 1x2 --script examples/train.py -- --steps 200

Every worker builds the same synthetic dataset (a fixed random linear target plus noise), trains on
its own shard, and DDP averages the gradients. Rank 0 prints the loss as it goes down and saves a
checkpoint whose path it prints last. ``--hold-file PATH`` keeps every worker waiting after the last
step until PATH exists (a run that must last until an outside event: a demo of a fault, a test
that kills a worker while the app runs), without burning CPU on more steps.

When trackers are configured (``.torchxconfig`` ``[torchx:tracker]`` or ``TORCHX_TRACKERS``), rank 0
records the run's hyper-parameters and final loss as metadata and the checkpoint as an artifact; the
parent run (``--parent_run_id``) is linked by torchx itself, so ``torchx tracker lineage`` shows it.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps")
    parser.add_argument("--batch-size", type=int, default=64, help="per-worker batch size")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate")
    parser.add_argument("--features", type=int, default=16, help="input features")
    parser.add_argument("--samples", type=int, default=4096, help="dataset size")
    parser.add_argument("--output-dir", default="out", help="where the checkpoint goes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--hold-file", default="", help="after the last step, wait until this file exists"
    )
    return parser.parse_args(argv)


def synthetic_dataset(samples: int, features: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=gen)
    true_w = torch.randn(features, 1, generator=gen)
    y = x @ true_w + 0.1 * torch.randn(samples, 1, generator=gen)
    return x, y


def app_id() -> str:
    """The TorchX app id from TORCHX_JOB_ID (``scheduler://session/app_id``), or ``local``."""
    job_id = os.environ.get("TORCHX_JOB_ID", "")
    return job_id.rsplit("/", 1)[-1] or "local"


def hold(path: str, interval: float = 0.5) -> None:
    """Waits until ``path`` exists (returns at once for an empty path)."""
    if not path:
        return
    print(f"holding until {path} exists", flush=True)
    while not os.path.exists(path):
        time.sleep(interval)


def record(args: argparse.Namespace, final_loss: float, ckpt: Path) -> None:
    """Records metadata and the checkpoint on the configured trackers (a no-op without any)."""
    from torchx.tracker import app_run_from_env

    run = app_run_from_env()
    run.add_metadata(steps=args.steps, lr=args.lr, batch_size=args.batch_size, loss=final_loss)
    run.add_artifact("checkpoint", str(ckpt), {"steps": args.steps})


def main(argv: list[str] | None = None) -> Path | None:
    args = parse_args(argv)
    dist.init_process_group(backend="gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    x, y = synthetic_dataset(args.samples, args.features, args.seed)
    shard_x, shard_y = x[rank::world], y[rank::world]
    model = DistributedDataParallel(
        nn.Sequential(nn.Linear(args.features, 32), nn.ReLU(), nn.Linear(32, 1))
    )
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()
    gen = torch.Generator().manual_seed(args.seed + rank)

    print(f"worker {rank}/{world} ready", flush=True)
    if rank == 0:
        print(f"training on {world} workers, {args.steps} steps", flush=True)
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, shard_x.shape[0], (args.batch_size,), generator=gen)
        opt.zero_grad()
        loss = loss_fn(model(shard_x[idx]), shard_y[idx])
        loss.backward()
        opt.step()
        if rank == 0 and (step == 1 or step % max(1, args.steps // 10) == 0):
            print(f"step {step:5d}  loss {loss.item():.4f}", flush=True)
    hold(args.hold_file)

    ckpt: Path | None = None
    if rank == 0:
        ckpt = Path(args.output_dir).resolve() / app_id() / "model.pt"
        ckpt.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"model": model.module.state_dict(), "steps": args.steps}, ckpt)
        print(f"checkpoint saved to {ckpt}", flush=True)
        record(args, float(loss.item()), ckpt)
    dist.barrier()
    dist.destroy_process_group()
    return ckpt


if __name__ == "__main__":
    main()
