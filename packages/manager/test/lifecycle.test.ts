/**
 * The manager's lifecycle as parts, against the real API server: a custom
 * leadership gate drives leader-only work (never leads, leads, loses, leads
 * again); warm and cold standbys; runnables and controllers added to a
 * running manager, one for a CRD installed after start; a removed
 * controller's informers are gone.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { installCRDs } from '@kubeloop/envtest';
import { ConfigMap, Secret } from '@kubeloop/scheme';
import { Result } from '../src/index.js';
import type { LeadershipContext, LeadershipGate, Manager } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';
import { testCRD } from '../../../test/support/crds.js';
import { eventually, metric, newNamespace, probe, run, readyz, testClient, testManager } from './support.js';

let client: Client;
let ns: string;

beforeAll(async () => {
  client = testClient();
  ns = await newNamespace(client, 'lifecycle');
});
afterAll(() => client.transport.close());

/** A gate the test opens and closes by hand. */
function manualGate() {
  let context: LeadershipContext | undefined;
  let term: AbortController | undefined;
  const gate: LeadershipGate = {
    description: 'manual',
    leader: () => (term ? undefined : 'someone-else'),
    async run(ctx) {
      context = ctx;
      await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
      term?.abort();
      return 'stopped';
    },
  };
  return {
    gate,
    lead(): void {
      term = new AbortController();
      context!.lead(term.signal);
    },
    async lose(): Promise<void> {
      term!.abort();
      term = undefined;
      await context!.stepDown();
    },
  };
}

/** A ConfigMap controller that records the names it reconciles (only names with `prefix`). */
function recordConfigMaps(m: Manager, prefix: string, name = 'configmap'): string[] {
  const seen: string[] = [];
  m.controller()
    .named(name)
    .for(ConfigMap, { predicates: [(e) => e.object.metadata?.name?.startsWith(prefix) ?? false] })
    .complete((req) => {
      seen.push(req.name);
      return Result.done();
    });
  return seen;
}

describe('a custom leadership gate', () => {
  it('drives leader-only work: never leads, then leads, then loses, then leads again (warm: nothing missed)', async () => {
    const manual = manualGate();
    const m = testManager(ns, { leadership: manual.gate, healthProbeBindAddress: '127.0.0.1:0' });
    const prefix = uniqueName('gate');
    const seen = recordConfigMaps(m, prefix);
    const leaderWork = probe();
    const everywhere = probe();
    m.add(leaderWork.runnable);
    m.add(everywhere.runnable, { needLeaderElection: false });
    const r = run(m);

    // Never led: a warm standby, its caches synced, nothing reconciled, no leader-only work.
    await eventually(() => m.controllers()[0], (c) => c?.warm === true && c.synced, 'the warm controller to sync');
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${prefix}-a`, namespace: ns } });
    await eventually(() => readyz(m), (r) => r.body.includes('[+]leader-election ok: warm standby (leader: someone-else)'), 'readyz to say warm standby');
    expect(await metric(m.registry, 'kubeloop_leadership_state', { state: 'warm_standby' })).toBe(1);
    await sleep(300);
    expect(seen).toEqual([]);
    expect(leaderWork.state.started).toBe(0);
    expect(everywhere.state.started).toBe(1);
    expect(m.isLeader()).toBe(false);

    // Leads: leader-only work starts, and what changed while standing by is reconciled.
    manual.lead();
    await eventually(() => seen, (s) => s.includes(`${prefix}-a`), 'the change made while standing by');
    expect(leaderWork.state).toEqual({ started: 1, stopped: 0 });
    expect(m.isLeader()).toBe(true);
    expect((await readyz(m)).body).toContain('[+]leader-election ok: leading');
    expect(await metric(m.registry, 'kubeloop_leadership_state', { state: 'leading' })).toBe(1);

    // Loses: once stepDown resolves, leader-only work has stopped; changes wait.
    await manual.lose();
    expect(leaderWork.state).toEqual({ started: 1, stopped: 1 });
    expect(m.isLeader()).toBe(false);
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${prefix}-b`, namespace: ns } });
    await sleep(300);
    expect(seen).not.toContain(`${prefix}-b`);

    // Leads again: a new term, and the change made meanwhile is reconciled.
    manual.lead();
    await eventually(() => seen, (s) => s.includes(`${prefix}-b`), 'the change made while not leading');
    expect(leaderWork.state).toEqual({ started: 2, stopped: 1 });
    await r.stop();
    expect(leaderWork.state).toEqual({ started: 2, stopped: 2 });
    expect(everywhere.state).toEqual({ started: 1, stopped: 1 });
  });

  it('a cold standby (warmStandby: false) starts no informer until it leads', async () => {
    const manual = manualGate();
    const m = testManager(ns, { leadership: manual.gate, warmStandby: false, healthProbeBindAddress: '127.0.0.1:0' });
    const prefix = uniqueName('cold');
    const seen = recordConfigMaps(m, prefix);
    const r = run(m);
    await eventually(() => readyz(m), (r) => r.body.includes('[+]leader-election ok: standby (leader: someone-else)'), 'readyz to say standby');
    expect(m.cache.informers()).toEqual([]);
    expect(m.controllers()[0]).toMatchObject({ warm: false, started: false, synced: false });
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${prefix}-a`, namespace: ns } });
    manual.lead();
    await eventually(() => seen, (s) => s.includes(`${prefix}-a`), 'the cold controller after it leads');
    expect(m.cache.informers().map((i) => i.kind)).toEqual(['ConfigMap.v1']);
    await r.stop();
  });
});

describe('a running manager', () => {
  it('runs a runnable and a controller added after start (leader-only and not)', async () => {
    const m = testManager(ns);
    const r = run(m);
    await eventually(() => m.isLeader(), (v) => v, 'leading');
    const leaderWork = probe();
    const everywhere = probe();
    m.add(leaderWork.runnable);
    m.add(everywhere.runnable, { needLeaderElection: false });
    await eventually(() => leaderWork.state.started + everywhere.state.started, (n) => n === 2, 'both runnables');
    const prefix = uniqueName('late');
    const seen = recordConfigMaps(m, prefix);
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${prefix}-a`, namespace: ns } });
    await eventually(() => seen, (s) => s.includes(`${prefix}-a`), 'the controller added after start');
    await r.stop();
    expect(leaderWork.state).toEqual({ started: 1, stopped: 1 });
    expect(everywhere.state).toEqual({ started: 1, stopped: 1 });
  });

  it('gives a CRD installed after start a controller, and reconciles its objects', async () => {
    const m = testManager(ns);
    const r = run(m);
    await eventually(() => m.isLeader(), (v) => v, 'leading');
    // Installed only now: the manager's mapper has never seen the group.
    const group = `${uniqueName('late')}.kubeloop.test`;
    const crd = testCRD(group, 'Gizmo');
    const crdName = crd.metadata.name;
    await installCRDs(testKubeConfig(), [crd]); // established and served
    const Gizmo = { apiVersion: `${group}/v1`, kind: 'Gizmo' };
    const seen: string[] = [];
    m.controller()
      .for(Gizmo)
      .complete(async (req) => {
        const gizmo = (await m.client.get(Gizmo, { namespace: req.namespace!, name: req.name })) as { spec?: { size?: number } };
        seen.push(`${req.name}:${gizmo.spec?.size ?? '?'}`);
        return Result.done();
      });
    await client.create({ ...Gizmo, metadata: { name: 'g1', namespace: ns }, spec: { size: 3 } });
    await eventually(() => seen, (s) => s.includes('g1:3'), 'the Gizmo reconciled');
    await client.patch(Gizmo, { namespace: ns, name: 'g1' }, mergePatch({ spec: { size: 4 } }));
    await eventually(() => seen, (s) => s.includes('g1:4'), 'the Gizmo change reconciled');
    await r.stop();
    await client.delete({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, { name: crdName });
  });

  it('removes a controller: its workers stop, and the informers no other controller reads are gone (informer metrics too)', async () => {
    const m = testManager(ns);
    const prefix = uniqueName('rm');
    const seenConfigMaps: string[] = [];
    // Reads ConfigMaps and Secrets; the other controller reads Secrets too.
    m.controller()
      .named('configmaps')
      .for(ConfigMap, { predicates: [(e) => e.object.metadata?.name?.startsWith(prefix) ?? false] })
      .owns(Secret)
      .complete((req) => {
        seenConfigMaps.push(req.name);
        return Result.done();
      });
    m.controller()
      .named('secrets')
      .for(Secret)
      .complete(() => Result.done());
    const r = run(m);
    await eventually(() => m.controllers(), (cs) => cs.length === 2 && cs.every((c) => c.started && c.synced), 'both controllers');
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${prefix}-a`, namespace: ns } });
    await eventually(() => seenConfigMaps, (s) => s.includes(`${prefix}-a`), 'the ConfigMap controller');
    const storeObjects = (kind: string): Promise<number | undefined> => metric(m.registry, 'kubeloop_informer_store_objects', { kind });
    expect(await storeObjects('ConfigMap.v1')).toBeGreaterThan(0);
    // The create arrived as a watch event (not through the initial list).
    expect(await metric(m.registry, 'kubeloop_informer_watch_events_total', { kind: 'ConfigMap.v1' })).toBeGreaterThanOrEqual(1);

    await m.removeController('configmaps');
    expect(m.controllers().map((c) => c.name)).toEqual(['secrets']);
    expect(m.cache.informers().map((i) => i.kind)).toEqual(['Secret.v1']);
    expect(await storeObjects('ConfigMap.v1')).toBeUndefined();
    expect(await storeObjects('Secret.v1')).toBeDefined();
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${prefix}-b`, namespace: ns } });
    await sleep(300);
    expect(seenConfigMaps).not.toContain(`${prefix}-b`);

    // The name is free again; its informer comes back with it.
    const again = recordConfigMaps(m, prefix, 'configmaps');
    await eventually(() => again, (s) => s.includes(`${prefix}-b`), 'the controller registered again');
    await r.stop();
  });
});
