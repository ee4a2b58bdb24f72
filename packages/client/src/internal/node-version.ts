/**
 * kubeloop needs Node.js >= 22.19 (the first 22.x whose undici, fetch and
 * zstd support the dependencies rely on). This module is the first one the
 * package evaluates, so an older Node gets this sentence instead of a crash
 * deep inside a dependency.
 */
import { ClientError } from '../errors.js';

/** The oldest Node.js kubeloop supports. */
export const MIN_NODE = [22, 19] as const;

/** Throw ClientError `InvalidConfig` when `version` (e.g. `process.versions.node`) is older than {@link MIN_NODE}. */
export function assertNodeVersion(version: string = process.versions.node): void {
  const [major = 0, minor = 0] = version.split('.').map((n) => Number.parseInt(n, 10));
  if (major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])) return;
  throw new ClientError('InvalidConfig', `kubeloop needs Node.js >= ${MIN_NODE.join('.')}; this is Node.js ${version}. Install Node.js 22.19+ or 24 (LTS).`);
}

assertNodeVersion();
