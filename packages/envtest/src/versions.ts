/** The Kubernetes and etcd releases envtest builds and runs by default. */

/**
 * Default Kubernetes release: the newest the machine's Go 1.26 builds (its
 * go.mod asks for go 1.26.0). Override with `KUBELOOP_KUBERNETES_VERSION`.
 */
export const DEFAULT_KUBERNETES_VERSION = 'v1.37.2';

/**
 * Default etcd release: 3.6.x, which has the progress-notify support that
 * streaming lists (WatchList) need. Override with `KUBELOOP_ETCD_VERSION`.
 */
export const DEFAULT_ETCD_VERSION = 'v3.6.16';

const SEMVER = /^v(\d+)\.(\d+)\.(\d+)$/;

/** Parse `v1.37.2` into numbers; undefined for anything else. */
export function parseVersion(version: string): { major: number; minor: number; patch: number } | undefined {
  const m = SEMVER.exec(version);
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]) };
}
