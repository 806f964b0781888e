#!/usr/bin/env bash
# Builds torchx-flow/torch:2.13.0, the image the KFP example pipelines name for every task: Python
# 3.11 (torchx-flow/python:3.11) with this project and the extras a task runs
# ([examples,kfp,kubernetes,workflow]: torch CPU, the KFP executor, the kubernetes client) in a
# venv on PATH, the examples at /opt/torchx-flow/examples (where pipelines/*.py point) and the
# pipelines at /opt/torchx-flow/pipelines (pipeline.yaml names its scripts as ../examples/...).
# Offline like compose-images.sh: `pip wheel` downloads the dependencies on the host into
# $TORCHX_FLOW_CACHE/torch-image/wheels (outside the checkout); the image installs them with
# --no-index. The image is labelled with a hash of its inputs (the requirements, the project's
# sources, examples/, pipelines/): a call whose inputs are unchanged returns at once; a code
# change rebuilds only the last layers. Needs DOCKER_HOST (docker-engine.sh) and torchx-flow/python:3.11 (images.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
: "${DOCKER_HOST:?set DOCKER_HOST (scripts/infra/docker-engine.sh start)}"
export DOCKER_HOST
REPO=$(cd "$here/../.." && pwd)
WORK=$CACHE/torch-image
IMAGE=torchx-flow/torch:2.13.0
EXTRAS=examples,kfp,kubernetes,workflow
LABEL=org.torchx-flow.inputs
. "$here/build-common.sh"
mkdir -p "$WORK"
exec 9>"$WORK/.lock"
flock 9

# fetch_wheels KEY: the dependencies as wheels, once per KEY
fetch_wheels() {
  local dir=$WORK/wheels pip
  [ -f "$dir/.key" ] && [ "$(cat "$dir/.key")" = "$1" ] && return 0
  pip=$(pip_cmd)
  log "downloading wheels into $dir (torch, kfp, kubernetes, this project's dependencies)"
  rm -rf "$dir" "$dir.tmp"
  $pip wheel --quiet -w "$dir.tmp" "$REPO[$EXTRAS]" >"$WORK/pip-wheel.log" 2>&1 ||
    { tail -n 20 "$WORK/pip-wheel.log" >&2; return 1; }
  rm -f "$dir.tmp"/torchx_flow-*.whl
  echo "$1" >"$dir.tmp/.key"
  mv "$dir.tmp" "$dir"
}

build() {
  local deps_key key ctx pip old
  deps_key=$(project_requirements "$EXTRAS" | sha)
  key=$( (echo "$deps_key"; cat "$0" "$here/build-common.sh"; files_hash core adapters examples pipelines) | sha)
  [ "$(label_of "$IMAGE")" = "$key" ] && return 0
  fetch_wheels "$deps_key"
  pip=$(pip_cmd)
  ctx=$WORK/context
  rm -rf "$ctx"
  mkdir -p "$ctx/deps" "$ctx/project"
  ln "$WORK"/wheels/*.whl "$ctx/deps/" 2>/dev/null || cp "$WORK"/wheels/*.whl "$ctx/deps/"
  cp -r "$REPO/examples" "$ctx/examples"
  cp -r "$REPO/pipelines" "$ctx/pipelines"
  find "$ctx/examples" "$ctx/pipelines" -name __pycache__ -prune -exec rm -rf {} +
  $pip wheel --quiet --no-deps -w "$ctx/project" "$REPO" >"$WORK/pip-wheel-project.log" 2>&1 ||
    { tail -n 20 "$WORK/pip-wheel-project.log" >&2; return 1; }
  cat >"$ctx/Dockerfile" <<'EOD'
FROM torchx-flow/python:3.11
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONUNBUFFERED=1
RUN python3 -m venv /opt/venv
COPY deps/ /tmp/wheels/
RUN pip install --quiet --no-index --no-deps --no-cache-dir /tmp/wheels/*.whl && rm -rf /tmp/wheels
COPY project/ /tmp/project/
RUN pip install --quiet --no-index --no-deps --no-cache-dir /tmp/project/*.whl && rm -rf /tmp/project
COPY examples/ /opt/torchx-flow/examples/
COPY pipelines/ /opt/torchx-flow/pipelines/
WORKDIR /tmp
EOD
  old=$(id_of "$IMAGE")
  log "building $IMAGE (offline install from $WORK/wheels)"
  docker build -q --label "$LABEL=$key" -t "$IMAGE" "$ctx" >"$WORK/build.log" 2>&1 ||
    { tail -n 20 "$WORK/build.log" >&2; return 1; }
  replaced "$IMAGE" "$old"
  rm -rf "$ctx"
}

docker image inspect torchx-flow/python:3.11 >/dev/null 2>&1 || "$here/images.sh"
build
