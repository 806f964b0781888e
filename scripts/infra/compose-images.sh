#!/usr/bin/env bash
# Builds the images docker-compose.yml runs, locally (nothing can be pulled here):
#   torchx-flow/postgres:15     Debian 12's postgresql-15 on torchx-flow/python:3.11
#   torchx-flow/airflow:3.3.2   Airflow 3.3.2 + this project ([airflow,examples]) in a venv on
#                               torchx-flow/python:3.11, installed offline from wheels that
#                               `pip wheel` downloads on the host into
#                               $TORCHX_FLOW_CACHE/compose/wheels (outside the checkout)
# Each image is labelled with a hash of its inputs (Dockerfile, the requirements it installs from
# pyproject.toml, the project's sources); a call whose inputs are unchanged returns at once. A
# code change rebuilds only the project's wheel and the image's last layer. Needs DOCKER_HOST
# (docker-engine.sh) and torchx-flow/python:3.11 (images.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
: "${DOCKER_HOST:?set DOCKER_HOST (scripts/infra/docker-engine.sh start)}"
export DOCKER_HOST
REPO=$(cd "$here/../.." && pwd)
WORK=$CACHE/compose
LABEL=org.torchx-flow.inputs
EXTRA_WHEELS="psycopg2-binary asyncpg"   # Postgres drivers of the metadata DB (sync and async)
mkdir -p "$WORK"
# one build at a time per cache dir (several checkouts may share it)
exec 9>"$WORK/.lock"
flock 9

sha() { sha256sum | cut -c1-16; }
# replaced IMAGE OLD_ID: removes this script's previous build of IMAGE (now untagged), if unused
replaced() { local new; new=$(docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true)
  [ -z "$2" ] || [ "$2" = "$new" ] || docker rmi "$2" >/dev/null 2>&1 || true; }
id_of() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true; }
label_of() { docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$1" 2>/dev/null || true; }
files_hash() { (cd "$REPO" && find "$@" -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 |
  sort -z | xargs -0 sha256sum) | sha; }

pip_cmd() {
  if python3 -m pip --version >/dev/null 2>&1; then echo "python3 -m pip"
  elif [ -x "$REPO/.venv/bin/python" ]; then echo "$REPO/.venv/bin/python -m pip"
  else log "no pip: install python3-pip or run \`make venv\` first"; return 1; fi
}

postgres_image() {
  local key; key=$(files_hash compose/postgres)
  [ "$(label_of torchx-flow/postgres:15)" = "$key" ] && return 0
  local old; old=$(id_of torchx-flow/postgres:15)
  log "building torchx-flow/postgres:15 (Debian's postgresql-15)"
  docker build -q --label "$LABEL=$key" -t torchx-flow/postgres:15 "$REPO/compose/postgres" \
    >"$WORK/build-postgres.log" 2>&1 || { tail -n 20 "$WORK/build-postgres.log" >&2; return 1; }
  replaced torchx-flow/postgres:15 "$old"
}

# fetch_wheels KEY: Airflow, this project's dependencies and the Postgres drivers as wheels, once
# per KEY (pyproject.toml changed: fetched again; pip's own cache keeps that quick).
fetch_wheels() {
  local key=$1 dir=$WORK/wheels pip
  [ -f "$dir/.key" ] && [ "$(cat "$dir/.key")" = "$1" ] && return 0
  pip=$(pip_cmd)
  log "downloading wheels into $dir (Airflow 3.3.2, torch, this project's dependencies)"
  rm -rf "$dir" "$dir.tmp"
  # shellcheck disable=SC2086
  $pip wheel --quiet -w "$dir.tmp" "$REPO[airflow,examples]" $EXTRA_WHEELS >"$WORK/pip-wheel.log" 2>&1 ||
    { tail -n 20 "$WORK/pip-wheel.log" >&2; return 1; }
  rm -f "$dir.tmp"/torchx_flow-*.whl
  echo "$key" >"$dir.tmp/.key"
  mv "$dir.tmp" "$dir"
}

# image_requirements: what the image installs from pyproject.toml (the base dependencies and the
# airflow and examples extras), so edits elsewhere in pyproject.toml do not refetch the wheels
image_requirements() {
  python3 - "$REPO/pyproject.toml" <<'EOP'
import json, sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
extras = project.get("optional-dependencies", {})
print(json.dumps([project.get("dependencies"), extras.get("airflow"), extras.get("examples")]))
EOP
}

airflow_image() {
  local key deps_key ctx pip
  deps_key=$( (image_requirements; echo "$EXTRA_WHEELS") | sha)
  key=$( (echo "$deps_key"; files_hash compose/airflow core adapters) | sha)
  [ "$(label_of torchx-flow/airflow:3.3.2)" = "$key" ] && return 0
  fetch_wheels "$deps_key"
  pip=$(pip_cmd)
  ctx=$WORK/context
  rm -rf "$ctx"
  mkdir -p "$ctx/deps" "$ctx/project"
  cp "$REPO/compose/airflow/job-alive.py" "$ctx/"
  ln "$WORK"/wheels/*.whl "$ctx/deps/" 2>/dev/null || cp "$WORK"/wheels/*.whl "$ctx/deps/"
  $pip wheel --quiet --no-deps -w "$ctx/project" "$REPO" >"$WORK/pip-wheel-project.log" 2>&1 ||
    { tail -n 20 "$WORK/pip-wheel-project.log" >&2; return 1; }
  local old; old=$(id_of torchx-flow/airflow:3.3.2)
  log "building torchx-flow/airflow:3.3.2 (offline install from $WORK/wheels)"
  docker build -q --label "$LABEL=$key" -t torchx-flow/airflow:3.3.2 \
    -f "$REPO/compose/airflow/Dockerfile" "$ctx" >"$WORK/build-airflow.log" 2>&1 ||
    { tail -n 20 "$WORK/build-airflow.log" >&2; return 1; }
  replaced torchx-flow/airflow:3.3.2 "$old"
  rm -rf "$ctx"
}

docker image inspect torchx-flow/python:3.11 >/dev/null 2>&1 || "$here/images.sh"
# the two builds overlap: Postgres mostly waits on apt downloads, Airflow on pip and disk
postgres_image &
pg=$!
airflow_image
wait "$pg"
