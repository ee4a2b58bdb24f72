/**
 * The informer cache against the real API server: lazy start, reads served
 * without requests, selectors and indexes, frozen objects, the metadata-only
 * form, handler semantics, and the client's cached-read router on top.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstValueFrom, filter, take, toArray } from 'rxjs';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy, Environment } from '@kubeloop/envtest';
import { installCRDs } from '@kubeloop/envtest';
import { ConfigMap, Namespace, Node, Secret, StorageClass } from '@kubeloop/scheme';
import { createClient, isClientError, isNoKindMatch, isNotFound, mergePatch, metadataOnly } from '@kubeloop/client';
import type { CachedClient, Client } from '@kubeloop/client';
import { createInformerCache } from '../src/index.js';
import type { InformerCache } from '../src/index.js';
import { testCRD } from '../../../test/support/crds.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';

let env: Environment;
let proxy: ApiProxy;
let live: Client;
let ns: string;

beforeAll(async () => {
  env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  proxy = await startApiProxy(env.kubeConfig);
  live = createClient({ kubeConfig: proxy.kubeConfig, fieldOwner: 'cache-test' });
  ns = uniqueName('cache');
  await live.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  for (let i = 0; i < 5; i++) {
    await live.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `cm-${i}`, namespace: ns, labels: { app: i % 2 === 0 ? 'even' : 'odd', idx: String(i) } },
      data: { i: String(i) },
    });
  }
});
afterAll(async () => {
  await proxy.close();
  await env.stop();
});

async function eventually(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('informer cache', () => {
  let cache: InformerCache;
  let routed: CachedClient;
  beforeAll(() => {
    cache = createInformerCache({ client: live });
    routed = createClient({ kubeConfig: proxy.kubeConfig, cache, uncached: [Secret], fieldOwner: 'cache-test' });
  });
  afterAll(async () => {
    await cache.stop();
  });

  it('starts an informer on the first read, then serves reads with no requests; uncached kinds cost one', async () => {
    await live.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: ns }, stringData: { k: 'v' } });
    proxy.clearRequests();
    const first = await routed.get(ConfigMap, { namespace: ns, name: 'cm-0' });
    expect(first.data).toEqual({ i: '0' });
    // listed objects name their kind, so they can be written back as they are
    expect([first.apiVersion, first.kind]).toEqual(['v1', 'ConfigMap']);
    // the first read asked for the initial state: a streaming list (WatchList, the default on this server)
    expect(proxy.count((r) => r.path.endsWith('/configmaps') && r.url.includes('sendInitialEvents=true'))).toBe(1);
    await new Promise((r) => setTimeout(r, 100)); // let the watch open
    proxy.clearRequests();
    for (let i = 0; i < 50; i++) await routed.get(ConfigMap, { namespace: ns, name: `cm-${i % 5}` });
    await routed.list(ConfigMap, { namespace: ns });
    expect(proxy.count()).toBe(0);

    const secret = await routed.get(Secret, { namespace: ns, name: 's' });
    expect(secret.metadata?.name).toBe('s');
    // exactly one read of the Secret (the routed client's own mapper may discover the core group once)
    expect(proxy.count((r) => r.path !== '/api')).toBe(1);
    expect(proxy.count((r) => r.path === `/api/v1/namespaces/${ns}/secrets/s`)).toBe(1);
    expect(cache.informers().map((i) => i.kind)).toEqual(['ConfigMap.v1']);
  });

  it('follows creates, updates and deletes', async () => {
    const created = await live.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'follow', namespace: ns }, data: { v: '1' } });
    await eventually(async () => (await cache.get(ConfigMap, { namespace: ns, name: 'follow' }).catch(() => undefined)) !== undefined, 'the create');
    await live.patch(created, mergePatch({ data: { v: '2' } }));
    await eventually(async () => (await cache.get(ConfigMap, { namespace: ns, name: 'follow' })).data?.['v'] === '2', 'the update');
    await live.delete(created);
    await eventually(async () => isNotFound(await cache.get(ConfigMap, { namespace: ns, name: 'follow' }).catch((e: unknown) => e)), 'the delete');
  });

  it('answers NotFound as the API would', async () => {
    const err = await cache.get(ConfigMap, { namespace: ns, name: 'nope' }).catch((e: unknown) => e);
    expect(isNotFound(err)).toBe(true);
    expect(isClientError(err) && err.code).toBe(404);
  });

  it('serves label selectors, field selectors, namespaces and limits from memory', async () => {
    const even = await cache.list(ConfigMap, { namespace: ns, labelSelector: { app: 'even' } });
    expect(even.items.map((i) => i.metadata?.name).sort()).toEqual(['cm-0', 'cm-2', 'cm-4']);
    const setBased = await cache.list(ConfigMap, { namespace: ns, labelSelector: 'idx in (1,3),app!=even' });
    expect(setBased.items.map((i) => i.metadata?.name).sort()).toEqual(['cm-1', 'cm-3']);
    const byName = await cache.list(ConfigMap, { fieldSelector: { 'metadata.name': 'cm-3', 'metadata.namespace': ns } });
    expect(byName.items.map((i) => i.metadata?.name)).toEqual(['cm-3']);
    const notName = await cache.list(ConfigMap, { namespace: ns, fieldSelector: 'metadata.name!=cm-3', labelSelector: 'idx' });
    expect(notName.items).toHaveLength(4);
    expect((await cache.list(ConfigMap, { namespace: ns, labelSelector: 'idx', limit: 2 })).items).toHaveLength(2);
    expect(even.kind).toBe('ConfigMapList');
    expect(even.metadata?.resourceVersion).toBeTruthy();
    const bad = await cache.list(ConfigMap, { labelSelector: 'a in (b' }).catch((e: unknown) => e);
    expect(isClientError(bad) && bad.reason).toBe('InvalidRequest');
  });

  it('indexes a field and lists by it', async () => {
    await cache.indexField(ConfigMap, 'data.i', (cm) => (cm.data?.['i'] ? [cm.data['i']] : []));
    // In this file's namespace: other files side by side make ConfigMaps with data.i too (test/profiles.test.ts's cm-3).
    const three = await cache.list(ConfigMap, { namespace: ns, fieldSelector: { 'data.i': '3' } });
    expect(three.items.map((i) => `${i.metadata?.namespace}/${i.metadata?.name}`)).toEqual([`${ns}/cm-3`]);
    await expect(cache.indexField(ConfigMap, 'data.i', () => [])).rejects.toThrow(/already has/);
  });

  it('strips managedFields and hands out frozen objects that cannot corrupt it', async () => {
    const cm = await cache.get(ConfigMap, { namespace: ns, name: 'cm-1' });
    expect(cm.metadata?.managedFields).toBeUndefined();
    expect(Object.isFrozen(cm)).toBe(true);
    expect(() => {
      (cm.data as Record<string, string>)['i'] = 'corrupted';
    }).toThrow(TypeError);
    expect((await cache.get(ConfigMap, { namespace: ns, name: 'cm-1' })).data).toEqual({ i: '1' });
    // a copy is free to change
    const copy = structuredClone(cm);
    copy.data!['i'] = 'mine';
    expect(copy.data).toEqual({ i: 'mine' });
  });

  it('caches the metadata-only form separately, without payloads', async () => {
    const list = await cache.list(metadataOnly(ConfigMap), { namespace: ns, labelSelector: { app: 'odd' } });
    expect(list.kind).toBe('PartialObjectMetadataList');
    expect(list.items.map((i) => i.metadata?.name).sort()).toEqual(['cm-1', 'cm-3']);
    expect(JSON.stringify(list.items)).not.toContain('"data"');
    expect(cache.informers().map((i) => i.kind).sort()).toEqual(['ConfigMap.v1', 'ConfigMap.v1 (metadata)']);
  });

  it('removes an informer: its watch ends and the next read starts a new one', async () => {
    await cache.get(Namespace, { name: ns });
    expect(cache.informers().some((i) => i.kind === 'Namespace.v1')).toBe(true);
    await cache.removeInformer(Namespace);
    expect(cache.informers().some((i) => i.kind === 'Namespace.v1')).toBe(false);
    proxy.clearRequests();
    await cache.get(Namespace, { name: ns });
    expect(proxy.count((r) => r.path === '/api/v1/namespaces')).toBeGreaterThanOrEqual(1);
  });

  it('a read of a kind the API server does not serve rejects with NoKindMatch at once, not a wait', async () => {
    const ref = { apiVersion: 'nope.kubeloop.dev/v1', kind: 'Nothing' };
    // No signal: before, such a read waited for the CRD for ever.
    const err = await cache.get(ref, { name: 'x' }).catch((e: unknown) => e);
    expect(isNoKindMatch(err)).toBe(true);
    expect(cache.informerInfo(ref)?.notServed).toBe(true);
    expect(await cache.waitForCacheSync(AbortSignal.timeout(200))).toBe(false);
    await cache.removeInformer(ref);
    expect(await cache.waitForCacheSync(AbortSignal.timeout(5000))).toBe(true);
  });

  it('a read waiting for a kind that is served but does not sync is bounded by the caller signal', async () => {
    // A black-holed API server: nothing answers, so nothing says the kind is not served either.
    const silent = await startApiProxy(env.kubeConfig);
    silent.blackhole(true);
    const client = createClient({ kubeConfig: silent.kubeConfig });
    try {
      const fresh = createInformerCache({ client });
      const err = await fresh.get(Secret, { namespace: ns, name: 'x' }, { signal: AbortSignal.timeout(300) }).catch((e: unknown) => e);
      expect(isClientError(err) && err.reason).toBe('Aborted');
      await fresh.stop();
    } finally {
      client.transport.close();
      await silent.close();
    }
  });

  it('reports informer health for readiness and metrics', () => {
    const info = cache.informers().find((i) => i.kind === 'ConfigMap.v1')!;
    expect(info.synced).toBe(true);
    expect(info.lastError).toBeUndefined();
    expect(info.lastEventAgeMs).toBeGreaterThanOrEqual(0);
    expect(info.prepareErrors).toBe(0);
    expect(info.unprepared).toBe(0);
    expect(info.stats[0]!.state).toBe('watching');
    expect(info.storeSize).toBeGreaterThanOrEqual(5);
    expect(info.stats[0]!.lists).toBe(1);
    expect(info.stats[0]!.relists).toBe(0);
    expect(info.stats[0]!.lastEventAt).toBeGreaterThan(0);
    expect(info.stats[0]!.resourceVersion).toMatch(/^\d+$/);
  });
});

describe('a kind whose CRD is deleted under a running informer', () => {
  it('is marked not served, told once however often it is retried, forgotten by the mapper, and listed afresh when the CRD is back', async () => {
    const group = `${uniqueName('gone')}.kubeloop.test`;
    const crd = testCRD(group, 'Gadget');
    const Gadget = { apiVersion: `${group}/v1`, kind: 'Gadget' };
    const CRD = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' };
    await installCRDs(env.kubeConfig, [crd]);
    const client = createClient({ kubeConfig: proxy.kubeConfig });
    const told: unknown[] = [];
    const served: boolean[] = [];
    // Fast retries: many attempts while the CRD is away, still one report.
    const cache = createInformerCache({ client, reflector: { backoffInitialMs: 50, backoffMaxMs: 200 }, onError: (_kind, err) => told.push(err) });
    try {
      await live.create({ ...Gadget, metadata: { name: 'a', namespace: ns } });
      await cache.list(ConfigMap, { namespace: ns });
      expect((await cache.list(Gadget, { namespace: ns })).items.map((o) => o.metadata?.name)).toEqual(['a']);
      const informer = await cache.getInformer(Gadget);
      informer.onServedChange((s) => served.push(s));

      await live.delete(CRD, { name: crd.metadata.name });
      await eventually(() => cache.informerInfo(Gadget)?.notServed === true, 'the informer to see its kind not served', 60_000);
      // The objects went with the CRD (their deletes were watched).
      expect(cache.informerInfo(Gadget)?.storeSize).toBe(0);
      const errorsThen = cache.informerInfo(Gadget)!.stats[0]!.errors;
      await eventually(() => cache.informerInfo(Gadget)!.stats[0]!.errors >= errorsThen + 5, 'five more retries');
      expect(told.filter((e) => isNoKindMatch(e) || (isClientError(e) && e.code === 404))).toHaveLength(1);
      expect(served).toEqual([false]);
      // The mapper forgot the kind: a live request is NoKindMatch, not a 404 on the old path.
      expect(isNoKindMatch(await client.list(Gadget, { namespace: ns }).catch((e: unknown) => e))).toBe(true);
      // Served informers are kept by removeInformer(kind, { ifNotServed: true }); this one is not served.
      await cache.removeInformer(ConfigMap, { ifNotServed: true });
      expect(cache.informerInfo(ConfigMap)?.synced).toBe(true);

      await installCRDs(env.kubeConfig, [crd]);
      await live.create({ ...Gadget, metadata: { name: 'b', namespace: ns } });
      await eventually(() => cache.informerInfo(Gadget)?.notServed === false && cache.informerInfo(Gadget)?.storeSize === 1, 'the informer to list the kind again', 60_000);
      expect(served).toEqual([false, true]);
      expect((await cache.list(Gadget, { namespace: ns })).items.map((o) => o.metadata?.name)).toEqual(['b']);
    } finally {
      await cache.stop();
      client.transport.close();
      await live.delete(CRD, { name: crd.metadata.name }).catch(() => undefined);
    }
  });
});

describe('namespaced caches', () => {
  it('covers only its namespaces and says so', async () => {
    const cache = createInformerCache({ client: live, namespaces: [ns] });
    expect((await cache.list(ConfigMap, { namespace: ns })).items.length).toBeGreaterThanOrEqual(5);
    const err = await cache.get(ConfigMap, { namespace: 'default', name: 'x' }).catch((e: unknown) => e);
    expect(isClientError(err) && err.reason).toBe('InvalidRequest');
    expect(String(err)).toContain(ns);
    await cache.stop();
  });

  it('serves cluster-scoped kinds (Namespace, Node, StorageClass, a cluster-scoped custom resource) from a cluster-wide informer', async () => {
    const group = `${uniqueName('scoped')}.kubeloop.dev`;
    await installCRDs(env.kubeConfig, [testCRD(group, 'Fleet', { scope: 'Cluster' })]);
    const fleet = uniqueName('fleet');
    await live.create({ apiVersion: `${group}/v1`, kind: 'Fleet', metadata: { name: fleet }, spec: { size: 3 } });
    const storageClass = uniqueName('sc');
    await live.create({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: storageClass }, provisioner: 'kubeloop.dev/none' });
    const cache = createInformerCache({ client: live, namespaces: [ns] });
    try {
      const signal = AbortSignal.timeout(15_000);
      expect((await cache.get(Namespace, { name: ns }, { signal })).metadata?.name).toBe(ns);
      expect((await cache.list(Namespace, { signal })).items.map((n) => n.metadata?.name)).toContain('default');
      expect((await cache.get(StorageClass, { name: storageClass }, { signal })).provisioner).toBe('kubeloop.dev/none');
      expect((await cache.list(Node, { signal })).items).toEqual([]); // envtest runs no nodes; the point is that it answers
      const got = (await cache.get({ apiVersion: `${group}/v1`, kind: 'Fleet' }, { name: fleet }, { signal })) as { spec?: { size?: number } };
      expect(got.spec?.size).toBe(3);
      // One cluster-wide list+watch each; the namespaced kind keeps its restriction.
      expect((await cache.list(ConfigMap, { namespace: ns, signal })).items.length).toBeGreaterThanOrEqual(5);
      const byKind = new Map(cache.informers().map((i) => [i.kind, i.stats.length]));
      expect(byKind.get('Namespace.v1')).toBe(1);
      expect(byKind.get('StorageClass.storage.k8s.io/v1')).toBe(1);
      expect(byKind.get(`Fleet.${group}/v1`)).toBe(1);
      const err = await cache.get(ConfigMap, { namespace: 'default', name: 'x' }).catch((e: unknown) => e);
      expect(isClientError(err) && err.reason).toBe('InvalidRequest');
    } finally {
      await cache.stop();
      await live.delete(StorageClass, { name: storageClass });
    }
  });

  it('per-kind namespaces on a cluster-scoped kind are an error its reads report, not a hang', async () => {
    const cache = createInformerCache({ client: live, byKind: [{ kind: Namespace, options: { namespaces: [ns] } }] });
    const err = await cache.get(Namespace, { name: ns }, { signal: AbortSignal.timeout(10_000) }).catch((e: unknown) => e);
    expect(isClientError(err) && err.reason).toBe('InvalidRequest');
    expect(String(err)).toContain('cluster-scoped');
    await cache.stop();
  });

  it('a cache-wide resync period reaches every informer\'s handlers', async () => {
    const cache = createInformerCache({ client: live, namespaces: [ns], resyncPeriodMs: 100 });
    const informer = await cache.getInformer(ConfigMap, { signal: AbortSignal.timeout(10_000) });
    const resyncs = await firstValueFrom(
      informer.events().pipe(
        filter((e) => e.type === 'update' && e.old === e.object),
        take(10),
        toArray(),
      ),
    );
    expect(resyncs).toHaveLength(10);
    await cache.stop();
  });

  it('per-kind options: a label selector narrows what is cached', async () => {
    const cache = createInformerCache({ client: live, byKind: [{ kind: ConfigMap, options: { namespaces: [ns], labelSelector: { app: 'odd' } } }] });
    const all = await cache.list(ConfigMap, { namespace: ns });
    expect(all.items.map((i) => i.metadata?.name).sort()).toEqual(['cm-1', 'cm-3']);
    await cache.stop();
  });
});

describe('handlers', () => {
  it('see events in order, are not stalled by a slow handler, survive a throwing one, and tell re-creates apart by UID', async () => {
    const cache = createInformerCache({ client: live, namespaces: [ns], reflector: { backoffInitialMs: 50, backoffMaxMs: 200 } });
    const informer = await cache.getInformer(ConfigMap);
    const seen: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let slowCalls = 0;
    informer.addEventHandler({
      onAdd: async () => {
        slowCalls++;
        await gate; // stuck until released
      },
    });
    informer.addEventHandler({
      onAdd: () => {
        throw new Error('handler bug');
      },
    });
    const fast = informer.addEventHandler({
      onAdd: (o) => void seen.push(`add:${o.metadata?.name}:${o.metadata?.uid}`),
      onUpdate: (_, o) => void seen.push(`update:${o.metadata?.name}:${o.data?.['v']}`),
      onDelete: (o, unknown) => void seen.push(`delete:${o.metadata?.name}:${o.metadata?.uid}:${unknown}`),
    });
    await eventually(() => fast.hasSynced(), 'the handler to get the existing objects');
    seen.length = 0;

    const a = await live.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'h', namespace: ns }, data: { v: '1' } });
    await live.patch(a, mergePatch({ data: { v: '2' } }));
    await eventually(() => seen.length >= 2, 'add and update');
    // Delete and re-create while the watch is cut: the informer sees a new UID under the same name.
    await proxy.refuse();
    await live.delete(a).catch(() => undefined);
    const direct = createClient({ kubeConfig: env.kubeConfig });
    await direct.delete(ConfigMap, { namespace: ns, name: 'h' }).catch(() => undefined);
    const b = await direct.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'h', namespace: ns }, data: { v: '3' } });
    await proxy.accept();
    await eventually(() => seen.some((s) => s.startsWith(`add:h:${b.metadata.uid}`)), 'the re-created object');
    expect(seen[0]).toBe(`add:h:${a.metadata.uid}`);
    expect(seen[1]).toBe('update:h:2');
    expect(seen.slice(2)).toEqual([`delete:h:${a.metadata.uid}:false`, `add:h:${b.metadata.uid}`]);
    expect(slowCalls).toBe(1); // still stuck on its first event, and nobody else waited for it
    expect(informer.handlerErrors).toBeGreaterThan(0);
    release();
    await eventually(() => slowCalls > 5, 'the slow handler to catch up');

    // rxjs: the same events as an Observable
    const next = firstValueFrom(informer.events().pipe(filter((e) => e.type === 'update'), take(1), toArray()));
    await direct.patch(b, mergePatch({ data: { v: '4' } }));
    const [update] = await next;
    expect(update?.type === 'update' && update.object.data?.['v']).toBe('4');
    await cache.stop();
  });
});
