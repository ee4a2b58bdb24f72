#!/usr/bin/env bash
# The main job: install what is needed, then start a real local control plane
# (etcd + kube-apiserver) in the foreground. It prints the kubeconfig path;
# Ctrl-C stops it cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bootstrap.sh
source scripts/bootstrap.sh
exec node packages/envtest/dist/cli.js start "$@"
