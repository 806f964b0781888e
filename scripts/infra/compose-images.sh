#!/usr/bin/env bash
# Builds the images docker-compose.yml and docker-compose.celery.yml run, locally (nothing can be
# pulled here):
#   torchx-flow/postgres:15     Debian 12's postgresql-15 on torchx-flow/python:3.11
#   torchx-flow/redis:7         Debian 12's redis-server (the Celery broker) on the same base
#   torchx-flow/airflow:3.3.2   Airflow 3.3.2 with its celery extra + this project
#                               ([airflow,examples,kubernetes]) in a venv on
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
# Postgres drivers of the metadata DB (sync and async); the CeleryExecutor (celery provider, celery,
# the redis client) at the Airflow version the project pins. celery 5.7 dropped
# celery.backends.database.retry, which the celery provider (3.26) imports: celery < 5.7. The
# image's Python is Debian's 3.11.2, where the redis client needs async-timeout (a marker on the
# full Python version, which a newer host Python would skip).
EXTRA_WHEELS=(psycopg2-binary asyncpg "apache-airflow[celery]==3.3.2" "celery<5.7" async-timeout)
PROJECT_EXTRAS="airflow,examples,kubernetes"
. "$here/build-common.sh"
mkdir -p "$WORK"
# one build at a time per cache dir (several checkouts may share it)
exec 9>"$WORK/.lock"
flock 9

# debian_image NAME TAG WHAT: builds torchx-flow/NAME:TAG from compose/NAME (Debian packages)
debian_image() {
  local image=torchx-flow/$1:$2 key; key=$(files_hash "compose/$1")
  [ "$(label_of "$image")" = "$key" ] && return 0
  local old; old=$(id_of "$image")
  log "building $image ($3)"
  docker build -q --label "$LABEL=$key" -t "$image" "$REPO/compose/$1" \
    >"$WORK/build-$1.log" 2>&1 || { tail -n 20 "$WORK/build-$1.log" >&2; return 1; }
  replaced "$image" "$old"
}

postgres_image() { debian_image postgres 15 "Debian's postgresql-15"; }
redis_image() { debian_image redis 7 "Debian's redis-server"; }

# fetch_wheels KEY: Airflow, this project's dependencies and the Postgres drivers as wheels, once
# per KEY (pyproject.toml changed: fetched again; pip's own cache keeps that quick).
fetch_wheels() {
  local key=$1 dir=$WORK/wheels pip
  [ -f "$dir/.key" ] && [ "$(cat "$dir/.key")" = "$1" ] && return 0
  pip=$(pip_cmd)
  log "downloading wheels into $dir (Airflow 3.3.2 + celery, torch, this project's dependencies)"
  rm -rf "$dir" "$dir.tmp"
  $pip wheel --quiet -w "$dir.tmp" "$REPO[$PROJECT_EXTRAS]" "${EXTRA_WHEELS[@]}" \
    >"$WORK/pip-wheel.log" 2>&1 ||
    { tail -n 20 "$WORK/pip-wheel.log" >&2; return 1; }
  rm -f "$dir.tmp"/torchx_flow-*.whl
  echo "$key" >"$dir.tmp/.key"
  mv "$dir.tmp" "$dir"
}

airflow_image() {
  local key deps_key ctx pip
  deps_key=$( (project_requirements "$PROJECT_EXTRAS"; echo "${EXTRA_WHEELS[*]}") | sha)
  key=$( (echo "$deps_key"; files_hash compose/airflow core adapters) | sha)
  [ "$(label_of torchx-flow/airflow:3.3.2)" = "$key" ] && return 0
  fetch_wheels "$deps_key"
  pip=$(pip_cmd)
  ctx=$WORK/context
  rm -rf "$ctx"
  mkdir -p "$ctx/deps" "$ctx/project"
  cp "$REPO/compose/airflow/job-alive.py" "$REPO/compose/airflow/worker-alive.py" "$ctx/"
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
# the builds overlap: Postgres and Redis mostly wait on apt downloads, Airflow on pip and disk
(postgres_image && redis_image) &
debian=$!
airflow_image
wait "$debian"
