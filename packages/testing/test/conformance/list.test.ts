/** Conformance: lists, selectors, pagination, resourceVersion semantics and the metadata-only form, on envtest and on the fake. */
import { beforeAll, describe, expect, it } from 'vitest';
import { metadataOnly } from '@kubeloop/client';
import { ConfigMap, Lease, Namespace, Secret } from '@kubeloop/scheme';
import { BACKENDS, Gadget, useBackend, Widget } from './backends.js';
import { configMap, expectStatus, raw, widget } from './support.js';

const LABELLED: [string, Record<string, string>][] = [
  ['a-web', { app: 'a', tier: 'web' }],
  ['a-db', { app: 'a', tier: 'db' }],
  ['b-web', { app: 'b', tier: 'web', size: '3' }],
  ['c-none', { app: 'c', size: '10' }],
  ['unlabelled', {}],
];

const SELECTORS: [string, string[]][] = [
  ['app=a', ['a-db', 'a-web']],
  ['app==a', ['a-db', 'a-web']],
  ['app!=a', ['b-web', 'c-none', 'unlabelled']],
  ['app in (a,b)', ['a-db', 'a-web', 'b-web']],
  ['app notin (a,b)', ['c-none', 'unlabelled']],
  ['tier', ['a-db', 'a-web', 'b-web']],
  ['!tier', ['c-none', 'unlabelled']],
  ['app=a,tier=web', ['a-web']],
  ['app in (a),tier!=db', ['a-web']],
  ['size>5', ['c-none']],
  ['size<5', ['b-web']],
  ['tier in (web),app notin (b)', ['a-web']],
];

describe.each(BACKENDS)('lists ($backend)', ({ backend }) => {
  const h = useBackend(backend);
  let run: string;

  beforeAll(async () => {
    run = h().name('set');
    const client = h().client();
    for (const [name, labels] of LABELLED) await client.create(configMap(h().namespace, `${run}-${name}`, { n: name }, { ...labels, run }));
  });

  describe('label selectors', () => {
    it.each(SELECTORS)('%s', async (selector, expected) => {
      const list = await h().client().list(ConfigMap, { namespace: h().namespace, labelSelector: `run=${run},${selector}` });
      expect(list.items.map((i) => i.metadata?.name!.slice(run.length + 1))).toEqual(expected);
    });

    it('a malformed selector is 400 BadRequest', async () => {
      await expectStatus(h().client().list(ConfigMap, { namespace: h().namespace, labelSelector: 'app in (a' }), 400, 'BadRequest');
    });

    it('an invalid label value in a selector is 400 BadRequest', async () => {
      await expectStatus(h().client().list(ConfigMap, { namespace: h().namespace, labelSelector: 'app=not valid!' }), 400, 'BadRequest');
    });
  });

  describe('field selectors', () => {
    it('metadata.name=', async () => {
      const list = await h().client().list(ConfigMap, { namespace: h().namespace, fieldSelector: `metadata.name=${run}-b-web` });
      expect(list.items.map((i) => i.metadata?.name)).toEqual([`${run}-b-web`]);
    });

    it('metadata.name!=', async () => {
      const list = await h().client().list(ConfigMap, { namespace: h().namespace, labelSelector: { run }, fieldSelector: `metadata.name!=${run}-b-web` });
      expect(list.items).toHaveLength(LABELLED.length - 1);
    });

    it('metadata.namespace= across all namespaces', async () => {
      const list = await h().client().list(ConfigMap, { labelSelector: { run }, fieldSelector: `metadata.namespace=${h().namespace}` });
      expect(list.items).toHaveLength(LABELLED.length);
      const none = await h().client().list(ConfigMap, { labelSelector: { run }, fieldSelector: 'metadata.namespace=default' });
      expect(none.items).toHaveLength(0);
    });

    it('two terms are ANDed', async () => {
      const list = await h().client().list(ConfigMap, { fieldSelector: `metadata.namespace=${h().namespace},metadata.name=${run}-a-db` });
      expect(list.items.map((i) => i.metadata?.name)).toEqual([`${run}-a-db`]);
    });

    it('a Secret\'s type', async () => {
      const client = h().client();
      const name = h().name('tls');
      await client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: h().namespace }, type: 'example.com/special', stringData: { a: 'b' } });
      const list = await client.list(Secret, { namespace: h().namespace, fieldSelector: 'type=example.com/special' });
      expect(list.items.map((i) => i.metadata?.name)).toEqual([name]);
    });

    it('a Namespace\'s status.phase', async () => {
      const list = await h().client().list(Namespace, { fieldSelector: `status.phase=Active,metadata.name=${h().namespace}` });
      expect(list.items).toHaveLength(1);
    });

    it('a custom resource\'s selectable field', async () => {
      const client = h().client();
      const red = h().name('red');
      await client.create(widget(h().namespace, red, { color: 'red' }));
      await client.create(widget(h().namespace, h().name('blue'), { color: 'blue' }));
      const list = await client.list(Widget, { namespace: h().namespace, fieldSelector: 'spec.color=red' });
      expect(list.items.map((i) => i.metadata?.name)).toEqual([red]);
    });

    it('an unsupported field is 400 BadRequest', async () => {
      await expectStatus(h().client().list(ConfigMap, { namespace: h().namespace, fieldSelector: 'data.n=a-web' }), 400, 'BadRequest');
    });

    it('an unsupported field of a custom resource is 400 BadRequest', async () => {
      await expectStatus(h().client().list(Widget, { namespace: h().namespace, fieldSelector: 'spec.size=1' }), 400, 'BadRequest');
    });
  });

  describe('pagination', () => {
    it('limit and continue walk every object once, in name order', async () => {
      const client = h().client();
      const names: string[] = [];
      let cont: string | undefined;
      let pages = 0;
      do {
        const page = await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run }, limit: 2, ...(cont ? { continue: cont } : {}) });
        names.push(...page.items.map((i) => i.metadata?.name ?? ''));
        cont = page.metadata?.continue || undefined;
        pages++;
      } while (cont);
      expect(pages).toBe(3);
      expect(names).toEqual([...LABELLED.map(([n]) => `${run}-${n}`)].sort());
    });

    it('remainingItemCount is given when no selector is used', async () => {
      const client = h().client();
      const name = h().name('pg');
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      for (let i = 0; i < 5; i++) await client.create(configMap(name, `cm-${i}`));
      const page = await client.list(ConfigMap, { namespace: name, limit: 2 });
      expect(page.metadata?.remainingItemCount).toBe(3);
      expect(page.metadata?.continue).toBeTruthy();
    });

    it('with a label selector, remainingItemCount is left out', async () => {
      const page = await h().client().list(ConfigMap, { namespace: h().namespace, labelSelector: { run }, limit: 2 });
      expect(page.metadata?.continue).toBeTruthy();
      expect(page.metadata?.remainingItemCount).toBeUndefined();
    });

    it('later pages show the snapshot of the first: objects created or deleted meanwhile do not change them', async () => {
      const client = h().client();
      const ns = h().name('snap');
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      for (const n of ['a', 'b', 'c', 'd']) await client.create(configMap(ns, n));
      const first = await client.list(ConfigMap, { namespace: ns, limit: 2 });
      await client.create(configMap(ns, 'e'));
      await client.delete(ConfigMap, { namespace: ns, name: 'd' });
      const rest = await client.list(ConfigMap, { namespace: ns, limit: 10, continue: first.metadata!.continue! });
      expect([...first.items, ...rest.items].map((i) => i.metadata?.name)).toEqual(['a', 'b', 'c', 'd']);
      expect(rest.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
    });

    it('a malformed continue token is 400 BadRequest', async () => {
      await expectStatus(h().client().list(ConfigMap, { namespace: h().namespace, limit: 1, continue: 'not-a-token' }), 400, 'BadRequest');
    });

    it('the client joins every page when no limit is given', async () => {
      const list = await h().client().list(ConfigMap, { namespace: h().namespace, labelSelector: { run } });
      expect(list.items).toHaveLength(LABELLED.length);
      expect(list.metadata?.continue).toBeUndefined();
    });
  });

  describe('resourceVersion semantics', () => {
    it('a list names a resourceVersion no older than its items', async () => {
      const list = await h().client().list(ConfigMap, { namespace: h().namespace, labelSelector: { run } });
      const listRv = Number(list.metadata?.resourceVersion);
      for (const item of list.items) expect(Number(item.metadata?.resourceVersion)).toBeLessThanOrEqual(listRv);
    });

    it('resourceVersion=0 answers', async () => {
      const list = await h().client().list(ConfigMap, { namespace: h().namespace, labelSelector: { run }, resourceVersion: '0' });
      expect(list.items).toHaveLength(LABELLED.length);
    });

    it('resourceVersionMatch=Exact shows the state at that resourceVersion', async () => {
      const client = h().client();
      const ns = h().name('exact');
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      const a = await client.create(configMap(ns, 'a', { v: '1' }));
      const then = await client.list(ConfigMap, { namespace: ns });
      await client.update({ ...a, data: { v: '2' } });
      await client.create(configMap(ns, 'b'));
      const exact = await client.list(ConfigMap, { namespace: ns, resourceVersion: then.metadata!.resourceVersion!, resourceVersionMatch: 'Exact' });
      expect(exact.items.map((i) => [i.metadata?.name, i.data?.['v']])).toEqual([['a', '1']]);
      expect(exact.metadata?.resourceVersion).toBe(then.metadata?.resourceVersion);
    });

    it('a limited list at a resourceVersion without resourceVersionMatch is exact (the legacy paging rule); without a limit it is not older than it (found by the differential fuzzer)', async () => {
      const client = h().client();
      const ns = h().name('legacy');
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      const a = await client.create(configMap(ns, 'a', { v: '1' }));
      const then = await client.list(ConfigMap, { namespace: ns });
      await client.update({ ...a, data: { v: '2' } });
      await client.create(configMap(ns, 'b'));
      const rv = then.metadata!.resourceVersion!;
      type Listed = { metadata: { resourceVersion: string }; items: { metadata: { name: string }; data?: Record<string, string> }[] };
      const listed = async (query: Record<string, string>): Promise<Listed> => (await raw(h(), 'GET', `/api/v1/namespaces/${ns}/configmaps`, { query })).body as unknown as Listed;
      const paged = await listed({ resourceVersion: rv, limit: '5' });
      expect([paged.items.map((i) => [i.metadata.name, i.data?.['v']]), paged.metadata.resourceVersion]).toEqual([[['a', '1']], rv]);
      const whole = await listed({ resourceVersion: rv });
      expect(whole.items.map((i) => [i.metadata.name, i.data?.['v']])).toEqual([['a', '2'], ['b', undefined]]);
      // one object named in one namespace (the store reads its key): not older than the resourceVersion, limit or not;
      // with resourceVersionMatch=Exact, or across namespaces, exact again (a random run of the fuzzer, seed 1731617632)
      const named = await listed({ resourceVersion: rv, limit: '5', fieldSelector: 'metadata.name=b' });
      expect(named.items.map((i) => i.metadata.name)).toEqual(['b']);
      const namedA = await listed({ resourceVersion: rv, limit: '1', fieldSelector: 'metadata.name=a,metadata.namespace!=x' });
      expect(namedA.items.map((i) => [i.metadata.name, i.data?.['v']])).toEqual([['a', '2']]);
      expect((await listed({ resourceVersion: rv, resourceVersionMatch: 'Exact', fieldSelector: 'metadata.name=b' })).items).toEqual([]);
      const everywhere = (await raw(h(), 'GET', '/api/v1/configmaps', { query: { resourceVersion: rv, limit: '500', fieldSelector: 'metadata.name=b' } })).body as unknown as Listed;
      expect(everywhere.items.filter((i) => (i.metadata as { namespace?: string }).namespace === ns)).toEqual([]);
    });

    it('resourceVersionMatch without resourceVersion is 422 Invalid', async () => {
      await expectStatus(h().client().list(ConfigMap, { namespace: h().namespace, resourceVersionMatch: 'NotOlderThan' }), 422, 'Invalid');
    });
  });

  describe('forms and scopes', () => {
    it('the metadata-only form lists PartialObjectMetadata without data', async () => {
      const list = await h().client().list(metadataOnly(ConfigMap), { namespace: h().namespace, labelSelector: { run } });
      expect(list.items).toHaveLength(LABELLED.length);
      expect(list.items[0]).toMatchObject({ apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata' });
      expect((list.items[0] as Record<string, unknown>)['data']).toBeUndefined();
      expect(list.items[0]!.metadata?.labels?.['run']).toBe(run);
    });

    it('an empty metadata-only list: the wire says items null, the client answers []', async () => {
      // No Lease lives in the test namespace. The server writes a PartialObjectMetadataList's nil slice as null.
      const path = `/apis/coordination.k8s.io/v1/namespaces/${h().namespace}/leases`;
      const wire = await raw(h(), 'GET', path, { accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1', query: { limit: 10 } });
      expect(wire.body['kind']).toBe('PartialObjectMetadataList');
      expect(wire.body['items']).toBeNull();
      const all: unknown[] = [];
      for await (const lease of h().client().listAll(metadataOnly(Lease), { namespace: h().namespace })) all.push(lease);
      expect(all).toEqual([]);
      expect((await h().client().list(metadataOnly(Lease), { namespace: h().namespace, limit: 10 })).items).toEqual([]);
      expect((await h().client().list(metadataOnly(Lease), { namespace: h().namespace })).items).toEqual([]);
    });

    it('the metadata-only form gets one object\'s metadata', async () => {
      const got = await h().client().get(metadataOnly(ConfigMap), { namespace: h().namespace, name: `${run}-a-web` });
      expect(got.kind).toBe('PartialObjectMetadata');
      expect(got.metadata?.labels?.['tier']).toBe('web');
      expect((got as Record<string, unknown>)['data']).toBeUndefined();
    });

    it('a namespaced kind lists across namespaces when none is given', async () => {
      const list = await h().client().list(ConfigMap, { labelSelector: { run } });
      expect(new Set(list.items.map((i) => i.metadata?.namespace))).toEqual(new Set([h().namespace]));
      expect(list.items).toHaveLength(LABELLED.length);
    });

    it('a cluster-scoped custom kind lists without a namespace', async () => {
      const client = h().client();
      const name = h().name('g');
      await client.create({ apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Gadget', metadata: { name, labels: { run } }, spec: {} });
      const list = await client.list(Gadget, { labelSelector: { run } });
      expect(list.items.map((i) => i.metadata?.name)).toEqual([name]);
      await client.delete(Gadget, { name });
    });

    it('the system namespaces exist', async () => {
      const list = await h().client().list(Namespace);
      const names = list.items.map((i) => i.metadata?.name);
      for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) expect(names).toContain(ns);
    });

    it('an empty list still names its kind and a resourceVersion', async () => {
      const res = await raw(h(), 'GET', `/api/v1/namespaces/${h().namespace}/configmaps`, { query: { labelSelector: 'nothing=matches' } });
      expect(res.body).toMatchObject({ kind: 'ConfigMapList', apiVersion: 'v1', items: [] });
      expect((res.body['metadata'] as { resourceVersion: string }).resourceVersion).toMatch(/^\d+$/);
    });
  });
});
