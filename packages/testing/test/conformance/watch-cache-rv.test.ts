/**
 * Conformance: the resourceVersion of reads the watch cache serves. A list
 * at "any" resourceVersion (`0`) or "not older than" N, and the initial
 * events of a watch, answer at the kind's watch cache's resourceVersion,
 * which moves with that kind's own writes only: writes of another kind leave
 * it behind etcd's revision until a read asks for a newer one, when it
 * catches up to the newest. A list at `0` ignores `limit`. Written from
 * kube-apiserver v1.37.2's answers (issue 40; the first was found by a random
 * run of the differential fuzzer, seed 16416312: a Table listed not older
 * than N answered the newest resourceVersion on the fake). The kind is the
 * test's own CRD, so no other test's writes move its cache on a shared
 * control plane.
 */
import { describe, expect, it } from 'vitest';
import { eventually } from '../../src/index.js';
import { BACKENDS, useBackend } from './backends.js';
import { configMap, raw, thingCRD } from './support.js';


const TABLE = 'application/json;as=Table;g=meta.k8s.io;v=v1';

describe.each(BACKENDS)('the watch cache\'s resourceVersion ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  it('lists at 0 or not older than N, and a watch\'s initial events, answer the kind\'s own cache\'s resourceVersion until a read asks for a newer one', async () => {
    const group = `${h().name('cache-rv')}.conformance.kubeloop.dev`;
    const path = `/apis/${group}/v1/namespaces/${h().namespace}/things`;
    const thing = (name: string): Record<string, unknown> => ({ apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name } });
    expect((await raw(h(), 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { body: thingCRD(group) })).status).toBe(201);
    await eventually(async () => expect((await raw(h(), 'POST', path, { body: thing('a') })).status).toBe(201), { timeoutMs: 15_000 });
    const b = await raw(h(), 'POST', path, { body: thing('b') });
    const rvB = (b.body['metadata'] as { resourceVersion: string }).resourceVersion;
    // another kind written after the last Thing: etcd's revision moves, the Things' cache does not
    const cm = await h().client().create(configMap(h().namespace, h().name('after')));
    const rvC = cm.metadata.resourceVersion!;
    expect(Number(rvC)).toBeGreaterThan(Number(rvB));

    type Listed = { metadata: { resourceVersion: string; continue?: string }; items?: { metadata: { name: string } }[]; rows?: unknown[] };
    // the whole list metadata: a custom resource's list says `continue: ""` when there is no next page (unstructured), a Table does not
    const listed = async (query: Record<string, string>, accept?: string): Promise<{ metadata: Listed['metadata']; names: string[]; rows?: number }> => {
      const res = await raw(h(), 'GET', path, { query, ...(accept ? { accept } : {}) });
      expect(res.status).toBe(200);
      const body = res.body as unknown as Listed;
      return { metadata: body.metadata, names: (body.items ?? []).map((i) => i.metadata.name), ...(body.rows ? { rows: body.rows.length } : {}) };
    };

    expect(await listed({ resourceVersion: '0' })).toEqual({ metadata: { continue: '', resourceVersion: rvB }, names: ['a', 'b'] });
    // the limit of a list at "any" resourceVersion is ignored: every item, no continue token
    expect(await listed({ resourceVersion: '0', limit: '1' })).toEqual({ metadata: { continue: '', resourceVersion: rvB }, names: ['a', 'b'] });
    expect(await listed({ resourceVersion: rvB, resourceVersionMatch: 'NotOlderThan' })).toEqual({ metadata: { continue: '', resourceVersion: rvB }, names: ['a', 'b'] });
    expect(await listed({ resourceVersion: rvB, resourceVersionMatch: 'NotOlderThan' }, TABLE)).toEqual({ metadata: { resourceVersion: rvB }, names: [], rows: 2 });

    // a watch list from "any": the initial events end in a bookmark at the cache's resourceVersion
    const watch = await h().client().transport.stream({ method: 'GET', path, query: { watch: 'true', resourceVersion: '0', resourceVersionMatch: 'NotOlderThan', sendInitialEvents: 'true', allowWatchBookmarks: 'true' } });
    const events: string[] = [];
    await new Promise<void>((resolve) => {
      let text = '';
      const stop = setTimeout(resolve, 10_000);
      watch.on('data', (d: Buffer) => {
        text += d.toString();
        let nl: number;
        while ((nl = text.indexOf('\n')) >= 0) {
          const e = JSON.parse(text.slice(0, nl)) as { type: string; object: { metadata: { name?: string; resourceVersion: string; annotations?: Record<string, string> } } };
          text = text.slice(nl + 1);
          const end = e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true';
          events.push(e.type === 'BOOKMARK' ? `BOOKMARK ${e.object.metadata.resourceVersion}${end ? ' end' : ''}` : `${e.type} ${e.object.metadata.name}`);
          if (end) {
            clearTimeout(stop);
            resolve();
          }
        }
      });
    });
    watch.destroy();
    expect(events).toEqual(['ADDED a', 'ADDED b', `BOOKMARK ${rvB} end`]);

    // not older than the ConfigMap's: the cache catches up to the newest, and stays there
    const caught = await listed({ resourceVersion: rvC, resourceVersionMatch: 'NotOlderThan' });
    expect(Number(caught.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(rvC));
    expect(await listed({ resourceVersion: '0' })).toEqual({ metadata: { continue: '', resourceVersion: caught.metadata.resourceVersion }, names: ['a', 'b'] });
    expect(Number((await listed({})).metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(caught.metadata.resourceVersion));
    expect((await raw(h(), 'DELETE', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.${group}`)).status).toBe(200);
  }, 60_000);
});
