/**
 * A fleet controller is a controller: one entry of the manager's registry,
 * beside the manager's own controllers. The shared control plane is both the
 * host and a member (`self`, its cache narrowed to the test's namespace), so
 * this needs no plane of its own. What a user notices: the fleet controller
 * in `manager.controllers()` (with its members), in the `controllers`
 * readiness check and `/inspect` (a member addressed as `copy@self`),
 * paused, resumed and removed by name like any controller, its reconciles
 * told to `manager.onReconcile`, and its name taken for the whole manager.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { ConfigMap, Lease } from '@kubeloop/scheme';
import { createShardRing, SHARD_RING_LABEL } from '@kubeloop/leaderelection';
import { startApiProxy } from '@kubeloop/envtest';
import { createFleet, manualProvider, ringCoordinator } from '../../src/fleet/index.js';
import type { Fleet } from '../../src/fleet/index.js';
import { isManagerError, Result, ringLeadership } from '../../src/index.js';
import type { ControllerInspection } from '../../src/index.js';
import type { ReconcileReport } from '../../src/internal-api.js';
import { testKubeConfig, uniqueName } from '../../../../test/support/env.js';
import { eventually, newNamespace, readyz, run, testClient, testManager } from '../support.js';
import { COPY_LABEL, registerCopyController, reportKey } from './support.js';

let client: Client;
beforeAll(() => {
  client = testClient('fleet-registry');
});
afterAll(() => {
  client.transport.close();
});

describe('a fleet controller in the manager\'s one registry', () => {
  it('is listed, checked, inspected, paused, resumed and removed by name like the manager\'s own controllers', async () => {
    const ns = await newNamespace(client, 'fleet-reg');
    const manager = testManager(ns, { healthProbeBindAddress: '127.0.0.1:0', metricsBindAddress: '127.0.0.1:0', inspect: true });
    manager.controller().named('host-cm').for(ConfigMap).complete(() => Result.done());
    const provider = manualProvider();
    const fleet = createFleet(manager, { provider, clusters: { fieldOwner: 'fleet-registry', namespaces: [ns] } });
    // The copy controller reconciles labelled ConfigMaps of the member (here: the same plane) from the host's.
    registerCopyController(fleet, ns);
    // One registry: a name taken by the manager's controller is refused for the fleet's, and the other way round.
    expect(() => fleet.controller().named('host-cm').for(ConfigMap).complete(() => Result.done())).toThrow(/a controller named "host-cm" is already registered/);
    let refused: unknown;
    try {
      manager.controller().named('copy').for(ConfigMap).complete(() => Result.done());
    } catch (err) {
      refused = err;
    }
    expect(isManagerError(refused) && refused.reason === 'InvalidRegistration').toBe(true);
    const reports: ReconcileReport[] = [];
    manager.onReconcile((r) => reports.push(r));
    await provider.engage('self', { kubeConfig: testKubeConfig() });
    const running = run(manager);
    try {
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: ns, name: 'policy', labels: { [COPY_LABEL]: 'true' } }, data: { level: '1' } });
      await eventually(() => reports.filter((r) => r.controller === 'copy' && r.cluster === 'self' && r.request.name === 'policy'), (r) => r.length > 0, 'the fleet reconcile told to manager.onReconcile');

      // manager.controllers(): one entry per controller, the fleet's with its member.
      const statuses = await eventually(() => manager.controllers(), (s) => s.find((c) => c.name === 'copy')?.clusters?.[0]?.synced === true, 'copy synced in self');
      expect(statuses.map((s) => s.name)).toEqual(['host-cm', 'copy']);
      const copy = statuses.find((s) => s.name === 'copy')!;
      expect(copy).toMatchObject({ started: true, warm: true, synced: true, paused: false });
      expect(copy.clusters).toEqual([expect.objectContaining({ cluster: 'self', reconciling: true, synced: true })]);
      expect(fleet.reconciling()).toEqual(['self']);

      // Readiness: the controllers check covers both; the fleet check says which members this replica reconciles.
      const ready = await eventually(() => readyz(manager), (r) => r.status === 200, 'ready');
      expect(ready.body).toContain('[+]controllers ok');
      expect(ready.body).toMatch(/\[\+\]fleet ok: every member, on the leader: reconciling self/);

      // /inspect lists the fleet controller's member beside the manager's own; a member is addressed as name@cluster.
      const base = `${manager.metricsUrl!}/inspect`;
      const list = (await (await fetch(base)).json()) as { controllers: ControllerInspection[] };
      expect(list.controllers.map((c) => `${c.name}${c.cluster ? `@${c.cluster}` : ''}`)).toEqual(['host-cm', 'copy@self']);
      const one = (await (await fetch(`${base}/${encodeURIComponent('copy@self')}`)).json()) as ControllerInspection & { reconciles: { key: string }[] };
      expect(one).toMatchObject({ name: 'copy', cluster: 'self', started: true });
      expect(one.reconciles.some((r) => r.key === `${ns}/policy`)).toBe(true);

      // Paused by name: its member's workers stop; what changes meanwhile waits, and is done once resumed.
      await manager.pauseController('copy');
      expect(manager.controllers().find((s) => s.name === 'copy')).toMatchObject({ paused: true, clusters: [expect.objectContaining({ paused: true })] });
      const before = reports.length;
      await client.patch(ConfigMap, { namespace: ns, name: 'policy' }, mergePatch({ data: { level: '2' } }));
      await new Promise((r) => setTimeout(r, 1_000));
      expect(reports.slice(before).filter((r) => r.controller === 'copy')).toEqual([]);
      manager.resumeController('copy');
      await eventually(() => reports.slice(before).filter((r) => r.controller === 'copy').length, (n) => n > 0, 'copy reconciling again after resume');

      // Removed by name: gone from the registry, its member's controller stopped.
      await manager.removeController('copy');
      expect(manager.controllers().map((s) => s.name)).toEqual(['host-cm']);
      expect(fleet.status()).toEqual([{ name: 'self', reconciling: true, controllers: [] }]);
      expect(((await (await fetch(base)).json()) as { controllers: ControllerInspection[] }).controllers.map((c) => c.name)).toEqual(['host-cm']);
    } finally {
      await running.stop();
    }
  });

  it('keeps every member warm on a standby (engageAll under a Lease): the takeover reconciles what changed while standing by, without listing the member again', async () => {
    const ns = await newNamespace(client, 'fleet-warm');
    const lease = uniqueName('fleet-lease');
    const timings = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 300 };
    // The standby reaches its member through a recording proxy: its requests after the takeover are counted.
    const proxy = await startApiProxy(testKubeConfig());
    const made: { manager: ReturnType<typeof testManager>; fleet: Fleet; reconciled: string[] }[] = [];
    for (const [identity, member] of [['leader', testKubeConfig()], ['standby', proxy.kubeConfig]] as const) {
      const manager = testManager(ns, { healthProbeBindAddress: '127.0.0.1:0', leaderElection: { name: lease, namespace: ns, identity, releaseOnCancel: true, ...timings } });
      const provider = manualProvider();
      const fleet = createFleet(manager, { provider, clusters: { fieldOwner: 'fleet-registry', namespaces: [ns] } });
      const reconciled: string[] = [];
      fleet.controller().named('mark').for(ConfigMap).complete((req) => {
        reconciled.push(req.name);
        return Result.done();
      });
      await provider.engage('self', { kubeConfig: member });
      made.push({ manager, fleet, reconciled });
    }
    const [leader, standby] = made as [(typeof made)[0], (typeof made)[0]];
    for (let i = 0; i < 5; i++) await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: ns, name: `cm-${i}` }, data: { v: '1' } });
    const leading = run(leader.manager);
    await eventually(() => leader.manager.leadershipState(), (s) => s === 'leading', 'the first manager leading');
    const standing = run(standby.manager);
    try {
      await eventually(() => new Set(leader.reconciled).size, (n) => n >= 5, 'the leader reconciling the member');
      // The standby: the member engaged, its caches synced, nothing reconciled.
      const warm = await eventually(() => standby.manager.controllers().find((c) => c.name === 'mark'), (c) => c?.clusters?.[0]?.synced === true, 'the standby warm');
      expect(warm?.clusters?.[0]).toMatchObject({ cluster: 'self', reconciling: false, synced: true });
      expect(standby.fleet.clusters()).toEqual(['self']);
      expect(standby.fleet.reconciling()).toEqual([]);
      expect(standby.manager.leadershipState()).toBe('warm standby');
      expect(standby.reconciled).toEqual([]);
      expect((await readyz(standby.manager)).body).toContain('[+]fleet ok: every member, on the leader: reconciling no member; warm standby for self');

      // A change seen while standing by, then the leader stops (releasing its Lease): the standby takes over.
      await client.patch(ConfigMap, { namespace: ns, name: 'cm-3' }, mergePatch({ data: { v: '2' } }));
      await eventually(async () => (await standby.fleet.cluster('self')!.client.get(ConfigMap, { namespace: ns, name: 'cm-3' })).data?.['v'], (v) => v === '2', 'the standby to see the change');
      // The standby's member cache did list and watch through the proxy while standing by.
      expect(proxy.count((r) => r.path === `/api/v1/namespaces/${ns}/configmaps`)).toBeGreaterThan(0);
      proxy.clearRequests();
      await leading.stop();
      await eventually(() => standby.reconciled, (r) => r.includes('cm-3'), 'the new leader to reconcile the change', 30_000);
      expect(standby.fleet.reconciling()).toEqual(['self']);
      // The change first (it waited at normal priority above the initial list's keys); no LIST, and no new watch, of the member's ConfigMaps.
      expect(standby.reconciled[0]).toBe('cm-3');
      expect(proxy.count((r) => r.path === `/api/v1/namespaces/${ns}/configmaps`)).toBe(0);
    } finally {
      await leading.stop().catch(() => undefined);
      await standing.stop();
      await proxy.close();
    }
  });

  it('shares the manager\'s shard ring when its leadership is that ring (runRing: false): one Lease, the member reconciled here, and the ring named in readiness', async () => {
    const ns = await newNamespace(client, 'fleet-ring');
    const ring = createShardRing({ client, namespace: ns, name: 'shared', identity: uniqueName('replica'), leaseDurationMs: 6_000, renewDeadlineMs: 4_000, retryPeriodMs: 1_000 });
    const manager = testManager(ns, { healthProbeBindAddress: '127.0.0.1:0', leadership: ringLeadership(ring) });
    const provider = manualProvider();
    const fleet = createFleet(manager, { provider, coordinator: ringCoordinator(ring, { runRing: false }), clusters: { fieldOwner: 'fleet-registry', namespaces: [ns] } });
    registerCopyController(fleet, ns);
    await provider.engage('self', { kubeConfig: testKubeConfig() });
    const running = run(manager);
    try {
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: ns, name: 'policy', labels: { [COPY_LABEL]: 'true' } }, data: { level: '1' } });
      // The one member of the ring holds every bucket: it reconciles the member (the copy reports back on the host object).
      await eventually(async () => (await client.get(ConfigMap, { namespace: ns, name: 'policy' })).metadata?.annotations?.[reportKey('self')], (r) => r === '{"level":"1"}', 'the member reconciled through the shared ring');
      expect(fleet.reconciling()).toEqual(['self']);
      // The ring runs once, for the manager's leadership: one member Lease in its namespace.
      const leases = await client.list(Lease, { namespace: ns, labelSelector: `${SHARD_RING_LABEL}=shared` });
      expect(leases.items).toHaveLength(1);
      const ready = await eventually(() => readyz(manager), (r) => r.status === 200, 'ready');
      expect(ready.body).toMatch(/\[\+\]fleet ok: shard ring .*shared: reconciling self/);
    } finally {
      await running.stop();
    }
  });
});
