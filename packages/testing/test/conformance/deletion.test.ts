/** Conformance: finalizers, graceful deletion, propagation policies and namespaces, on envtest and on the fake (neither runs a garbage collector by default). */
import { describe, expect, it } from 'vitest';
import { mergePatch } from '@kubeloop/client';
import type { DeleteOptions } from '@kubeloop/client';
import { ConfigMap, Namespace } from '@kubeloop/scheme';
import { BACKENDS, useBackend, Widget } from './backends.js';
import { collect, configMap, expectStatus, raw, summary, widget } from './support.js';

const FINALIZER = 'conformance.kubeloop.dev/hold';

describe.each(BACKENDS)('deletion ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  function held<T extends { metadata: Record<string, unknown> }>(obj: T, finalizers = [FINALIZER]): T {
    return { ...obj, metadata: { ...obj.metadata, finalizers } };
  }

  it('an object with a finalizer is marked, not removed: deletionTimestamp set, generation bumped', async () => {
    const client = h().client();
    const w = await client.create(held(widget(h().namespace, h().name('w'))));
    await client.delete(w);
    const marked = await client.get(Widget, { namespace: h().namespace, name: w.metadata.name });
    expect(marked.metadata?.deletionTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(marked.metadata?.deletionGracePeriodSeconds).toBe(0);
    expect(marked.metadata?.generation).toBe(2);
    expect(marked.metadata?.finalizers).toEqual([FINALIZER]);
    await client.patch(marked, mergePatch({ metadata: { finalizers: null } }));
  });

  it('deleting a marked object again changes nothing', async () => {
    const client = h().client();
    const w = await client.create(held(widget(h().namespace, h().name('w'))));
    await client.delete(w);
    const first = await client.get(Widget, { namespace: h().namespace, name: w.metadata.name });
    await client.delete(w);
    const second = await client.get(Widget, { namespace: h().namespace, name: w.metadata.name });
    expect(second.metadata?.deletionTimestamp).toBe(first.metadata?.deletionTimestamp);
    expect(second.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
    await client.patch(second, mergePatch({ metadata: { finalizers: null } }));
  });

  it('removing the last finalizer removes the object', async () => {
    const client = h().client();
    const cm = await client.create(held(configMap(h().namespace, h().name('cm'))));
    await client.delete(cm);
    const marked = await client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name });
    await client.update({ ...marked, metadata: { ...marked.metadata, finalizers: [] } });
    await expectStatus(client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name }), 404, 'NotFound');
  });

  it('removing one of two finalizers keeps the object', async () => {
    const client = h().client();
    const cm = await client.create(held(configMap(h().namespace, h().name('cm')), [FINALIZER, `${FINALIZER}-2`]));
    await client.delete(cm);
    const marked = await client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name });
    const after = await client.update({ ...marked, metadata: { ...marked.metadata, finalizers: [FINALIZER] } });
    expect(after.metadata.deletionTimestamp).toBe(marked.metadata?.deletionTimestamp);
    await client.patch(after, mergePatch({ metadata: { finalizers: null } }));
  });

  it('a new finalizer cannot be added to an object being deleted', async () => {
    const client = h().client();
    const cm = await client.create(held(configMap(h().namespace, h().name('cm'))));
    await client.delete(cm);
    const marked = await client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name });
    await expectStatus(client.update({ ...marked, metadata: { ...marked.metadata, finalizers: [FINALIZER, 'example.com/late'] } }), 422, 'Invalid');
    await client.patch(marked, mergePatch({ metadata: { finalizers: null } }));
  });

  it('the spec of an object being deleted can still change', async () => {
    const client = h().client();
    const w = await client.create(held(widget(h().namespace, h().name('w'))));
    await client.delete(w);
    const marked = await client.get(Widget, { namespace: h().namespace, name: w.metadata.name });
    const changed = await client.patch(marked, mergePatch({ spec: { size: 7 } }));
    expect(changed.spec?.size).toBe(7);
    await client.patch(marked, mergePatch({ metadata: { finalizers: null } }));
  });

  it('a watch sees the mark as MODIFIED and the removal as DELETED', async () => {
    const client = h().client();
    const name = h().name('cm');
    const cm = await client.create(held(configMap(h().namespace, name)));
    const events = await client.watch(ConfigMap, { namespace: h().namespace, resourceVersion: cm.metadata.resourceVersion!, fieldSelector: { 'metadata.name': name } });
    await client.delete(cm);
    const marked = await client.get(ConfigMap, { namespace: h().namespace, name });
    await client.patch(marked, mergePatch({ metadata: { finalizers: null } }));
    const seen = await collect(events, (s) => s.some((e) => e.type === 'DELETED'));
    expect(summary(seen)).toEqual([`MODIFIED ${name}`, `DELETED ${name}`]);
    expect(seen[0]!.object.metadata?.deletionTimestamp).toBeTruthy();
    // the DELETED event carries the object as it was stored: finalizer and all
    expect(seen[1]!.object.metadata?.finalizers).toEqual([FINALIZER]);
  });

  it('propagationPolicy Orphan adds the orphan finalizer (no garbage collector runs)', async () => {
    const client = h().client();
    const cm = await client.create(configMap(h().namespace, h().name('cm')));
    await client.delete(cm, { propagationPolicy: 'Orphan' });
    const marked = await client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name });
    expect(marked.metadata?.finalizers).toEqual(['orphan']);
    expect(marked.metadata?.deletionTimestamp).toBeTruthy();
    await client.patch(marked, mergePatch({ metadata: { finalizers: null } }));
  });

  it('delete options in the query string count as in the body (kubectl sends them there)', async () => {
    const client = h().client();
    const cm = await client.create(configMap(h().namespace, h().name('cm')));
    const res = await raw(h(), 'DELETE', `/api/v1/namespaces/${h().namespace}/configmaps/${cm.metadata.name}`, { query: { propagationPolicy: 'Orphan' } });
    expect(res.status).toBe(200);
    const marked = await client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name });
    expect(marked.metadata?.finalizers).toEqual(['orphan']);
    await client.patch(marked, mergePatch({ metadata: { finalizers: null } }));
  });

  it('a dry-run delete-collection answers what it would delete and deletes nothing', async () => {
    const client = h().client();
    const run = h().name('run');
    for (const n of ['a', 'b']) await client.create(configMap(h().namespace, `${run}-${n}`, {}, { run }));
    const res = await raw(h(), 'DELETE', `/api/v1/namespaces/${h().namespace}/configmaps`, { query: { labelSelector: `run=${run}`, dryRun: 'All' } });
    expect(res.status).toBe(200);
    expect((res.body['items'] as { metadata: { name: string } }[]).map((i) => i.metadata.name).sort()).toEqual([`${run}-a`, `${run}-b`]);
    const left = await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run } });
    expect(left.items.map((i) => i.metadata?.name).sort()).toEqual([`${run}-a`, `${run}-b`]);
  });

  it('beside a body the query string is not read: ?dryRun=All with a DeleteOptions body deletes for real, one object or a collection', async () => {
    const client = h().client();
    const run = h().name('run');
    for (const n of ['a', 'b', 'c']) await client.create(configMap(h().namespace, `${run}-${n}`, {}, { run }));
    const body = { apiVersion: 'meta.k8s.io/v1', kind: 'DeleteOptions', propagationPolicy: 'Background' };
    expect((await raw(h(), 'DELETE', `/api/v1/namespaces/${h().namespace}/configmaps/${run}-a`, { query: { dryRun: 'All' }, body })).status).toBe(200);
    expect((await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run } })).items.map((i) => i.metadata?.name).sort()).toEqual([`${run}-b`, `${run}-c`]);
    expect((await raw(h(), 'DELETE', `/api/v1/namespaces/${h().namespace}/configmaps`, { query: { labelSelector: `run=${run}`, dryRun: 'All' }, body })).status).toBe(200);
    expect((await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run } })).items).toEqual([]);
  });

  it("the client's dry runs with other delete options delete nothing (it puts dryRun in the body)", async () => {
    const client = h().client();
    const run = h().name('run');
    const made = await Promise.all(['a', 'b'].map((n) => client.create(configMap(h().namespace, `${run}-${n}`, {}, { run }))));
    await client.delete(made[0]!, { dryRun: true, preconditions: { uid: made[0]!.metadata.uid! }, propagationPolicy: 'Background' });
    await client.deleteAllOf(ConfigMap, { namespace: h().namespace, labelSelector: { run }, dryRun: true, gracePeriodSeconds: 0 });
    expect((await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run } })).items).toHaveLength(2);
  });

  it('propagationPolicy Foreground adds the foregroundDeletion finalizer', async () => {
    const client = h().client();
    const cm = await client.create(configMap(h().namespace, h().name('cm')));
    await client.delete(cm, { propagationPolicy: 'Foreground' });
    const marked = await client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name });
    expect(marked.metadata?.finalizers).toEqual(['foregroundDeletion']);
    await client.patch(marked, mergePatch({ metadata: { finalizers: null } }));
  });

  it('a later delete of a marked object switches the garbage collector\'s finalizer to its policy: Orphan, then Foreground, then Background takes both off; with no policy the one there stays', async () => {
    const client = h().client();
    const made = await client.create({ ...configMap(h().namespace, h().name('cm')), metadata: { name: h().name('cm'), namespace: h().namespace, finalizers: ['example.com/hold'] } });
    const key = { namespace: h().namespace, name: made.metadata.name };
    const finalizersAfter = async (options: DeleteOptions): Promise<string[] | undefined> => {
      await client.delete(made, options);
      return (await client.get(ConfigMap, key)).metadata?.finalizers;
    };
    expect(await finalizersAfter({ propagationPolicy: 'Foreground' })).toEqual(['example.com/hold', 'foregroundDeletion']);
    expect(await finalizersAfter({})).toEqual(['example.com/hold', 'foregroundDeletion']);
    expect(await finalizersAfter({ propagationPolicy: 'Orphan' })).toEqual(['example.com/hold', 'orphan']);
    expect(await finalizersAfter({})).toEqual(['example.com/hold', 'orphan']);
    expect(await finalizersAfter({ propagationPolicy: 'Foreground' })).toEqual(['example.com/hold', 'foregroundDeletion']);
    expect(await finalizersAfter({ propagationPolicy: 'Background' })).toEqual(['example.com/hold']);
    await client.patch(await client.get(ConfigMap, key), mergePatch({ metadata: { finalizers: null } }));
  });

  it('propagationPolicy Background removes the owner; its dependents stay (no garbage collector runs)', async () => {
    const client = h().client();
    const owner = await client.create(configMap(h().namespace, h().name('owner')));
    const dep = await client.create({
      ...configMap(h().namespace, h().name('dep')),
      metadata: { name: h().name('dep'), namespace: h().namespace, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: owner.metadata.name, uid: owner.metadata.uid! }] },
    });
    await client.delete(owner, { propagationPolicy: 'Background' });
    await expectStatus(client.get(ConfigMap, { namespace: h().namespace, name: owner.metadata.name }), 404, 'NotFound');
    expect((await client.get(ConfigMap, { namespace: h().namespace, name: dep.metadata.name })).metadata?.ownerReferences).toHaveLength(1);
  });

  it('an invalid propagationPolicy is 422 Invalid', async () => {
    const client = h().client();
    const cm = await client.create(configMap(h().namespace, h().name('cm')));
    await expectStatus(client.delete(cm, { propagationPolicy: 'Sometimes' as 'Orphan' }), 422, 'Invalid');
  });

  it('orphanDependents beside a propagationPolicy is 422 Invalid, checked before the object is looked up (a missing one too), one object or a collection', async () => {
    const client = h().client();
    const cm = await client.create(configMap(h().namespace, h().name('cm')));
    const path = `/api/v1/namespaces/${h().namespace}/configmaps`;
    for (const [target, query] of [
      [`${path}/${cm.metadata.name}`, { orphanDependents: 'true', propagationPolicy: 'Background' }],
      [`${path}/${h().name('missing')}`, { orphanDependents: 'false', propagationPolicy: 'Foreground' }],
      [path, { orphanDependents: 'true', propagationPolicy: 'Orphan' }],
    ] as const) {
      const res = await raw(h(), 'DELETE', target, { query });
      expect(res.status, target).toBe(422);
      expect(res.body['message']).toBe(`DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "${query.propagationPolicy}": orphanDependents and deletionPropagation cannot be both set`);
    }
    // nothing was deleted
    expect((await client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name })).metadata?.deletionTimestamp).toBeUndefined();
  });

  it('orphanDependents=false on an object a finalizer keeps answers 202 Accepted (dry run too); deleted at once, or without it, 200', async () => {
    const client = h().client();
    const kept = await client.create(held(configMap(h().namespace, h().name('cm'))));
    const gone = await client.create(configMap(h().namespace, h().name('cm')));
    const path = (name: string) => `/api/v1/namespaces/${h().namespace}/configmaps/${name}`;
    expect((await raw(h(), 'DELETE', path(kept.metadata.name), { query: { orphanDependents: 'false', dryRun: 'All' } })).status).toBe(202);
    expect((await raw(h(), 'DELETE', path(kept.metadata.name), { body: { apiVersion: 'meta.k8s.io/v1', kind: 'DeleteOptions', orphanDependents: false } })).status).toBe(202);
    // marked already: still not deleted at once
    expect((await raw(h(), 'DELETE', path(kept.metadata.name), { query: { orphanDependents: 'false' } })).status).toBe(202);
    expect((await raw(h(), 'DELETE', path(kept.metadata.name), {})).status).toBe(200);
    expect((await raw(h(), 'DELETE', path(gone.metadata.name), { query: { orphanDependents: 'false' } })).status).toBe(200);
    const marked = await client.get(ConfigMap, { namespace: h().namespace, name: kept.metadata.name });
    await client.patch(marked, mergePatch({ metadata: { finalizers: null } }));
  });

  it('deleteAllOf marks objects with finalizers and removes the others', async () => {
    const client = h().client();
    const run = h().name('run');
    await client.create({ ...configMap(h().namespace, `${run}-held`, {}, { run }), metadata: { name: `${run}-held`, namespace: h().namespace, labels: { run }, finalizers: [FINALIZER] } });
    await client.create(configMap(h().namespace, `${run}-free`, {}, { run }));
    await client.deleteAllOf(ConfigMap, { namespace: h().namespace, labelSelector: { run } });
    const left = await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run } });
    expect(left.items.map((i) => [i.metadata?.name, Boolean(i.metadata?.deletionTimestamp)])).toEqual([[`${run}-held`, true]]);
    await client.patch(left.items[0]!, mergePatch({ metadata: { finalizers: null } }));
  });

  describe('namespaces', () => {
    it('a deleted namespace is Terminating and keeps its kubernetes finalizer (no namespace controller runs)', async () => {
      const client = h().client();
      const name = h().name('ns');
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      await client.delete(Namespace, { name });
      const ns = await client.get(Namespace, { name });
      expect(ns.status?.phase).toBe('Terminating');
      expect(ns.metadata?.deletionTimestamp).toBeTruthy();
      expect(ns.spec?.finalizers).toEqual(['kubernetes']);
    });

    it('creating in a Terminating namespace is 403 Forbidden', async () => {
      const client = h().client();
      const name = h().name('ns');
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      await client.delete(Namespace, { name });
      const err = await expectStatus(client.create(configMap(name, 'late')), 403, 'Forbidden');
      expect(err.message).toContain(`because it is being terminated`);
    });

    it('objects in a Terminating namespace can still be read and updated', async () => {
      const client = h().client();
      const name = h().name('ns');
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      const cm = await client.create(configMap(name, 'inside', { a: '1' }));
      await client.delete(Namespace, { name });
      const updated = await client.update({ ...cm, data: { a: '2' } });
      expect(updated.data).toEqual({ a: '2' });
    });
  });
});
