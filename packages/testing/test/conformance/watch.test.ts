/** Conformance: watches (from a resourceVersion, initial events, selectors, bookmarks, timeouts, forms), on envtest and on the fake. */
import { describe, expect, it } from 'vitest';
import { mergePatch, metadataOnly } from '@kubeloop/client';
import type { WatchEvent } from '@kubeloop/client';
import { ConfigMap } from '@kubeloop/scheme';
import { BACKENDS, Gadget, useBackend } from './backends.js';
import { collect, configMap, expectStatus, summary } from './support.js';

describe.each(BACKENDS)('watches ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  it('from a list\'s resourceVersion: ADDED, MODIFIED, DELETED in order, resourceVersions rising', async () => {
    const client = h().client();
    const run = h().name('run');
    const list = await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run } });
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run }, resourceVersion: list.metadata!.resourceVersion! });
    const cm = await client.create(configMap(h().namespace, `${run}-x`, { a: '1' }, { run }));
    await client.patch(cm, mergePatch({ data: { a: '2' } }));
    await client.delete(cm);
    const seen = await collect(events, (s) => s.length >= 3);
    expect(summary(seen)).toEqual([`ADDED ${run}-x`, `MODIFIED ${run}-x`, `DELETED ${run}-x`]);
    const rvs = seen.map((e) => Number(e.object.metadata?.resourceVersion));
    expect(rvs[1]).toBeGreaterThan(rvs[0]!);
    expect(rvs[2]).toBeGreaterThan(rvs[1]!);
    expect(seen[1]!.object.data).toEqual({ a: '2' });
  });

  it('events carry apiVersion and kind, even for built-in kinds', async () => {
    const client = h().client();
    const run = h().name('run');
    const list = await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run } });
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run }, resourceVersion: list.metadata!.resourceVersion! });
    await client.create(configMap(h().namespace, `${run}-x`, {}, { run }));
    const [added] = await collect(events, (s) => s.length >= 1);
    expect(added!.object).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap' });
  });

  it('the DELETED event carries the last state under a newer resourceVersion', async () => {
    const client = h().client();
    const run = h().name('run');
    const cm = await client.create(configMap(h().namespace, `${run}-x`, { last: 'state' }, { run }));
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run }, resourceVersion: cm.metadata.resourceVersion! });
    await client.delete(cm);
    const [deleted] = await collect(events, (s) => s.length >= 1);
    expect(deleted!.type).toBe('DELETED');
    expect(deleted!.object.data).toEqual({ last: 'state' });
    expect(Number(deleted!.object.metadata?.resourceVersion)).toBeGreaterThan(Number(cm.metadata.resourceVersion));
  });

  it('without a resourceVersion it starts with an ADDED for each existing object', async () => {
    const client = h().client();
    const run = h().name('run');
    for (const n of ['a', 'b']) await client.create(configMap(h().namespace, `${run}-${n}`, {}, { run }));
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run } });
    const seen = await collect(events, (s) => s.length >= 2);
    expect(summary(seen).sort()).toEqual([`ADDED ${run}-a`, `ADDED ${run}-b`]);
  });

  it('from a past resourceVersion it replays what happened since', async () => {
    const client = h().client();
    const run = h().name('run');
    const first = await client.create(configMap(h().namespace, `${run}-a`, {}, { run }));
    await client.create(configMap(h().namespace, `${run}-b`, {}, { run }));
    await client.patch(first, mergePatch({ data: { x: '1' } }));
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run }, resourceVersion: first.metadata.resourceVersion! });
    const seen = await collect(events, (s) => s.length >= 2);
    expect(summary(seen)).toEqual([`ADDED ${run}-b`, `MODIFIED ${run}-a`]);
  });

  it('sendInitialEvents: ADDED for each object, then a bookmark marking the end, then changes', async () => {
    const client = h().client();
    const run = h().name('run');
    for (const n of ['a', 'b']) await client.create(configMap(h().namespace, `${run}-${n}`, {}, { run }));
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run }, sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: true });
    const seen: WatchEvent<ConfigMap>[] = [];
    while (!seen.some((e) => e.type === 'BOOKMARK')) {
      const next = await events.next();
      if (next.done) break;
      seen.push(next.value);
    }
    expect(summary(seen.slice(0, 2)).sort()).toEqual([`ADDED ${run}-a`, `ADDED ${run}-b`]);
    const bookmark = seen[2]!;
    expect(bookmark.type).toBe('BOOKMARK');
    expect(bookmark.object.metadata?.annotations?.['k8s.io/initial-events-end']).toBe('true');
    expect(bookmark.object.metadata?.resourceVersion).toMatch(/^\d+$/);
    await client.create(configMap(h().namespace, `${run}-c`, {}, { run }));
    const later = await collect(events, (s) => s.some((e) => e.type === 'ADDED'));
    expect(summary(later.filter((e) => e.type !== 'BOOKMARK'))).toEqual([`ADDED ${run}-c`]);
  });

  it('sendInitialEvents without resourceVersionMatch=NotOlderThan is 422 Invalid', async () => {
    await expectStatus(h().client().watch(ConfigMap, { namespace: h().namespace, sendInitialEvents: true, allowWatchBookmarks: true }), 422, 'Invalid');
  });

  it('a label selector: an object that starts matching is ADDED, one that stops is DELETED', async () => {
    const client = h().client();
    const run = h().name('run');
    const cm = await client.create(configMap(h().namespace, `${run}-x`, {}, { run, phase: 'off' }));
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run, phase: 'on' }, resourceVersion: cm.metadata.resourceVersion! });
    await client.patch(cm, mergePatch({ metadata: { labels: { phase: 'on' } } }));
    await client.patch(cm, mergePatch({ data: { a: '1' } }));
    await client.patch(cm, mergePatch({ metadata: { labels: { phase: 'off' } } }));
    const seen = await collect(events, (s) => s.length >= 3);
    expect(summary(seen)).toEqual([`ADDED ${run}-x`, `MODIFIED ${run}-x`, `DELETED ${run}-x`]);
  });

  it('an object leaving a label selector arrives DELETED as it was when it matched', async () => {
    const client = h().client();
    const run = h().name('run');
    const cm = await client.create(configMap(h().namespace, `${run}-x`, { a: '1' }, { run, phase: 'on' }));
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run, phase: 'on' }, resourceVersion: cm.metadata.resourceVersion! });
    const left = await client.patch(cm, mergePatch({ metadata: { labels: { phase: 'off' } }, data: { a: '2' } }));
    const [deleted] = await collect(events, (s) => s.length >= 1);
    expect(deleted!.type).toBe('DELETED');
    expect(deleted!.object.metadata?.labels).toEqual({ run, phase: 'on' });
    expect(deleted!.object.data).toEqual({ a: '1' });
    expect(deleted!.object.metadata?.resourceVersion).toBe(left.metadata.resourceVersion);
  });

  it('sendInitialEvents=false: no initial events, changes from the resourceVersion on', async () => {
    const client = h().client();
    const run = h().name('run');
    await client.create(configMap(h().namespace, `${run}-a`, {}, { run }));
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run }, sendInitialEvents: false, resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: true });
    await client.create(configMap(h().namespace, `${run}-b`, {}, { run }));
    const seen = await collect(events, (s) => s.some((e) => e.type === 'ADDED'));
    expect(summary(seen.filter((e) => e.type !== 'BOOKMARK'))).toEqual([`ADDED ${run}-b`]);
  });

  it('sendInitialEvents without allowWatchBookmarks: the initial ADDED events, and no end bookmark', async () => {
    const client = h().client();
    const run = h().name('run');
    await client.create(configMap(h().namespace, `${run}-a`, {}, { run }));
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run }, sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: false });
    await client.create(configMap(h().namespace, `${run}-b`, {}, { run }));
    const seen = await collect(events, (s) => s.length >= 2);
    expect(summary(seen)).toEqual([`ADDED ${run}-a`, `ADDED ${run}-b`]);
  });

  it('from no resourceVersion with bookmarks: the ADDED events end with the initial-events-end bookmark', async () => {
    const client = h().client();
    const run = h().name('run');
    await client.create(configMap(h().namespace, `${run}-a`, {}, { run }));
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run }, allowWatchBookmarks: true });
    const seen = await collect(events, (s) => s.some((e) => e.type === 'BOOKMARK'));
    expect(summary(seen.slice(0, 1))).toEqual([`ADDED ${run}-a`]);
    expect(seen[1]?.object.metadata?.annotations?.['k8s.io/initial-events-end']).toBe('true');
  });

  it('resourceVersionMatch=Exact on a watch is 422 naming both problems', async () => {
    const err = await expectStatus(h().client().watch(ConfigMap, { namespace: h().namespace, sendInitialEvents: true, resourceVersionMatch: 'Exact', allowWatchBookmarks: true }), 422, 'Invalid');
    expect(err.status?.message).toBe('ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]');
    expect(err.status?.details).toEqual({ group: 'meta.k8s.io', kind: 'ListOptions', causes: expect.any(Array) as unknown });
  });

  it('a field selector on metadata.name sees only that object', async () => {
    const client = h().client();
    const name = h().name('only');
    const other = await client.create(configMap(h().namespace, h().name('other')));
    const events = await client.watch(ConfigMap, { namespace: h().namespace, fieldSelector: { 'metadata.name': name }, resourceVersion: other.metadata.resourceVersion! });
    await client.patch(other, mergePatch({ data: { a: '1' } }));
    await client.create(configMap(h().namespace, name));
    const seen = await collect(events, (s) => s.length >= 1);
    expect(summary(seen)).toEqual([`ADDED ${name}`]);
  });

  it('the namespace scopes the watch', async () => {
    const client = h().client();
    const ns2 = h().name('ns');
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns2 } });
    const run = h().name('run');
    const start = await client.create(configMap(h().namespace, `${run}-here`, {}, { run }));
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run }, resourceVersion: start.metadata.resourceVersion! });
    await client.create(configMap(ns2, `${run}-there`, {}, { run }));
    await client.create(configMap(h().namespace, `${run}-here-2`, {}, { run }));
    const seen = await collect(events, (s) => s.length >= 1);
    expect(summary(seen)).toEqual([`ADDED ${run}-here-2`]);
  });

  it('across namespaces when none is given', async () => {
    const client = h().client();
    const ns2 = h().name('ns');
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns2 } });
    const run = h().name('run');
    const start = await client.create(configMap(h().namespace, `${run}-a`, {}, { run }));
    const events = await client.watch(ConfigMap, { labelSelector: { run }, resourceVersion: start.metadata.resourceVersion! });
    await client.create(configMap(ns2, `${run}-b`, {}, { run }));
    const seen = await collect(events, (s) => s.length >= 1);
    expect(seen[0]!.object.metadata?.namespace).toBe(ns2);
  });

  it('a cluster-scoped custom kind', async () => {
    const client = h().client();
    const run = h().name('run');
    const list = await client.list(Gadget, { labelSelector: { run } });
    const events = await client.watch(Gadget, { labelSelector: { run }, resourceVersion: list.metadata!.resourceVersion! });
    const name = h().name('g');
    await client.create({ apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Gadget', metadata: { name, labels: { run } }, spec: {} });
    await client.delete(Gadget, { name });
    const seen = await collect(events, (s) => s.length >= 2);
    expect(summary(seen)).toEqual([`ADDED ${name}`, `DELETED ${name}`]);
  });

  it('the metadata-only form streams PartialObjectMetadata', async () => {
    const client = h().client();
    const run = h().name('run');
    const list = await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run } });
    const events = await client.watch(metadataOnly(ConfigMap), { namespace: h().namespace, labelSelector: { run }, resourceVersion: list.metadata!.resourceVersion! });
    await client.create(configMap(h().namespace, `${run}-x`, { secret: 'payload' }, { run }));
    const [added] = await collect(events, (s) => s.length >= 1);
    expect(added!.object).toMatchObject({ apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata', metadata: { name: `${run}-x` } });
    expect((added!.object as Record<string, unknown>)['data']).toBeUndefined();
  });

  it('timeoutSeconds ends the stream normally', async () => {
    const client = h().client();
    const list = await client.list(ConfigMap, { namespace: h().namespace, limit: 1 });
    const started = Date.now();
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { never: 'matches' }, resourceVersion: list.metadata!.resourceVersion!, timeoutSeconds: 1, allowWatchBookmarks: false });
    const seen = await collect(events, () => false, 15_000);
    expect(seen).toEqual([]);
    expect(Date.now() - started).toBeLessThan(14_000);
  });

  it('a timeoutSeconds longer than a timer holds (40 days) keeps the stream open', async () => {
    const client = h().client();
    const run = h().name('long');
    const events = await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run }, timeoutSeconds: 40 * 24 * 3600, allowWatchBookmarks: false });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await client.create(configMap(h().namespace, run, {}, { run }));
    const seen = await collect(events, (e) => e.length > 0, 15_000);
    expect(summary(seen)).toEqual([`ADDED ${run}`]);
  });
});
