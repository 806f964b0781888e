#!/usr/bin/env bash
# The main job (`make run`): train examples/train.py with DDP, 1 node x 2 workers, through torchx on
# the local_cwd scheduler. Expects the project's venv bin on PATH (the Makefile sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
exec torchx run -s local_cwd dist.ddp -j 1x2 --script examples/train.py -- --steps 200 "$@"
