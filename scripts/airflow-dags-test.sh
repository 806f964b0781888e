#!/usr/bin/env bash
# Runs the example training DAG (dags/torchx_training.py) with `airflow dags test` on a throwaway
# AIRFLOW_HOME with the embedded SQLite database: prepare data -> DDP training (1x2) -> evaluate,
# every step a TorchX app on the local_cwd scheduler. Expects a venv with torchx-flow[airflow]
# on PATH (the Makefile sets it). Extra arguments go to `airflow dags test` (e.g. -c '{"steps": 20}').
# Set KEEP_AIRFLOW_HOME=1 to keep the Airflow home (database and logs) for inspection.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

if ! python -c "import airflow.sdk" 2>/dev/null; then
    echo "airflow-dags-test: Apache Airflow is not installed; run: pip install -e '.[airflow]'" >&2
    exit 2
fi

home="$(mktemp -d -t torchx-airflow-XXXXXX)"
cleanup() { [ "${KEEP_AIRFLOW_HOME:-0}" = 1 ] && echo "Airflow home kept: $home" || rm -rf "$home"; }
trap cleanup EXIT

# The Airflow environment: isolated home, SQLite, only our dags/, loopback only.
eval "$(python - "$home" "$repo/dags" <<'PY'
import shlex, sys
from pathlib import Path
from torchx_airflow.local import airflow_env
for key, value in airflow_env(Path(sys.argv[1]), Path(sys.argv[2])).items():
    print(f"export {key}={shlex.quote(value)}")
PY
)"
export TORCHX_FLOW_PIPELINES="$repo/pipelines"

echo "== airflow db migrate (AIRFLOW_HOME=$home)"
airflow db migrate >/dev/null
echo "== airflow dags test torchx_training"
airflow dags test torchx_training "$@"
# `airflow dags test` exits 0 even when a task failed: check the run's final state.
state="$(python - "$home/airflow.db" <<'PY'
import sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute(
    "SELECT state FROM dag_run WHERE dag_id = 'torchx_training' ORDER BY id DESC LIMIT 1"
).fetchone()
print(row[0] if row else "none")
PY
)"
echo "== DAG run state: ${state:-unknown}"
[ "$state" = "success" ]
