/**
 * Trigger attribution and self-trigger detection against the real API
 * server, as a user sees them: `ctx.triggers` names what enqueued a key
 * (the `for` object's events, a watched kind's event through a map
 * function, the error backoff, a requeueAfter) with kinds, names and
 * resourceVersions; a debug line names them per reconcile; the counter
 * counts them. A reconciler that writes a timestamp to its status every
 * time is reported as self-triggering within a few reconciles (warning,
 * Event on the object, counter) and stops looping with ignoreOwnWrites().
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { installCRDs } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { createLogger, enqueueMapped, ignoreOwnWrites, Result } from '../../src/index.js';
import type { Manager, Trigger } from '../../src/index.js';
import { eventually, LogCapture, metric, newNamespace, startsPerTest, synced, testClient, testManager } from '../support.js';
import { testKubeConfig, uniqueName } from '../../../../test/support/env.js';
import { testCRD } from '../../../../test/support/crds.js';

let client: Client;
let group: string;
let Gadget: { apiVersion: string; kind: string };

beforeAll(async () => {
  client = testClient();
  group = `${uniqueName('trig')}.kubeloop.dev`;
  await installCRDs(testKubeConfig(), [testCRD(group, 'Gadget', { status: true })]);
  Gadget = { apiVersion: `${group}/v1`, kind: 'Gadget' };
});
afterAll(() => {
  client.transport.close();
});

const start = startsPerTest();

describe('trigger attribution', () => {
  it('ctx.triggers names the for object, a mapped watched object, the error backoff and a requeueAfter; a debug line and the counter say the same', async () => {
    const ns = await newNamespace(client, 'trig');
    const log = new LogCapture();
    const m = testManager(ns, { logger: createLogger({ level: 'debug', destination: log }) });
    const seen: (readonly Trigger[])[] = [];
    let failNext = false;
    let requeueNext = false;
    m.controller()
      .named('trig')
      .for(Gadget)
      .watches(ConfigMap, enqueueMapped((cm) => [{ namespace: ns, name: (cm as { data?: { gadget?: string } }).data?.gadget ?? '' }]))
      .complete((_req, ctx) => {
        seen.push(ctx.triggers);
        if (failNext) {
          failNext = false;
          throw new Error('the disk backend is away');
        }
        if (requeueNext) {
          requeueNext = false;
          return Result.requeueAfter(200);
        }
        return Result.done();
      });
    start(m);
    await synced(m);

    const created = (await client.create({ ...Gadget, metadata: { name: 'g1', namespace: ns }, spec: {} })) as { metadata: { resourceVersion: string } };
    await eventually(() => seen.length, (n) => n === 1, 'the create reconciled');
    expect(seen[0]).toEqual([
      expect.objectContaining({ source: 'for', event: 'add', kind: 'Gadget', namespace: ns, name: 'g1', resourceVersion: created.metadata.resourceVersion, count: 1 }),
    ]);
    expect(seen[0]![0]!.mapped).toBeUndefined();
    expect(seen[0]![0]!.ownWrite).toBeUndefined();

    // A watched ConfigMap, mapped to the Gadget it names; the reconcile fails, so the next is the backoff's.
    failNext = true;
    const cm = (await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: ns }, data: { gadget: 'g1' } })) as { metadata: { resourceVersion: string } };
    await eventually(() => seen.length, (n) => n === 3, 'the ConfigMap reconcile, then its retry');
    expect(seen[1]).toEqual([expect.objectContaining({ source: 'watches', event: 'add', kind: 'ConfigMap', namespace: ns, name: 'settings', resourceVersion: cm.metadata.resourceVersion, mapped: true })]);
    expect(seen[2]).toEqual([expect.objectContaining({ source: 'controller', event: 'error-backoff', count: 1 })]);

    // A spec change asks for a requeueAfter: the reconcile after it names it.
    requeueNext = true;
    await client.patch(Gadget, { namespace: ns, name: 'g1' }, mergePatch({ spec: { size: 2 } }));
    await eventually(() => seen.length, (n) => n === 5, 'the update, then the requeueAfter');
    expect(seen[3]).toEqual([expect.objectContaining({ source: 'for', event: 'update', name: 'g1' })]);
    expect(seen[4]).toEqual([expect.objectContaining({ source: 'controller', event: 'requeue-after' })]);

    const lines = log.lines().filter((l) => l['msg'] === 'reconcile triggered' && l['controller'] === 'trig');
    expect(lines.length).toBe(5);
    expect(lines[1]).toMatchObject({ name: 'g1', namespace: ns, triggers: [`watches add ConfigMap ${ns}/settings rv=${cm.metadata.resourceVersion} mapped`] });
    expect(lines[2]).toMatchObject({ triggers: ['controller error-backoff'] });
    expect(await metric(m.registry, 'kubeloop_reconcile_triggers_total', { controller: 'trig', source: 'watches', event: 'add' })).toBe(1);
    expect(await metric(m.registry, 'kubeloop_reconcile_triggers_total', { controller: 'trig', source: 'controller', event: 'error-backoff' })).toBe(1);
    expect(await metric(m.registry, 'kubeloop_reconcile_triggers_total', { controller: 'trig', source: 'controller', event: 'requeue-after' })).toBe(1);
  });

  it('repeats of one object fold into one entry with a count, and past maxPerKey only an overflow count grows', async () => {
    const ns = await newNamespace(client, 'trig-fold');
    const m = testManager(ns);
    const seen: { triggers: readonly Trigger[]; overflow: number }[] = [];
    let release: () => void = () => undefined;
    let gate = new Promise<void>((resolve) => (release = resolve));
    m.controller()
      .named('trig-fold')
      .for(Gadget)
      .watches(ConfigMap, enqueueMapped(() => [{ namespace: ns, name: 'hub' }]))
      .withOptions({ triggers: { maxPerKey: 2 } })
      .complete(async (_req, ctx) => {
        seen.push({ triggers: ctx.triggers, overflow: ctx.triggersOverflow });
        await gate;
      });
    start(m);
    await synced(m);
    await client.create({ ...Gadget, metadata: { name: 'hub', namespace: ns }, spec: {} });
    // The first reconcile holds the key; what comes meanwhile waits for the next one.
    await eventually(() => seen.length, (n) => n === 1, 'the first reconcile');
    for (let i = 0; i < 3; i++) await client.patch(Gadget, { namespace: ns, name: 'hub' }, mergePatch({ spec: { n: i } }));
    for (const name of ['a', 'b', 'c']) await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns } });
    await eventually(() => metric(m.registry, 'kubeloop_reconcile_triggers_total', { controller: 'trig-fold', source: 'watches', event: 'add' }), (v) => v === 3, 'the three ConfigMaps seen');
    await eventually(() => metric(m.registry, 'kubeloop_reconcile_triggers_total', { controller: 'trig-fold', source: 'for', event: 'update' }), (v) => v === 3, 'the three updates seen');
    release();
    gate = Promise.resolve();
    await eventually(() => seen.length, (n) => n === 2, 'the second reconcile');
    const second = seen[1]!;
    // The three updates of hub fold into one entry; the first ConfigMap takes the second slot; b and c overflow.
    expect(second.triggers).toEqual([
      expect.objectContaining({ source: 'for', event: 'update', name: 'hub', count: 3 }),
      expect.objectContaining({ source: 'watches', event: 'add', name: 'a', mapped: true, count: 1 }),
    ]);
    expect(second.overflow).toBe(2);
  });
});

describe('first lists', () => {
  it('a controller started without an election reports its first list as initial-list; one started cold by a Lease election as leadership-start', async () => {
    const ns = await newNamespace(client, 'trig-lead');
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'there-before', namespace: ns } });
    const seen: Record<string, (readonly Trigger[])[]> = { plain: [], elected: [] };
    const plain = testManager(ns);
    plain.controller().named('trig-plain').for(ConfigMap).complete((_req, ctx) => void seen['plain']!.push(ctx.triggers));
    const elected = testManager(ns, { leaderElection: { name: uniqueName('trig-lease'), namespace: ns, identity: 'only', leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 }, warmStandby: false });
    elected.controller().named('trig-elected').for(ConfigMap).complete((_req, ctx) => void seen['elected']!.push(ctx.triggers));
    start(plain);
    start(elected);
    await eventually(() => seen, (s) => s['plain']!.length >= 1 && s['elected']!.length >= 1, 'both controllers reconciled the ConfigMap');
    expect(seen['plain']![0]).toEqual([expect.objectContaining({ source: 'for', event: 'initial-list', kind: 'ConfigMap', name: 'there-before' })]);
    expect(seen['elected']![0]).toEqual([expect.objectContaining({ source: 'for', event: 'leadership-start', kind: 'ConfigMap', name: 'there-before' })]);
  });
});

describe('a kind that becomes served', () => {
  it('reports the first list of a kind missing when the controller started as crd-established', async () => {
    const g = `${uniqueName('trig-crd')}.kubeloop.dev`;
    const versions = (v2Served: boolean) => [{ name: 'v1', served: true, storage: true }, { name: 'v2', served: v2Served, storage: false }];
    await installCRDs(testKubeConfig(), [testCRD(g, 'Gizmo', { versions: versions(false) })]);
    const ns = await newNamespace(client, 'trig-crd');
    // The object exists before its kind is served at v2, so the first list that succeeds holds it.
    await client.create({ apiVersion: `${g}/v1`, kind: 'Gizmo', metadata: { name: 'early', namespace: ns }, spec: {} });
    const seen: (readonly Trigger[])[] = [];
    const m = testManager(ns, { healthProbeBindAddress: '127.0.0.1:0' });
    m.controller().named('trig-crd').for({ apiVersion: `${g}/v2`, kind: 'Gizmo' }).complete((_req, ctx) => void seen.push(ctx.triggers));
    start(m);
    await eventually(() => m.controllers()[0]?.waitingFor.join(' ') ?? '', (w) => w.includes('Gizmo'), 'the controller waiting for its kind');
    await installCRDs(testKubeConfig(), [testCRD(g, 'Gizmo', { versions: versions(true) })]);
    await eventually(() => seen.length, (n) => n >= 1, 'the Gizmo reconciled once v2 is served', 60_000);
    expect(seen[0]).toEqual([expect.objectContaining({ source: 'for', event: 'crd-established', kind: 'Gizmo', name: 'early' })]);
  });
});

describe('self-trigger detection', () => {
  /** A reconciler that writes a fresh timestamp to its status every time: each write's echo enqueues it again. */
  const stamping = (m: Manager) => async (req: { namespace?: string; name: string }) => {
    await m.client.status().patch({ ...Gadget, metadata: { name: req.name, ...(req.namespace ? { namespace: req.namespace } : {}) } }, mergePatch({ status: { lastSeen: `${new Date().toISOString()}#${Math.random()}` } }));
    return Result.done();
  };

  it('a reconciler writing a timestamp to status every time is reported within a few reconciles: warning, Event, counter, own-write triggers', async () => {
    const ns = await newNamespace(client, 'selftrig');
    const log = new LogCapture();
    const m = testManager(ns, { logger: createLogger({ level: 'info', destination: log }) });
    const seen: (readonly Trigger[])[] = [];
    const stamp = stamping(m);
    m.controller()
      .named('stamper')
      .for(Gadget)
      .complete(async (req, ctx) => {
        seen.push(ctx.triggers);
        return stamp(req);
      });
    start(m);
    await synced(m);
    await client.create({ ...Gadget, metadata: { name: 'ticker', namespace: ns }, spec: {} });
    await eventually(() => metric(m.registry, 'kubeloop_reconcile_self_triggered_total', { controller: 'stamper' }), (v) => v === 1, 'the key reported as self-triggering');
    // The create, then three reconciles caused by nothing but its own status writes (the default threshold).
    expect(seen.length).toBeGreaterThanOrEqual(4);
    expect(seen[1]).toEqual([expect.objectContaining({ source: 'for', event: 'update', name: 'ticker', ownWrite: true })]);
    const warning = log.lines().find((l) => l['level'] === 40 && String(l['msg']).includes('by nothing but its own writes'));
    expect(warning).toMatchObject({ controller: 'stamper', name: 'ticker', namespace: ns, streak: 3 });
    const events = await eventually(
      () => client.list({ apiVersion: 'events.k8s.io/v1', kind: 'Event' }, { namespace: ns }),
      (l) => l.items.some((e) => (e as { reason?: string }).reason === 'SelfTriggering'),
      'the SelfTriggering Event',
    );
    const event = events.items.find((e) => (e as { reason?: string }).reason === 'SelfTriggering') as unknown as { type: string; regarding: { kind: string; name: string }; note: string } | undefined;
    expect(event).toMatchObject({ type: 'Warning', regarding: { kind: 'Gadget', name: 'ticker' } });
    expect(event?.note).toContain('own-write');
    expect(await metric(m.registry, 'kubeloop_reconcile_own_write_events_total', { controller: 'stamper', action: 'enqueued' })).toBeGreaterThanOrEqual(3);
  });

  it('with ignoreOwnWrites() the same reconciler runs once per change and not again; a change by someone else still reconciles', async () => {
    const ns = await newNamespace(client, 'selftrig-off');
    const m = testManager(ns);
    let reconciles = 0;
    const stamp = stamping(m);
    m.controller()
      .named('stamper-quiet')
      .for(Gadget, { predicates: [ignoreOwnWrites()] })
      .complete(async (req) => {
        reconciles++;
        return stamp(req);
      });
    start(m);
    await synced(m);
    await client.create({ ...Gadget, metadata: { name: 'ticker', namespace: ns }, spec: {} });
    await eventually(() => metric(m.registry, 'kubeloop_reconcile_own_write_events_total', { controller: 'stamper-quiet', action: 'dropped' }), (v) => v === 1, 'the status write\'s echo dropped');
    // Nothing else happens to the object: a loop would have reconciled again by now many times over.
    await sleep(1500);
    expect(reconciles).toBe(1);
    // Someone else's change is not an own write: it is reconciled (and that reconcile's own echo dropped again).
    await client.patch(Gadget, { namespace: ns, name: 'ticker' }, mergePatch({ spec: { size: 3 } }));
    await eventually(() => reconciles, (n) => n === 2, 'the foreign change reconciled');
    await eventually(() => metric(m.registry, 'kubeloop_reconcile_own_write_events_total', { controller: 'stamper-quiet', action: 'dropped' }), (v) => v === 2, 'its echo dropped');
    await sleep(1000);
    expect(reconciles).toBe(2);
    expect(await metric(m.registry, 'kubeloop_reconcile_self_triggered_total', { controller: 'stamper-quiet' })).toBe(0);
  });
});
