/**
 * Generation of the throwaway Go modules that build kube-apiserver and etcd.
 *
 * k8s.io/kubernetes requires each of its staging modules (k8s.io/api,
 * k8s.io/apimachinery, ...) at v0.0.0 and replaces it with a local path under
 * ./staging. Those replaces are ignored when k8s.io/kubernetes is a
 * dependency, so a wrapper module must replace every one with its published
 * release: k8s.io/kubernetes v1.N.P pairs with staging modules v0.N.P.
 */
import { EnvtestError } from '../errors.js';
import { parseVersion } from '../versions.js';

const STAGING_REPLACE = /^\s*(?:replace\s+)?(k8s\.io\/[A-Za-z0-9._-]+)\s+=>\s+\.\/staging\/src\/(k8s\.io\/[A-Za-z0-9._-]+)\s*$/;

/** The module paths that k8s.io/kubernetes's go.mod replaces with `./staging/...`. */
export function stagingModules(kubernetesGoMod: string): string[] {
  const found: string[] = [];
  for (const line of kubernetesGoMod.split('\n')) {
    const m = STAGING_REPLACE.exec(line);
    if (m?.[1]) found.push(m[1]);
  }
  return [...new Set(found)].sort();
}

/** The `go` directive of a go.mod, e.g. `1.26.0`. */
export function goDirective(goMod: string): string | undefined {
  return /^go\s+(\d+\.\d+(?:\.\d+)?)\s*$/m.exec(goMod)?.[1];
}

/** The staging-module version that pairs with a Kubernetes release: v1.37.2 → v0.37.2. */
export function stagingVersion(kubernetesVersion: string): string {
  const v = parseVersion(kubernetesVersion);
  if (!v || v.major !== 1) {
    throw new EnvtestError('InvalidOptions', `not a Kubernetes release version: ${kubernetesVersion} (want v1.N.P)`);
  }
  return `v0.${v.minor}.${v.patch}`;
}

/**
 * The go.mod of a wrapper module that builds k8s.io/kubernetes/cmd/* at
 * `kubernetesVersion`, with every staging module replaced by its release.
 * Throws if the given go.mod names no staging module (wrong file).
 */
export function kubernetesWrapperGoMod(kubernetesVersion: string, kubernetesGoMod: string): string {
  const modules = stagingModules(kubernetesGoMod);
  if (modules.length === 0) {
    throw new EnvtestError(
      'BuildFailed',
      `the go.mod of k8s.io/kubernetes ${kubernetesVersion} replaces no staging module: cannot build a wrapper`,
    );
  }
  const go = goDirective(kubernetesGoMod) ?? '1.24.0';
  const sv = stagingVersion(kubernetesVersion);
  const lines = [
    'module kubeloop.local/envtest/kubernetes',
    '',
    `go ${go}`,
    '',
    `require k8s.io/kubernetes ${kubernetesVersion}`,
    '',
    ...modules.map((m) => `replace ${m} => ${m} ${sv}`),
    '',
  ];
  return lines.join('\n');
}

/** The go.mod of a wrapper module that builds etcd and etcdctl at `etcdVersion`. */
export function etcdWrapperGoMod(etcdVersion: string): string {
  const v = parseVersion(etcdVersion);
  if (!v || v.major !== 3) throw new EnvtestError('InvalidOptions', `not an etcd 3.x version: ${etcdVersion}`);
  return [
    'module kubeloop.local/envtest/etcd',
    '',
    'go 1.24.0',
    '',
    `require go.etcd.io/etcd/server/v3 ${etcdVersion}`,
    `require go.etcd.io/etcd/etcdctl/v3 ${etcdVersion}`,
    '',
  ].join('\n');
}

/** A tools.go that pins the main packages so `go mod tidy` keeps their dependencies. */
export function toolsGo(imports: readonly string[]): string {
  return ['//go:build tools', '', 'package tools', '', ...imports.map((i) => `import _ "${i}"`), ''].join('\n');
}

/**
 * Throw if a go.mod requires a k8s.io module at v0.0.0 that no replace line
 * maps to a release: the build would fail later with a far less clear error.
 */
export function assertNoUnresolvedStaging(goMod: string): void {
  const replaced = new Set<string>();
  for (const m of goMod.matchAll(/^\s*(?:replace\s+)?(k8s\.io\/[^\s]+)\s+=>\s+[^\s]+\s+v\d+\.\d+\.\d+/gm)) {
    if (m[1]) replaced.add(m[1]);
  }
  const unresolved: string[] = [];
  for (const m of goMod.matchAll(/^\s*(?:require\s+)?(k8s\.io\/[^\s]+)\s+v0\.0\.0(?:\s|$)/gm)) {
    if (m[1] && !replaced.has(m[1])) unresolved.push(m[1]);
  }
  if (unresolved.length > 0) {
    throw new EnvtestError('BuildFailed', `staging modules left at v0.0.0 with no replace: ${unresolved.join(', ')}`);
  }
}
