/**
 * The project's `kubeloop` settings: the `"kubeloop"` field of its
 * package.json. Command-line flags override them.
 *
 * ```json
 * "kubeloop": {
 *   "crds": { "modules": ["dist/apis/index.js"], "outDir": "config/crd" }
 * }
 * ```
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CliError } from './errors.js';

/** The `"kubeloop"` field of a package.json. Every part is optional. */
export interface KubeloopConfig {
  /** Settings of `kubeloop generate crds`. */
  readonly crds?: {
    /** Built modules whose exports hold the project's schema-first kinds. */
    readonly modules?: readonly string[];
    /** Where CRD files go. Default: `crd`. */
    readonly outDir?: string;
  };
  /** Settings of `kubeloop generate rbac`. */
  readonly rbac?: {
    /** The built module and export that registers the controllers: `dist/controllers/index.js#setupControllers`. */
    readonly setup?: string;
    /** Name of the ClusterRole and Roles. Default: the package name's last part plus `-manager`. */
    readonly name?: string;
    /** The file written. Default: `config/rbac/role.yaml`. */
    readonly outFile?: string;
    /** The Lease's namespace when the manager runs with leader election. Default: no leader election. */
    readonly leaderElectionNamespace?: string;
    /** The namespace of the shard ring's member Leases when the manager runs sharded. Default: no shard ring. */
    readonly shardRingNamespace?: string;
    /** The manager serves secure metrics. Default: false. */
    readonly secureMetrics?: boolean;
    /** Namespaces a namespace-restricted manager covers. Default: all. */
    readonly namespaces?: readonly string[];
    /** The label selector the manager's cache chooses its namespaces by (`cache.namespaceSelector`). Default: none. */
    readonly namespaceSelector?: string;
  };
  /** Settings of `kubeloop generate webhooks` (`kubeloop create webhook` writes them). */
  readonly webhooks?: {
    /** The built module and export that registers the webhooks: `dist/webhooks/index.js#setupWebhooks`. */
    readonly setup?: string;
    /** Names the configurations, Service and Secret (`<name>-webhook-service`). Default: the package name's last part. */
    readonly name?: string;
    /** The operator's namespace (the Service's). */
    readonly namespace?: string;
    /** `managed` (the operator makes its certificates) or `provided` (cert-manager, a mounted Secret). Default: `managed`. */
    readonly certificates?: 'managed' | 'provided';
    /** The file written. Default: `config/webhook/manifests.yaml`. */
    readonly outFile?: string;
  };
  /** The package's name (package.json `name`). */
  readonly packageName?: string;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/**
 * Reads `cwd/package.json`'s `"kubeloop"` field; `{}` when there is no
 * package.json or no such field.
 *
 * @throws {@link CliError} `InvalidInput` when package.json is not JSON or the field has the wrong shape.
 *
 * @example
 * ```ts
 * const config = await readConfig(process.cwd());
 * config.crds?.modules; // ['dist/apis/index.js']
 * ```
 */
export async function readConfig(cwd: string): Promise<KubeloopConfig> {
  const path = join(cwd, 'package.json');
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliError('InvalidInput', `cannot read ${path}: ${String(err)}`, { cause: err });
  }
  let manifest: unknown;
  try {
    manifest = JSON.parse(text);
  } catch (cause) {
    throw new CliError('InvalidInput', `${path} is not JSON`, { cause });
  }
  const packageName = (manifest as Record<string, unknown>)['name'];
  const named = typeof packageName === 'string' ? { packageName } : {};
  const field = (manifest as Record<string, unknown>)['kubeloop'];
  if (field === undefined) return named;
  const fail = (problem: string): CliError => new CliError('InvalidInput', `${path}: "kubeloop"${problem}`);
  if (typeof field !== 'object' || field === null || Array.isArray(field)) throw fail(' must be an object');
  const out: { -readonly [K in keyof KubeloopConfig]: KubeloopConfig[K] } = { ...named };
  const crds = (field as Record<string, unknown>)['crds'];
  if (crds !== undefined) {
    if (typeof crds !== 'object' || crds === null || Array.isArray(crds)) throw fail('.crds must be an object');
    const { modules, outDir } = crds as Record<string, unknown>;
    if (modules !== undefined && !isStringArray(modules)) throw fail('.crds.modules must be an array of paths');
    if (outDir !== undefined && typeof outDir !== 'string') throw fail('.crds.outDir must be a path');
    out.crds = { ...(modules ? { modules } : {}), ...(outDir !== undefined ? { outDir } : {}) };
  }
  const rbac = (field as Record<string, unknown>)['rbac'];
  if (rbac !== undefined) {
    if (typeof rbac !== 'object' || rbac === null || Array.isArray(rbac)) throw fail('.rbac must be an object');
    const r = rbac as Record<string, unknown>;
    for (const key of ['setup', 'name', 'outFile', 'leaderElectionNamespace', 'shardRingNamespace', 'namespaceSelector'] as const) {
      if (r[key] !== undefined && typeof r[key] !== 'string') throw fail(`.rbac.${key} must be a string`);
    }
    if (r['secureMetrics'] !== undefined && typeof r['secureMetrics'] !== 'boolean') throw fail('.rbac.secureMetrics must be true or false');
    if (r['namespaces'] !== undefined && !isStringArray(r['namespaces'])) throw fail('.rbac.namespaces must be an array of namespace names');
    const unknown = Object.keys(r).filter((k) => !['setup', 'name', 'outFile', 'leaderElectionNamespace', 'shardRingNamespace', 'secureMetrics', 'namespaces', 'namespaceSelector'].includes(k));
    if (unknown.length > 0) throw fail(`.rbac has unknown settings: ${unknown.join(', ')} (known: setup, name, outFile, leaderElectionNamespace, shardRingNamespace, secureMetrics, namespaces, namespaceSelector)`);
    out.rbac = r;
  }
  const webhooks = (field as Record<string, unknown>)['webhooks'];
  if (webhooks !== undefined) {
    if (typeof webhooks !== 'object' || webhooks === null || Array.isArray(webhooks)) throw fail('.webhooks must be an object');
    const w = webhooks as Record<string, unknown>;
    const known = ['setup', 'name', 'namespace', 'certificates', 'outFile'];
    for (const key of known) {
      if (w[key] !== undefined && typeof w[key] !== 'string') throw fail(`.webhooks.${key} must be a string`);
    }
    if (w['certificates'] !== undefined && w['certificates'] !== 'managed' && w['certificates'] !== 'provided') throw fail('.webhooks.certificates must be "managed" or "provided"');
    const unknown = Object.keys(w).filter((k) => !known.includes(k));
    if (unknown.length > 0) throw fail(`.webhooks has unknown settings: ${unknown.join(', ')} (known: ${known.join(', ')})`);
    out.webhooks = w;
  }
  return out;
}
