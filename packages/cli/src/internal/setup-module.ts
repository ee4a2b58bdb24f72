/**
 * Loading a project's setup function (`dist/controllers/index.js#setupControllers`)
 * and the kubeloop packages as the project resolves them: what `generate rbac`
 * and `generate webhooks` share.
 */
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Manager } from '@kubeloop/manager';
import { CliError } from '../errors.js';

/** Imports a package as the project resolves it (so its own copy is used), else as the CLI does. */
export async function importFromProject<T>(name: string, cwd: string): Promise<T> {
  let url: string | undefined;
  try {
    url = pathToFileURL(createRequire(join(cwd, 'package.json')).resolve(name)).href;
  } catch {
    url = undefined;
  }
  return (await import(url ?? name)) as T;
}

/** `module#export` split in two. */
export function splitSetup(setup: string): { module: string; exportName: string } {
  const hash = setup.lastIndexOf('#');
  if (hash <= 0 || hash === setup.length - 1) {
    throw new CliError('Usage', `--setup must name a module and its export, e.g. dist/controllers/index.js#setupControllers, not ${JSON.stringify(setup)}`);
  }
  return { module: setup.slice(0, hash), exportName: setup.slice(hash + 1) };
}

/** The setup function `module#export` names (the module relative to `cwd`). */
export async function importSetup(spec: string, cwd: string): Promise<{ exportName: string; setup: (manager: Manager) => unknown }> {
  const { module, exportName } = splitSetup(spec);
  const path = resolve(cwd, module);
  let exports: Record<string, unknown>;
  try {
    exports = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (cause) {
    throw new CliError('ModuleLoadFailed', `cannot import ${path}: ${cause instanceof Error ? cause.message : String(cause)} (point --setup at built JavaScript, e.g. ${module.startsWith('dist/') ? module : 'dist/controllers/index.js'}#${exportName}, and build first)`, { cause });
  }
  const setup = exports[exportName];
  if (typeof setup !== 'function') {
    const functions = Object.keys(exports).filter((k) => typeof exports[k] === 'function').sort();
    throw new CliError('ModuleLoadFailed', `${module} exports no function ${exportName}${functions.length > 0 ? ` (its functions: ${functions.join(', ')})` : ''}`);
  }
  return { exportName, setup: setup as (manager: Manager) => unknown };
}
