#!/usr/bin/env bash
# A single-node Kubernetes 1.20 cluster on 127.0.0.1 for the `k8s` tests: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and a kubelet whose pods run on the local Docker engine.
#   k8s-cluster.sh start   start (or reuse) the cluster; prints KUBECONFIG=...
#   k8s-cluster.sh stop    stop it: every process it started, the pods' containers, kubelet mounts
#   k8s-cluster.sh env     prints KUBECONFIG=... of a running cluster with a Ready node, exit 1 if none
# State lives under $TORCHX_FLOW_RUN/k8s (kubeconfig, certificates, logs, pid files); each start
# begins with an empty etcd, so no Job of an earlier run comes back. The binaries come from
# k8s-build.sh (built once into $TORCHX_FLOW_CACHE/k8s/bin). The Volcano Job CRD is installed
# from the repo (core/torchx/schedulers/_kubernetes/crds/volcano-job.yaml); no Volcano controller
# runs (its image cannot be pulled), so Volcano Jobs stay as created unless a test drives .status.
# Everything listens on 127.0.0.1 only. Cluster DNS does not run (no image for it): pods reach each
# other by pod IP on the Docker bridge.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
D=$RUN/k8s
BIN=$CACHE/k8s/bin
KC=$D/kubeconfig
REPO=$(cd "$here/../.." && pwd)
CRDS=$REPO/core/torchx/schedulers/_kubernetes/crds
ETCD_PORT=${TORCHX_FLOW_K8S_ETCD_PORT:-12379}
API_PORT=${TORCHX_FLOW_K8S_API_PORT:-16443}
KUBELET_PORT=${TORCHX_FLOW_K8S_KUBELET_PORT:-10250}
COMPONENTS="kubelet kube-scheduler kube-controller-manager kube-apiserver etcd"  # stop order

token() { cut -d, -f1 "$D/tokens.csv"; }

# api PATH [curl args...]: an authenticated request to the API server (no kubectl needed).
api() {
  local path=$1; shift
  curl -sS -m 10 --cacert "$D/certs/apiserver.crt" -H "Authorization: Bearer $(token)" \
    "https://127.0.0.1:$API_PORT$path" "$@"
}

api_ready() { [ -f "$D/tokens.csv" ] && api /readyz -f >/dev/null 2>&1; }

node_ready() {
  api /api/v1/nodes/localhost -f 2>/dev/null |
    jq -e '.status.conditions[] | select(.type == "Ready") | .status == "True"' >/dev/null 2>&1
}

running() {
  local c
  for c in $COMPONENTS; do
    [ -f "$D/$c.pid" ] && kill -0 "$(cat "$D/$c.pid")" 2>/dev/null || return 1
  done
}

# spawn NAME CMD...: runs CMD in its own session, logging to $D/NAME.log, pid in $D/NAME.pid.
spawn() {
  local name=$1; shift
  setsid nohup "$@" </dev/null >"$D/$name.log" 2>&1 &
  echo $! >"$D/$name.pid"
}

write_credentials() {
  [ -f "$D/sa.key" ] || openssl genrsa -out "$D/sa.key" 2048 2>/dev/null
  openssl rsa -in "$D/sa.key" -pubout -out "$D/sa.pub" 2>/dev/null
  # a fresh random admin token per start; the kubeconfig is the only place that holds it
  echo "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'),admin,admin,system:masters" \
    >"$D/tokens.csv"
  chmod 600 "$D/tokens.csv" "$D/sa.key"
}

write_kubeconfig() (
  local ca
  ca=$(base64 -w0 "$D/certs/apiserver.crt")
  umask 077  # the kubeconfig holds the admin token (this function runs in a subshell)
  cat >"$KC.tmp" <<EOK
apiVersion: v1
kind: Config
clusters:
- name: torchx-flow-local
  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority-data: "$ca"}
users:
- name: admin
  user: {token: "$(token)"}
contexts:
- name: torchx-flow-local
  context: {cluster: torchx-flow-local, user: admin, namespace: default}
current-context: torchx-flow-local
EOK
  mv "$KC.tmp" "$KC"
)

start_etcd() {
  rm -rf "$D/etcd-data"
  spawn etcd etcd --name default --data-dir "$D/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "default=http://127.0.0.1:$((ETCD_PORT + 1))" \
    --listen-metrics-urls "http://127.0.0.1:$((ETCD_PORT + 2))"
}

start_apiserver() {
  # the apiserver writes a self-signed certificate for 127.0.0.1/localhost into --cert-dir;
  # the kubeconfig trusts exactly that certificate
  spawn kube-apiserver "$BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --cert-dir="$D/certs" --token-auth-file="$D/tokens.csv" --authorization-mode=RBAC \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$D/sa.pub" --service-account-signing-key-file="$D/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 --endpoint-reconciler-type=none \
    --disable-admission-plugins=ServiceAccount --profiling=false \
    --kubelet-preferred-address-types=Hostname
}

start_controllers() {
  spawn kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$KC" \
    --authentication-kubeconfig="$KC" --authorization-kubeconfig="$KC" \
    --bind-address=127.0.0.1 --port=0 --secure-port=0 --leader-elect=false \
    --service-account-private-key-file="$D/sa.key" --root-ca-file="$D/certs/apiserver.crt" \
    --controllers='*,-nodeipam,-service,-route,-cloud-node-lifecycle'
  spawn kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$KC" \
    --authentication-kubeconfig="$KC" --authorization-kubeconfig="$KC" \
    --bind-address=127.0.0.1 --port=0 --secure-port=0 --leader-elect=false
}

start_kubelet() {
  local sock=$1
  mkdir -p "$D/kubelet"
  spawn kubelet "$BIN/kubelet" --kubeconfig="$KC" --container-runtime=docker \
    --docker-endpoint="$sock" --root-dir="$D/kubelet" --cert-dir="$D/kubelet/pki" \
    --address=127.0.0.1 --port="$KUBELET_PORT" --read-only-port=0 \
    --healthz-bind-address=127.0.0.1 --healthz-port=0 --hostname-override=localhost \
    --cgroup-driver=cgroupfs --fail-swap-on=false --cgroups-per-qos=false \
    --enforce-node-allocatable= --anonymous-auth=true --authorization-mode=AlwaysAllow \
    --pod-infra-container-image=k8s.gcr.io/pause:3.2 --image-gc-high-threshold=100 \
    --image-gc-low-threshold=99 --eviction-hard= --resolv-conf= \
    --serialize-image-pulls=false --sync-frequency=10s
}

install_crds() {
  local f code
  for f in "$CRDS"/*.yaml; do
    [ -f "$f" ] || continue
    code=$(api /apis/apiextensions.k8s.io/v1/customresourcedefinitions -o /dev/null \
      -w '%{http_code}' -X POST -H 'Content-Type: application/yaml' --data-binary @"$f")
    case $code in
      201 | 409) ;;
      *) log "installing $(basename "$f") failed: HTTP $code"; return 1 ;;
    esac
  done
  wait_for 30 api /apis/batch.volcano.sh/v1alpha1 -f
}

fail() {
  log "$1; last lines of $D/$2.log:"
  tail -n 15 "$D/$2.log" >&2
  stop
  exit 1
}

start() {
  if running && api_ready && node_ready; then echo "KUBECONFIG=$KC"; return 0; fi
  stop
  apt_install etcd-server curl jq openssl
  # a cold machine builds the binaries first (about 6 minutes); a warm one reuses them
  flock "$CACHE/k8s-build.lock" "$here/k8s-build.sh" >/dev/null
  local dh
  dh=$("$here/docker-engine.sh" env) || { log "no Docker engine: run scripts/infra/up.sh"; exit 1; }
  DOCKER_HOST=${dh#DOCKER_HOST=} docker image inspect k8s.gcr.io/pause:3.2 >/dev/null 2>&1 ||
    DOCKER_HOST=${dh#DOCKER_HOST=} WITH_PYTHON=0 "$here/images.sh"
  mkdir -p "$D"
  write_credentials
  start_etcd
  start_apiserver
  wait_for 60 api_ready || fail "kube-apiserver did not become ready" kube-apiserver
  write_kubeconfig
  start_controllers
  start_kubelet "${dh#DOCKER_HOST=}"
  install_crds || fail "the Volcano Job CRD did not install" kube-apiserver
  wait_for 90 node_ready || fail "the kubelet's node did not become Ready" kubelet
  # the default service account must exist before pods can be created in the namespace
  wait_for 30 api /api/v1/namespaces/default/serviceaccounts/default -f ||
    fail "no default service account" kube-controller-manager
  log "ready ($D)"
  echo "KUBECONFIG=$KC"
}

# the kubelet's pod containers (dockershim names them k8s_*), found by its own label
remove_pod_containers() {
  local dh ids
  dh=$("$here/docker-engine.sh" env 2>/dev/null) || return 0
  ids=$(DOCKER_HOST=${dh#DOCKER_HOST=} docker ps -aq \
    --filter label=io.kubernetes.docker.type 2>/dev/null || true)
  [ -z "$ids" ] || DOCKER_HOST=${dh#DOCKER_HOST=} docker rm -f $ids >/dev/null 2>&1 || true
}

unmount_kubelet_dirs() {
  local m
  [ -d "$D/kubelet" ] || return 0
  # deepest first; the kubelet also bind-mounts its root directory onto itself (maybe repeatedly)
  local pass
  for pass in 1 2 3; do
    for m in $(awk -v d="$D/kubelet" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/mounts |
      sort -r); do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
  done
}

stop() {
  local c
  for c in $COMPONENTS; do
    stop_pidfile "$D/$c.pid"
    [ "$c" = kubelet ] && remove_pod_containers
  done
  unmount_kubelet_dirs
  rm -rf "$D/etcd-data"
}

case "${1:-}" in
  start) start ;;
  stop) stop; log "stopped" ;;
  env) running && api_ready && node_ready && echo "KUBECONFIG=$KC" ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
