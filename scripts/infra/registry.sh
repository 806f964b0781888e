#!/usr/bin/env bash
# A local image registry for the tests (image workspaces push to it), on 127.0.0.1 only.
#   registry.sh start   start (or reuse) it; prints TORCHX_FLOW_REGISTRY=127.0.0.1:5123
#   registry.sh stop    stop the registry this script started (no process is left behind)
#   registry.sh env     prints TORCHX_FLOW_REGISTRY=... of a running registry, exit 1 if none
# Debian's `docker-registry` (distribution 2.8) serves plain HTTP; the Docker engine treats
# 127.0.0.0/8 registries as insecure registries by default, so no engine flag is needed.
# Image data lives under $TORCHX_FLOW_CACHE/registry (kept across restarts); the port can be
# changed with TORCHX_FLOW_REGISTRY_PORT.
set -euo pipefail
. "$(dirname "$0")/common.sh"
R=$RUN/registry
DATA=$CACHE/registry
PORT=${TORCHX_FLOW_REGISTRY_PORT:-5123}
ADDR=127.0.0.1:$PORT

ping() {
  if command -v curl >/dev/null; then curl -fsS -m 3 "http://$ADDR/v2/" >/dev/null 2>&1
  else (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; fi
}

write_config() {
  cat >"$R/config.yml" <<EOC
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $DATA
  delete:
    enabled: true
http:
  addr: $ADDR
EOC
}

start() {
  if ping; then echo "TORCHX_FLOW_REGISTRY=$ADDR"; return 0; fi
  command -v docker-registry >/dev/null 2>&1 || apt_install docker-registry
  mkdir -p "$R" "$DATA"
  stop_pidfile "$R/registry.pid"
  write_config
  setsid nohup docker-registry serve "$R/config.yml" </dev/null >"$R/registry.log" 2>&1 &
  echo $! >"$R/registry.pid"
  if ! wait_for 20 ping; then
    log "docker-registry did not come up on $ADDR; last lines of $R/registry.log:"
    tail -n 15 "$R/registry.log" >&2
    stop_pidfile "$R/registry.pid"
    return 1
  fi
  echo "TORCHX_FLOW_REGISTRY=$ADDR"
}

stop() {
  [ -f "$R/registry.pid" ] || return 0
  stop_pidfile "$R/registry.pid"
  log "stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) ping && echo "TORCHX_FLOW_REGISTRY=$ADDR" ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
