#!/usr/bin/env bash
# A single-node Kubernetes 1.35 cluster on 127.0.0.1 with cluster DNS, kube-proxy, Kueue, JobSet and
# the Volcano Job CRD (see docs/kubernetes-cluster.md): the cluster of every live Kubernetes test.
#   k8s-current.sh start          start (or reuse) the cluster; prints KUBECONFIG=...
#   k8s-current.sh stop           stop it: every process it started, the pods' containers and
#                                 sandboxes, kubelet mounts, the pod bridge, kube-proxy's rules
#   k8s-current.sh env            prints KUBECONFIG=... of a running cluster with a Ready node
#   k8s-current.sh load IMAGE...  copies images from the project's Docker engine into the
#                                 cluster's containerd (pods see only images loaded this way)
# Binaries come from k8s-build-current.sh ($TORCHX_FLOW_CACHE/k8s-current/bin, built once).
# State lives under $TORCHX_FLOW_RUN/k8s-current; each start begins with an empty etcd. Pods run
# through Debian's containerd (its own socket and state) on a CNI bridge (10.88.0.0/16); Services
# get 10.96.0.0/16 (kube-proxy, iptables mode); CoreDNS serves cluster.local to the pods on the
# bridge's gateway address 10.88.0.1. The control plane listens on 127.0.0.1 only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
D=$RUN/k8s-current
BIN=$CACHE/k8s-current/bin
KC=$D/kubeconfig
CTRD_ROOT=$CACHE/k8s-current/containerd  # images survive a stop
ETCD_PORT=${TORCHX_FLOW_K8S_CURRENT_ETCD_PORT:-22379}
API_PORT=${TORCHX_FLOW_K8S_CURRENT_API_PORT:-26443}
KUBELET_PORT=${TORCHX_FLOW_K8S_CURRENT_KUBELET_PORT:-20250}
PROXY_PORT=${TORCHX_FLOW_K8S_CURRENT_PROXY_PORT:-20256}  # kube-proxy healthz; metrics on +1
BRIDGE=tfcur0
POD_CIDR=10.88.0.0/16
GATEWAY=10.88.0.1
SERVICE_CIDR=10.96.0.0/16
PAUSE=k8s.gcr.io/pause:3.2
MARK=(-m comment --comment torchx-flow-current)  # on the iptables rules this script adds
# stop order: these groups one after the other, each group's members at once
STOP_FIRST="jobset kueue coredns kube-proxy kubelet kube-scheduler kube-controller-manager"
STOP_THEN="kube-apiserver etcd"
CORE="containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy coredns"
export D BIN KC API_PORT

kubectl() { "$BIN/kubectl" --kubeconfig="$KC" "$@"; }
ctr_() { ctr --address "$D/containerd.sock" --namespace k8s.io "$@"; }

api_ready() { [ -f "$KC" ] && kubectl get --raw /readyz >/dev/null 2>&1; }

node_ready() {
  [ "$(kubectl get node localhost -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' \
    2>/dev/null)" = True ]
}

running() {
  local c
  for c in $CORE $(cat "$D/addons" 2>/dev/null || true); do
    [ -f "$D/$c.pid" ] && kill -0 "$(cat "$D/$c.pid")" 2>/dev/null || return 1
  done
}

# spawn NAME CMD...: runs CMD in its own session, logging to $D/NAME.log, pid in $D/NAME.pid.
spawn() {
  local name=$1; shift
  setsid nohup "$@" </dev/null >"$D/$name.log" 2>&1 8>&- &
  echo $! >"$D/$name.pid"
}

# one start or stop at a time: several test runs may call this script at once
lock() {
  exec 8>"$RUN/k8s-current.lock"
  flock 8
}

write_credentials() (
  umask 077
  [ -f "$D/sa.key" ] || openssl genrsa -out "$D/sa.key" 2048 2>/dev/null
  openssl rsa -in "$D/sa.key" -pubout -out "$D/sa.pub" 2>/dev/null
  # a fresh random admin token per start; the kubeconfig is the only other place that holds it
  echo "$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'),admin,admin,system:masters" \
    >"$D/tokens.csv"
)

write_kubeconfig() (
  local ca tok
  ca=$(base64 -w0 "$D/certs/apiserver.crt")
  tok=$(cut -d, -f1 "$D/tokens.csv")
  umask 077
  cat >"$KC.tmp" <<EOK
apiVersion: v1
kind: Config
clusters:
- name: torchx-flow-current
  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority-data: "$ca"}
users:
- name: admin
  user: {token: "$tok"}
contexts:
- name: torchx-flow-current
  context: {cluster: torchx-flow-current, user: admin, namespace: default}
current-context: torchx-flow-current
EOK
  mv "$KC.tmp" "$KC"
)

start_containerd() {
  mkdir -p "$D/net.d" "$CTRD_ROOT"
  cat >"$D/containerd.toml" <<EOC
version = 2
root = "$CTRD_ROOT"
state = "$D/containerd-state"
oom_score = 0
[grpc]
  address = "$D/containerd.sock"
[ttrpc]
  address = "$D/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$D/net.d"
EOC
  cat >"$D/net.d/10-torchx-flow.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "torchx-flow-current", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$D/cni-ipam",
            "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$GATEWAY"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
  # the bridge exists before the first pod, so CoreDNS can listen on its address
  ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
  ip addr replace "$GATEWAY/16" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  # Docker sets the FORWARD policy to DROP: let the pods' traffic through (bridged and routed)
  local dir
  for dir in -i -o; do
    iptables -C FORWARD $dir "$BRIDGE" "${MARK[@]}" -j ACCEPT 2>/dev/null ||
      iptables -I FORWARD $dir "$BRIDGE" "${MARK[@]}" -j ACCEPT
  done
  spawn containerd containerd --config "$D/containerd.toml"
}

start_etcd() {
  rm -rf "$D/etcd-data"
  spawn etcd "$BIN/etcd" --name default --data-dir "$D/etcd-data" \
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
    --service-cluster-ip-range="$SERVICE_CIDR" --endpoint-reconciler-type=none \
    --profiling=false --kubelet-preferred-address-types=Hostname
}

start_controllers() {
  spawn kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$KC" \
    --authentication-kubeconfig="$KC" --authorization-kubeconfig="$KC" \
    --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false \
    --service-account-private-key-file="$D/sa.key" --root-ca-file="$D/certs/apiserver.crt" \
    --controllers='*,-node-ipam-controller,-service-lb-controller,-node-route-controller,-cloud-node-lifecycle-controller'
  spawn kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$KC" \
    --authentication-kubeconfig="$KC" --authorization-kubeconfig="$KC" \
    --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false
}

start_kubelet() {
  mkdir -p "$D/kubelet" "$D/pod-logs"
  cat >"$D/kubelet.yaml" <<EOK
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzPort: 0
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://$D/containerd.sock
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
clusterDNS: [$GATEWAY]
clusterDomain: cluster.local
resolvConf: ""
podLogsDir: $D/pod-logs
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "0%", nodefs.available: "0%", imagefs.available: "0%"}
serializeImagePulls: false
syncFrequency: 10s
EOK
  spawn kubelet "$BIN/kubelet" --kubeconfig="$KC" --config="$D/kubelet.yaml" \
    --root-dir="$D/kubelet" --cert-dir="$D/kubelet/pki" --hostname-override=localhost \
    --node-ip="$GATEWAY"
}

start_proxy() {
  spawn kube-proxy "$BIN/kube-proxy" --kubeconfig="$KC" --hostname-override=localhost \
    --proxy-mode=iptables --cluster-cidr="$POD_CIDR" --conntrack-max-per-core=0 \
    --iptables-localhost-nodeports=false --bind-address=127.0.0.1 \
    --healthz-bind-address="127.0.0.1:$PROXY_PORT" \
    --metrics-bind-address="127.0.0.1:$((PROXY_PORT + 1))"
}

start_coredns() {
  cat >"$D/Corefile" <<EOC
cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
  bind $GATEWAY
  errors
  kubernetes cluster.local in-addr.arpa ip6.arpa {
    kubeconfig $KC torchx-flow-current
    pods insecure
    ttl 5
  }
  cache 5
}
# every other name: NXDOMAIN (no upstream here), so resolvers go on through their search list
.:53 {
  bind $GATEWAY
  template ANY ANY {
    rcode NXDOMAIN
  }
}
EOC
  spawn coredns "$BIN/coredns" -conf "$D/Corefile"
}

fail() {
  log "$1; last lines of $D/$2.log:"
  tail -n 15 "$D/$2.log" >&2
  stop
  exit 1
}

# load IMAGE...: docker save from the project's engine | import into the cluster's containerd.
load_images() {
  local dh img
  ctr_ version >/dev/null 2>&1 || { log "the cluster is not running: $0 start"; return 1; }
  dh=$("$here/docker-engine.sh" env) || { log "no Docker engine: run scripts/infra/up.sh"; return 1; }
  for img in "$@"; do
    DOCKER_HOST=${dh#DOCKER_HOST=} docker save "$img" | ctr_ images import - >/dev/null ||
      { log "could not load $img"; return 1; }
  done
}

has_image() { [ -n "$(ctr_ images ls -q "name==$1" "name==docker.io/$1" 2>/dev/null)" ]; }

# the images every live test may run (tests/_k8s_live.py IMAGE, the busybox apps) and the pod
# sandbox's: built in the project's engine if missing (images.sh), loaded once into containerd
BASE_IMAGES=("$PAUSE" torchx-flow/busybox:latest torchx-flow/python:3.11)

ensure_images() {
  local dh img
  dh=$("$here/docker-engine.sh" env) || { log "no Docker engine: run scripts/infra/up.sh"; exit 1; }
  DOCKER_HOST=${dh#DOCKER_HOST=} docker image inspect "${BASE_IMAGES[@]}" >/dev/null 2>&1 ||
    DOCKER_HOST=${dh#DOCKER_HOST=} "$here/images.sh"
  for img in "${BASE_IMAGES[@]}"; do
    has_image "$img" || load_images "$img"
  done
}

start() {
  if running && api_ready && node_ready; then echo "KUBECONFIG=$KC"; return 0; fi
  stop
  apt_install containerd containernetworking-plugins iptables conntrack curl jq openssl
  "$here/k8s-build-current.sh" >/dev/null  # once (it locks against concurrent builds)
  mkdir -p "$D"
  start_containerd
  wait_for 30 ctr_ version || fail "containerd did not start" containerd
  ensure_images
  write_credentials
  start_etcd
  start_apiserver
  wait_for 60 test -f "$D/certs/apiserver.crt" || fail "kube-apiserver wrote no certificate" kube-apiserver
  write_kubeconfig
  wait_for 60 api_ready || fail "kube-apiserver did not become ready" kube-apiserver
  start_controllers
  start_kubelet
  start_proxy
  start_coredns
  wait_for 90 node_ready || fail "the kubelet's node did not become Ready" kubelet
  # the default service account must exist before pods can be created in the namespace
  wait_for 30 kubectl get serviceaccount default || fail "no default service account" kube-controller-manager
  "$here/k8s-current-addons.sh" start || { stop; exit 1; }
  log "ready ($D)"
  echo "KUBECONFIG=$KC"
}

# the pods' sandboxes and containers, through the CRI (containerd must still run)
remove_pods() {
  [ -S "$D/containerd.sock" ] && [ -f "$D/containerd.pid" ] || return 0
  kill -0 "$(cat "$D/containerd.pid")" 2>/dev/null || return 0
  local ids
  ids=$(ctr_ tasks ls -q 2>/dev/null || true)
  for id in $ids; do ctr_ tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
  for id in $ids; do
    wait_for 10 bash -c "! ctr --address '$D/containerd.sock' -n k8s.io tasks ls -q | grep -qx '$id'" || true
    ctr_ tasks delete -f "$id" >/dev/null 2>&1 || true
  done
  ids=$(ctr_ containers ls -q 2>/dev/null || true)
  [ -z "$ids" ] || ctr_ containers delete $ids >/dev/null 2>&1 || true
}

unmount_under() {
  local dir=$1 m pass
  for pass in 1 2 3; do
    for m in $(awk -v d="$dir" '$2 == d || index($2, d "/") == 1 {print $2}' /proc/mounts | sort -r); do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
  done
}

# the rules kube-proxy and the CNI bridge plugin left in the host's iptables
clean_network() {
  [ -x "$BIN/kube-proxy" ] && [ -f "$D/kube-proxy.log" ] &&
    "$BIN/kube-proxy" --cleanup --proxy-mode=iptables >/dev/null 2>&1 || true
  local c dir
  for c in $(iptables -t nat -S POSTROUTING 2>/dev/null | awk '/torchx-flow-current/ && /-j CNI-/ {
      for (i = 1; i <= NF; i++) if ($i == "-j") print $(i + 1) }'); do
    iptables -t nat -S POSTROUTING | awk -v c="$c" '$NF == c {sub(/^-A/, "-D"); print}' |
      while read -r rule; do eval "iptables -t nat $rule" 2>/dev/null || true; done
    iptables -t nat -F "$c" 2>/dev/null || true
    iptables -t nat -X "$c" 2>/dev/null || true
  done
  for dir in -i -o; do
    while iptables -D FORWARD $dir "$BRIDGE" "${MARK[@]}" -j ACCEPT 2>/dev/null; do :; done
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  rm -rf "$D/cni-ipam"
}

stop() {
  local c
  for c in $STOP_FIRST; do stop_pidfile "$D/$c.pid" & done
  wait
  for c in $STOP_THEN; do stop_pidfile "$D/$c.pid" & done
  wait
  remove_pods
  stop_pidfile "$D/containerd.pid"
  rm -f "$D/addons"
  rmdir /etc/kueue/metrics/certs /etc/kueue/metrics /etc/kueue 2>/dev/null || true
  unmount_under "$D/kubelet"
  unmount_under "$D/containerd-state"
  unmount_under "$CTRD_ROOT/io.containerd.grpc.v1.cri"
  clean_network
  rm -rf "$D/etcd-data" "$D/containerd-state" "$D"/containerd.sock*
}

case "${1:-}" in
  start) lock; start ;;
  stop) lock; stop; log "stopped" ;;
  env) running && api_ready && node_ready && echo "KUBECONFIG=$KC" ;;
  load) shift; [ $# -gt 0 ] || { echo "usage: $0 load IMAGE..." >&2; exit 2; }; load_images "$@" ;;
  *) echo "usage: $0 start|stop|env|load IMAGE..." >&2; exit 2 ;;
esac
