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
# --max-semi-space-size=1: V8's young generation capped at 1 MiB per semi-space instead of up to
# 16, about 15 MiB less RSS. --no-opt --no-maglev: no optimizing compilers (Sparkplug baseline code
# only), about 17 MiB less RSS holding 1,000 HardDisks for 1.08-1.25x controller-runtime's CPU per
# reconcile (kubeloop's equals it without them); in bench:operator each phase takes 2-18 % longer than
# without the flags (docs/benchmarks.md, Memory). Drop the two flags for a CPU-bound operator.
# dist/operator.js is dist/main.js bundled into one module (examples/harddisk-operator/rolldown.config.mjs): about
# 4 MiB less RSS than Node loading its 900-odd modules one by one.
exec node --max-semi-space-size=1 --no-opt --no-maglev examples/harddisk-operator/dist/operator.js "$@"
