#!/usr/bin/env bash
# Runs a command (the test suite) with the local infrastructure up: up.sh before, down.sh after
# (also on failure or Ctrl-C). Outside CI a part that cannot start is reported and its tests skip;
# in CI (CI=true) it is an error, since CI must run every `docker` and `k8s` test.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# this run's own record of what up.sh started: down.sh then stops only that, never an engine that
# another run (or another user of the shared cache dir) started and still uses
TORCHX_FLOW_STARTED=$(mktemp "${TMPDIR:-/tmp}/torchx-flow-started.XXXXXX")
export TORCHX_FLOW_STARTED
trap '"$here/down.sh"; rm -f "$TORCHX_FLOW_STARTED"' EXIT
if env_lines=$("$here/up.sh"); then
  :
elif [ "${CI:-}" = true ]; then
  echo "with-infra: local infrastructure failed to start (see above); CI needs it" >&2
  exit 1
else
  echo "with-infra: some local infrastructure did not start; its tests will skip with the reason" >&2
fi
while IFS= read -r line; do [ -n "$line" ] && export "$line"; done <<<"$env_lines"
"$@"
