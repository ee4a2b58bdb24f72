/**
 * Pausing against the real API server, as a user sees it: an object with
 * the `kubeloop.dev/paused` annotation is not reconciled (counted in
 * `kubeloop_reconcile_paused_total`), still is when it is being deleted
 * (its finalizer goes), is reconciled once the annotation is removed even
 * behind a `generationChanged()` predicate, gets a `Paused` condition when
 * asked; and a whole controller paused and resumed on a running manager.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { installCRDs } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { findStatusCondition, generationChanged, PAUSED_ANNOTATION, Result } from '../../src/index.js';
import type { Condition } from '../../src/index.js';
import { eventually, metric, newNamespace, startsPerTest, synced, testClient, testManager } from '../support.js';
import { testKubeConfig, uniqueName } from '../../../../test/support/env.js';
import { testCRD } from '../../../../test/support/crds.js';

let client: Client;

beforeAll(() => {
  client = testClient();
});
afterAll(() => {
  client.transport.close();
});

const start = startsPerTest();

const annotate = (ns: string, name: string, value: string | null): Promise<unknown> =>
  client.patch(ConfigMap, { namespace: ns, name }, mergePatch({ metadata: { annotations: { [PAUSED_ANNOTATION]: value } } }));

describe('an object paused by its annotation', () => {
  it('is not reconciled while annotated (counted), and is reconciled once the annotation is removed, generationChanged() or not', async () => {
    const ns = await newNamespace(client, 'pause');
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'paused', namespace: ns, annotations: { [PAUSED_ANNOTATION]: 'true' } }, data: { v: '0' } });
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'running', namespace: ns }, data: { v: '0' } });
    const seen: string[] = [];
    const m = testManager(ns);
    // A ConfigMap's generation never changes: only creates (and the pause source) reach the queue.
    m.controller().named('pause-obj').for(ConfigMap, { predicates: [generationChanged()] }).complete((req) => {
      seen.push(req.name);
      return Result.done();
    });
    start(m);
    await synced(m);
    await eventually(() => seen, (s) => s.includes('running'), 'the unpaused ConfigMap reconciled');
    await eventually(() => metric(m.registry, 'kubeloop_reconcile_paused_total', { controller: 'pause-obj' }), (v) => v === 1, 'the paused one skipped and counted');
    expect(seen).toEqual(['running']);

    await annotate(ns, 'paused', null); // kubectl annotate configmap paused kubeloop.dev/paused-
    await eventually(() => seen, (s) => s.includes('paused'), 'the ConfigMap reconciled once its annotation was removed');
    expect(await metric(m.registry, 'kubeloop_reconcile_paused_total', { controller: 'pause-obj' })).toBe(1);
  });

  it('a paused object being deleted is still reconciled, so its finalizer goes and the delete completes', async () => {
    const ns = await newNamespace(client, 'pause-del');
    const finalizer = 'test.kubeloop.dev/cleanup';
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'doomed', namespace: ns, annotations: { [PAUSED_ANNOTATION]: 'true' }, finalizers: [finalizer] }, data: { v: '0' } });
    const calls: { deleting: boolean }[] = [];
    const m = testManager(ns);
    m.controller().named('pause-del').for(ConfigMap).complete(async (req) => {
      const cm = await m.client.get(ConfigMap, req).catch(() => undefined);
      calls.push({ deleting: cm?.metadata?.deletionTimestamp !== undefined });
      if (cm?.metadata?.deletionTimestamp !== undefined) {
        await client.patch(ConfigMap, req, mergePatch({ metadata: { finalizers: null } }));
      }
      return Result.done();
    });
    start(m);
    await synced(m);
    await eventually(() => metric(m.registry, 'kubeloop_reconcile_paused_total', { controller: 'pause-del' }), (v) => v === 1, 'the paused ConfigMap skipped');
    expect(calls).toEqual([]);
    await client.delete(ConfigMap, { namespace: ns, name: 'doomed' });
    await eventually(() => client.get(ConfigMap, { namespace: ns, name: 'doomed' }).then(() => 'still there', () => 'gone'), (s) => s === 'gone', 'the delete completed (finalizer removed by the reconcile)');
    expect(calls[0]).toEqual({ deleting: true });
  });

  it('pause: { annotation, condition: true } uses its own annotation and writes a Paused condition, True while paused and False after', async () => {
    const group = `${uniqueName('pause')}.kubeloop.dev`;
    await installCRDs(testKubeConfig(), [testCRD(group, 'Gadget', { status: true })]);
    const ns = await newNamespace(client, 'pause-cond');
    const Gadget = { apiVersion: `${group}/v1`, kind: 'Gadget' };
    const annotation = 'example.com/hold';
    await client.create({ ...Gadget, metadata: { name: 'g1', namespace: ns, annotations: { [annotation]: 'yes', [PAUSED_ANNOTATION]: 'ignored here' } }, spec: {} });
    let reconciles = 0;
    const m = testManager(ns);
    m.controller().named('pause-cond').for(Gadget).withOptions({ pause: { annotation, condition: true } }).complete(() => {
      reconciles++;
      return Result.done();
    });
    start(m);
    await synced(m);
    const paused = (): Promise<Condition | undefined> =>
      client.get(Gadget, { namespace: ns, name: 'g1' }).then((g) => findStatusCondition((g as { status?: { conditions?: Condition[] } }).status?.conditions, 'Paused'));
    const on = await eventually(paused, (c) => c?.status === 'True', 'Paused=True written');
    expect(on).toMatchObject({ type: 'Paused', status: 'True', reason: 'PausedByAnnotation', message: `reconciles are paused by the ${annotation} annotation` });
    expect(reconciles).toBe(0);
    await client.patch(Gadget, { namespace: ns, name: 'g1' }, mergePatch({ metadata: { annotations: { [annotation]: null } } }));
    const off = await eventually(paused, (c) => c?.status === 'False', 'Paused=False written');
    expect(off).toMatchObject({ status: 'False', reason: 'NotPaused' });
    await eventually(() => reconciles, (n) => n >= 1, 'reconciled once unpaused');
  });
});

describe('a whole controller paused and resumed on a running manager', () => {
  it('takes no keys while paused (the queue keeps what changed), shows it, and reconciles it all on resume', async () => {
    const ns = await newNamespace(client, 'pause-ctl');
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'first', namespace: ns }, data: { v: '0' } });
    const seen: string[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inFlight = false;
    const m = testManager(ns);
    m.controller().named('pause-ctl').for(ConfigMap).complete(async (req) => {
      seen.push(req.name);
      if (req.name === 'first' && seen.length === 1) {
        inFlight = true;
        await held;
        inFlight = false;
      }
      return Result.done();
    });
    start(m);
    await eventually(() => inFlight, (v) => v, 'the first reconcile in flight');
    const pausing = m.pauseController('pause-ctl');
    let pauseResolved = false;
    void pausing.then(() => (pauseResolved = true));
    // pause waits for the reconcile in flight
    await eventually(() => m.controllers().find((c) => c.name === 'pause-ctl')?.paused, (p) => p === true, 'status paused');
    expect(pauseResolved).toBe(false);
    release();
    await pausing;
    expect(inFlight).toBe(false);
    expect(await metric(m.registry, 'kubeloop_controller_paused', { controller: 'pause-ctl' })).toBe(1);

    // Changes while paused reach the queue, not the reconciler.
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'second', namespace: ns }, data: { v: '0' } });
    await client.patch(ConfigMap, { namespace: ns, name: 'first' }, mergePatch({ data: { v: '1' } }));
    await eventually(() => metric(m.registry, 'workqueue_depth', { name: 'pause-ctl', controller: 'pause-ctl', priority: '0' }), (v) => v === 2, 'both changes waiting in the queue');
    expect(seen).toEqual(['first']);

    m.resumeController('pause-ctl');
    await eventually(() => [...seen].sort(), (s) => s.length === 3, 'both reconciled after resume');
    expect(seen.slice(1).sort()).toEqual(['first', 'second']);
    expect(await metric(m.registry, 'kubeloop_controller_paused', { controller: 'pause-ctl' })).toBe(0);
    expect(m.controllers().find((c) => c.name === 'pause-ctl')?.paused).toBe(false);
    m.resumeController('pause-ctl'); // a no-op when running
    await expect(m.pauseController('no-such')).rejects.toThrow(/no controller named "no-such" is registered/);
  });
});
