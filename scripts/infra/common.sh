# Shared settings of the local-infrastructure scripts (sourced, not run).
# Everything they build or start lives outside the checkout, so a fresh clone reuses it:
#   TORCHX_FLOW_CACHE  (default ~/.cache/torchx-flow)  builds, image tarballs, Docker data
#   TORCHX_FLOW_RUN    (default $TORCHX_FLOW_CACHE/run) sockets, pid files, logs of running services
CACHE=${TORCHX_FLOW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/torchx-flow}
RUN=${TORCHX_FLOW_RUN:-$CACHE/run}
mkdir -p "$CACHE" "$RUN"

log() { echo "[$(basename "$0")] $*" >&2; }

# apt_install PKG...: installs missing Debian packages (root with apt only), quietly.
apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "missing Debian packages: ${missing[*]} (not root or no apt-get: install them first)"
    return 1
  fi
  log "installing ${missing[*]}"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -o DPkg::Lock::Timeout=300 -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    apt-get update -o DPkg::Lock::Timeout=300 -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -o DPkg::Lock::Timeout=300 -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# wait_for SECONDS CMD...: polls CMD every 0.25 s until it succeeds; fails after SECONDS.
wait_for() {
  local n=$(( $1 * 4 )); shift
  for _ in $(seq 1 "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  return 1
}

# stop_pidfile FILE: SIGTERM the pid in FILE, wait up to 10 s, then SIGKILL; removes FILE.
stop_pidfile() {
  local f=$1 p
  [ -f "$f" ] || return 0
  p=$(cat "$f")
  if kill -0 "$p" 2>/dev/null; then
    kill "$p" 2>/dev/null || true
    wait_for 10 bash -c "! kill -0 $p" || kill -9 "$p" 2>/dev/null || true
  fi
  rm -f "$f"
}
