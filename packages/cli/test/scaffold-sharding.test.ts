/**
 * A new project run sharded, as its Helm chart runs it: `kubeloop create api`
 * adds a second kind, the project is built, `kubeloop generate helm` writes
 * its chart, and the manager container of `helm template ... --set
 * sharding.enable=true --set manager.replicas=2` (its args, and its env with
 * the downward API's fields filled in as the kubelet would) is run as two
 * processes of the built `dist/main.js` against the shared control plane.
 * Every Website and Blog is reconciled, each by one replica at a time (every
 * reconcile's interval logged by each replica: none overlaps another
 * replica's of the same object), both replicas share the work; after one is
 * killed with SIGKILL, the other deletes its Lease once it has expired and
 * reconciles every object, the dead one's too, after each is changed.
 *
 * The only change to the project is a log line per reconcile in main.ts
 * (`manager.onReconcile`) and a 50 ms pause in the Website reconciler, so
 * that reconciles last long enough for an overlap to show.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { createProject } from 'create-kubeloop';
import { generateCrds, generateHelm, runCli } from '../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { helmBinary } from '../../../test/support/helm.js';
import { kubectlOk } from '../../../test/support/kubectl.js';
import { startLogged } from '../../../test/support/logged-process.js';
import type { Running } from '../../../test/support/logged-process.js';
import { io } from './support.js';

// Inside this package, so the project's imports of @kubeloop/* resolve to the workspace's packages.
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');
const tsc = join(root, 'node_modules', '.bin', 'tsc');
const MINUTE = 60_000;
const WEBSITES = 24;
const BLOGS = 8;
let parent: string;
const replicas: Running[] = [];

beforeAll(() => {
  parent = mkdtempSync(join(here, '..', '.tmp-scaffold-sharding-'));
});
afterAll(() => {
  for (const r of replicas) r.kill('SIGKILL');
  rmSync(parent, { recursive: true, force: true });
});

function run(cmd: string, args: readonly string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

interface Container {
  args: string[];
  env: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
}

/** One reconcile as a replica logged it: which object, from when to when (its own clock: all on this machine). */
interface Interval {
  replica: string;
  key: string;
  start: number;
  end: number;
}

function intervals(replica: string, r: Running): Interval[] {
  return r.lines
    .filter((l) => l['msg'] === 'traced reconcile')
    .map((l) => {
      const end = Date.parse(l['time'] as string); // pino's ISO time, to the millisecond
      return { replica, key: `${l['controller'] as string}/${l['key'] as string}`, end, start: end - (l['durationMs'] as number) };
    });
}

/** Pairs of reconciles of one object by two replicas whose intervals overlap. */
function overlaps(all: readonly Interval[]): string[] {
  const found: string[] = [];
  const byKey = new Map<string, Interval[]>();
  for (const i of all) byKey.set(i.key, [...(byKey.get(i.key) ?? []), i]);
  for (const [key, list] of byKey) {
    for (const a of list) for (const b of list) if (a.replica < b.replica && a.start < b.end && b.start < a.end) found.push(`${key}: ${a.replica} ${a.start}-${a.end}, ${b.replica} ${b.start}-${b.end}`);
  }
  return found;
}

describe('a new project run sharded with its Helm chart\'s flags', () => {
  it('two replicas share every object without overlapping; one killed, the other takes its objects over', async () => {
    const name = uniqueName('shard');
    const group = `${name}.example.com`;
    const namespace = `${name}-system`;
    const kubeconfig = testKubeconfigPath();
    const dir = (await createProject({ name, cwd: parent })).directory;

    // A second kind: create api registers its controller with the options setupControllers is given.
    expect(await runCli(['create', 'api', '--group', group, '--version', 'v1', '--kind', 'Blog', '--cwd', dir], io().io)).toBe(0);
    expect(await readFile(join(dir, 'src/controllers/index.ts'), 'utf8')).toContain('  setupBlogController(manager, options);\n');
    expect(await readFile(join(dir, 'src/controllers/blog-controller.ts'), 'utf8')).toContain('.withOptions(shard ? { shard } : {})');
    let main = await readFile(join(dir, 'src/main.ts'), 'utf8');
    expect(main).toContain('const kinds = [Website, Blog /* kubeloop:scaffold:kinds */];');

    // The test's only changes: a line per reconcile, and reconciles of Websites made 50 ms longer.
    main = main.replace('// kubeloop:scaffold:webhooks', "manager.onReconcile((r) => log.info({ controller: r.controller, key: `${r.request.namespace}/${r.request.name}`, durationMs: r.durationMs, result: r.result }, 'traced reconcile'));\n// kubeloop:scaffold:webhooks");
    await writeFile(join(dir, 'src/main.ts'), main);
    const websiteController = join(dir, 'src/controllers/website-controller.ts');
    const source = await readFile(websiteController, 'utf8');
    const slowed = source.replace('Promise<ReconcileResult> {\n', 'Promise<ReconcileResult> {\n    await new Promise((r) => setTimeout(r, 50));\n');
    expect(slowed).not.toBe(source);
    await writeFile(websiteController, slowed);

    // Built with tsc (pino-pretty, loaded on a terminal only, is not installed here: a declaration stands in).
    await mkdir(join(dir, 'typings'), { recursive: true });
    await writeFile(join(dir, 'typings', 'pino-pretty.d.ts'), "declare module 'pino-pretty';\n");
    await writeFile(join(dir, 'tsconfig.build-test.json'), JSON.stringify({ extends: './tsconfig.json', include: ['src', 'typings'] }));
    const built = await run(tsc, ['-p', 'tsconfig.build-test.json'], dir);
    expect(built.code, built.output).toBe(0);
    await generateCrds({ modules: ['dist/apis/index.js'], outDir: 'config/crd', cwd: dir });

    // The chart's manager container, sharded, two replicas.
    await generateHelm({ cwd: dir });
    const helm = await helmBinary();
    const rendered = await run(helm, ['template', name, 'dist/chart', '--namespace', namespace, '--set', 'sharding.enable=true', '--set', 'manager.replicas=2'], dir);
    expect(rendered.code, rendered.output).toBe(0);
    const deployment = parseAllDocuments(rendered.output)
      .map((d) => d.toJSON() as { kind?: string; spec?: { replicas: number; template: { spec: { containers: Container[] } } } } | null)
      .find((o) => o?.kind === 'Deployment');
    expect(deployment?.spec?.replicas).toBe(2);
    const container = deployment!.spec!.template.spec.containers[0]!;
    expect(container.args).toEqual(['--metrics-bind-address=0.0.0.0:8443', '--health-probe-bind-address=0.0.0.0:8081', `--shard-ring=${name}`, `--shard-namespace=${namespace}`]);
    const podEnv = (pod: string): Record<string, string> =>
      Object.fromEntries(
        container.env.map((e) => {
          const field = e.valueFrom?.fieldRef?.fieldPath;
          const value = e.value ?? (field === 'metadata.name' ? pod : field === 'metadata.namespace' ? namespace : undefined);
          if (value === undefined) throw new Error(`env ${e.name}: ${JSON.stringify(e)} is not one the test can fill in`);
          return [e.name, value];
        }),
      );
    expect(Object.keys(podEnv('x'))).toEqual(['POD_NAMESPACE', 'POD_NAME']);

    await kubectlOk(['create', 'namespace', namespace]);
    await kubectlOk(['apply', '--server-side', '-k', join(dir, 'config/crd')]);
    await kubectlOk(['wait', '--for=condition=Established', `crd/websites.${group}`, `crd/blogs.${group}`, '--timeout=60s']);
    const object = (kind: string, n: string, spec: Record<string, string>): { apiVersion: string; kind: string; metadata: { name: string; namespace: string }; spec: Record<string, string> } => ({ apiVersion: `${group}/v1`, kind, metadata: { name: n, namespace }, spec });
    const objects = [...Array.from({ length: WEBSITES }, (_, i) => object('Website', `site-${i}`, { title: `Site ${i}` })), ...Array.from({ length: BLOGS }, (_, i) => object('Blog', `blog-${i}`, { message: `blog ${i}` }))];
    await kubectlOk(['apply', '--server-side', '-f', '-'], { stdin: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }) });

    // Two pods of the Deployment: the chart's args, then what a pod on this machine must differ in (free ports; the kubeconfig).
    const pods = [`${name}-manager-7d9f-a`, `${name}-manager-7d9f-b`];
    for (const pod of pods) {
      replicas.push(startLogged('dist/main.js', [...container.args, '--metrics-bind-address=127.0.0.1:0', '--health-probe-bind-address=127.0.0.1:0', '--kubeconfig', kubeconfig], { cwd: dir, env: podEnv(pod) }));
    }
    const [a, b] = replicas as [Running, Running];
    for (const [i, r] of replicas.entries()) {
      const started = await r.until((l) => l['msg'] === `starting ${name}`);
      expect(started).toMatchObject({ shardRing: name, identity: pods[i] });
    }

    type Listed = { items: { kind: string; metadata: { name: string; generation: number }; status?: { observedGeneration?: number; conditions?: { type: string; status: string }[] } }[] };
    const allReconciled = async (): Promise<true | undefined> => {
      const list = JSON.parse(await kubectlOk(['get', `websites.${group},blogs.${group}`, '-n', namespace, '-o', 'json'])) as Listed;
      const done = list.items.filter((o) => o.status?.observedGeneration === o.metadata.generation && o.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
      return done.length === objects.length ? true : undefined;
    };
    await until('every Website and Blog Ready for its generation', allReconciled, 3 * MINUTE);
    const keysOf = (r: Running, name: string): Set<string> => new Set(intervals(name, r).map((i) => i.key));
    const firstA = keysOf(a, 'a');
    const firstB = keysOf(b, 'b');
    // Both replicas worked, on both kinds' objects between them, and every object was reconciled by one of them.
    expect(firstA.size, 'replica a reconciled nothing').toBeGreaterThan(0);
    expect(firstB.size, 'replica b reconciled nothing').toBeGreaterThan(0);
    const all = new Set(objects.map((o) => `${o.kind.toLowerCase()}/${namespace}/${o.metadata.name}`));
    expect(new Set([...firstA, ...firstB])).toEqual(all);
    const leases = async (): Promise<string[]> =>
      ((JSON.parse(await kubectlOk(['get', 'leases', '-n', namespace, '-l', `kubeloop.dev/shard-ring=${name}`, '-o', 'json'])) as { items: { spec: { holderIdentity: string } }[] }).items.map((l) => l.spec.holderIdentity).sort());
    expect(await leases()).toEqual([...pods].sort());

    // Replica a dies without a word; b takes over once a's Lease expires, and reconciles every object after it changes.
    a.kill('SIGKILL');
    await a.exited;
    const killedAt = Date.now();
    await until('the dead replica\'s Lease deleted by the survivor', async () => ((await leases()).join() === pods[1] ? true : undefined), 2 * MINUTE);
    const leaseGoneAt = Date.now();
    const changed = objects.map((o) => ({ ...o, spec: Object.fromEntries(Object.entries(o.spec).map(([k, v]) => [k, `${v} v2`])) }));
    await kubectlOk(['apply', '--server-side', '-f', '-'], { stdin: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: changed }) });
    await until('every object reconciled again, by the survivor', allReconciled, 3 * MINUTE);
    const reconciledAgainAt = Date.now();
    const afterKill = new Set(intervals('b', b).filter((i) => i.end > killedAt).map((i) => i.key));
    for (const key of firstA) expect(afterKill, `replica a's ${key} not reconciled by b after the kill`).toContain(key);
    expect(afterKill).toEqual(all);

    const logged = [...intervals('a', a), ...intervals('b', b)];
    expect(overlaps(logged)).toEqual([]);
    console.log(`first pass: replica a reconciled ${firstA.size} objects, b ${firstB.size}; after a's SIGKILL, b's Lease alone after ${leaseGoneAt - killedAt} ms, every changed object reconciled ${reconciledAgainAt - killedAt} ms after the kill; ${logged.length} reconciles logged, 0 overlapping`);
    expect(logged.filter((i) => i.key.startsWith('website/')).length).toBeGreaterThanOrEqual(2 * WEBSITES);

    // Clean up while b runs: its finalizer leaves with the Websites.
    await kubectlOk(['delete', `websites.${group},blogs.${group}`, '--all', '-n', namespace, '--timeout=120s']);
    b.kill('SIGTERM');
    expect(await b.exited).toBe(0);
    expect(await leases()).toEqual([]); // a replica stopped by its signal deletes its Lease
    await kubectlOk(['delete', 'crd', `websites.${group}`, `blogs.${group}`, '--wait=false']);
    await kubectlOk(['delete', 'namespace', namespace, '--wait=false']);
  }, 12 * MINUTE);

  it('refuses --shard-ring with --leader-elect, and a bad ring name, with one line and exit status 2', async () => {
    const dir = (await createProject({ name: 'refused', cwd: join(parent, 'refused') })).directory;
    await mkdir(join(dir, 'typings'), { recursive: true });
    await writeFile(join(dir, 'typings', 'pino-pretty.d.ts'), "declare module 'pino-pretty';\n");
    await writeFile(join(dir, 'tsconfig.build-test.json'), JSON.stringify({ extends: './tsconfig.json', include: ['src', 'typings'] }));
    const built = await run(tsc, ['-p', 'tsconfig.build-test.json'], dir);
    expect(built.code, built.output).toBe(0);
    const kubeconfig = testKubeconfigPath();
    const both = await run(process.execPath, ['dist/main.js', '--kubeconfig', kubeconfig, '--shard-ring', 'refused', '--shard-namespace', 'default', '--leader-elect', '--leader-election-namespace', 'default'], dir);
    expect(both.code).toBe(2);
    expect(both.output).toContain('--shard-ring replaces --leader-elect');
    const bad = await run(process.execPath, ['dist/main.js', '--kubeconfig', kubeconfig, '--shard-ring', 'Not_A_Name', '--shard-namespace', 'default'], dir);
    expect(bad.code).toBe(2);
    expect(bad.output.trim().split('\n')).toHaveLength(1);
    expect(bad.output).toMatch(/^refused: .*shard ring/);
  }, 5 * MINUTE);
});
