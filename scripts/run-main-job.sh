#!/usr/bin/env bash
# The main job (`make run`): train examples/train.py with DDP, 1 node x 2 workers, through torchx on
# the local_cwd scheduler. Extra arguments go to the training script (default: --steps 200).
# Expects the project's venv bin on PATH (the Makefile sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -eq 0 ]; then
  set -- --steps 200
fi
exec torchx run -s local_cwd dist.ddp -j 1x2 --script examples/train.py -- "$@"
