/**
 * kubeloop generate rbac: the roles a project's setup function implies (reads
 * of what its controllers watch, what they declare, the manager's own needs),
 * cluster-wide or per namespace; the file written, then checked; typed
 * errors that say what to do. That the roles are what the API server needs
 * is tested by running the example operator under them
 * (examples/harddisk-operator/test/rbac.test.ts).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { RBAC_MARKER, generateRbac, isCliError, runCli } from '../src/index.js';
import { io } from './support.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), 'fixtures');
let out: string;

beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), 'kubeloop-cli-rbac-'));
});
afterAll(async () => {
  await rm(out, { recursive: true, force: true });
});

const rule = (group: string, resources: string[], verbs: string[]): unknown => ({ apiGroups: [group], resources, verbs });

describe('generate rbac', () => {
  it('derives reads from what controllers watch, adds what they declare and what the manager needs', async () => {
    const outFile = join(out, 'role.yaml');
    const result = await generateRbac({ setup: 'controllers.ts#setupControllers', name: 'widgets', outFile, cwd: fixtures, leaderElectionNamespace: 'ops', secureMetrics: true });
    expect(result.roles).toEqual([
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'widgets' },
        rules: [
          rule('', ['configmaps'], ['get', 'list', 'watch', 'create', 'update', 'delete']),
          rule('', ['namespaces', 'secrets'], ['get', 'list', 'watch']),
          rule('authentication.k8s.io', ['tokenreviews'], ['create']),
          rule('authorization.k8s.io', ['subjectaccessreviews'], ['create']),
          rule('cli.kubeloop.dev', ['gadgets', 'widgets'], ['get', 'list', 'watch']),
          rule('cli.kubeloop.dev', ['widgets/finalizers'], ['update']),
          rule('cli.kubeloop.dev', ['widgets/scale'], ['get']),
          rule('cli.kubeloop.dev', ['widgets/status'], ['get', 'update', 'patch']),
          rule('events.k8s.io', ['events'], ['create', 'patch']),
          { nonResourceURLs: ['/healthz'], verbs: ['get'] },
        ],
      },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'widgets', namespace: 'ops' }, rules: [rule('coordination.k8s.io', ['leases'], ['get', 'create', 'update'])] },
    ]);
    // Each permission is listed with its reason above the roles.
    const text = await readFile(outFile, 'utf8');
    expect(text.split('\n')[0]).toContain(RBAC_MARKER);
    expect(text).toContain('#   core secrets get,list,watch: controller widget watches Secret');
    expect(text).toContain('#   cli.kubeloop.dev widgets/finalizers update: controller widget sets owner references to Widget (blockOwnerDeletion)');
    expect(text).toContain('#   coordination.k8s.io leases get,create,update in ops: leader election');
    expect(parseAllDocuments(text).map((d) => d.toJS() as unknown)).toEqual(result.roles);
    // No fleet, no member role.
    expect(result.memberRoles).toEqual([]);
  });

  it('a manager with a fleet: the member clusters\' role in member-role.yaml beside the host\'s, the fleet\'s host needs in the host\'s', async () => {
    const dir = join(out, 'fleet');
    const outFile = join(dir, 'role.yaml');
    const result = await generateRbac({ setup: 'controllers.ts#setupFleet', name: 'widgets', outFile, cwd: fixtures });
    expect(result.changed.map((f) => f.slice(dir.length + 1)).sort()).toEqual(['member-role.yaml', 'role.yaml']);
    // In members: what the fleet controller watches there, its Widget status and finalizers, what it declares; no events.
    expect(result.memberRoles).toEqual([
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'widgets-member' },
        rules: [
          rule('', ['configmaps'], ['get', 'list', 'watch']),
          rule('', ['secrets'], ['create']),
          rule('cli.kubeloop.dev', ['widgets'], ['get', 'list', 'watch']),
          rule('cli.kubeloop.dev', ['widgets/finalizers'], ['update']),
          rule('cli.kubeloop.dev', ['widgets/status'], ['get', 'update', 'patch']),
        ],
      },
    ]);
    // In the host: its host watch and declared host write, and the provider's Secrets of its namespace.
    expect(result.roles).toEqual([
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'widgets' }, rules: [rule('', ['configmaps'], ['get', 'list', 'watch', 'patch'])] },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'widgets', namespace: 'fleets' }, rules: [rule('', ['secrets'], ['list', 'watch'])] },
    ]);
    const member = await readFile(join(dir, 'member-role.yaml'), 'utf8');
    expect(member.split('\n')[0]).toContain(RBAC_MARKER);
    expect(member).toContain('#   core secrets create: controller widget declares it');
    expect(parseAllDocuments(member).map((d) => d.toJS() as unknown)).toEqual(result.memberRoles);
    // --check covers the member role too: edited, it fails with a diff naming it.
    await writeFile(join(dir, 'member-role.yaml'), member.replace('- create', '- delete'));
    const check = await generateRbac({ setup: 'controllers.ts#setupFleet', name: 'widgets', outFile, cwd: fixtures, check: true });
    expect(check.changed.map((f) => f.slice(dir.length + 1))).toEqual(['member-role.yaml']);
    expect(check.diff).toContain('a/');
    expect(check.diff).toContain('member-role.yaml');
  });

  it('a namespace-restricted manager gets Roles in its namespaces; cluster-scoped kinds stay in the ClusterRole', async () => {
    const result = await generateRbac({ setup: 'controllers.ts#setupControllers', name: 'w', outFile: join(out, 'ns.yaml'), cwd: fixtures, namespaces: ['a', 'b'] });
    expect(result.roles.map((r) => `${r.kind} ${r.metadata.namespace ?? ''}`)).toEqual(['ClusterRole ', 'Role a', 'Role b']);
    const [cluster, a, b] = result.roles;
    expect(cluster!.rules).toEqual([rule('', ['namespaces'], ['get', 'list', 'watch']), rule('cli.kubeloop.dev', ['gadgets'], ['get', 'list', 'watch']), { nonResourceURLs: ['/healthz'], verbs: ['get'] }]);
    expect(a!.rules).toEqual(b!.rules);
    expect(a!.rules).toContainEqual(rule('', ['secrets'], ['get', 'list', 'watch']));
    expect(a!.rules).toContainEqual(rule('events.k8s.io', ['events'], ['create', 'patch']));
    // Neither secure metrics nor leader election was asked for.
    expect(JSON.stringify(result.roles)).not.toMatch(/tokenreviews|leases/);
  });

  it('a sharded manager (--shard-ring-namespace, or "shardRingNamespace" in package.json): a ring member\'s Leases, merged with leader election\'s in one rule', async () => {
    const ring = await generateRbac({ setup: 'controllers.ts#setupControllers', name: 'w', outFile: join(out, 'ring.yaml'), cwd: fixtures, shardRingNamespace: 'ops' });
    expect(ring.roles.at(-1)).toEqual({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'w', namespace: 'ops' }, rules: [rule('coordination.k8s.io', ['leases'], ['get', 'list', 'create', 'update', 'delete'])] });
    expect(await readFile(join(out, 'ring.yaml'), 'utf8')).toContain('#   coordination.k8s.io leases get,list,create,update,delete in ops: shard ring membership');
    const both = io();
    const args = ['generate', 'rbac', '--setup', 'controllers.ts#setupControllers', '--name', 'w', '--out', join(out, 'both.yaml'), '--cwd', fixtures, '--leader-election-namespace', 'ops', '--shard-ring-namespace', 'ops'];
    expect(await runCli(args, both.io)).toBe(0);
    const roles = parseAllDocuments(await readFile(join(out, 'both.yaml'), 'utf8')).map((d) => d.toJS() as { kind: string; rules: unknown[] });
    expect(roles.find((r) => r.kind === 'Role')?.rules).toEqual([rule('coordination.k8s.io', ['leases'], ['get', 'list', 'create', 'update', 'delete'])]);
    const project = await mkdtemp(join(tmpdir(), 'kubeloop-cli-rbac-ring-'));
    try {
      await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'ring-demo', kubeloop: { rbac: { setup: join(fixtures, 'controllers.ts#setupControllers'), shardRingNamespace: 7 } } }));
      const bad = io();
      expect(await runCli(['generate', 'rbac', '--cwd', project], bad.io)).toBe(1);
      expect(bad.err.join('')).toContain('.rbac.shardRingNamespace must be a string');
    } finally {
      await rm(project, { recursive: true, force: true });
    }
  });

  it('a cache that follows namespaces by label (--namespace-selector, or "namespaceSelector" in package.json): list and watch on namespaces, with the reason; not with --namespace', async () => {
    const followed = io();
    const args = ['generate', 'rbac', '--setup', 'controllers.ts#setupControllers', '--name', 'w', '--out', join(out, 'follow.yaml'), '--cwd', fixtures, '--namespace-selector', 'team=payments'];
    expect(await runCli(args, followed.io)).toBe(0);
    const text = await readFile(join(out, 'follow.yaml'), 'utf8');
    expect(text).toContain('#   core namespaces list,watch: the cache follows the namespaces its namespaceSelector chooses');
    const [cluster] = parseAllDocuments(text).map((d) => d.toJS() as { kind: string; rules: { resources?: string[]; verbs: string[] }[] });
    expect(cluster?.kind).toBe('ClusterRole');
    expect(cluster?.rules.find((r) => r.resources?.includes('namespaces'))?.verbs).toEqual(expect.arrayContaining(['list', 'watch']));
    const both = io();
    expect(await runCli([...args, '--namespace', 'ops'], both.io)).toBe(2);
    expect(both.err.join('')).toContain('keep one');
    const bad = io();
    expect(await runCli(['generate', 'rbac', '--setup', 'controllers.ts#setupControllers', '--name', 'w', '--out', join(out, 'bad.yaml'), '--cwd', fixtures, '--namespace-selector', 'team in (a'], bad.io)).toBe(2);
    expect(bad.err.join('')).toContain('namespaceSelector is not a selector');
  });

  it('--check passes on the file as generated and fails with a diff once it is edited', async () => {
    const outFile = join(out, 'check.yaml');
    const args = ['generate', 'rbac', '--setup', 'controllers.ts#setupControllers', '--name', 'widgets', '--out', outFile, '--cwd', fixtures];
    const first = io();
    expect(await runCli(args, first.io)).toBe(0);
    expect(first.err.join('')).toContain('wrote');
    const clean = io();
    expect(await runCli([...args, '--check'], clean.io)).toBe(0);
    expect(clean.err.join('')).toContain('up to date: ClusterRole widgets (');
    const text = await readFile(outFile, 'utf8');
    await writeFile(outFile, text.replace('      - delete\n', ''));
    const stale = io();
    expect(await runCli([...args, '--check'], stale.io)).toBe(1);
    expect(stale.out.join('')).toContain('+      - delete');
    expect(stale.err.join('')).toContain('is stale; run: kubeloop generate rbac');
    // --check wrote nothing.
    expect(await readFile(outFile, 'utf8')).not.toBe(text);
  });

  it('says what to do when the setup cannot be used', async () => {
    const fail = async (setup: string): Promise<unknown> => generateRbac({ setup, name: 'x', outFile: join(out, 'never.yaml'), cwd: fixtures }).then(() => undefined, (e: unknown) => e);
    const unknown = await fail('controllers.ts#setupUnknownKind');
    expect(isCliError(unknown) && unknown.reason).toBe('InvalidInput');
    expect((unknown as Error).message).toContain('cannot tell the resource name and scope of Thing.nowhere.example.com/v1: register its descriptor');
    const threw = await fail('controllers.ts#setupThrows');
    expect((threw as Error).message).toBe('controllers.ts#setupThrows failed: no StorageClass catalog configured');
    const notFn = await fail('controllers.ts#notAFunction');
    expect(isCliError(notFn) && notFn.reason).toBe('ModuleLoadFailed');
    expect((notFn as Error).message).toContain('exports no function notAFunction (its functions: setupControllers, setupFleet, setupThrows, setupUnknownKind)');
    const missing = await fail('nowhere.js#setup');
    expect(isCliError(missing) && missing.reason).toBe('ModuleLoadFailed');
    const usage = io();
    expect(await runCli(['generate', 'rbac', '--setup', 'controllers.ts', '--name', 'x', '--cwd', fixtures], usage.io)).toBe(2);
    expect(usage.err.join('')).toContain('--setup must name a module and its export');
  });
});
