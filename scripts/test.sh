#!/usr/bin/env bash
# Run every check and test of the workspace, against a real control plane.
# Installs what it needs (Node 24 when the running Node is older, pnpm, the
# workspace's dependencies, kubectl), finds or builds kube-apiserver and etcd,
# then runs all tests with typecheck and lint beside them. Its last line is
# "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

# shellcheck source=scripts/bootstrap.sh
source scripts/bootstrap.sh || { echo "0 passed, 1 failed"; exit 1; }

if ! command -v kubectl >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test: installing kubectl (Debian package)" >&2
    { apt-get update -qq && apt-get install -y -qq kubectl; } >&2 || echo "test: kubectl could not be installed" >&2
  else
    echo "test: kubectl is not installed; the CLI test needs it (Debian package kubectl)" >&2
  fi
fi

# Prometheus scrapes the example operator in test/grafana-dashboard.test.ts, which runs every query
# of the scaffold's Grafana dashboard against it (the test says it is skipped, and why, without it).
if ! command -v prometheus >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test: installing prometheus (Debian package)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; } >&2 || echo "test: prometheus could not be installed" >&2
  else
    echo "test: prometheus is not installed; the dashboard test needs it (Debian package prometheus)" >&2
  fi
fi

# Find or build the control-plane binaries first, with progress on stderr
# (a cold build takes many minutes; later runs reuse the cache).
# The workspace's fault tests compact etcd with etcdctl, which setup-envtest's prebuilt archives do
# not carry: here the binaries are built from Go modules (projects made by create-kubeloop download them).
export KUBELOOP_ENVTEST_DOWNLOAD="${KUBELOOP_ENVTEST_DOWNLOAD:-0}"
if [ "${KUBELOOP_USE_EXISTING_CLUSTER:-}" != "true" ]; then
  node packages/envtest/dist/cli.js build >&2 || { echo "test: could not get kube-apiserver and etcd" >&2; echo "0 passed, 1 failed"; exit 1; }
fi

# helm (the chart test) and Jaeger (the tracing tests) are built from the Go module proxy when not
# cached; on a cold machine that takes many minutes, so it starts now, beside the checks, and a test
# that needs a tool still being built waits for this build (test/support/tool-cache.ts).
mkdir -p .tmp
node scripts/prebuild-test-tools.ts > .tmp/prebuild-test-tools.log 2>&1 &

# typecheck, lint, the @example blocks and the generated files' checks run beside vitest (they use the CPU
# the test files leave while they wait on the control plane); their output is printed after vitest's.
run_checks() {
  local failed=0
  echo "test: typecheck" >&2
  pnpm -s typecheck >&2 || { echo "test: typecheck FAILED" >&2; failed=$((failed + 1)); }
  echo "test: lint" >&2
  pnpm -s lint >&2 || { echo "test: lint FAILED" >&2; failed=$((failed + 1)); }
  # Every @example in the packages' TSDoc is compiled against the sources (scripts/check-examples.ts).
  echo "test: @example blocks (node scripts/check-examples.ts)" >&2
  node scripts/check-examples.ts >&2 || { echo "test: @example blocks FAILED" >&2; failed=$((failed + 1)); }
  # Generated files are committed; --check fails (with a diff) when the code they come from changed.
  echo "test: generated CRDs and RBAC (kubeloop generate crds|rbac --check)" >&2
  for example in examples/*/; do
    if grep -q '"crds"' "$example/package.json" 2>/dev/null; then
      node packages/cli/dist/bin.js generate crds --check --cwd "$example" >&2 || { echo "test: generated CRDs of $example are stale FAILED" >&2; failed=$((failed + 1)); }
    fi
    if grep -q '"rbac"' "$example/package.json" 2>/dev/null; then
      node packages/cli/dist/bin.js generate rbac --check --cwd "$example" >&2 || { echo "test: generated RBAC of $example are stale FAILED" >&2; failed=$((failed + 1)); }
    fi
  done
  echo "$failed $(date +%s)" > .tmp/checks.failed
}
# Where the run's CPU goes, by kind of process (control planes, TypeScript programs, ESLint, operators...),
# read from /proc every 2 s and printed after the checks (scripts/process-cpu.mjs).
node scripts/process-cpu.mjs sample .tmp/process-cpu.json &
cpu_sampler_pid=$!

rm -f .tmp/checks.failed
checks_started=$(date +%s)
run_checks > .tmp/checks.log 2>&1 &
checks_pid=$!

# The registry end-to-end tests (test/e2e/registry.test.ts and registry-docs.test.ts: Verdaccio, publish,
# pnpm create kubeloop, install, build, test, every doc command) run here unless KUBELOOP_E2E_REGISTRY=0;
# a plain `pnpm test` skips them, saying so.
export KUBELOOP_E2E_REGISTRY="${KUBELOOP_E2E_REGISTRY:-1}"

rm -f .tmp/vitest.json
# Each test file's CPU (its worker's and its children's), for the summary's ten costliest (test/support/file-cpu.ts).
export KUBELOOP_FILE_CPU="$PWD/.tmp/file-cpu.jsonl"
rm -f "$KUBELOOP_FILE_CPU"
# vitest.config.ts runs most files side by side (KUBELOOP_TEST_WORKERS at a time, default 4), the
# registry walk and the other long files first, then the few timing-sensitive files one at a time
# (test/support/schedule.ts).
echo "test: vitest (${KUBELOOP_TEST_WORKERS:-4} files at a time, then the serial group)" >&2
vitest_started=$(date +%s)
pnpm -s exec vitest run --reporter=default --reporter=json --outputFile.json=.tmp/vitest.json "$@"
vitest_status=$?
vitest_seconds=$(( $(date +%s) - vitest_started ))

wait "$checks_pid"
cat .tmp/checks.log >&2
read -r failed_checks checks_ended < .tmp/checks.failed 2>/dev/null || { failed_checks=1; checks_ended=$(date +%s); }
echo "test: the checks took $(( checks_ended - checks_started )) s, beside vitest's ${vitest_seconds} s" >&2
kill "$cpu_sampler_pid" 2>/dev/null
wait "$cpu_sampler_pid" 2>/dev/null
node scripts/process-cpu.mjs summary .tmp/process-cpu.json >&2

node scripts/summarize-tests.mjs .tmp/vitest.json "$failed_checks"
summary_status=$?
if [ "$vitest_status" -ne 0 ] || [ "$failed_checks" -ne 0 ] || [ "$summary_status" -ne 0 ]; then
  exit 1
fi
