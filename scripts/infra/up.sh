#!/usr/bin/env bash
# Starts the local infrastructure the `docker`, `k8s` and `slurm` tests use, as far as this machine
# allows: the Docker engine, the local images, the local image registry (registry.sh on
# 127.0.0.1:5123), the local Kubernetes cluster (k8s-current.sh) and the local Slurm (slurm.sh).
# Prints the environment to use (DOCKER_HOST=..., TORCHX_FLOW_REGISTRY=..., KUBECONFIG=...,
# SLURM_CONF=...) on stdout. TORCHX_FLOW_NO_K8S=1, TORCHX_FLOW_NO_SLURM=1 and TORCHX_FLOW_NO_BUILDS=1
# (the compose and torch images) leave those parts out.
# Each part that this call started is recorded in $TORCHX_FLOW_STARTED (default
# $TORCHX_FLOW_RUN/started; with-infra.sh uses a file of its own), so down.sh stops
# exactly those and leaves engines it found running alone.
# Exit 1 when a part cannot start; the caller decides whether that is fatal (it is in CI).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
status=0
started=${TORCHX_FLOW_STARTED:-$RUN/started}

if ! "$here/docker-engine.sh" env >/dev/null 2>&1; then
  if out=$("$here/docker-engine.sh" start); then echo docker >>"$started"; else status=1; fi
else
  out=$("$here/docker-engine.sh" env)
fi
if [ $status = 0 ]; then
  echo "$out"
  export "$out"
  "$here/images.sh" || status=1
  # the docker-compose Airflow stack's images (Postgres, Airflow + this project, built offline);
  # TORCHX_FLOW_NO_BUILDS=1 skips them and the torch image (bench_launch.py --k8s needs neither)
  builds=1
  [ "${TORCHX_FLOW_NO_BUILDS:-0}" = 1 ] && builds=0
  if [ $status = 0 ] && [ $builds = 1 ] && [ -x "$here/compose-images.sh" ]; then
    "$here/compose-images.sh" >&2 || status=1
  fi
  # the image the KFP example pipelines run (torch + torchx-flow + examples, built offline)
  if [ $status = 0 ] && [ $builds = 1 ] && [ -x "$here/torch-image.sh" ]; then
    "$here/torch-image.sh" >&2 || status=1
  fi
fi
if [ $status = 0 ]; then
  if reg=$("$here/registry.sh" env 2>/dev/null); then
    echo "$reg"
  elif reg=$("$here/registry.sh" start); then
    echo registry >>"$started"
    echo "$reg"
  else
    status=1
  fi
fi
# the local Kubernetes cluster (1.35 with CoreDNS, Kueue, JobSet and the Volcano Job CRD:
# k8s-current.sh); its kubeconfig goes out as KUBECONFIG and TORCHX_FLOW_K8S_CURRENT_KUBECONFIG
if [ $status = 0 ] && [ -x "$here/k8s-current.sh" ] && [ "${TORCHX_FLOW_NO_K8S:-0}" != 1 ]; then
  if kc=$("$here/k8s-current.sh" env 2>/dev/null); then
    :
  elif kc=$("$here/k8s-current.sh" start); then
    echo k8s-current >>"$started"
  else
    status=1
  fi
  if [ $status = 0 ]; then
    kc=$(echo "$kc" | sed -n 's/^KUBECONFIG=//p' | tail -n 1)
    echo "KUBECONFIG=$kc"
    echo "TORCHX_FLOW_K8S_CURRENT_KUBECONFIG=$kc"
  fi
fi
# the local Slurm cluster (independent of Docker): prints SLURM_CONF=...
if [ -x "$here/slurm.sh" ] && [ "${TORCHX_FLOW_NO_SLURM:-0}" != 1 ]; then
  if sl=$("$here/slurm.sh" env 2>/dev/null); then
    echo "$sl"
  elif sl=$("$here/slurm.sh" start); then
    echo slurm >>"$started"
    echo "$sl"
  else
    status=1
  fi
fi
exit $status
