/**
 * Conformance: integers past 2^53 (the server keeps every `type: integer`
 * as an int64) on envtest and on the fake. Created, read, listed, watched,
 * updated, merge- and JSON-patched and applied, 9007199254740993 and the
 * int64 bounds come back with the digits they were written with, as bigints
 * in the client, and the raw answer carries the same digits. (Not
 * `spec.replicas`: it is the scale subresource's replicas path, which the
 * server holds to int32; subresources.test.ts checks that on both.)
 */
import { describe, expect, it } from 'vitest';
import { isTooManyRequests, jsonPatch, mergePatch, retryOn } from '@kubeloop/client';
import { BACKENDS, useBackend, Widget } from './backends.js';
import { collect, widget } from './support.js';

const BIG = 9007199254740993n; // 2^53 + 1
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

describe.each(BACKENDS)('int64 past 2^53 ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  it('create, get, list and watch keep 2^53 + 1 and the int64 bounds exact', async () => {
    const client = h().client();
    const name = h().name('i64');
    // A CRD just installed may answer 429 "storage is (re)initializing" for a moment.
    const settle = { steps: 50, durationMs: 200, factor: 1 };
    const start = await retryOn(isTooManyRequests, () => client.list(Widget, { namespace: h().namespace }), settle);
    const events = await retryOn(isTooManyRequests, () => client.watch(Widget, { namespace: h().namespace, resourceVersion: start.metadata!.resourceVersion! }), settle);
    try {
      const created = await client.create(widget(h().namespace, name, { size: BIG, extra: [INT64_MAX, INT64_MIN, 1] }));
      expect(created.spec?.size).toBe(BIG);
      expect((await client.get(Widget, { namespace: h().namespace, name })).spec).toEqual({ size: BIG, extra: [INT64_MAX, INT64_MIN, 1] });
      expect((await client.list(Widget, { namespace: h().namespace })).items.find((w) => w.metadata?.name === name)?.spec?.['extra']).toEqual([INT64_MAX, INT64_MIN, 1]);
      const seen = await collect(events, (s) => s.some((e) => e.type === 'ADDED' && e.object.metadata?.name === name));
      expect(seen.find((e) => e.object.metadata?.name === name)?.object.spec?.size).toBe(BIG);
      const text = (await client.transport.request({ method: 'GET', path: `/apis/conformance.kubeloop.dev/v1/namespaces/${h().namespace}/widgets/${name}` })).body;
      expect(text).toMatch(/"size":9007199254740993[,}]/);
      expect(text).toContain('"extra":[9223372036854775807,-9223372036854775808,1]');
    } finally {
      await events.return?.();
    }
  });

  it('update, merge patch, JSON patch and apply write int64 values exactly and leave the others unchanged', async () => {
    const client = h().client();
    const name = h().name('i64w');
    const created = await client.create(widget(h().namespace, name, { size: BIG, color: 'red' }));
    const updated = await client.update({ ...created, apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget', spec: { ...created.spec, color: 'blue' } });
    expect(updated.spec).toEqual({ size: BIG, color: 'blue' });
    const merged = await client.patch(Widget, { namespace: h().namespace, name }, mergePatch({ spec: { count: BIG + 2n } }));
    expect(merged.spec).toEqual({ size: BIG, color: 'blue', count: BIG + 2n });
    const patched = await client.patch(Widget, { namespace: h().namespace, name }, jsonPatch([{ op: 'replace', path: '/spec/size', value: INT64_MIN }]));
    expect(patched.spec?.size).toBe(INT64_MIN);
    const applied = await client.apply({ apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget', metadata: { name, namespace: h().namespace }, spec: { size: INT64_MAX } }, { force: true });
    expect(applied.spec).toEqual({ size: INT64_MAX, color: 'blue', count: BIG + 2n });
  });
});
