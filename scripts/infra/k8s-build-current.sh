#!/usr/bin/env bash
# Builds the current local cluster's commands once, from the Go modules that the project's own
# go.mod files under scripts/infra/go/ require, into $TORCHX_FLOW_CACHE/k8s-current/bin:
#   go/k8s      kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl
#               (Kubernetes v1.35.4) and etcd (etcd server v3.6.5, the one Kubernetes 1.35 pins)
#   go/coredns  coredns          go/kueue  kueue          go/jobset  jobset
# The build is keyed by a hash of those go.mod/go.sum/tools.go files and of BUILD_REV (bump it when
# the way of building changes): a change rebuilds, an unchanged tree returns at once (prints the bin
# directory). Concurrent calls wait for one build ($WORK/build.lock). Module downloads and the Go build
# cache live under $TORCHX_FLOW_CACHE/go, outside the checkout. Needs Go >= 1.25 (GO, or
# /usr/local/go/bin/go, or go on PATH) and the Go module proxy; runs under `nice -n 15`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
SRC=$here/go
WORK=$CACHE/k8s-current
OUT=$WORK/bin
K8S_VERSION=v1.35.4
BUILD_REV=1

go_bin() {
  if [ -n "${GO:-}" ]; then echo "$GO"; return; fi
  if [ -x /usr/local/go/bin/go ]; then echo /usr/local/go/bin/go; return; fi
  command -v go || { log "no Go toolchain: install Go >= 1.25 or set GO"; exit 1; }
}

key() {
  { (cd "$SRC" && cat ./*/go.mod ./*/go.sum ./*/tools.go); echo "$K8S_VERSION $BUILD_REV"; } |
    sha256sum | cut -c1-16
}

k=$(key)
if [ -f "$WORK/built-$k" ]; then echo "$OUT"; exit 0; fi
mkdir -p "$WORK" "$CACHE/go"
exec 9>"$WORK/build.lock"
flock 9
if [ -f "$WORK/built-$k" ]; then echo "$OUT"; exit 0; fi  # built while we waited
G=$(go_bin)
rm -rf "$OUT.new" && mkdir -p "$OUT.new"
export GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build GOTOOLCHAIN=local CGO_ENABLED=0 \
  GOFLAGS="-trimpath -mod=readonly" GOPATH=$CACHE/go/path

# build MODULE_DIR NAME PACKAGE [LDFLAGS]: one command into $OUT.new/NAME.
build() {
  local dir=$1 name=$2 pkg=$3 ldflags=${4:-}
  log "building $name ($pkg)"
  (cd "$SRC/$dir" && nice -n 15 "$G" build -ldflags "-s -w $ldflags" -o "$OUT.new/$name" "$pkg") \
    >>"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log" >&2; exit 1; }
}

# the version the components report (kubectl version, the node's kubelet version, /version)
minor=${K8S_VERSION#v1.}
minor=${minor%%.*}
vflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  vflags="$vflags -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
  vflags="$vflags -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

: >"$WORK/build.log"
start=$(date +%s)
for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
  build k8s "$c" "k8s.io/kubernetes/cmd/$c" "$vflags"
done
build k8s etcd go.etcd.io/etcd/server/v3
build coredns coredns github.com/coredns/coredns
build kueue kueue sigs.k8s.io/kueue/cmd/kueue
build jobset jobset sigs.k8s.io/jobset
rm -rf "$OUT" && mv "$OUT.new" "$OUT"
rm -f "$WORK"/built-*
touch "$WORK/built-$k"
log "built in $(($(date +%s) - start)) s"
echo "$OUT"
