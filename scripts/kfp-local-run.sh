#!/usr/bin/env bash
# Compiles the example KFP pipeline (pipelines/torchx_training.py: prepare -> DDP train ->
# evaluate) and runs the compiled YAML with kfp.local: container steps under the DockerRunner
# when the local Docker engine is running (scripts/infra/up.sh; this script never starts or
# stops it, since other processes may share it), otherwise the launcher pipeline under the
# SubprocessRunner on local_cwd. kfp.local's executor output goes to <workdir>/kfp-local.log
# (the path is printed); the terminal gets one line per task and a summary line. Extra
# arguments go to scripts/kfp_local_run.py (--steps N, --workdir DIR). PYTHON: the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
if ! "$PYTHON" -c "import kfp, torchx_kfp" 2>/dev/null; then
  echo "kfp-local-run: the KFP SDK is not installed; run: pip install -e '.[kfp]'" >&2
  exit 2
fi
if [ -z "${DOCKER_HOST:-}" ] && engine=$(scripts/infra/docker-engine.sh env 2>/dev/null); then
  export "$engine"
fi
exec "$PYTHON" scripts/kfp_local_run.py "$@"
