#!/usr/bin/env bash
# Stops what up.sh started (and only that), leaving no process behind.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
started=${TORCHX_FLOW_STARTED:-$RUN/started}
[ -f "$started" ] || exit 0
grep -qx slurm "$started" && "$here/slurm.sh" stop
grep -qx k8s-current "$started" && "$here/k8s-current.sh" stop
grep -qx registry "$started" && "$here/registry.sh" stop
grep -qx docker "$started" && "$here/docker-engine.sh" stop
rm -f "$started"
