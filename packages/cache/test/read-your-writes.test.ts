/**
 * Read-your-writes on the real API server, with the cache made to lag: the
 * proxy holds every watch event 400 ms. After a write through the cached
 * client returns, a cached get or list never shows the object from before
 * it (create, patch, status patch, delete); past the bound the read is live;
 * with the option off the lag shows (so these tests can fail).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

/** A cached client over the lagging proxy, its ConfigMap informer started; `reads` records how reads that waited were served. */
async function cachedClient(readYourWrites?: false | ReadYourWritesOptions, labelSelector?: string): Promise<{ client: CachedClient; reads: Read[] }> {
  const reads: Read[] = [];
  const apiReader = createClient({ kubeConfig: proxy.kubeConfig, fieldOwner: 'ryw-test' });
  const cache = createInformerCache({ client: apiReader, namespaces: [ns], ...(labelSelector ? { defaultLabelSelector: labelSelector } : {}) });
  caches.push(cache);
  const client = createClient({
    kubeConfig: proxy.kubeConfig,
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

  it('past the bound, the read is live and still current', async () => {
    const { client, reads } = await cachedClient({ timeoutMs: 50 });
    const name = uniqueName('cm');
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { step: '1' } });
    const got = await client.get(ConfigMap, { namespace: ns, name });
    expect(got.data?.['step']).toBe('1');
    expect(reads.map((r) => `${r.op}:${r.outcome}`)).toEqual(['get:live']);
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
