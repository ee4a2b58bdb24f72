/**
 * Conformance: what the widened differential fuzzer found in deletes. A
 * delete-collection with `limit` deletes one page (the server lists with
 * the options, then deletes what the page holds) and answers it with a
 * continue token, and `remainingItemCount` when no selector filtered it; a
 * finalizer added to an object being deleted is refused naming the new
 * ones in Go's notation.
 */
import { describe, expect, it } from 'vitest';
import { BACKENDS, useBackend } from './backends.js';
import { raw } from './support.js';

describe.each(BACKENDS)('deletes ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  it.each([
    { what: 'no selector', query: { limit: '2' }, remaining: 1 },
    { what: 'a label selector', query: { limit: '2', labelSelector: 'page' }, remaining: undefined },
  ])('a delete-collection with limit deletes one page and says what is left ($what)', async ({ query, remaining }) => {
    const ns = h().name('dc');
    await h().client().create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    try {
      for (const n of ['a', 'b', 'c']) await h().client().create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: n, namespace: ns, labels: { page: 'x' } } });
      const res = await raw(h(), 'DELETE', `/api/v1/namespaces/${ns}/configmaps`, { query });
      const meta = res.body['metadata'] as { continue?: string; remainingItemCount?: number };
      const deleted = (res.body['items'] as { metadata: { name: string } }[]).map((i) => i.metadata.name);
      expect({ status: res.status, deleted, continued: typeof meta.continue === 'string' && meta.continue !== '', remaining: meta.remainingItemCount }).toEqual({ status: 200, deleted: ['a', 'b'], continued: true, remaining });
      const left = (await h().client().list({ apiVersion: 'v1', kind: 'ConfigMap' } as never, { namespace: ns })).items.map((i) => (i as { metadata: { name: string } }).metadata.name);
      expect(left).toEqual(['c']);
    } finally {
      await h().client().delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
    }
  });

  it.each([
    { what: 'a ConfigMap', path: '/api/v1/namespaces/{ns}/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap' }, times: 1 },
    // the generic update checks it, then the custom-resource strategy again
    { what: 'a custom resource (reported twice)', path: '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets', body: { apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget' }, times: 2 },
  ])('a finalizer added to $what being deleted is refused, the new ones named', async ({ path, body, times }) => {
    const collection = path.replace('{ns}', h().namespace);
    const name = h().name('fin');
    expect((await raw(h(), 'POST', collection, { body: { ...body, metadata: { name, finalizers: ['example.com/a'] } } })).status).toBe(201);
    expect((await raw(h(), 'DELETE', `${collection}/${name}`)).status).toBe(200);
    const res = await raw(h(), 'PATCH', `${collection}/${name}`, { body: { metadata: { finalizers: ['example.com/a', 'example.com/b', 'example.com/c'] } }, contentType: 'application/merge-patch+json' });
    expect(res.status).toBe(422);
    expect((res.body['details'] as { causes: { message: string }[] }).causes.map((c) => c.message)).toEqual(Array<string>(times).fill('Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/b", "example.com/c"}'));
    await raw(h(), 'PATCH', `${collection}/${name}`, { body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json' });
  });

  it.each([
    { what: 'a ConfigMap', path: '/api/v1/namespaces/{ns}/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap' }, times: 1 },
    { what: 'a custom resource (reported twice)', path: '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets', body: { apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget' }, times: 2 },
  ])('an update (PUT) of $what being deleted: its deletion time is kept, its grace period is immutable, a new finalizer refused', async ({ path, body, times }) => {
    const collection = path.replace('{ns}', h().namespace);
    const name = h().name('fin');
    expect((await raw(h(), 'POST', collection, { body: { ...body, metadata: { name, finalizers: ['example.com/a'] } } })).status).toBe(201);
    expect((await raw(h(), 'DELETE', `${collection}/${name}`)).status).toBe(200);
    const read = (await raw(h(), 'GET', `${collection}/${name}`)).body as { metadata: Record<string, unknown> };
    const put = async (meta: Record<string, unknown>, dryRun: boolean): Promise<[number, string[]]> => {
      const res = await raw(h(), 'PUT', `${collection}/${name}`, { body: { ...read, metadata: { ...read.metadata, ...meta } }, query: dryRun ? { dryRun: 'All' } : {} });
      return [res.status, ((res.body['details'] as { causes?: { message: string }[] } | undefined)?.causes ?? []).map((c) => c.message)];
    };
    const newFinalizer = 'Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"example.com/b"}';
    const immutable = 'Invalid value: 7: field is immutable';
    const twice = (xs: string[]): string[] => Array.from({ length: times }, () => xs).flat();
    // as read, with another deletion time, or with the deletion fields left out: only the new finalizer is refused
    expect(await put({ finalizers: ['example.com/a', 'example.com/b'] }, true)).toEqual([422, twice([newFinalizer])]);
    expect(await put({ finalizers: ['example.com/a', 'example.com/b'], deletionTimestamp: '2001-01-01T00:00:00Z' }, true)).toEqual([422, twice([newFinalizer])]);
    expect(await put({ finalizers: ['example.com/a', 'example.com/b'], deletionTimestamp: undefined, deletionGracePeriodSeconds: undefined }, false)).toEqual([422, twice([newFinalizer])]);
    // another grace period: immutable, after the finalizer (each pair twice for a custom resource)
    expect(await put({ finalizers: ['example.com/a', 'example.com/b'], deletionGracePeriodSeconds: 7 }, true)).toEqual([422, twice([newFinalizer, immutable])]);
    expect(await put({ deletionGracePeriodSeconds: 7 }, false)).toEqual([422, twice([immutable])]);
    // the message names each distinct error once (Go's ErrorList.ToAggregate), whatever the causes repeat
    const message = (await raw(h(), 'PUT', `${collection}/${name}`, { body: { ...read, metadata: { ...read.metadata, deletionGracePeriodSeconds: 7 } } })).body['message'];
    expect(message).toBe(`${body.kind}${body.apiVersion.includes('/') ? `.${body.apiVersion.split('/')[0]!}` : ''} "${name}" is invalid: metadata.deletionGracePeriodSeconds: ${immutable}`);
    // the same grace period, another deletion time: taken, the stored time kept
    const kept = await raw(h(), 'PUT', `${collection}/${name}`, { body: { ...read, metadata: { ...read.metadata, deletionTimestamp: '2001-01-01T00:00:00Z', labels: { x: 'y' } } } });
    expect(kept.status).toBe(200);
    expect((kept.body['metadata'] as Record<string, unknown>)['deletionTimestamp']).toBe(read.metadata['deletionTimestamp']);
    await raw(h(), 'PATCH', `${collection}/${name}`, { body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json' });
  });

  it.each([
    { what: 'a ConfigMap', path: '/api/v1/namespaces/{ns}/configmaps', body: { apiVersion: 'v1', kind: 'ConfigMap' }, times: 1 },
    { what: 'a custom resource (reported twice)', path: '/apis/conformance.kubeloop.dev/v1/namespaces/{ns}/widgets', body: { apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget' }, times: 2 },
  ])('a deletion time an update gives: immutable on $what not being deleted; on one being deleted the stored time is kept and the writer owns the field', async ({ path, body, times }) => {
    const collection = path.replace('{ns}', h().namespace);
    const name = h().name('dts');
    expect((await raw(h(), 'POST', collection, { body: { ...body, metadata: { name, finalizers: ['example.com/a'] } } })).status).toBe(201);
    const live = await raw(h(), 'PATCH', `${collection}/${name}`, { body: { metadata: { deletionTimestamp: '2001-01-01T00:00:00Z', deletionGracePeriodSeconds: 7 } }, contentType: 'application/merge-patch+json' });
    const causes = (r: typeof live): string[] => ((r.body['details'] as { causes?: { field: string; message: string }[] } | undefined)?.causes ?? []).map((c) => `${c.field}: ${c.message}`);
    const pair = ['metadata.deletionTimestamp: Invalid value: "2001-01-01T00:00:00Z": field is immutable', 'metadata.deletionGracePeriodSeconds: Invalid value: 7: field is immutable'];
    expect([live.status, causes(live)]).toEqual([422, Array.from({ length: times }, () => pair).flat()]);
    expect((await raw(h(), 'DELETE', `${collection}/${name}`)).status).toBe(200);
    const read = (await raw(h(), 'GET', `${collection}/${name}`)).body as { metadata: Record<string, unknown> };
    const kept = await raw(h(), 'PATCH', `${collection}/${name}`, { body: { metadata: { deletionTimestamp: '2001-01-01T00:00:00Z', labels: { x: 'y' } } }, contentType: 'application/merge-patch+json', query: { fieldManager: 'writer' } });
    expect(kept.status).toBe(200);
    const m = kept.body['metadata'] as { deletionTimestamp: string; managedFields: { manager: string; fieldsV1: { 'f:metadata'?: Record<string, unknown> } }[] };
    expect(m.deletionTimestamp).toBe(read.metadata['deletionTimestamp']);
    expect(Object.keys(m.managedFields.find((e) => e.manager === 'writer')!.fieldsV1['f:metadata'] ?? {}).sort()).toEqual(['f:deletionTimestamp', 'f:labels']);
    await raw(h(), 'PATCH', `${collection}/${name}`, { body: { metadata: { finalizers: null } }, contentType: 'application/merge-patch+json' });
  });
});
