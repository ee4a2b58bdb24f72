/**
 * Conformance: a CRD's schema changed under stored objects. The server reads
 * a stored object back through the new schema (a new default applied, a
 * field no longer declared pruned) without writing it (no new
 * resourceVersion), and ratchets validation on update (an error at a value
 * the update left unchanged is dropped; a required field's error belongs to
 * the object lacking it), so an unrelated patch of an old object still goes
 * through while any change to an invalid value is refused. Written from
 * kube-apiserver v1.37.2's answers (issue 40); the fake failed every step
 * before. The order of several errors in one answer is a documented
 * difference (docs/testing-fake.md), so causes are compared as sets.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../../src/index.js';
import { BACKENDS, useBackend } from './backends.js';
import { raw, thingCRD } from './support.js';

const MERGE = 'application/merge-patch+json';

function crd(group: string, spec: Record<string, unknown>, resourceVersion?: string): Record<string, unknown> {
  return thingCRD(group, { type: 'object', properties: { spec } }, resourceVersion);
}

describe.each(BACKENDS)('a CRD schema changed under stored objects ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  /** A kind of the test's own (`things` in a group named after it) whose CRD's spec schema is `spec`; `change` replaces that schema. */
  async function thingKind(spec: Record<string, unknown>) {
    const group = `${h().name('sc')}.conformance.kubeloop.dev`;
    const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.${group}`;
    expect((await raw(h(), 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: crd(group, spec) })).status).toBe(201);
    return {
      group,
      crdPath,
      path: `/apis/${group}/v1/namespaces/${h().namespace}/things`,
      change: async (next: Record<string, unknown>): Promise<void> => {
        const current = await raw(h(), 'GET', crdPath);
        expect((await raw(h(), 'PUT', crdPath, { body: crd(group, next, (current.body['metadata'] as { resourceVersion: string }).resourceVersion) })).status).toBe(200);
      },
    };
  }

  /** Creates `body` at `path` once the server serves the new kind (its handler starts a moment after the CRD is made). */
  async function createWhenServed(path: string, body: Record<string, unknown>, query?: Record<string, string>) {
    return eventually(async () => {
      const res = await raw(h(), 'POST', path, { body, ...(query ? { query } : {}) });
      expect(res.status).toBe(201);
      return res;
    }, { timeoutMs: 15_000 });
  }

  it('reads old objects defaulted and pruned by the new schema, and ratchets validation on update', async () => {
    const causes = (res: { body: Record<string, unknown> }): string[] => ((res.body['details'] as { causes?: { field: string; message: string }[] } | undefined)?.causes ?? []).map((c) => `${c.field}: ${c.message}`).sort();
    const { group, crdPath, path, change } = await thingKind({ type: 'object', properties: { size: { type: 'integer' }, color: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } } });
    const created = await createWhenServed(path, { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'a' }, spec: { size: 5, color: 'red', tags: ['x', 'y'] } });
    const rv = (created.body['metadata'] as { resourceVersion: string }).resourceVersion;

    // tightened: size at most 3, at most one tag, a new required count; color no longer declared; a new defaulted mode
    await change({ type: 'object', properties: { size: { type: 'integer', maximum: 3 }, mode: { type: 'string', default: 'auto' }, tags: { type: 'array', maxItems: 1, items: { type: 'string' } }, count: { type: 'integer', minimum: 0 } }, required: ['count'] });

    await eventually(async () => {
      const read = await raw(h(), 'GET', `${path}/a`);
      expect({ spec: read.body['spec'], rv: (read.body['metadata'] as { resourceVersion: string }).resourceVersion }).toEqual({ spec: { size: 5, tags: ['x', 'y'], mode: 'auto' }, rv });
      const listed = await raw(h(), 'GET', path);
      expect((listed.body['items'] as { spec: unknown }[]).map((i) => i.spec)).toEqual([{ size: 5, tags: ['x', 'y'], mode: 'auto' }]);
    }, { timeoutMs: 15_000 });

    const unrelated = await raw(h(), 'PATCH', `${path}/a`, { body: { metadata: { labels: { x: 'y' } } }, contentType: MERGE });
    expect({ status: unrelated.status, spec: unrelated.body['spec'] }).toEqual({ status: 200, spec: { size: 5, tags: ['x', 'y'], mode: 'auto' } });

    const sizeUp = await raw(h(), 'PATCH', `${path}/a`, { body: { spec: { size: 6 } }, contentType: MERGE });
    expect({ status: sizeUp.status, causes: causes(sizeUp) }).toEqual({ status: 422, causes: ['spec.count: Required value', 'spec.size: Invalid value: 6: spec.size in body should be less than or equal to 3'] });
    const tagAdded = await raw(h(), 'PATCH', `${path}/a`, { body: { spec: { tags: ['x', 'y', 'z'] } }, contentType: MERGE });
    expect({ status: tagAdded.status, causes: causes(tagAdded) }).toEqual({ status: 422, causes: ['spec.count: Required value', 'spec.tags: Too many: 3: must have at most 1 item'] });
    const badCount = await raw(h(), 'PATCH', `${path}/a`, { body: { spec: { count: -1 } }, contentType: MERGE });
    expect({ status: badCount.status, causes: causes(badCount) }).toEqual({ status: 422, causes: ['spec.count: Invalid value: -1: spec.count in body should be greater than or equal to 0'] });
    const fixedCount = await raw(h(), 'PATCH', `${path}/a`, { body: { spec: { count: 1 } }, contentType: MERGE });
    expect({ status: fixedCount.status, spec: fixedCount.body['spec'] }).toEqual({ status: 200, spec: { size: 5, tags: ['x', 'y'], mode: 'auto', count: 1 } });

    const fresh = await raw(h(), 'POST', path, { body: { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'b' }, spec: { size: 5 } } });
    expect({ status: fresh.status, causes: causes(fresh) }).toEqual({ status: 422, causes: ['spec.count: Required value', 'spec.size: Invalid value: 5: spec.size in body should be less than or equal to 3'] });
    // in the server's order, not sorted: a present field's error, then the missing field (the properties are
    // validated before the required list)
    expect(fresh.body['message']).toBe(`Thing.${group} "b" is invalid: [spec.size: Invalid value: 5: spec.size in body should be less than or equal to 3, spec.count: Required value]`);
    await raw(h(), 'DELETE', crdPath);
  }, 60_000);

  it('keeps the managed fields of a write to an object its changed schema cannot type; an apply over it is a 500', async () => {
    const APPLY = 'application/apply-patch+yaml';
    const { group, crdPath, path, change } = await thingKind({ type: 'object', properties: { size: { type: 'integer' }, color: { type: 'string' } } });
    const created = await createWhenServed(path, { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'a' }, spec: { size: 3, color: 'red' } }, { fieldManager: 'maker' });
    const made = (created.body['metadata'] as { managedFields: unknown[] }).managedFields;
    expect(made).toEqual([expect.objectContaining({ manager: 'maker', operation: 'Update', fieldsV1: { 'f:spec': { '.': {}, 'f:color': {}, 'f:size': {} } } })]);

    // size becomes a string: the stored 3 stays (ratcheting), but server-side apply's typed converter cannot type it
    await change({ type: 'object', properties: { size: { type: 'string' }, color: { type: 'string' }, mode: { type: 'string', enum: ['v2'] } } });
    await eventually(async () => {
      const res = await raw(h(), 'POST', path, { query: { dryRun: 'All' }, body: { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'probe' }, spec: { mode: 'v2' } } });
      expect(res.status).toBe(201);
    }, { timeoutMs: 15_000 });

    // a patch and an update go through, and the object keeps the managed fields it had: the field manager failed
    const patched = await raw(h(), 'PATCH', `${path}/a`, { query: { fieldManager: 'patcher' }, contentType: MERGE, body: { metadata: { labels: { x: 'y' } }, spec: { color: 'blue' } } });
    expect({ status: patched.status, managedFields: (patched.body['metadata'] as { managedFields: unknown }).managedFields }).toEqual({ status: 200, managedFields: made });
    const applied = await raw(h(), 'PATCH', `${path}/a`, { query: { fieldManager: 'applier' }, contentType: APPLY, body: { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'a' }, spec: { mode: 'v2' } } });
    expect({ status: applied.status, message: applied.body['message'] }).toEqual({ status: 500, message: `failed to create typed live object (${h().namespace}/a; ${group}/v1, Kind=Thing): .spec.size: expected string, got &value.valueUnstructured{Value:3}` });

    // removing the value: the write is recorded as before it (maker still owns size), so an apply of size by another manager conflicts
    const removed = await raw(h(), 'PATCH', `${path}/a`, { query: { fieldManager: 'remover' }, contentType: MERGE, body: { spec: { size: null } } });
    expect({ status: removed.status, spec: removed.body['spec'], managedFields: (removed.body['metadata'] as { managedFields: unknown }).managedFields }).toEqual({ status: 200, spec: { color: 'blue' }, managedFields: made });
    const conflicting = await raw(h(), 'PATCH', `${path}/a`, { query: { fieldManager: 'applier' }, contentType: APPLY, body: { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'a' }, spec: { size: 'large' } } });
    expect({ status: conflicting.status, message: conflicting.body['message'] }).toEqual({ status: 409, message: `Apply failed with 1 conflict: conflict with "maker" using ${group}/v1: .spec.size` });
    await raw(h(), 'DELETE', crdPath);
  }, 60_000);

  it('ratchets a write that leaves the object as it was once pruned and defaulted', async () => {
    const { group, crdPath, path, change } = await thingKind({ type: 'object', properties: { size: { type: 'integer' } } });
    await createWhenServed(path, { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'a' }, spec: { size: 1 } });
    // a required count, and a defaulted mode
    await change({ type: 'object', properties: { size: { type: 'integer' }, count: { type: 'integer' }, mode: { type: 'string', default: 'auto' } }, required: ['count'] });
    await eventually(async () => {
      const read = await raw(h(), 'GET', `${path}/a`);
      expect(read.body['spec']).toEqual({ size: 1, mode: 'auto' });
    }, { timeoutMs: 15_000 });
    // only fields the schema prunes: the object is as it was, the missing count is not this write's error
    const pruned = await raw(h(), 'PATCH', `${path}/a`, { body: { spec: { bogus: [1] } }, contentType: MERGE });
    expect({ status: pruned.status, spec: pruned.body['spec'] }).toEqual({ status: 200, spec: { size: 1, mode: 'auto' } });
    const read = await raw(h(), 'GET', `${path}/a`);
    const updated = await raw(h(), 'PUT', `${path}/a`, { body: { ...read.body, spec: { size: 1, extra: 'x' } } });
    expect({ status: updated.status, spec: updated.body['spec'] }).toEqual({ status: 200, spec: { size: 1, mode: 'auto' } });
    const changed = await raw(h(), 'PATCH', `${path}/a`, { body: { spec: { size: 2 } }, contentType: MERGE });
    expect({ status: changed.status, message: changed.body['message'] }).toEqual({ status: 422, message: `Thing.${group} "a" is invalid: spec.count: Required value` });
    await raw(h(), 'DELETE', crdPath);
  }, 60_000);

  it('an applied field the schema pruned was stored: a schema declaring it later shows it, without a write', async () => {
    // an undeclared field is taken by apply only under a node keeping unknown fields (elsewhere apply's 500, on both): a list item below one
    const items = (item: Record<string, unknown>) => ({ type: 'array', items: { type: 'object', properties: item } });
    const { group, crdPath, path, change } = await thingKind({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { items: items({ name: { type: 'string' } }) } });
    const body = { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'a' }, spec: { items: [{ name: 'x', note: 'kept in storage' }] } };
    const applied = await eventually(async () => {
      const res = await raw(h(), 'PATCH', `${path}/a`, { body, contentType: 'application/apply-patch+yaml', query: { fieldManager: 'alpha' } });
      expect(res.status).toBe(201);
      return res;
    }, { timeoutMs: 15_000 });
    expect(applied.body['spec']).toEqual({ items: [{ name: 'x' }] });
    const rv = (applied.body['metadata'] as { resourceVersion: string }).resourceVersion;
    await change({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { items: items({ name: { type: 'string' }, note: { type: 'string' } }) } });
    await eventually(async () => {
      const read = await raw(h(), 'GET', `${path}/a`);
      expect({ spec: read.body['spec'], rv: (read.body['metadata'] as { resourceVersion: string }).resourceVersion }).toEqual({ spec: { items: [{ name: 'x', note: 'kept in storage' }] }, rv });
    }, { timeoutMs: 15_000 });
    await raw(h(), 'DELETE', crdPath);
  }, 60_000);
});
