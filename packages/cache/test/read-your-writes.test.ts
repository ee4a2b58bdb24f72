/**
 * Read-your-writes on the real API server, with the cache made to lag: the
 * proxy holds every watch event 400 ms. After a write through the cached
 * client returns, a cached get or list never shows the object from before
 * it (create, patch, status patch, delete); past the bound a get answers
 * with the written object and a list is live; with the option off the lag
 * shows (so these tests can fail). With the watch stuck (a second proxy
 * stalls it while other requests pass) the bound is paid once per stream,
 * not once per read, and with the server black-holed a get of a written key
 * still answers, with no request.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy, Environment } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { createClient, isNotFound, mergePatch } from '@kubeloop/client';
import type { CachedClient, Client } from '@kubeloop/client';
import type { ReadYourWritesOptions } from '@kubeloop/client/internal';
import { createInformerCache } from '../src/index.js';
import type { InformerCache } from '../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';

const LAG_MS = 400;

let env: Environment;
let proxy: ApiProxy;
let live: Client;
let ns: string;
const caches: InformerCache[] = [];

beforeAll(async () => {
  env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  proxy = await startApiProxy(env.kubeConfig);
  proxy.delayWatchEvents(LAG_MS);
  live = createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'ryw-test' });
  ns = uniqueName('ryw');
  await live.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});

afterAll(async () => {
  await Promise.all(caches.map((c) => c.stop()));
  await live?.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
  await proxy?.close();
  await env?.stop();
});

type Read = Parameters<NonNullable<ReadYourWritesOptions['onRead']>>[0];

/** A cached client over the lagging proxy (or `via`), its ConfigMap informer started; `reads` records how reads that waited were served. */
async function cachedClient(readYourWrites?: false | ReadYourWritesOptions, labelSelector?: string, via: ApiProxy = proxy): Promise<{ client: CachedClient; reads: Read[] }> {
  const reads: Read[] = [];
  const apiReader = createClient({ kubeConfig: via.kubeConfig, fieldOwner: 'ryw-test' });
  const cache = createInformerCache({ client: apiReader, namespaces: [ns], ...(labelSelector ? { defaultLabelSelector: labelSelector } : {}) });
  caches.push(cache);
  const client = createClient({
    kubeConfig: via.kubeConfig,
    fieldOwner: 'ryw-test',
    cache,
    readYourWrites: readYourWrites === false ? false : { ...readYourWrites, onRead: (r) => reads.push(r) },
  });
  await client.list(ConfigMap, { namespace: ns });
  return { client, reads };
}

describe('read-your-writes, the cache 400 ms behind', () => {
  it('get after create, patch and delete sees each write', async () => {
    const { client, reads } = await cachedClient();
    const name = uniqueName('cm');
    const created = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { step: '1' } });
    const got = await client.get(ConfigMap, { namespace: ns, name });
    expect(got.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);

    const patched = await client.patch(got, mergePatch({ data: { step: '2' } }));
    const again = await client.get(ConfigMap, { namespace: ns, name });
    expect(again.data?.['step']).toBe('2');
    expect(again.metadata?.resourceVersion).toBe(patched.metadata?.resourceVersion);

    await client.delete(again);
    await expect(client.get(ConfigMap, { namespace: ns, name })).rejects.toSatisfy(isNotFound);

    // Each read waited for the cache, and the cache caught up within the bound.
    expect(reads.map((r) => `${r.op}:${r.outcome}`)).toEqual(['get:cache', 'get:cache', 'get:cache']);
  });

  it('list after writes includes the new objects and their changes, and not the deleted one', async () => {
    const { client } = await cachedClient();
    const run = uniqueName('run');
    const names = [uniqueName('a'), uniqueName('b'), uniqueName('c')];
    for (const name of names) await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels: { run } } });
    let list = await client.list(ConfigMap, { namespace: ns, labelSelector: { run } });
    expect(list.items.map((o) => o.metadata?.name).sort()).toEqual([...names].sort());

    await client.patch(ConfigMap, { namespace: ns, name: names[0]! }, mergePatch({ metadata: { labels: { run: 'moved' } } }));
    await client.delete(ConfigMap, { namespace: ns, name: names[1]! });
    list = await client.list(ConfigMap, { labelSelector: { run } });
    expect(list.items.map((o) => o.metadata?.name)).toEqual([names[2]]);
  });

  it('past the bound, a get answers with the written object (as the cache holds objects), a list with it laid over the cache; both current', async () => {
    const { client, reads } = await cachedClient({ timeoutMs: 50 });
    const name = uniqueName('cm');
    const created = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { step: '1' } });
    const got = await client.get(ConfigMap, { namespace: ns, name });
    expect(got.data?.['step']).toBe('1');
    expect(got.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
    // A copy the cache's way: managedFields stripped, frozen; the write's own answer untouched.
    expect(got).not.toBe(created);
    expect(got.metadata?.managedFields).toBeUndefined();
    expect(created.metadata?.managedFields).toBeDefined();
    expect(Object.isFrozen(got)).toBe(true);
    const listed = await client.list(ConfigMap, { namespace: ns });
    expect(listed.items.find((o) => o.metadata?.name === name)?.data?.['step']).toBe('1');
    expect(reads.map((r) => `${r.op}:${r.outcome}`)).toEqual(['get:written', 'list:written']);
  });

  it('a written object the cache’s selector never admits is not waited for; one that leaves it is gone from the cache', async () => {
    // A bound far longer than the test: a read that waited for it would be 'live' (or time the test out).
    const { client, reads } = await cachedClient({ timeoutMs: 60_000 }, 'tier=kept');
    const outside = uniqueName('cm');
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: outside, namespace: ns, labels: { tier: 'other' } } });
    // The cache never holds it: its answer is NotFound, at once, from the cache.
    await expect(client.get(ConfigMap, { namespace: ns, name: outside })).rejects.toSatisfy(isNotFound);
    expect(reads.map((r) => `${r.op}:${r.outcome}`)).toEqual(['get:cache']);

    // Held, then relabelled out of the selector: the cached copy from before the write is never served.
    const leaving = uniqueName('cm');
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: leaving, namespace: ns, labels: { tier: 'kept' } }, data: { step: '1' } });
    expect((await client.get(ConfigMap, { namespace: ns, name: leaving })).data?.['step']).toBe('1');
    await client.patch(ConfigMap, { namespace: ns, name: leaving }, mergePatch({ metadata: { labels: { tier: 'other' } }, data: { step: '2' } }));
    await expect(client.get(ConfigMap, { namespace: ns, name: leaving })).rejects.toSatisfy(isNotFound);
    const listed = await client.list(ConfigMap, { namespace: ns });
    expect(listed.items.map((o) => o.metadata?.name)).not.toContain(leaving);
    expect(reads.map((r) => `${r.op}:${r.outcome}`)).toEqual(['get:cache', 'get:cache', 'get:cache']); // the list had nothing left to wait for
  });

  it('deleteAllOf: a cached list right after shows none of the deleted objects, one held by a finalizer as deleting; taking the finalizer off makes it gone', async () => {
    const { client, reads } = await cachedClient();
    const batch = uniqueName('batch');
    const names = [0, 1, 2].map((i) => `${batch}-${i}`);
    for (const [i, name] of names.entries()) {
      await client.create({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: ns, labels: { batch }, ...(i === 0 ? { finalizers: ['example.com/hold'] } : {}) },
      });
    }
    expect((await client.list(ConfigMap, { namespace: ns, labelSelector: { batch } })).items).toHaveLength(3);
    await client.deleteAllOf(ConfigMap, { namespace: ns, labelSelector: { batch } });
    const after = await client.list(ConfigMap, { namespace: ns, labelSelector: { batch } });
    expect(after.items.map((o) => o.metadata?.name)).toEqual([names[0]]);
    expect(after.items[0]?.metadata?.deletionTimestamp).toBeDefined();
    expect(reads.at(-1)).toMatchObject({ op: 'list', outcome: 'cache' });
    await client.patch(ConfigMap, { namespace: ns, name: names[0]! }, mergePatch({ metadata: { finalizers: null } }));
    await expect(client.get(ConfigMap, { namespace: ns, name: names[0]! })).rejects.toSatisfy(isNotFound);
  });

  it('writes by someone else are not waited for; with the option off, the lag shows', async () => {
    const { client, reads } = await cachedClient(false);
    const name = uniqueName('cm');
    const created = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { step: '1' } });
    await expect(client.get(ConfigMap, { namespace: ns, name })).rejects.toSatisfy(isNotFound);
    expect(reads).toEqual([]);
    // Still not there right after: the event is on its way.
    const list = await client.list(ConfigMap, { namespace: ns });
    expect(list.items.some((o) => o.metadata?.uid === created.metadata?.uid)).toBe(false);
  });
});

describe('read-your-writes, the watch stuck', () => {
  let stuck: ApiProxy;
  beforeAll(async () => {
    stuck = await startApiProxy(env.kubeConfig);
  });
  afterAll(async () => {
    await stuck?.close();
  });

  const configMap = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: 'v1' as const, kind: 'ConfigMap' as const, metadata: { name, namespace: ns, labels }, data: { name } });
  /** GETs of these names the proxy saw (live reads of them). */
  const liveGets = (names: readonly string[]): number => stuck.count((r) => r.method === 'GET' && names.some((n) => r.path.endsWith(`/configmaps/${n}`)));

  it('20 gets of written keys: one waits the bound, the rest answer at once from the written objects, no live read; caught up, the cache answers again', async () => {
    const { client, reads } = await cachedClient({}, undefined, stuck);
    const run = uniqueName('run');
    const names = Array.from({ length: 20 }, () => uniqueName('stuck'));
    stuck.stallWatches(true);
    try {
      const written = [];
      for (const name of names) written.push(await client.create(configMap(name, { run })));
      for (const [i, name] of names.entries()) {
        const got = await client.get(ConfigMap, { namespace: ns, name });
        expect(got.metadata?.resourceVersion).toBe(written[i]!.metadata?.resourceVersion);
        expect(got.data).toEqual({ name });
      }
      // Counted by the mechanism: the first read waited the bound and found the stream behind; the others did not wait.
      expect(reads.filter((r) => r.waited)).toHaveLength(1);
      expect(reads[0]).toMatchObject({ op: 'get', outcome: 'written', waited: true });
      expect(reads.map((r) => r.outcome)).toEqual(names.map(() => 'written'));
      expect(liveGets(names)).toBe(0);
      // A list the stream is behind on: the cache with the written objects laid over it, at once; no live list.
      const sent = stuck.requests.length;
      const listed = await client.list(ConfigMap, { namespace: ns, labelSelector: { run } });
      expect(listed.items.map((o) => o.metadata?.name).sort()).toEqual([...names].sort());
      expect(reads.at(-1)).toMatchObject({ op: 'list', outcome: 'written', waited: false });
      expect(stuck.requests.length).toBe(sent);
      // A page (limit) is not the cache's whole answer: it reads live.
      expect((await client.list(ConfigMap, { namespace: ns, labelSelector: { run }, limit: 100 })).items).toHaveLength(names.length);
      expect(reads.at(-1)).toMatchObject({ op: 'list', outcome: 'live', waited: false });
    } finally {
      stuck.stallWatches(false);
    }
    // The held events pass: once the cache has seen the writes, reads come from it again.
    await vi.waitFor(
      async () => {
        await client.get(ConfigMap, { namespace: ns, name: names.at(-1)! }).catch(() => undefined);
        expect(reads.at(-1)).toMatchObject({ op: 'get', outcome: 'cache' });
      },
      { timeout: 30_000, interval: 100 },
    );
    // A new stall after catching up costs one wait again, then none.
    reads.length = 0;
    stuck.stallWatches(true);
    try {
      const later = [uniqueName('later'), uniqueName('later'), uniqueName('later')];
      for (const name of later) await client.create(configMap(name));
      for (const name of later) expect((await client.get(ConfigMap, { namespace: ns, name })).data).toEqual({ name });
      expect(reads.map((r) => `${r.outcome}:${r.waited}`)).toEqual(['written:true', 'written:false', 'written:false']);
    } finally {
      stuck.stallWatches(false);
    }
  });

  it('the server black-holed: a get of a just-written key answers with the written object, of a just-deleted one NotFound, a list has the one and not the other, sending nothing', async () => {
    const { client, reads } = await cachedClient({}, undefined, stuck);
    const kept = uniqueName('kept');
    const doomed = uniqueName('doomed');
    await client.create(configMap(doomed));
    // In the cache before the watch sticks, so only the delete is unseen.
    await vi.waitFor(
      async () => {
        await client.get(ConfigMap, { namespace: ns, name: doomed });
        expect(reads.at(-1)?.outcome).toBe('cache');
      },
      { timeout: 30_000, interval: 100 },
    );
    reads.length = 0;
    stuck.stallWatches(true);
    try {
      const created = await client.create(configMap(kept));
      await client.delete(ConfigMap, { namespace: ns, name: doomed });
      stuck.blackhole(true);
      const sent = stuck.requests.length;
      const got = await client.get(ConfigMap, { namespace: ns, name: kept });
      expect(got.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);
      const gone = await client.get(ConfigMap, { namespace: ns, name: doomed }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(isNotFound(gone)).toBe(true);
      const names = (await client.list(ConfigMap, { namespace: ns })).items.map((o) => o.metadata?.name);
      expect(names).toContain(kept);
      expect(names).not.toContain(doomed);
      expect(stuck.requests.length).toBe(sent);
      expect(reads.map((r) => `${r.op}:${r.outcome}:${r.waited}`)).toEqual(['get:written:true', 'get:written:false', 'list:written:false']);
    } finally {
      stuck.blackhole(false);
      stuck.stallWatches(false);
    }
  });
});
