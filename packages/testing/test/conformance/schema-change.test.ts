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
import { raw } from './support.js';

const MERGE = 'application/merge-patch+json';

function crd(group: string, spec: Record<string, unknown>, resourceVersion?: string): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `things.${group}`, ...(resourceVersion ? { resourceVersion } : {}) },
    spec: { group, scope: 'Namespaced', names: { plural: 'things', singular: 'thing', kind: 'Thing', listKind: 'ThingList' }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec } } } }] },
  };
}

describe.each(BACKENDS)('a CRD schema changed under stored objects ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  it('reads old objects defaulted and pruned by the new schema, and ratchets validation on update', async () => {
    const group = `${h().name('sc')}.conformance.kubeloop.dev`;
    const crdPath = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.${group}`;
    const path = `/apis/${group}/v1/namespaces/${h().namespace}/things`;
    const causes = (res: { body: Record<string, unknown> }): string[] => ((res.body['details'] as { causes?: { field: string; message: string }[] } | undefined)?.causes ?? []).map((c) => `${c.field}: ${c.message}`).sort();
    expect((await raw(h(), 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: crd(group, { type: 'object', properties: { size: { type: 'integer' }, color: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } } }) })).status).toBe(201);
    const created = await eventually(async () => {
      const res = await raw(h(), 'POST', path, { body: { apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'a' }, spec: { size: 5, color: 'red', tags: ['x', 'y'] } } });
      expect(res.status).toBe(201);
      return res;
    }, { timeoutMs: 15_000 });
    const rv = (created.body['metadata'] as { resourceVersion: string }).resourceVersion;

    // tightened: size at most 3, at most one tag, a new required count; color no longer declared; a new defaulted mode
    const current = await raw(h(), 'GET', crdPath);
    const tightened = { type: 'object', properties: { size: { type: 'integer', maximum: 3 }, mode: { type: 'string', default: 'auto' }, tags: { type: 'array', maxItems: 1, items: { type: 'string' } }, count: { type: 'integer', minimum: 0 } }, required: ['count'] };
    expect((await raw(h(), 'PUT', crdPath, { body: crd(group, tightened, (current.body['metadata'] as { resourceVersion: string }).resourceVersion) })).status).toBe(200);

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
});
