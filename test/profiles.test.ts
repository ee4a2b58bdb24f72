/**
 * Profiles on demand (ManagerOptions.profiling) from a running manager on
 * the real API server, through its secure metrics server: refused without a
 * token (401) and for an account allowed /metrics only (403); a CPU profile
 * taken while a controller reconciles 300 ConfigMaps parses and names
 * kubeloop's reconcile functions; a heap snapshot of a process holding
 * 1,000 objects of a class parses and counts them; a sampling heap profile
 * parses; one profile at a time (409); bounds refused (400); and `kubeloop
 * profile` writes the same files a user opens in Chrome DevTools, the
 * commands of docs/tracing.md run exactly as written through the built bin.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createLogger, createManager, isManagerError } from '@kubeloop/manager';
import type { Manager } from '@kubeloop/manager';
import { ConfigMap } from '@kubeloop/scheme';
import { runCli } from '../packages/cli/src/cli.js';
import { documentedCommands } from './support/doc-commands.js';
import { holdDocumentedPorts } from './support/fixed-ports.js';
import { testKubeConfig, uniqueName } from './support/env.js';

let admin: Client;
let ns: string;
let profilerToken: string;
let scraperToken: string;
let manager: Manager;
let stop: AbortController;
let done: Promise<void>;
const role = uniqueName('profiler');
const scraperRole = uniqueName('scraper');
let reconciles = 0;

async function tokenFor(name: string): Promise<string> {
  const sa = await admin.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } });
  const answer = await admin.subResource('token').create<{ status: { token: string } }>({ ...sa, apiVersion: 'v1', kind: 'ServiceAccount' }, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  return answer.status.token;
}

async function bind(name: string, account: string, paths: string[]): Promise<void> {
  await admin.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name }, rules: [{ nonResourceURLs: paths, verbs: ['get'] }] });
  await admin.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ kind: 'ServiceAccount', name: account, namespace: ns }],
  });
}

/** GET over HTTPS (the manager's self-signed certificate), whole body as a Buffer. */
function get(path: string, token?: string): Promise<{ status: number; body: Buffer; type: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(`${manager.metricsUrl}${path}`, { rejectUnauthorized: false, agent: false, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), type: res.headers['content-type'] }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  samples: number[];
  startTime: number;
  endTime: number;
}

/** How many nodes of a heap snapshot are objects named `name` (a class's instances). */
function countInstances(snapshot: { snapshot: { meta: { node_fields: string[]; node_types: [string[]] } }; nodes: number[]; strings: string[] }, name: string): number {
  const fields = snapshot.snapshot.meta.node_fields;
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const objectType = snapshot.snapshot.meta.node_types[0].indexOf('object');
  let n = 0;
  for (let i = 0; i < snapshot.nodes.length; i += width) {
    if (snapshot.nodes[i + typeAt] === objectType && snapshot.strings[snapshot.nodes[i + nameAt]!] === name) n++;
  }
  return n;
}

beforeAll(async () => {
  admin = createClient({ kubeConfig: testKubeConfig(), fieldOwner: 'profiles-test' });
  ns = uniqueName('profiles');
  await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  profilerToken = await tokenFor('profiler');
  scraperToken = await tokenFor('prometheus');
  await bind(role, 'profiler', ['/debug/profile/*']);
  await bind(scraperRole, 'prometheus', ['/metrics']);
  manager = createManager({
    kubeConfig: testKubeConfig(),
    namespaces: [ns],
    logger: createLogger({ level: 'silent' }),
    metricsBindAddress: '127.0.0.1:0',
    secureMetrics: {},
    profiling: { maxDurationMs: 20_000 },
  });
  manager.addController({ name: 'profiled', for: ConfigMap }, async (req, ctx) => {
    await manager.client.patch(ConfigMap, req, mergePatch({ metadata: { annotations: { 'profiles.test/at': String(Date.now()) } } }), { signal: ctx.signal });
    reconciles++;
  });
  stop = new AbortController();
  done = manager.start(stop.signal);
  done.catch(() => undefined);
  const deadline = Date.now() + 30_000;
  while (manager.metricsUrl === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
}, 120_000);

afterAll(async () => {
  stop?.abort();
  await done?.catch(() => undefined);
  for (const name of [role, scraperRole]) {
    await admin.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name } }).catch(() => undefined);
    await admin.delete({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name } }).catch(() => undefined);
  }
  admin?.transport.close();
});

describe('profiles from a running manager', () => {
  it('refuses a caller without a token (401) and one allowed /metrics only (403); the profiling options need secure metrics', async () => {
    expect((await get('/debug/profile/heap')).status).toBe(401);
    const denied = await get('/debug/profile/heap', scraperToken);
    expect(denied.status).toBe(403);
    expect(denied.body.toString()).toContain('cannot get path "/debug/profile/heap"');
    // The scraper still scrapes.
    expect((await get('/metrics', scraperToken)).status).toBe(200);
    let err: unknown;
    try {
      createManager({ kubeConfig: testKubeConfig(), logger: createLogger({ level: 'silent' }), metricsBindAddress: '127.0.0.1:0', profiling: true });
    } catch (e) {
      err = e;
    }
    expect(isManagerError(err) && err.reason === 'InvalidOptions' && /secureMetrics/.test(err.message)).toBe(true);
  });

  it('a CPU profile taken while 300 ConfigMaps reconcile parses as a .cpuprofile and names kubeloop\'s reconcile functions; a second profile meanwhile is refused (409)', async () => {
    const before = reconciles;
    // 8 s, probed after 2 s: the profile request is authorized by a TokenReview and a SubjectAccessReview first,
    // which took over 500 ms with four test files side by side on 2 cores (the probe then took the heap snapshot)
    const profiling = get('/debug/profile/cpu?seconds=8', profilerToken);
    const creating = (async () => {
      for (let i = 0; i < 300; i += 30) {
        await Promise.all(Array.from({ length: 30 }, (_, j) => admin.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i + j}`, namespace: ns }, data: { i: String(i + j) } })));
      }
    })();
    await new Promise((r) => setTimeout(r, 2000));
    const busy = await get('/debug/profile/heap', profilerToken);
    expect(busy.status).toBe(409);
    expect(busy.body.toString()).toContain('one profile at a time');
    await creating;
    const { status, body, type } = await profiling;
    expect(status).toBe(200);
    expect(type).toBe('application/json');
    const profile = JSON.parse(body.toString()) as CpuProfile;
    expect(profile.samples.length).toBeGreaterThan(0);
    expect(profile.endTime - profile.startTime).toBeGreaterThanOrEqual(7_000_000); // µs
    expect(reconciles - before).toBeGreaterThan(0);
    const names = new Set(profile.nodes.map((n) => n.callFrame.functionName));
    expect(names.has('runReconcile') || names.has('reconcileKey')).toBe(true);
  }, 6 * 60_000);

  it('a heap snapshot parses and counts the 1,000 objects of a class the process holds', async () => {
    class ProfiledDisk {
      constructor(readonly name: string) {}
    }
    const held = Array.from({ length: 1000 }, (_, i) => new ProfiledDisk(`disk-${i}`));
    const { status, body } = await get('/debug/profile/heap', profilerToken);
    expect(status).toBe(200);
    const snapshot = JSON.parse(body.toString()) as Parameters<typeof countInstances>[0];
    expect(countInstances(snapshot, 'ProfiledDisk')).toBe(1000);
    expect(held.length).toBe(1000); // held until the snapshot was taken
  }, 6 * 60_000); // a heap snapshot of a busy process took over two minutes at load ~25

  it('a sampling heap profile parses; seconds out of bounds are refused (400)', async () => {
    const { status, body } = await get('/debug/profile/heap-sampling?seconds=1', profilerToken);
    expect(status).toBe(200);
    const profile = JSON.parse(body.toString()) as { head: { callFrame: { functionName: string } }; samples: unknown[] };
    expect(profile.head.callFrame.functionName).toBe('(root)');
    expect(Array.isArray(profile.samples)).toBe(true);
    const tooLong = await get('/debug/profile/cpu?seconds=3600', profilerToken);
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.toString()).toContain('at most 20');
    expect((await get('/debug/profile/cpu?seconds=soon', profilerToken)).status).toBe(400);
  }, 6 * 60_000);

  it('kubeloop profile writes a .cpuprofile and a .heapsnapshot; a refusal is an error naming what to grant', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kubeloop-profile-'));
    try {
      const tokenFile = join(dir, 'token');
      await writeFile(tokenFile, `${profilerToken}\n`);
      const out: string[] = [];
      const err: string[] = [];
      const io = { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) };
      expect(await runCli(['profile', manager.metricsUrl!, '--cpu', '2s', '-o', join(dir, 'x.cpuprofile'), '--token-file', tokenFile, '--insecure-skip-tls-verify'], io)).toBe(0);
      const cpu = JSON.parse(await readFile(join(dir, 'x.cpuprofile'), 'utf8')) as CpuProfile;
      expect(cpu.nodes.length).toBeGreaterThan(0);
      expect(out.join('')).toContain('x.cpuprofile');
      expect(await runCli(['profile', manager.metricsUrl!, '--heap', '-o', join(dir, 'x.heapsnapshot'), '--token', profilerToken, '--insecure-skip-tls-verify'], io)).toBe(0);
      const heap = JSON.parse(await readFile(join(dir, 'x.heapsnapshot'), 'utf8')) as { snapshot: { node_count: number } };
      expect(heap.snapshot.node_count).toBeGreaterThan(1000);
      err.length = 0;
      expect(await runCli(['profile', manager.metricsUrl!, '--heap', '-o', join(dir, 'y.heapsnapshot'), '--token', scraperToken, '--insecure-skip-tls-verify'], io)).not.toBe(0);
      expect(err.join('')).toContain('nonResourceURLs ["/debug/profile/*"]');
      expect(await runCli(['profile', manager.metricsUrl!, '--cpu', 'a while', '--insecure-skip-tls-verify'], io)).not.toBe(0);
      expect(err.join('')).toContain('--cpu takes a duration such as 30s');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 6 * 60_000);

  it('runs the commands docs/tracing.md shows, exactly as written, through the built bin, against a manager serving profiles on 127.0.0.1:8443', async ({ onTestFinished }) => {
    // Waits its turn for 127.0.0.1:8443 (the registry walk's `pnpm start`, the troubleshooting doc's manager): the timeout allows for it.
    onTestFinished(await holdDocumentedPorts('test/profiles.test.ts'));
    const root = join(import.meta.dirname, '..');
    const commands = documentedCommands(root).filter((c) => c.file === 'docs/tracing.md').map((c) => c.text);
    expect(commands).toHaveLength(2);
    const bin = join(root, 'packages', 'cli', 'dist', 'bin.js');
    expect(existsSync(bin), 'build first (pnpm build)').toBe(true);
    const dir = await mkdtemp(join(tmpdir(), 'kubeloop-profile-doc-'));
    // `kubeloop` on PATH is the built bin, as a global install or `pnpm exec` would have it.
    await writeFile(join(dir, 'kubeloop'), `#!/bin/sh\nexec "${process.execPath}" "${bin}" "$@"\n`);
    await chmod(join(dir, 'kubeloop'), 0o755);
    await writeFile(join(dir, 'token'), profilerToken);
    const documented = createManager({ kubeConfig: testKubeConfig(), namespaces: [ns], logger: createLogger({ level: 'silent' }), metricsBindAddress: '127.0.0.1:8443', secureMetrics: {}, profiling: true });
    const ac = new AbortController();
    const running = documented.start(ac.signal);
    running.catch(() => undefined);
    try {
      const deadline = Date.now() + 30_000;
      while (documented.metricsUrl === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(documented.metricsUrl).toBe('https://127.0.0.1:8443');
      for (const text of commands) {
        const { stdout } = await promisify(execFile)('sh', ['-c', text], { cwd: dir, env: { ...process.env, PATH: `${dir}:${process.env['PATH'] ?? ''}` } });
        expect(stdout).toMatch(/^wrote .*harddisk\.(cpuprofile|heapsnapshot) \(\d+ bytes\)\n$/);
      }
      const cpu = JSON.parse(await readFile(join(dir, 'harddisk.cpuprofile'), 'utf8')) as CpuProfile;
      expect(cpu.endTime - cpu.startTime).toBeGreaterThanOrEqual(9_000_000); // 10 s, in µs
      const heap = JSON.parse(await readFile(join(dir, 'harddisk.heapsnapshot'), 'utf8')) as { snapshot: { node_count: number } };
      expect(heap.snapshot.node_count).toBeGreaterThan(1000);
    } finally {
      ac.abort();
      await running.catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    }
  }, 15 * 60_000);
});
