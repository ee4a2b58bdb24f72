/**
 * A fleet on three real control planes: the shared one as the host, two of
 * its own as members. Members engage and leave while the manager runs;
 * requests carry the cluster; per-cluster caches start on engage and leave
 * nothing behind (informers, their metrics, readiness, connections).
 */
import { mergePatch } from '@kubeloop/client';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { readFileSync } from 'node:fs';
import { ConfigMap, Secret } from '@kubeloop/scheme';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createFleet, KUBECONFIG_SECRET_LABEL, kubeconfigSecretProvider, manualProvider, staticProvider } from '../../src/fleet/index.js';
import type { FleetReconcileReport } from '../../src/fleet/index.js';
import { isManagerError } from '../../src/index.js';
import { eventually, LogCapture, metric, newNamespace, readyz, run, testClient, testManager } from '../support.js';
import { connectionsTo, copyIn, COPY_LABEL, memberClient, registerCopyController, reportKey } from './support.js';

const planes = inject('existingCluster') ? undefined : { m1: createEnvironment(), m2: createEnvironment(), m3: createEnvironment() };

beforeAll(async () => {
  await Promise.all(Object.values(planes ?? {}).map((env) => env.start()));
}, 240_000);
afterAll(async () => {
  await Promise.all(Object.values(planes ?? {}).map((env) => env.stop()));
});

describe.skipIf(planes === undefined)('a fleet: a host and two member control planes', () => {
  const env = (name: 'm1' | 'm2' | 'm3'): Environment => planes![name];

  it('reconciles in every member with cluster-aware requests, and a member that leaves takes its informers, metrics, readiness and connections with it', async () => {
    const host = testClient('fleet-test');
    const ns = await newNamespace(host, 'fleet');
    const registry = new Registry();
    const logs = new LogCapture();
    const manager = testManager(ns, { registry, logger: pino({ level: 'info' }, logs), healthProbeBindAddress: '127.0.0.1:0' });
    const provider = manualProvider();
    const fleet = createFleet(manager, { provider, clusters: { fieldOwner: 'fleet-test' } });
    registerCopyController(fleet, ns);
    const reports: FleetReconcileReport[] = [];
    fleet.onReconcile((r) => reports.push(r));
    const m1 = memberClient(env('m1').kubeConfig);
    const m2 = memberClient(env('m2').kubeConfig);
    await provider.engage('m1', { kubeConfig: env('m1').kubeConfig });
    await provider.engage('m2', { kubeConfig: env('m2').kubeConfig });
    const running = run(manager);
    try {
      await host.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: ns, name: 'policy', labels: { [COPY_LABEL]: 'true' } }, data: { level: '1' } });
      // Every member converges, and reports back into the host's object.
      for (const [name, client] of [['m1', m1], ['m2', m2]] as const) {
        await eventually(() => copyIn(client, ns, 'policy'), (d) => d?.['level'] === '1', `the copy in ${name}`);
      }
      await eventually(() => host.get(ConfigMap, { namespace: ns, name: 'policy' }), (cm) => cm.metadata?.annotations?.[reportKey('m1')] !== undefined && cm.metadata.annotations[reportKey('m2')] !== undefined, 'both reports in the host');
      expect(fleet.clusters()).toEqual(['m1', 'm2']);
      // Requests carry the cluster; each cluster reconciled its own key.
      expect(new Set(reports.map((r) => `${r.request.cluster} ${r.request.namespace}/${r.request.name}`))).toEqual(new Set([`m1 ${ns}/policy`, `m2 ${ns}/policy`]));
      expect(reports.every((r) => r.cluster === r.request.cluster && r.controller === 'copy')).toBe(true);

      // A member's own change reaches its own queue: an edit of a copy is put back.
      await m1.patch(ConfigMap, { namespace: ns, name: 'policy' }, mergePatch({ data: { level: 'tampered' } }));
      await eventually(() => copyIn(m1, ns, 'policy'), (d) => d?.['level'] === '1', 'the tampered copy in m1 to be put back');

      // Metrics and log lines carry the cluster.
      const text = await registry.metrics();
      expect(text).toMatch(/controller_runtime_reconcile_total\{controller="copy",cluster="m1",result="success"\} [1-9]/);
      expect(text).toMatch(/controller_runtime_reconcile_total\{controller="copy",cluster="m2",result="success"\} [1-9]/);
      expect(text).toMatch(/workqueue_adds_total\{name="copy",controller="copy",cluster="m2"\} [1-9]/);
      expect(text).toMatch(/kubeloop_informer_store_objects\{kind="[^"]*ConfigMap[^"]*",cluster="m2"\} [1-9]/);
      const lines = logs.lines();
      // The reconcile's logger (ctx.log) and the controller's own lines.
      expect(lines.some((l) => l['msg'] === 'copy up to date' && l['cluster'] === 'm2' && l['controller'] === 'copy' && l['name'] === 'policy' && typeof l['reconcileID'] === 'string')).toBe(true);
      expect(lines.some((l) => l['msg'] === 'starting controller' && l['cluster'] === 'm1' && l['controller'] === 'copy')).toBe(true);
      // /readyz has a check per member.
      const ready = await readyz(manager);
      expect(ready.body).toContain('[+]cluster-m1 ok');
      expect(ready.body).toContain('[+]cluster-m2 ok');

      // m2 leaves: its informers, their metrics, its readiness check and its connections go.
      const m2Port = Number(new URL(env('m2').server).port);
      expect(connectionsTo(m2Port)).toBeGreaterThan(0);
      await provider.disengage('m2');
      expect(fleet.clusters()).toEqual(['m1']);
      expect(fleet.cluster('m2')).toBeUndefined();
      const after = await registry.metrics();
      expect(after).not.toMatch(/kubeloop_informer_[a-z_]+\{[^}]*cluster="m2"/);
      expect(after).toMatch(/kubeloop_informer_store_objects\{[^}]*cluster="m1"\}/);
      expect((await readyz(manager)).body).not.toContain('cluster-m2');
      m2.transport.close(); // the test's own connections to m2
      await eventually(() => connectionsTo(m2Port), (n) => n === 0, 'no connection to m2 left', 5_000);
      expect(lines.length).toBeGreaterThan(0);
      expect(logs.lines().some((l) => l['cluster'] === 'm2' && l['msg'] === 'cluster disengaged')).toBe(true);

      // The fleet goes on without it: a change reaches m1 only.
      await host.patch(ConfigMap, { namespace: ns, name: 'policy' }, mergePatch({ data: { level: '2' } }));
      await eventually(() => copyIn(m1, ns, 'policy'), (d) => d?.['level'] === '2', 'the new level in m1');
      const m2Again = memberClient(env('m2').kubeConfig);
      try {
        expect(await copyIn(m2Again, ns, 'policy')).toEqual({ level: '1' });
        // Engaged again, m2 catches up from the host's objects replayed to it.
        await provider.engage('m2', { kubeConfig: env('m2').kubeConfig });
        await eventually(() => copyIn(m2Again, ns, 'policy'), (d) => d?.['level'] === '2', 'the new level in m2 after it engaged again');
      } finally {
        m2Again.transport.close();
      }
    } finally {
      await running.stop();
      host.transport.close();
      m1.transport.close();
      m2.transport.close();
    }
    // A stopped manager has disengaged every member.
    expect(fleet.clusters()).toEqual([]);
  });

  it('a static provider engages its clusters when the manager starts', async () => {
    const host = testClient('fleet-test');
    const ns = await newNamespace(host, 'fleet');
    const manager = testManager(ns);
    const fleet = createFleet(manager, { provider: staticProvider({ m1: { kubeConfig: env('m1').kubeConfig } }), clusters: { fieldOwner: 'fleet-test' } });
    registerCopyController(fleet, ns);
    const m1 = memberClient(env('m1').kubeConfig);
    const running = run(manager);
    try {
      await host.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: ns, name: 'static', labels: { [COPY_LABEL]: 'true' } }, data: { a: 'b' } });
      await eventually(() => copyIn(m1, ns, 'static'), (d) => d?.['a'] === 'b', 'the copy in m1');
      expect(fleet.clusters()).toEqual(['m1']);
    } finally {
      await running.stop();
      host.transport.close();
      m1.transport.close();
    }
  });
});

describe.skipIf(planes === undefined)('the kubeconfig-Secret provider', () => {
  const env = (name: 'm1' | 'm2' | 'm3'): Environment => planes![name];
  const kubeconfigSecret = (ns: string, name: string, text: string) => ({
    apiVersion: 'v1' as const,
    kind: 'Secret' as const,
    metadata: { namespace: ns, name, labels: { [KUBECONFIG_SECRET_LABEL]: 'true' } },
    data: { kubeconfig: Buffer.from(text).toString('base64') },
  });

  it('engages a cluster per labelled Secret, a third when its Secret is created, re-engages on a changed kubeconfig, disengages on delete', async () => {
    const host = testClient('fleet-test');
    const ns = await newNamespace(host, 'fleet-sys');
    const text = (name: 'm1' | 'm2' | 'm3'): string => readFileSync(env(name).kubeconfigPath, 'utf8');
    await host.create(kubeconfigSecret(ns, 'm1', text('m1')));
    await host.create(kubeconfigSecret(ns, 'm2', text('m2')));
    // Not labelled: not a member.
    await host.create({ apiVersion: 'v1', kind: 'Secret', metadata: { namespace: ns, name: 'other' }, data: { kubeconfig: Buffer.from(text('m3')).toString('base64') } });
    // Labelled but not a kubeconfig: reported, never engaged, the others unharmed.
    await host.create(kubeconfigSecret(ns, 'broken', 'clusters: [this is not a kubeconfig'));
    const logs = new LogCapture();
    const manager = testManager(ns, { logger: pino({ level: 'info' }, logs) });
    const fleet = createFleet(manager, { provider: kubeconfigSecretProvider({ namespace: ns }), clusters: { fieldOwner: 'fleet-test' } });
    registerCopyController(fleet, ns);
    const members = { m1: memberClient(env('m1').kubeConfig), m2: memberClient(env('m2').kubeConfig), m3: memberClient(env('m3').kubeConfig) };
    const running = run(manager);
    try {
      await host.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: ns, name: 'policy', labels: { [COPY_LABEL]: 'true' } }, data: { level: '1' } });
      for (const name of ['m1', 'm2'] as const) await eventually(() => copyIn(members[name], ns, 'policy'), (d) => d?.['level'] === '1', `the copy in ${name}`);
      expect([...fleet.clusters()].sort()).toEqual(['m1', 'm2']);
      expect(logs.lines().some((l) => l['secret'] === `${ns}/broken` && String(l['msg']).includes('cannot engage'))).toBe(true);
      expect(logs.text()).not.toContain(Buffer.from(text('m1')).toString('base64').slice(0, 40));

      // A third member: its Secret is created.
      await host.create(kubeconfigSecret(ns, 'm3', text('m3')));
      await eventually(() => copyIn(members.m3, ns, 'policy'), (d) => d?.['level'] === '1', 'the copy in m3');
      expect([...fleet.clusters()].sort()).toEqual(['m1', 'm2', 'm3']);

      // A changed kubeconfig re-engages its cluster (a new Cluster object, the old one stopped).
      const before = fleet.cluster('m2');
      await host.update({ ...kubeconfigSecret(ns, 'm2', `${text('m2')}\n# rotated\n`) });
      await eventually(() => fleet.cluster('m2'), (c) => c !== undefined && c !== before, 'm2 re-engaged');
      expect(logs.lines().some((l) => l['cluster'] === 'm2' && l['msg'] === 'cluster re-engaged')).toBe(true);

      // A deleted Secret disengages its cluster: nothing of it stays.
      const m1Port = Number(new URL(env('m1').server).port);
      await host.delete(Secret, { namespace: ns, name: 'm1' });
      await eventually(() => [...fleet.clusters()].sort(), (c) => c.join() === 'm2,m3', 'm1 disengaged');
      members.m1.transport.close();
      await eventually(() => connectionsTo(m1Port), (n) => n === 0, 'no connection to m1 left', 5_000);

      // The rest of the fleet goes on.
      await host.patch(ConfigMap, { namespace: ns, name: 'policy' }, mergePatch({ data: { level: '2' } }));
      for (const name of ['m2', 'm3'] as const) await eventually(() => copyIn(members[name], ns, 'policy'), (d) => d?.['level'] === '2', `the new level in ${name}`);
    } finally {
      await running.stop();
      host.transport.close();
      for (const c of Object.values(members)) c.transport.close();
    }
  });
});

describe.skipIf(planes === undefined)('a member that stops answering', () => {
  const env = (name: 'm1' | 'm2' | 'm3'): Environment => planes![name];

  it("does not hold up the others: m1 keeps converging while m2 is black-holed, and m2's /readyz check says so", async () => {
    const host = testClient('fleet-test');
    const ns = await newNamespace(host, 'fleet-iso');
    const proxy = await startApiProxy(env('m2').kubeConfig);
    const registry = new Registry();
    const manager = testManager(ns, { registry, healthProbeBindAddress: '127.0.0.1:0' });
    const provider = manualProvider();
    const fleet = createFleet(manager, {
      provider,
      informerStaleAfterMs: 1_000,
      // m2's requests into the black hole stay in flight for 15 s: its reconcile holds its worker through every round below.
      clusters: { fieldOwner: 'fleet-test', transportOptions: { timeoutMs: 15_000 }, cache: { reflector: { watchIdleTimeoutMs: 3_000, useWatchList: false } } },
    });
    registerCopyController(fleet, ns);
    const m1 = memberClient(env('m1').kubeConfig);
    const m2 = memberClient(env('m2').kubeConfig);
    await provider.engage('m1', { kubeConfig: env('m1').kubeConfig });
    await provider.engage('m2', { kubeConfig: proxy.kubeConfig });
    const running = run(manager);
    /** ms from a host change until m1's copy shows it. */
    const round = async (level: number): Promise<number> => {
      const t0 = performance.now();
      await host.patch(ConfigMap, { namespace: ns, name: 'policy' }, mergePatch({ data: { level: String(level) } }));
      await eventually(() => copyIn(m1, ns, 'policy'), (d) => d?.['level'] === String(level), `level ${level} in m1`, 30_000);
      return performance.now() - t0;
    };
    try {
      await host.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: ns, name: 'policy', labels: { [COPY_LABEL]: 'true' } }, data: { level: '0' } });
      for (const c of [m1, m2]) await eventually(() => copyIn(c, ns, 'policy'), (d) => d?.['level'] === '0', 'the first copy');
      const healthy: number[] = [];
      for (let i = 1; i <= 5; i++) {
        healthy.push(await round(i));
        await eventually(() => copyIn(m2, ns, 'policy'), (d) => d?.['level'] === String(i), `level ${i} in m2`);
      }
      proxy.blackhole(true);
      const cut: number[] = [];
      for (let i = 6; i <= 10; i++) {
        cut.push(await round(i));
        // m1 converged while m2's reconcile was stuck on its worker (one worker per cluster: with one shared worker, m1 would wait).
        expect(await metric(registry, 'controller_runtime_active_workers', { controller: 'copy', cluster: 'm2' })).toBe(1);
      }
      // Not held up: each of m1's rounds ended before m2's stuck request could have (15 s), so m1 never waited for it.
      expect(cut.filter((ms) => ms >= 15_000), `m1 rounds, ms, with m2 black-holed: ${cut.map((x) => x.toFixed(0)).join(' ')}`).toEqual([]);
      // m2 got none of it, and its readiness check reports it (without failing the replica's /readyz).
      expect(await copyIn(m2, ns, 'policy')).toEqual({ level: '5' });
      const ready = await eventually(() => readyz(manager), (r) => /\[\+\]cluster-m2 ok: not ready: (stale|unreachable)/.test(r.body), 'm2 reported stale or unreachable', 20_000);
      expect(ready.status).toBe(200);
      expect(ready.body).toContain('[+]cluster-m1 ok: engaged');
      const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      process.stderr.write(`[fleet isolation] host change -> m1 copy, ms: m2 healthy ${healthy.map((x) => x.toFixed(0)).join(' ')} (median ${median(healthy).toFixed(0)}); m2 black-holed ${cut.map((x) => x.toFixed(0)).join(' ')} (median ${median(cut).toFixed(0)})\n`);
      proxy.blackhole(false);
      // m2 catches up once it answers again.
      await eventually(() => copyIn(m2, ns, 'policy'), (d) => d?.['level'] === '10', 'm2 catching up', 60_000);
    } finally {
      proxy.blackhole(false);
      await running.stop();
      await proxy.close();
      host.transport.close();
      m1.transport.close();
      m2.transport.close();
    }
  });
});

describe.skipIf(planes === undefined)('a member gone silent, with default reflector settings', () => {
  it("reads 'unreachable' in /readyz soon after it is black-holed (its open watch alone would show it only past the 150 s idle deadline), and 'engaged' once it answers again", async () => {
    const host = testClient('fleet-test');
    const ns = await newNamespace(host, 'fleet-probe');
    const proxy = await startApiProxy(planes!.m3.kubeConfig);
    const manager = testManager(ns, { healthProbeBindAddress: '127.0.0.1:0' });
    const provider = manualProvider();
    const fleet = createFleet(manager, { provider, clusters: { fieldOwner: 'fleet-test' } }); // the default probe: every 10 s, deadline 5 s
    registerCopyController(fleet, ns);
    await provider.engage('m3', { kubeConfig: proxy.kubeConfig });
    const running = run(manager);
    try {
      await eventually(() => readyz(manager), (r) => r.body.includes('[+]cluster-m3 ok: engaged'), 'm3 engaged and synced');
      proxy.blackhole(true);
      const cut = performance.now();
      // Generous bound: the probe notices within its interval plus its deadline (15 s); the watch alone would take 150 s + the 60 s stale bound.
      const ready = await eventually(() => readyz(manager), (r) => /\[\+\]cluster-m3 ok: not ready: unreachable for \d+ s \(ClientError ClientTimeout\)/.test(r.body), 'm3 unreachable', 90_000);
      process.stderr.write(`[fleet probe] black hole -> /readyz says unreachable: ${((performance.now() - cut) / 1000).toFixed(1)} s\n`);
      expect(ready.status).toBe(200); // members do not gate readiness by default
      proxy.blackhole(false);
      await eventually(() => readyz(manager), (r) => r.body.includes('[+]cluster-m3 ok: engaged'), 'm3 engaged again', 60_000);
    } finally {
      proxy.blackhole(false);
      await running.stop();
      await proxy.close();
      host.transport.close();
    }
  });
});

describe('fleet options', () => {
  it('refuses a fleet without a provider and clusters without a usable name or target, saying what to give', async () => {
    const manager = testManager('default');
    expect(() => createFleet(manager, {} as never)).toThrow(/createFleet needs \{ provider \}/);
    expect(() => createFleet(manager, { provider: manualProvider(), memberProbeIntervalMs: -1 })).toThrow(/memberProbeIntervalMs must be a number of ms >= 0; got -1/);
    expect(() => staticProvider({ '': { transport: {} as never } })).toThrow(/non-empty string/);
    expect(() => staticProvider({ a: {} as never })).toThrow(/exactly one of them/);
    expect(() => kubeconfigSecretProvider({} as never)).toThrow(/needs \{ namespace \}/);
    const provider = manualProvider();
    await expect(provider.engage('a/b', { kubeConfig: {} as never })).rejects.toSatisfy((e) => isManagerError(e) && e.reason === 'InvalidOptions');
  });
});
