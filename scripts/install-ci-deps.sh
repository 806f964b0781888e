#!/usr/bin/env bash
# System tools the tests use beyond the venv: Debian's docker-compose (1.29), which the compose
# tests drive (tests/dags/test_dags_compose*.py). `make test` and .ci/run call this first; it is
# a no-op once docker-compose is on PATH. Installing needs root (or password-less sudo) and
# apt-get; without them it says so, and the compose tests are skipped (a failure under CI=true).
set -euo pipefail
if command -v docker-compose >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "install-ci-deps: docker-compose is missing and installing it needs root;" \
    "the compose tests will be skipped (run: apt-get install docker-compose)" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-ci-deps: docker-compose is missing and there is no apt-get;" \
    "the compose tests will be skipped (install docker-compose 1.29)" >&2
  exit 0
fi
echo "install-ci-deps: installing docker-compose (apt-get)"
"${sudo[@]}" apt-get update -qq >/dev/null
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
