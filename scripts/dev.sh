#!/usr/bin/env bash
# The main job: install what is needed, then run the example HardDisk
# operator. With no cluster configured (no KUBECONFIG, no ~/.kube/config) it
# starts a real local control plane (etcd + kube-apiserver) and prints its
# kubeconfig; it installs the CRD, applies samples/harddisk.yaml and logs the
# reconcile until Ctrl-C.
#   bash scripts/dev.sh [--envtest] [--replicas 2] [--no-sample] [--kubeconfig PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bootstrap.sh
source scripts/bootstrap.sh
exec node examples/harddisk-operator/dist/main.js "$@"
