#!/usr/bin/env bash
# Source this file: it makes sure a Node.js >= 22.19 and pnpm are on PATH,
# installing Node 24 from the npm registry (package `node@24`, which ships the
# binary) and pnpm into ~/.cache/kubeloop/tools when they are missing, then
# installs the workspace's dependencies and builds it.
#
#   source scripts/bootstrap.sh            # tools + install + build
#   KUBELOOP_BOOTSTRAP_NO_BUILD=1 source scripts/bootstrap.sh   # tools + install only

kubeloop_tools="${KUBELOOP_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubeloop/tools}"
kubeloop_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

kubeloop_node_ok() {
  command -v node >/dev/null 2>&1 || return 1
  node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=19)?0:1)'
}

if ! kubeloop_node_ok; then
  if [ -x "$kubeloop_tools/node24/node_modules/.bin/node" ]; then
    export PATH="$kubeloop_tools/node24/node_modules/.bin:$PATH"
  fi
fi
if ! kubeloop_node_ok; then
  echo "bootstrap: Node.js >= 22.19 not found ($(node --version 2>/dev/null || echo none)); installing node@24 from the npm registry into $kubeloop_tools/node24" >&2
  mkdir -p "$kubeloop_tools/node24"
  npm install --no-audit --no-fund --prefix "$kubeloop_tools/node24" node@24 >&2 || return 1 2>/dev/null || exit 1
  export PATH="$kubeloop_tools/node24/node_modules/.bin:$PATH"
  kubeloop_node_ok || { echo "bootstrap: node@24 did not install a working binary" >&2; return 1 2>/dev/null || exit 1; }
fi

kubeloop_pnpm_version="$(node -p 'require(process.argv[1]).packageManager.split("@")[1]' "$kubeloop_root/package.json")"
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version 2>/dev/null)" != "$kubeloop_pnpm_version" ]; then
  if [ ! -x "$kubeloop_tools/pnpm-$kubeloop_pnpm_version/node_modules/.bin/pnpm" ]; then
    echo "bootstrap: installing pnpm@$kubeloop_pnpm_version into $kubeloop_tools" >&2
    npm install --no-audit --no-fund --prefix "$kubeloop_tools/pnpm-$kubeloop_pnpm_version" "pnpm@$kubeloop_pnpm_version" >&2 || return 1 2>/dev/null || exit 1
  fi
  export PATH="$kubeloop_tools/pnpm-$kubeloop_pnpm_version/node_modules/.bin:$PATH"
fi

echo "bootstrap: node $(node --version), pnpm $(pnpm --version)" >&2
(cd "$kubeloop_root" && pnpm install --frozen-lockfile --reporter=append-only >&2) || { echo "bootstrap: pnpm install failed" >&2; return 1 2>/dev/null || exit 1; }
if [ -z "${KUBELOOP_BOOTSTRAP_NO_BUILD:-}" ]; then
  (cd "$kubeloop_root" && pnpm -s build >&2) || { echo "bootstrap: build failed" >&2; return 1 2>/dev/null || exit 1; }
fi
