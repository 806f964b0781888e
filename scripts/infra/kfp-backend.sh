#!/usr/bin/env bash
# The local KFP backend's foundation on the current cluster (k8s-current.sh), see docs/kfp-backend.md:
#   kfp-backend.sh start   start (or reuse) it; prints the endpoints (KFP_HOST=... once the KFP API
#                          server can be built, which it cannot yet: see below)
#   kfp-backend.sh stop    stops everything it started (processes, cluster objects, state)
#   kfp-backend.sh env     prints the endpoints of a running backend, exit 1 if none
# Host processes on 127.0.0.1, state under $TORCHX_FLOW_RUN/kfp (fresh on each start):
#   MariaDB (Debian's, the KFP API server's and MLMD's database), the MLMD gRPC server
#   (kfp_mlmd_server.py in its own venv under $TORCHX_FLOW_CACHE/kfp), SeaweedFS (S3, bucket
#   mlpipeline). Pods reach them on the pod bridge's gateway 10.88.0.1 (socat forwards) through
#   selector-less Services in the namespace kubeflow (seaweedfs, metadata-grpc-service).
# In the cluster: Argo Workflows v4.0.5's CRDs, its workflow-controller (a Deployment on a local
#   image) and the argoexec image its pods run; the `kubernetes` Service gets an endpoint (a socat
#   forward to the API server), which the executor needs.
# Not here: the KFP API server, persistence agent, driver and launcher: github.com/kubeflow/pipelines
#   is not served by the Go module proxy, so `start` says so and prints no KFP_HOST.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
D=$RUN/kfp
NS=kubeflow
GATEWAY=10.88.0.1
DB_PORT=${TORCHX_FLOW_KFP_DB_PORT:-23306}
MLMD_PORT=${TORCHX_FLOW_KFP_MLMD_PORT:-28080}
S3_PORT=${TORCHX_FLOW_KFP_S3_PORT:-29000}
WEED_PORT=${TORCHX_FLOW_KFP_WEED_PORT:-29333}  # master; volume +1, filer +2 (gRPC: +10000 each)
KAPI_FWD_PORT=${TORCHX_FLOW_KFP_KAPI_PORT:-26444}  # pods -> kube-apiserver
ARGO_VERSION=v4.0.5
EXEC_IMAGE=torchx-flow/argoexec:$ARGO_VERSION
CTRL_IMAGE=torchx-flow/argo-workflow-controller:$ARGO_VERSION
MLMD_VERSION=1.17.1
VENV=$CACHE/kfp/mlmd-venv
S3_KEY=minio S3_SECRET=minio123  # the KFP manifests' default credentials, loopback only
PROCS="socat-kapi socat-s3 seaweedfs mlmd mariadb"

KC=""
KUBECTL=$CACHE/k8s-current/bin/kubectl
[ -x "$KUBECTL" ] || KUBECTL=$(command -v kubectl || echo "$KUBECTL")
kubectl() { "$KUBECTL" --kubeconfig="$KC" "$@"; }

spawn() {
  local name=$1; shift
  setsid nohup "$@" </dev/null >"$D/$name.log" 2>&1 &
  echo $! >"$D/$name.pid"
}

fail() {
  log "$1; last lines of $D/$2.log:"
  tail -n 15 "$D/$2.log" >&2 || true
  stop
  exit 1
}

alive() { [ -f "$D/$1.pid" ] && kill -0 "$(cat "$D/$1.pid")" 2>/dev/null; }

start_mariadb() {
  apt_install mariadb-server socat
  rm -rf "$D/mariadb" && mkdir -p "$D/mariadb"
  mariadb-install-db --no-defaults --user="$(id -un)" --datadir="$D/mariadb" \
    --auth-root-authentication-method=socket --skip-test-db >"$D/mariadb-init.log" 2>&1 ||
    fail "mariadb-install-db failed" mariadb-init
  spawn mariadb mariadbd --no-defaults --user="$(id -un)" --datadir="$D/mariadb" \
    --socket="$D/mysqld.sock" --pid-file="$D/mariadbd.pid" --bind-address=127.0.0.1 \
    --port="$DB_PORT" --skip-name-resolve --innodb-buffer-pool-size=64M --log-error="$D/mariadb.err"
  wait_for 60 mariadb --no-defaults --socket="$D/mysqld.sock" -e 'select 1' ||
    fail "MariaDB did not start" mariadb
  mariadb --no-defaults --socket="$D/mysqld.sock" -e \
    'CREATE DATABASE metadb; CREATE DATABASE mlpipeline; CREATE DATABASE cachedb;'
}

ensure_venv() {
  [ -f "$VENV/.installed-$MLMD_VERSION" ] && return 0
  log "creating the MLMD venv ($VENV)"
  rm -rf "$VENV"
  nice -n 19 python3.11 -m venv "$VENV"
  nice -n 19 "$VENV/bin/pip" install -q "ml-metadata==$MLMD_VERSION"
  touch "$VENV/.installed-$MLMD_VERSION"
}

start_mlmd() {
  ensure_venv
  spawn mlmd "$VENV/bin/python" "$here/kfp_mlmd_server.py" --host 127.0.0.1 --host "$GATEWAY" \
    --port "$MLMD_PORT" --mysql-socket "$D/mysqld.sock" --mysql-db metadb
  wait_for 60 grep -q 'MLMD gRPC server' "$D/mlmd.log" || fail "the MLMD server did not start" mlmd
}

start_seaweedfs() {
  local bin=$1
  mkdir -p "$D/seaweedfs"
  cat >"$D/s3.json" <<EOF
{"identities": [{"name": "kfp", "credentials": [{"accessKey": "$S3_KEY", "secretKey": "$S3_SECRET"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
EOF
  spawn seaweedfs "$bin/weed" server -dir="$D/seaweedfs" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -master.port="$WEED_PORT" -volume.port="$((WEED_PORT + 1))" -filer -filer.port="$((WEED_PORT + 2))" \
    -s3 -s3.port="$S3_PORT" -s3.config="$D/s3.json" -s3.port.iceberg=0 -s3.port.lance=0 \
    -filer.localSocket="$D/weed-filer.sock" -s3.localSocket="$D/weed-s3.sock" \
    -master.volumePreallocate=false -master.volumeSizeLimitMB=256 -volume.max=8
  wait_for 90 bash -c "echo s3.bucket.create -name mlpipeline | '$bin/weed' shell \
    -master=127.0.0.1:$WEED_PORT 2>&1 | grep -qv error && echo s3.bucket.list | '$bin/weed' shell \
    -master=127.0.0.1:$WEED_PORT 2>/dev/null | grep -q mlpipeline" ||
    fail "SeaweedFS did not start or has no bucket mlpipeline" seaweedfs
}

# forward NAME PORT TARGET: pods reach a loopback service on the bridge's gateway address
forward() {
  spawn "socat-$1" socat "TCP-LISTEN:$2,bind=$GATEWAY,reuseaddr,fork" "TCP:$3"
}

# image NAME BINARY ENTRYPOINT: busybox + one static binary, imported offline into the engine
image() {
  local name=$1 bin=$2 entry=$3 w dh
  dh=$("$here/docker-engine.sh" env) || { log "no Docker engine: run scripts/infra/up.sh"; exit 1; }
  export "${dh?}"
  if ! docker image inspect "$name" >/dev/null 2>&1; then
    docker image inspect torchx-flow/busybox:latest >/dev/null 2>&1 || WITH_PYTHON=0 "$here/images.sh"
    w=$(mktemp -d)
    docker save torchx-flow/busybox:latest | tar -x -O --wildcards '*/layer.tar' | tar -x -C "$w"
    cp "$bin" "$w/bin/"
    tar -C "$w" -c . | docker import -c 'ENV PATH=/bin' -c "ENTRYPOINT [\"/bin/$entry\"]" - "$name" >/dev/null
    rm -rf "$w"
  fi
  "$here/k8s-current.sh" load "$name"
}

# the CRDs of the Argo module the build used (its copy in the module cache)
argo_crds() {
  echo "$CACHE/go/mod/github.com/argoproj/argo-workflows/v4@$ARGO_VERSION/manifests/base/crds/minimal"
}

apply_argo() {
  kubectl apply --server-side -k "$(argo_crds)" >/dev/null
  kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  # the controller uses the admin credentials (as the cluster's other add-ons), in a kubeconfig
  # that names the API server by its in-cluster Service
  sed -e "s#server: \"https://127.0.0.1:[0-9]*\"#server: \"https://kubernetes.default.svc:443\"#" \
    -e "s#namespace: default#namespace: $NS#" "$KC" >"$D/incluster-kubeconfig"
  kubectl -n "$NS" create secret generic argo-kubeconfig --from-file=kubeconfig="$D/incluster-kubeconfig" \
    --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  sed -e "s#@NS@#$NS#g" -e "s#@EXEC_IMAGE@#$EXEC_IMAGE#g" -e "s#@CTRL_IMAGE@#$CTRL_IMAGE#g" \
    -e "s#@GATEWAY@#$GATEWAY#g" -e "s#@S3_PORT@#$S3_PORT#g" -e "s#@MLMD_PORT@#$MLMD_PORT#g" \
    -e "s#@KAPI_PORT@#$KAPI_FWD_PORT#g" -e "s#@S3_KEY@#$S3_KEY#g" -e "s#@S3_SECRET@#$S3_SECRET#g" \
    "$here/kfp-backend.yaml" | kubectl apply -f - >/dev/null
  wait_for 120 bash -c "[ \"\$('$KUBECTL' --kubeconfig='$KC' -n $NS get deploy \
    workflow-controller -o jsonpath='{.status.readyReplicas}')\" = 1 ]" ||
    { kubectl -n "$NS" logs deploy/workflow-controller --tail=20 >&2 || true
      log "the workflow-controller did not become ready"; stop; exit 1; }
}

print_env() {
  echo "KFP_MLMD=127.0.0.1:$MLMD_PORT"
  echo "KFP_S3_ENDPOINT=http://127.0.0.1:$S3_PORT"
  echo "KFP_MYSQL=127.0.0.1:$DB_PORT"
  echo "KUBECONFIG=$KC"
}

start() {
  local bin kcline
  # TORCHX_FLOW_KFP_KUBECONFIG: use that running cluster as it is (default: k8s-current.sh start)
  if [ -n "${TORCHX_FLOW_KFP_KUBECONFIG:-}" ]; then
    KC=$TORCHX_FLOW_KFP_KUBECONFIG
  else
    kcline=$("$here/k8s-current.sh" start) || exit 1
    KC=${kcline#KUBECONFIG=}
  fi
  mkdir -p "$D"
  bin=$(flock "$CACHE/kfp-build.lock" "$here/kfp-build.sh")
  # host processes are reused when all run; the cluster part is (re)applied on every start
  if ! { alive mariadb && alive mlmd && alive seaweedfs; }; then
    stop_processes
    start_mariadb
    start_mlmd
    start_seaweedfs "$bin"
  fi
  local api_port
  api_port=$(sed -n 's#.*server: "https://127.0.0.1:\([0-9]*\)".*#\1#p' "$KC")
  alive socat-kapi || forward kapi "$KAPI_FWD_PORT" "127.0.0.1:$api_port"
  alive socat-s3 || forward s3 "$S3_PORT" "127.0.0.1:$S3_PORT"
  image "$EXEC_IMAGE" "$bin/argoexec" argoexec
  image "$CTRL_IMAGE" "$bin/workflow-controller" workflow-controller
  apply_argo
  log "ready ($D)"
  print_env
  missing_kfp
}

missing_kfp() {
  log "the KFP API server, persistence agent, driver and launcher are not built: the Go module" \
    "proxy does not serve github.com/kubeflow/pipelines (see docs/kfp-backend.md); no KFP_HOST"
}

stop_processes() {
  local p
  for p in $PROCS; do stop_pidfile "$D/$p.pid"; done
}

stop() {
  KC=${TORCHX_FLOW_KFP_KUBECONFIG:-$RUN/k8s-current/kubeconfig}
  if [ -f "$KC" ] &&
    kubectl get --raw /readyz >/dev/null 2>&1; then
    kubectl -n "$NS" delete workflows,deployments,pods --all --grace-period=1 --timeout=60s \
      >/dev/null 2>&1 || true
    kubectl delete namespace "$NS" --ignore-not-found --timeout=90s >/dev/null 2>&1 || true
    kubectl -n default delete endpointslice torchx-flow-kubernetes --ignore-not-found >/dev/null 2>&1 || true
    kubectl delete -k "$(argo_crds)" --ignore-not-found >/dev/null 2>&1 || true
  fi
  stop_processes
  rm -rf "$D"
}

case "${1:-}" in
  start) start ;;
  stop) stop; log "stopped" ;;
  env) alive mariadb && alive mlmd && alive seaweedfs || exit 1
       KC=${TORCHX_FLOW_KFP_KUBECONFIG:-$RUN/k8s-current/kubeconfig}; print_env ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
