#!/usr/bin/env bash
# Runs the example pipeline (pipelines/pipeline.yaml: prepare data -> DDP training 1x2 -> evaluate)
# three ways, each ending with one summary line (steps, states, time, where the checkpoint is):
#   1. locally with `torchx pipeline run` (the torchx.workflow executor, local_cwd apps);
#   2. as the Airflow DAG dags/torchx_training.py under dag.test() (SQLite, throwaway home);
#   3. compiled for KFP (torchx_kfp.pipeline_from_workflow; the IR is kept) and run with kfp.local
#      (its executor output goes to $WORKDIR/kfp/kfp-local.log; one line per task is printed).
# Expects a venv with torchx-flow[workflow,airflow,kfp,examples] on PATH (the Makefile sets it).
# STEPS (default 30) sets the training steps; WORKDIR (default: a temp dir) holds data/checkpoints.
set -euo pipefail
cd "$(dirname "$0")/.."
steps="${STEPS:-30}"
work="${WORKDIR:-$(mktemp -d -t torchx-pipeline-XXXXXX)}"
mkdir -p "$work"
echo "== pipeline pipelines/pipeline.yaml, work dir $work"

echo "== 1/3 local: torchx pipeline run pipelines/pipeline.yaml"
torchx pipeline run pipelines/pipeline.yaml -p "steps=$steps" -p "workdir=$work/local"

echo "== 2/3 Airflow: dag.test() of dags/torchx_training.py"
python scripts/_pipeline_run.py airflow "$work/airflow" "$steps"

echo "== 3/3 KFP: compile, then run with kfp.local (SubprocessRunner, launcher tasks)"
python scripts/_pipeline_run.py kfp "$work/kfp" "$steps"
