#!/usr/bin/env bash
# Builds Kubernetes v1.20.2 (kube-apiserver, controller-manager, scheduler, kubelet) once, from
# Debian bookworm's `kubernetes` source package with Debian's Go, into
# $TORCHX_FLOW_CACHE/k8s/bin. A second call is instant. About 6 minutes cold on 2 cores.
# Kubernetes 1.20 vendors reflect2 1.0.1, which crashes under Go >= 1.18 on the first
# custom-resource create ("fatal error: fault" in mapiterinit): Debian's reflect2 1.0.2 and
# json-iterator 1.1.12 replace the vendored copies before the build.
set -euo pipefail
. "$(dirname "$0")/common.sh"
WORK=$CACHE/k8s
OUT=$WORK/bin
BINS="kube-apiserver kube-controller-manager kube-scheduler kubelet"

done_already() { for b in $BINS; do [ -x "$OUT/$b" ] || return 1; done; }
if done_already; then echo "$OUT"; exit 0; fi
mkdir -p "$WORK" "$OUT"

if ! apt-cache showsrc kubernetes 2>/dev/null | grep -q '^Version: 1.20'; then
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list)
  cat >/etc/apt/sources.list.d/torchx-flow-k8s-src.sources <<EOS
Types: deb-src
URIs: $mirror
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
  apt-get update -qq >/dev/null
fi
apt_install golang-go rsync jq golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev

cd "$WORK"
ls kubernetes_*.orig.tar.gz >/dev/null 2>&1 || apt-get source --download-only kubernetes >/dev/null 2>&1
[ -d kubernetes-1.20.2 ] || tar xzf kubernetes_*.orig.tar.gz
cd kubernetes-1.20.2
vend=vendor/github.com
rm -rf "$vend/modern-go/reflect2" "$vend/json-iterator/go"
mkdir -p "$vend/modern-go/reflect2" "$vend/json-iterator/go"
cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.go \
  /usr/share/gocode/src/github.com/modern-go/reflect2/*.s "$vend/modern-go/reflect2/"
cp /usr/share/gocode/src/github.com/json-iterator/go/*.go "$vend/json-iterator/go/"
rm -f "$vend"/modern-go/reflect2/*_test.go "$vend"/json-iterator/go/*_test.go

what=""
for b in $BINS; do what="$what cmd/$b"; done
log "building$what (about 6 minutes cold)"
env HOME="$WORK/home" GOCACHE="$WORK/gocache" CGO_ENABLED=0 \
  KUBE_GIT_VERSION=v1.20.2 KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR=20 KUBE_GIT_TREE_STATE=clean \
  KUBE_GIT_COMMIT=faecb196815e248d3ecfb03c680a4507229c2a56 \
  make WHAT="${what# }" >"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log" >&2; exit 1; }
for b in $BINS; do cp "_output/bin/$b" "$OUT/"; done
echo "$OUT"
