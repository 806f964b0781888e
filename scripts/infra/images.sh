#!/usr/bin/env bash
# Builds the local images the tests run (nothing can be pulled here), once; a second call is instant.
#   torchx-flow/busybox:latest   busybox from Debian's busybox-static (a few MB)
#   k8s.gcr.io/pause:3.2         the kubelet's pod sandbox image (a tiny static C program)
#   torchx-flow/python:3.11      Debian 12 (debootstrap minbase) with python3.11, the host's Python
#                                minor version, so the host venv's packages can be mounted and used
# The Debian root filesystem is cached as a tarball under $TORCHX_FLOW_CACHE/images, so a new
# engine data root re-imports it in seconds. Needs DOCKER_HOST (see docker-engine.sh).
set -euo pipefail
. "$(dirname "$0")/common.sh"
: "${DOCKER_HOST:?set DOCKER_HOST (scripts/infra/docker-engine.sh start)}"
export DOCKER_HOST
IMG=$CACHE/images
mkdir -p "$IMG"

have() { docker image inspect "$1" >/dev/null 2>&1; }

busybox_image() {
  have torchx-flow/busybox:latest && return 0
  apt_install busybox-static
  local w; w=$(mktemp -d)
  mkdir -p "$w/bin" "$w/tmp" "$w/etc" "$w/proc" "$w/sys" "$w/dev"
  cp /bin/busybox "$w/bin/busybox"
  for a in $("$w/bin/busybox" --list); do [ "$a" = busybox ] || ln -s busybox "$w/bin/$a"; done
  echo 'root:x:0:0:root:/root:/bin/sh' >"$w/etc/passwd"
  tar -C "$w" -c . | docker import -c 'ENV PATH=/bin' -c 'CMD ["sh"]' - torchx-flow/busybox:latest >/dev/null
  rm -rf "$w"
  log "built torchx-flow/busybox:latest"
}

pause_image() {
  have k8s.gcr.io/pause:3.2 && return 0
  local w; w=$(mktemp -d)
  cat >"$w/pause.c" <<'EOC'
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void on_term(int sig) { (void)sig; exit(0); }
static void on_child(int sig) { (void)sig; while (waitpid(-1, NULL, WNOHANG) > 0) {} }
int main(void) {
  struct sigaction term = {.sa_handler = on_term};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
  sigaction(SIGINT, &term, NULL);
  sigaction(SIGTERM, &term, NULL);
  sigaction(SIGCHLD, &child, NULL);
  for (;;) pause();
}
EOC
  mkdir -p "$w/root"
  gcc -Os -static -o "$w/root/pause" "$w/pause.c"
  tar -C "$w/root" -c . | docker import -c 'ENTRYPOINT ["/pause"]' - k8s.gcr.io/pause:3.2 >/dev/null
  rm -rf "$w"
  log "built k8s.gcr.io/pause:3.2"
}

python_image() {
  have torchx-flow/python:3.11 && return 0
  local tarball=$IMG/debian12-python311.tar
  if [ ! -s "$tarball" ]; then
    apt_install debootstrap
    local w mirror
    w=$(mktemp -d)
    mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    [ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list)
    log "debootstrap bookworm + python3 (about a minute)"
    debootstrap --variant=minbase --include=python3,python3-venv,procps bookworm "$w/root" "$mirror" >"$IMG/debootstrap.log" 2>&1
    rm -rf "$w/root/var/cache/apt/archives/"*.deb "$w/root/var/lib/apt/lists/"*
    tar -C "$w/root" -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    rm -rf "$w"
  fi
  docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'CMD ["python3"]' "$tarball" torchx-flow/python:3.11 >/dev/null
  log "built torchx-flow/python:3.11"
}

busybox_image
pause_image
[ "${WITH_PYTHON:-1}" = 0 ] || python_image
docker images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E 'torchx-flow|pause' >&2
