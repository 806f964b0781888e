#!/usr/bin/env bash
# A Docker engine for the tests, on a private unix socket; reuses a reachable one.
#   docker-engine.sh start   start (or reuse) an engine; prints DOCKER_HOST=unix://...
#   docker-engine.sh stop    stop the engine this script started (containers, containerd and all)
#   docker-engine.sh env     prints DOCKER_HOST=... of a running engine, exit 1 if none
# An engine already reachable through $DOCKER_HOST (or the default socket) is used as it is and
# never stopped by this script. Ours: dockerd with data under $TORCHX_FLOW_CACHE/docker (images
# survive restarts) and a runc wrapper that clamps negative oom_score_adj to 0: these machines lack
# CAP_SYS_RESOURCE, and runc fails such containers (the kubelet's pod sandboxes use -998) with
# "can't get final child's PID from pipe: EOF".
set -euo pipefail
. "$(dirname "$0")/common.sh"
D=$RUN/docker
SOCK=$D/docker.sock
OURS=unix://$SOCK

ping() { DOCKER_HOST=$1 timeout 5 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

existing() {
  if [ -n "${DOCKER_HOST:-}" ] && [ "$DOCKER_HOST" != "$OURS" ] && ping "$DOCKER_HOST"; then
    echo "$DOCKER_HOST"; return 0
  fi
  if [ -S "$SOCK" ] && ping "$OURS"; then echo "$OURS"; return 0; fi
  if [ -z "${DOCKER_HOST:-}" ] && [ -S /var/run/docker.sock ] && ping unix:///var/run/docker.sock; then
    echo unix:///var/run/docker.sock; return 0
  fi
  return 1
}

write_runc_wrapper() {
  cat > "$D/runc-wrapper" <<'EOW'
#!/bin/bash
bundle=""; cmd=""; args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    create | run) [ -z "$cmd" ] && cmd="${args[$i]}" ;;
    --bundle | -b) bundle="${args[$((i + 1))]}" ;;
    --bundle=*) bundle="${args[$i]#--bundle=}" ;;
  esac
done
if [ -n "$cmd" ] && [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then
  tmp="$bundle/config.json.tmp.$$"
  jq -c '.process.oomScoreAdj |= (if . != null and . < 0 then 0 else . end)' \
    "$bundle/config.json" > "$tmp" && mv "$tmp" "$bundle/config.json"
fi
exec /usr/sbin/runc "$@"
EOW
  chmod +x "$D/runc-wrapper"
}

start() {
  local host
  if host=$(existing); then echo "DOCKER_HOST=$host"; return 0; fi
  apt_install docker.io jq
  mkdir -p "$D" "$CACHE/docker"
  stop_pidfile "$D/dockerd.pid"
  rm -f "$SOCK"
  write_runc_wrapper
  setsid nohup dockerd --host="$OURS" --data-root="$CACHE/docker/data" --exec-root="$D/exec" \
    --pidfile="$D/dockerd.pid.daemon" --storage-driver=overlay2 \
    --add-runtime nooomadj="$D/runc-wrapper" --default-runtime=nooomadj \
    --ip=127.0.0.1 </dev/null >"$D/dockerd.log" 2>&1 &
  echo $! >"$D/dockerd.pid"
  if ! wait_for 60 ping "$OURS"; then
    log "dockerd did not come up; last lines of $D/dockerd.log:"
    tail -n 15 "$D/dockerd.log" >&2
    stop_pidfile "$D/dockerd.pid"
    return 1
  fi
  echo "DOCKER_HOST=$OURS"
}

stop() {
  [ -f "$D/dockerd.pid" ] || return 0
  if ping "$OURS"; then
    local ids
    ids=$(DOCKER_HOST=$OURS docker ps -aq 2>/dev/null || true)
    [ -z "$ids" ] || DOCKER_HOST=$OURS docker rm -f $ids >/dev/null 2>&1 || true
  fi
  stop_pidfile "$D/dockerd.pid"
  # a container shim that outlived the engine, and the engine's mounts (its netns/default)
  pkill -f -- "-address $D/exec/containerd/" 2>/dev/null || true
  awk -v root="$D/exec/" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r |
    while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  rm -f "$D/dockerd.pid.daemon" "$SOCK"
  log "stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) host=$(existing) && echo "DOCKER_HOST=$host" ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
