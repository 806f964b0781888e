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
    cat - "$SRC"/*/overlay/*.go |
    cat - "$here/kfp-build.sh" | sha256sum | cut -c1-16
}

k=$(key)
if [ -f "$WORK/built-$k" ]; then echo "$OUT"; exit 0; fi
G=$(go_bin)
mkdir -p "$WORK" "$CACHE/go"
rm -rf "$OUT.new" && mkdir -p "$OUT.new"
export GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build GOTOOLCHAIN=local CGO_ENABLED=0 \
  GOFLAGS="-trimpath -mod=readonly" GOPATH=$CACHE/go/path

# with_files MODULE_DIR MODULE TARGET_PKG_DIR: builds of MODULE_DIR use a writable copy of MODULE
# (as the proxy serves it, unpacked under $WORK/src) with go/MODULE_DIR/overlay/*.go added to its
# package directory TARGET_PKG_DIR, through a generated go.mod (-modfile) that replaces MODULE by
# the copy; the committed go.mod stays as it is. (`go build -overlay` refuses files in GOMODCACHE.)
with_files() {
  local dir=$1 mod=$2 pkgdir=$3 from copy
  from=$(cd "$SRC/$dir" && "$G" list -m -f '{{.Dir}}' "$mod")
  copy=$WORK/src/$(basename "$from")
  rm -rf "$copy" && mkdir -p "$WORK/src" && cp -r "$from" "$copy" && chmod -R u+w "$copy"
  cp "$SRC/$dir"/overlay/*.go "$copy/$pkgdir/"
  cp "$SRC/$dir/go.mod" "$WORK/$dir.mod" && cp "$SRC/$dir/go.sum" "$WORK/$dir.sum"
  "$G" mod edit -replace="$mod=$copy" "$WORK/$dir.mod"
  MODFILE[$dir]=$WORK/$dir.mod
}
declare -A MODFILE=()

# build MODULE_DIR NAME PACKAGE [LDFLAGS]: one command into $OUT.new/NAME, timed in build.log.
build() {
  local dir=$1 name=$2 pkg=$3 ldflags=${4:-} t0
  t0=$(date +%s)
  log "building $name ($pkg)"
  (cd "$SRC/$dir" && nice -n 19 "$G" build ${MODFILE[$dir]:+-modfile="${MODFILE[$dir]}"} \
    -ldflags "-s -w $ldflags" -o "$OUT.new/$name" "$pkg") \
    >>"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log" >&2; exit 1; }
  echo "built $name in $(($(date +%s) - t0)) s" >>"$WORK/build.log"
}

: >"$WORK/build.log"
start=$(date +%s)
argo=github.com/argoproj/argo-workflows/v4
# Argo's Linux signal file is a symbolic link in its repository, absent from the module zip
with_files argo "$argo" workflow/executor/osspecific
build argo argoexec "$argo/cmd/argoexec" "-X $argo.version=v4.0.5"
build argo workflow-controller "$argo/cmd/workflow-controller" "-X $argo.version=v4.0.5"
build objstore weed github.com/seaweedfs/seaweedfs/weed
rm -rf "$OUT" && mv "$OUT.new" "$OUT"
rm -f "$WORK"/built-*
touch "$WORK/built-$k"
log "built in $(($(date +%s) - start)) s"
echo "$OUT"
