#!/usr/bin/env bash
# System tools some tests use when present (CI installs them; a developer machine may skip this):
# docker-compose (Debian's 1.29) for the `config` check of docker-compose.yml.
set -euo pipefail
if command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
else
  echo "install-ci-deps: not root or no apt-get; the docker-compose config check will be skipped" >&2
fi
