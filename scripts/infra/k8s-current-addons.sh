#!/usr/bin/env bash
# The add-ons of the current local cluster (run by k8s-current.sh start, not by hand): JobSet and
# Kueue managers as host processes with the admin kubeconfig, and the Volcano Job CRD. Their CRDs and webhook
# configurations are read from the Go module cache (the module versions our go.mod files pin);
# the webhooks point at https://127.0.0.1:PORT with a certificate made here, instead of at a
# Service, and only the webhooks of the integrations enabled here are registered.
#   k8s-current-addons.sh start    needs D, BIN, KC from k8s-current.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
: "${D:?run through k8s-current.sh}" "${BIN:?}" "${KC:?}"
MOD=${GOMODCACHE:-$CACHE/go/mod}
KUEUE_SRC=$MOD/sigs.k8s.io/kueue@$(awk '$1 == "require" && $2 == "sigs.k8s.io/kueue" {print $3}' \
  "$here/go/kueue/go.mod")/config/components
JOBSET_SRC=$MOD/sigs.k8s.io/jobset@$(awk '$1 == "require" && $2 == "sigs.k8s.io/jobset" {print $3}' \
  "$here/go/jobset/go.mod")/config/components
KUEUE_PORT=${TORCHX_FLOW_K8S_CURRENT_KUEUE_PORT:-29443}    # webhook; health on +1
JOBSET_PORT=${TORCHX_FLOW_K8S_CURRENT_JOBSET_PORT:-29543}  # webhook; health on +1

kubectl() { "$BIN/kubectl" --kubeconfig="$KC" "$@"; }

spawn() {
  local name=$1; shift
  setsid nohup "$@" </dev/null >"$D/$name.log" 2>&1 8>&- &
  echo $! >"$D/$name.pid"
  echo "$name" >>"$D/addons"
}

# serving_cert DIR: a CA and a serving certificate for 127.0.0.1 in DIR (tls.crt, tls.key, ca.crt).
serving_cert() (
  local dir=$1
  umask 077
  mkdir -p "$dir"
  [ -f "$dir/tls.crt" ] && return 0
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=torchx-flow-webhook-ca \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$dir/tls.key" \
    -out "$dir/tls.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$dir/ext.cnf"
  openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 3650 -extfile "$dir/ext.cnf" -out "$dir/tls.crt" 2>/dev/null
)

# webhooks NAME MANIFEST PORT KEEP: the module's webhook configurations, renamed NAME-*, pointed
# at https://127.0.0.1:PORT, keeping the webhooks for which the jq expression KEEP is true.
webhooks() {
  local name=$1 manifest=$2 port=$3 keep=$4 ca
  ca=$(base64 -w0 "$D/$name-certs/ca.crt")
  kubectl create --dry-run=client -o json -f "$manifest" |
    jq --arg n "$name" --arg url "https://127.0.0.1:$port" --arg ca "$ca" '
      (if .kind == "List" then .items else [.] end) | map(
        .metadata.name = "\($n)-\(.metadata.name)"
        | .webhooks |= map(select('"$keep"')
            | .clientConfig = {url: ($url + .clientConfig.service.path), caBundle: $ca}))
      | {apiVersion: "v1", kind: "List", items: .}' |
    kubectl apply -f - >/dev/null
}

# crds NAME DIR PORT: the module's CRDs; those serving several versions convert through the
# manager's /convert webhook.
crds() {
  local name=$1 dir=$2 port=$3 ca f
  ca=$(base64 -w0 "$D/$name-certs/ca.crt")
  for f in "$dir"/*.yaml; do
    kubectl create --dry-run=client -o json -f "$f" |
      jq --arg url "https://127.0.0.1:$port/convert" --arg ca "$ca" '
        if (.spec.versions | map(select(.served)) | length) > 1 then
          .spec.conversion = {strategy: "Webhook", webhook: {conversionReviewVersions: ["v1"],
            clientConfig: {url: $url, caBundle: $ca}}}
        else . end'
  done | kubectl apply --server-side --force-conflicts -f - >/dev/null
  # the managers fail at start on kinds the API server does not serve yet
  wait_for 60 established $(for f in "$dir"/*.yaml; do awk '/^  name: / {print $2; exit}' "$f"; done) ||
    { log "the CRDs of $name were not established"; return 1; }
}

# established CRD...: every CRD named is served
established() {
  local n
  for n in "$@"; do
    [ "$(kubectl get "crd/$n" -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' \
      2>/dev/null)" = True ] || return 1
  done
}

healthy() { curl -sf -m 2 "http://127.0.0.1:$1/readyz" >/dev/null; }

# await NAME PORT: waits up to 90 s for the manager's readiness, failing at once if it exits.
await() {
  local name=$1 port=$2 _
  for _ in $(seq 1 360); do
    healthy "$port" && return 0
    kill -0 "$(cat "$D/$name.pid")" 2>/dev/null || break
    sleep 0.25
  done
  log "$name did not start; last lines of $D/$name.log:"
  tail -n 15 "$D/$name.log" >&2
  return 1
}

start_jobset() {
  serving_cert "$D/jobset-certs"
  kubectl create namespace jobset-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  crds jobset "$JOBSET_SRC/crd/bases" "$JOBSET_PORT"
  cat >"$D/jobset.yaml" <<EOC
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
webhook: {host: 127.0.0.1, port: $JOBSET_PORT, certDir: $D/jobset-certs}
metrics: {bindAddress: "0"}
health: {healthProbeBindAddress: "127.0.0.1:$((JOBSET_PORT + 1))"}
EOC
  spawn jobset env KUBECONFIG="$KC" POD_NAMESPACE=jobset-system "$BIN/jobset" --config="$D/jobset.yaml" \
    --metrics-bind-address=0 --health-probe-bind-address="127.0.0.1:$((JOBSET_PORT + 1))"
  await jobset $((JOBSET_PORT + 1))
  webhooks jobset "$JOBSET_SRC/webhook/manifests.yaml" "$JOBSET_PORT" 'true'
  # pods get the JobSet webhook only when they belong to a JobSet (as the module's patch does)
  local sel='{"matchExpressions": [{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]}'
  kubectl get mutatingwebhookconfiguration,validatingwebhookconfiguration -o json |
    jq --argjson sel "$sel" '.items |= map(select(.metadata.name | startswith("jobset-"))
      | .webhooks |= map(if (.rules[0].resources == ["pods"]) then .objectSelector = $sel else . end)
      | del(.metadata.resourceVersion, .metadata.managedFields))' | kubectl apply -f - >/dev/null
}

start_kueue() {
  serving_cert "$D/kueue-certs"
  kubectl create namespace kueue-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  crds kueue "$KUEUE_SRC/crd/bases" "$KUEUE_PORT"
  cat >"$D/kueue.yaml" <<EOC
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health: {healthProbeBindAddress: "127.0.0.1:$((KUEUE_PORT + 1))"}
metrics: {bindAddress: "0"}
webhook: {host: 127.0.0.1, port: $KUEUE_PORT, certDir: $D/kueue-certs}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
integrations:
  frameworks: ["batch/job", "jobset.x-k8s.io/jobset"]
EOC
  # without its internal certificate management Kueue reads a metrics certificate from the fixed
  # path /etc/kueue/metrics/certs: a bind mount in Kueue's own mount namespace provides it (the
  # host keeps only the empty directory, removed by k8s-current.sh stop)
  mkdir -p /etc/kueue/metrics/certs
  spawn kueue unshare --mount --propagation private sh -c \
    'mount --bind "$1" /etc/kueue/metrics/certs && shift && exec "$@"' kueue "$D/kueue-certs" \
    env KUBECONFIG="$KC" "$BIN/kueue" --config="$D/kueue.yaml" --feature-gates=VisibilityOnDemand=false
  await kueue $((KUEUE_PORT + 1))
  webhooks kueue "$KUEUE_SRC/webhook/manifests.yaml" "$KUEUE_PORT" \
    '[.rules[]?.apiGroups[]?] | any(. == "batch" or . == "kueue.x-k8s.io" or . == "jobset.x-k8s.io")'
}

# the Volcano Job CRD kept in the repo (Volcano's own module is not served here, so no Volcano
# scheduler or controller runs: the Volcano-mode tests write the Jobs' status themselves)
volcano_crd() {
  local crds=$here/../../core/torchx/schedulers/_kubernetes/crds
  kubectl apply --server-side --force-conflicts -f "$crds" >/dev/null
  wait_for 60 established jobs.batch.volcano.sh || { log "the Volcano Job CRD was not established"; return 1; }
}

case "${1:-}" in
  start) start_jobset && start_kueue && volcano_crd ;;
  *) echo "usage: $0 start (run by k8s-current.sh)" >&2; exit 2 ;;
esac
