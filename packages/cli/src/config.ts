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
  const field = (manifest as Record<string, unknown>)['kubeloop'];
  if (field === undefined) return {};
  const fail = (problem: string): CliError => new CliError('InvalidInput', `${path}: "kubeloop"${problem}`);
  if (typeof field !== 'object' || field === null || Array.isArray(field)) throw fail(' must be an object');
  const crds = (field as Record<string, unknown>)['crds'];
  if (crds === undefined) return {};
  if (typeof crds !== 'object' || crds === null || Array.isArray(crds)) throw fail('.crds must be an object');
  const { modules, outDir } = crds as Record<string, unknown>;
  if (modules !== undefined && !isStringArray(modules)) throw fail('.crds.modules must be an array of paths');
  if (outDir !== undefined && typeof outDir !== 'string') throw fail('.crds.outDir must be a path');
  return { crds: { ...(modules ? { modules } : {}), ...(outDir !== undefined ? { outDir } : {}) } };
}
