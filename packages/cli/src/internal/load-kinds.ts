/**
 * Finds the schema-first kinds a project exports: imports each module and
 * keeps every exported value (or element of an exported array) that is a
 * descriptor carrying a schema. Duck-typed, so descriptors made by another
 * copy of @kubeloop/scheme (the project's own) are recognised.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ResourceDescriptor } from '@kubeloop/scheme';
import { CliError } from '../errors.js';

function isSchemaKind(value: unknown): value is ResourceDescriptor {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  const schema = v['schema'] as Record<string, unknown> | undefined;
  return typeof v['group'] === 'string' && typeof v['version'] === 'string' && typeof v['kind'] === 'string' && typeof schema === 'object' && schema !== null && typeof schema['openAPIV3Schema'] === 'object';
}

/** The schema-first kinds exported by the modules (paths relative to `cwd`), each once, in export order. */
export async function loadKinds(modules: readonly string[], cwd: string): Promise<ResourceDescriptor[]> {
  const found: ResourceDescriptor[] = [];
  for (const m of modules) {
    const path = resolve(cwd, m);
    let exports: Record<string, unknown>;
    try {
      exports = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    } catch (cause) {
      throw new CliError('ModuleLoadFailed', `cannot import ${path}: ${cause instanceof Error ? cause.message : String(cause)} (point --module at built JavaScript, e.g. dist/apis/index.js, and build first)`, { cause });
    }
    for (const value of Object.values(exports)) {
      const candidates = Array.isArray(value) ? (value as unknown[]) : [value];
      for (const c of candidates) if (isSchemaKind(c) && !found.includes(c)) found.push(c);
    }
  }
  return found;
}
