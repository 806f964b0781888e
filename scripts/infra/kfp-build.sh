#!/usr/bin/env bash
# Builds the local KFP backend's Go commands once, from the Go modules that the project's own
# go.mod files under scripts/infra/go/ require, into $TORCHX_FLOW_CACHE/kfp/bin:
#   go/argo      workflow-controller argoexec   (Argo Workflows v4.0.5, the version KFP 2.17.0 pins)
#   go/objstore  weed                           (SeaweedFS, the object store KFP 2.17.0 deploys)
# The KFP backend's own commands (API server, persistence agent, driver, launcher) are NOT built:
# github.com/kubeflow/pipelines is not served by the Go module proxy here (403 "not available"
# for every version), see docs/kfp-backend.md.
# The build is keyed by a hash of those go.mod/go.sum/tools.go files and of this script: a change
# rebuilds, an unchanged tree returns at once (prints the bin directory). Module downloads and the
# Go build cache live under $TORCHX_FLOW_CACHE/go (shared with k8s-build-current.sh). Needs
# Go >= 1.26.6 (GO, or /usr/local/go/bin/go, or go on PATH); every build runs under `nice -n 19`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
SRC=$here/go
WORK=$CACHE/kfp
OUT=$WORK/bin
MODULES="argo objstore"

go_bin() {
  if [ -n "${GO:-}" ]; then echo "$GO"; return; fi
  if [ -x /usr/local/go/bin/go ]; then echo /usr/local/go/bin/go; return; fi
  command -v go || { log "no Go toolchain: install Go >= 1.26.6 or set GO"; exit 1; }
}

key() {
  local m
  for m in $MODULES; do cat "$SRC/$m/go.mod" "$SRC/$m/go.sum" "$SRC/$m/tools.go"; done |
    cat - "$here/kfp-build.sh" | sha256sum | cut -c1-16
}

k=$(key)
if [ -f "$WORK/built-$k" ]; then echo "$OUT"; exit 0; fi
G=$(go_bin)
mkdir -p "$WORK" "$CACHE/go"
rm -rf "$OUT.new" && mkdir -p "$OUT.new"
export GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build GOTOOLCHAIN=local CGO_ENABLED=0 \
  GOFLAGS="-trimpath -mod=readonly" GOPATH=$CACHE/go/path

# build MODULE_DIR NAME PACKAGE [LDFLAGS]: one command into $OUT.new/NAME, timed in build.log.
build() {
  local dir=$1 name=$2 pkg=$3 ldflags=${4:-} t0
  t0=$(date +%s)
  log "building $name ($pkg)"
  (cd "$SRC/$dir" && nice -n 19 "$G" build -ldflags "-s -w $ldflags" -o "$OUT.new/$name" "$pkg") \
    >>"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log" >&2; exit 1; }
  echo "built $name in $(($(date +%s) - t0)) s" >>"$WORK/build.log"
}

: >"$WORK/build.log"
start=$(date +%s)
argo=github.com/argoproj/argo-workflows/v4
build argo argoexec "$argo/cmd/argoexec" "-X $argo.version=v4.0.5"
build argo workflow-controller "$argo/cmd/workflow-controller" "-X $argo.version=v4.0.5"
build objstore weed github.com/seaweedfs/seaweedfs/weed
rm -rf "$OUT" && mv "$OUT.new" "$OUT"
rm -f "$WORK"/built-*
touch "$WORK/built-$k"
log "built in $(($(date +%s) - start)) s"
echo "$OUT"
