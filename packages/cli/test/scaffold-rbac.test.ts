/**
 * A new project's config/rbac/role.yaml is what `kubeloop generate rbac`
 * writes for it (so `pnpm generate:check` passes before any edit), and after
 * `kubeloop create api` the generated role gains the new kind's reads and
 * status. The project's TypeScript sources are loaded as they are (vitest
 * compiles them); the registry end-to-end test does the same on a project
 * built with tsc from published packages.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from 'create-kubeloop';
import { createApi, generateRbac, readConfig } from '../src/index.js';
import type { GenerateRbacOptions } from '../src/index.js';

// Inside this package, so the project's imports of @kubeloop/* resolve to the workspace's packages.
const here = dirname(fileURLToPath(import.meta.url));
let parent: string;

beforeAll(() => {
  parent = mkdtempSync(join(here, '..', '.tmp-scaffold-'));
});

/** A new project; its own directory, so its modules are loaded afresh. */
async function newProject(where: string): Promise<string> {
  return (await createProject({ name: 'demo', cwd: join(parent, where) })).directory;
}
afterAll(() => {
  rmSync(parent, { recursive: true, force: true });
});

async function options(check: boolean, dir: string): Promise<GenerateRbacOptions> {
  const config = await readConfig(dir);
  const rbac = config.rbac!;
  // The sources, not dist/: the same modules the built project would load.
  return {
    setup: rbac.setup!.replace(/^dist\/(.*)\.js#/, 'src/$1.ts#'),
    kindModules: (config.crds?.modules ?? []).map((m) => m.replace(/^dist\/(.*)\.js$/, 'src/$1.ts')),
    name: rbac.name!,
    outFile: rbac.outFile!,
    ...(rbac.leaderElectionNamespace ? { leaderElectionNamespace: rbac.leaderElectionNamespace } : {}),
    secureMetrics: rbac.secureMetrics ?? false,
    check,
    cwd: dir,
  };
}

describe('the scaffold’s RBAC', () => {
  it('config/rbac/role.yaml of a new project is what generate rbac writes', async () => {
    const dir = await newProject('fresh');
    const result = await generateRbac(await options(true, dir));
    expect(result.diff).toBe('');
    expect(result.unchanged).toEqual([join(dir, 'config/rbac/role.yaml')]);
    expect(result.roles.map((r) => `${r.kind} ${r.metadata.namespace ?? ''}/${r.metadata.name}`)).toEqual(['ClusterRole /demo-manager', 'Role demo-system/demo-manager']);
    // The bindings name these roles.
    const bindings = readFileSync(join(dir, 'config/rbac/role-binding.yaml'), 'utf8');
    expect(bindings).toContain('kind: ClusterRole\n  name: demo-manager');
    expect(bindings).toContain('kind: Role\n  name: demo-manager');
  });

  it('after create api, the generated role reads the new kind and writes its status', async () => {
    const dir = await newProject('with-blog');
    await createApi({ group: 'demo.example.com', version: 'v1', kind: 'Blog', cwd: dir });
    const stale = await generateRbac(await options(true, dir));
    expect(stale.changed).toEqual([join(dir, 'config/rbac/role.yaml')]);
    expect(stale.diff).toContain('+      - blogs\n');
    const written = await generateRbac(await options(false, dir));
    const rules = written.roles[0]!.rules;
    expect(rules).toContainEqual({ apiGroups: ['demo.example.com'], resources: ['blogs/status', 'websites/status'], verbs: ['get', 'update', 'patch'] });
    expect(rules.find((r) => r.resources?.includes('blogs'))?.verbs).toEqual(['get', 'list', 'watch']);
    expect((await generateRbac(await options(true, dir))).diff).toBe('');
  });
});
