/**
 * Shard selectors: FNV-1a 64-bit, the `shardSelector` syntax, and agreement
 * with kube-apiserver (the shared plane runs with `ShardedListAndWatch`):
 * for generated ranges the server's sharded LIST and WATCH return exactly
 * the objects our hash puts in range, and it refuses exactly the selectors
 * our parser refuses. `deleteAllOf` with a shard selector deletes exactly
 * the shard with the gate, and without it (a plane of its own, where the
 * server ignores the selector and a raw delete-collection deletes
 * everything; there the client's one-by-one deletes run at most 8 at once,
 * and the first error stops them). `shardSelector: ''` is no selector on
 * list, watch and deleteAllOf.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy, Environment } from '@kubeloop/envtest';
import { ConfigMap, Namespace } from '@kubeloop/scheme';
import { createClient, fnv1a64, isClientError, isInvalid, loadKubeConfig, matchesShard, parseShardSelector, renderShardSelector } from '../src/index.js';
import { HASH_SPACE_END } from '../src/internal-api.js';
import type { Client, ShardField, ShardRange, ShardSelector } from '../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';

const hash64 = fc.bigInt({ min: 0n, max: HASH_SPACE_END });
const range: fc.Arbitrary<ShardRange> = fc
  .tuple(hash64, hash64)
  .filter(([a, b]) => a !== b)
  .map(([a, b]) => (a < b ? { start: a, end: b } : { start: b, end: a }));
const field: fc.Arbitrary<ShardField> = fc.constantFrom('object.metadata.uid', 'object.metadata.namespace');
const selector: fc.Arbitrary<ShardSelector> = fc.record({ field, ranges: fc.array(range, { minLength: 1, maxLength: 4 }) });

describe('FNV-1a 64-bit', () => {
  it('gives the published test vectors, over UTF-8 bytes', () => {
    expect(fnv1a64('')).toBe(0xcbf29ce484222325n);
    expect(fnv1a64('a')).toBe(0xaf63dc4c8601ec8cn);
    expect(fnv1a64('foobar')).toBe(0x85944171f73967e8n);
    expect(fnv1a64('é')).not.toBe(fnv1a64('\u00e9'.normalize('NFD')));
  });
});

describe('shard selector syntax', () => {
  it('renders bounds as 0x + 16 lower-case hex digits, the end of the space as 0x10000000000000000, ranges joined by ||', () => {
    expect(renderShardSelector({ field: 'object.metadata.uid', ranges: [{ start: 0n, end: 1n << 63n }, { start: 0xc000000000000000n, end: HASH_SPACE_END }] })).toBe(
      "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')",
    );
  });

  it('parses what it renders, for any selector', () => {
    fc.assert(
      fc.property(selector, (s) => {
        expect(parseShardSelector(renderShardSelector(s))).toEqual(s);
      }),
    );
  });

  it('refuses empty, inverted or out-of-space ranges with a typed error', () => {
    for (const bad of [
      { field: 'object.metadata.uid', ranges: [] },
      { field: 'object.metadata.uid', ranges: [{ start: 5n, end: 5n }] },
      { field: 'object.metadata.uid', ranges: [{ start: 0n, end: HASH_SPACE_END + 1n }] },
      { field: 'object.metadata.name', ranges: [{ start: 0n, end: 1n }] },
    ] as ShardSelector[]) {
      expect(() => renderShardSelector(bad)).toThrow(expect.objectContaining({ name: 'ClientError', reason: 'InvalidRequest' }));
    }
  });
});

describe('against kube-apiserver with ShardedListAndWatch', () => {
  let client: Client;
  const run = uniqueName('shard');
  const namespaces = [0, 1, 2, 3].map((i) => `${run}-${i}`);
  const objects: { metadata: { name: string; namespace: string; uid: string } }[] = [];

  beforeAll(async () => {
    client = createClient({ kubeConfig: loadKubeConfig(testKubeconfigPath()), fieldOwner: 'shard-test' });
    for (const ns of namespaces) await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const made = await Promise.all(
      Array.from({ length: 48 }, (_, i) =>
        client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: namespaces[i % 4]!, labels: { 'shard-test': run } } }),
      ),
    );
    for (const o of made) objects.push(o as (typeof objects)[number]);
  });

  afterAll(async () => {
    for (const ns of namespaces) await client.delete(Namespace, { name: ns }).catch(() => undefined);
  });

  const key = (o: { metadata?: { namespace?: string; name?: string } }): string => `${o.metadata?.namespace}/${o.metadata?.name}`;

  it('a sharded LIST returns exactly the objects whose hash is in range, for generated selectors', async () => {
    await fc.assert(
      fc.asyncProperty(selector, async (s) => {
        const listed = await client.list(ConfigMap, { labelSelector: { 'shard-test': run }, shardSelector: s });
        const expected = objects.filter((o) => matchesShard(o, s)).map(key).sort();
        expect(listed.items.map(key).sort()).toEqual(expected);
      }),
      { numRuns: 30 },
    );
  });

  it('a sharded WATCH delivers only objects in range', async () => {
    const half: ShardSelector = { field: 'object.metadata.uid', ranges: [{ start: 0n, end: 1n << 62n }, { start: 1n << 63n, end: 3n << 62n }] };
    const list = await client.list(ConfigMap, { namespace: namespaces[0]!, limit: 1 });
    const ac = new AbortController();
    const events = await client.watch(ConfigMap, { namespace: namespaces[0]!, resourceVersion: list.metadata?.resourceVersion ?? '', shardSelector: half, allowWatchBookmarks: false, signal: ac.signal });
    const made = await Promise.all(Array.from({ length: 16 }, (_, i) => client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `w-${i}`, namespace: namespaces[0]! } })));
    const inRange = made.filter((o) => matchesShard(o, half)).map(key).sort();
    expect(inRange.length).toBeGreaterThan(0);
    expect(inRange.length).toBeLessThan(made.length);
    const seen: string[] = [];
    for await (const e of events) {
      seen.push(key(e.object));
      if (seen.length === inRange.length) break;
    }
    ac.abort();
    expect(seen.sort()).toEqual(inRange);
  });

  it('refuses exactly the selectors our parser refuses', async () => {
    const hex16 = fc.bigInt({ min: 0n, max: HASH_SPACE_END - 1n }).map((n) => `0x${n.toString(16).padStart(16, '0')}`);
    const bound = fc.oneof(
      hex16,
      hex16.map((h) => h.toUpperCase().replace('0X', '0x')),
      fc.constant('0x10000000000000000'),
      fc.constant('0x10000000000000001'),
      fc.constant('0x0'),
      fc.constant('0x00000000000000000'),
    );
    const term = fc
      .tuple(fc.constantFrom('object.metadata.uid', 'object.metadata.namespace', 'object.metadata.name'), bound, bound, fc.constantFrom("'", '"'))
      .map(([f, a, b, q]) => `shardRange(${f}, ${q}${a}${q}, ${q}${b}${q})`);
    const text = fc.array(term, { minLength: 1, maxLength: 3 }).map((t) => t.join(' || '));
    await fc.assert(
      fc.asyncProperty(text, async (t) => {
        let ours = true;
        try {
          parseShardSelector(t);
        } catch (err) {
          expect(isClientError(err)).toBe(true);
          ours = false;
        }
        const server = await client.list(ConfigMap, { namespace: namespaces[0]!, limit: 1, shardSelector: t }).then(
          () => true,
          (err: unknown) => {
            // Most refusals are 400; a 17-digit bound other than 2^64 comes back as a 500 (kube-apiserver 1.37.2).
            if (isClientError(err) && (err.code === 400 || err.code === 500) && err.message.includes('invalid shard selector')) return false;
            throw err;
          },
        );
        expect({ t, accepted: ours }).toEqual({ t, accepted: server });
      }),
      { numRuns: 40 },
    );
  });
});

/** `deleteAllOf` with a shard selector on a server, through a proxy that records its requests. */
function deleteAllOfShard(gate: boolean): void {
  let env: Environment;
  let proxy: ApiProxy;
  let client: Client;

  beforeAll(async () => {
    env = gate ? createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() }) : createEnvironment({ featureGates: { ShardedListAndWatch: false } });
    await env.start();
    proxy = await startApiProxy(env.kubeConfig);
    client = createClient({ kubeConfig: proxy.kubeConfig, fieldOwner: 'shard-test' });
  });
  afterAll(async () => {
    await proxy.close();
    await env.stop();
  });

  /** A namespace of `count` ConfigMaps and a selector splitting them, some in range and some not. */
  async function seed(count = 16): Promise<{ ns: string; made: { metadata: { name: string; uid: string } }[]; half: ShardSelector }> {
    const ns = uniqueName(`shard-del-${gate ? 'on' : 'off'}`);
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const made = (await Promise.all(Array.from({ length: count }, (_, i) => client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: ns } })))) as { metadata: { name: string; uid: string } }[];
    const half: ShardSelector = { field: 'object.metadata.uid', ranges: [{ start: 0n, end: 1n << 63n }] };
    expect(made.some((o) => matchesShard(o, half)) && made.some((o) => !matchesShard(o, half))).toBe(true);
    return { ns, made, half };
  }
  const names = (items: readonly { metadata?: { name?: string } }[]): string[] => items.map((o) => o.metadata!.name!).sort();

  it('deletes exactly the objects whose uid is in range', async () => {
    const { ns, made, half } = await seed();
    if (!gate) {
      // The premise: without the gate the server ignores the selector; a raw delete-collection would take everything.
      const dry = await client.transport.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns}/configmaps`, query: { dryRun: 'All', shardSelector: renderShardSelector(half) } });
      expect(names((JSON.parse(dry.body) as { items: { metadata: { name: string } }[] }).items)).toEqual(names(made));
    }
    proxy.clearRequests();
    await client.deleteAllOf(ConfigMap, { namespace: ns, shardSelector: half });
    // With the gate: the list, then the delete-collection. Without: the list, then one delete per object in range.
    const lists = proxy.count((r) => r.method === 'GET' && r.path.endsWith('/configmaps'));
    const collection = proxy.count((r) => r.method === 'DELETE' && r.path.endsWith('/configmaps'));
    const single = proxy.count((r) => r.method === 'DELETE' && r.path.includes('/configmaps/'));
    expect({ lists, collection, single }).toEqual(gate ? { lists: 1, collection: 1, single: 0 } : { lists: 1, collection: 0, single: made.filter((o) => matchesShard(o, half)).length });
    expect(names((await client.list(ConfigMap, { namespace: ns })).items)).toEqual(names(made.filter((o) => !matchesShard(o, half))));
    await client.delete(Namespace, { name: ns });
  });

  it('a dry run deletes nothing; a malformed selector string is refused before anything is sent', async () => {
    const { ns, made, half } = await seed();
    await client.deleteAllOf(ConfigMap, { namespace: ns, shardSelector: half, dryRun: true });
    expect((await client.list(ConfigMap, { namespace: ns })).items).toHaveLength(made.length);
    proxy.clearRequests();
    const err = await client.deleteAllOf(ConfigMap, { namespace: ns, shardSelector: "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')" }).catch((e: unknown) => e);
    expect(isClientError(err) && err.reason).toBe('InvalidRequest');
    expect(proxy.count((r) => r.method === 'DELETE')).toBe(0);
    expect((await client.list(ConfigMap, { namespace: ns })).items).toHaveLength(made.length);
    await client.delete(Namespace, { name: ns });
  });

  it("shardSelector '' is no selector: list and watch send none, deleteAllOf sends the plain delete-collection", async () => {
    const { ns, made } = await seed();
    proxy.clearRequests();
    expect(names((await client.list(ConfigMap, { namespace: ns, shardSelector: '' })).items)).toEqual(names(made));
    const events = await client.watch(ConfigMap, { namespace: ns, shardSelector: '', resourceVersion: '0' });
    await events.return?.();
    expect(proxy.requests.filter((r) => r.url.includes('shardSelector'))).toEqual([]);
    await client.deleteAllOf(ConfigMap, { namespace: ns, shardSelector: '' });
    expect(proxy.requests.filter((r) => r.url.includes('shardSelector'))).toEqual([]);
    expect({ lists: proxy.count((r) => r.method === 'GET' && r.path.endsWith('/configmaps') && !r.url.includes('watch=')), collection: proxy.count((r) => r.method === 'DELETE' && r.path.endsWith('/configmaps')) }).toEqual({ lists: 1, collection: 1 });
    expect((await client.list(ConfigMap, { namespace: ns })).items).toEqual([]);
    await client.delete(Namespace, { name: ns });
  });

  if (!gate) {
    /** The most single deletes the proxy held at once while `run` ran (each held `ms` before it goes on). */
    async function mostInFlight(ms: number, run: () => Promise<unknown>): Promise<number> {
      let most = 0;
      const inFlight = (): number => proxy.count((r) => r.method === 'DELETE' && r.path.includes('/configmaps/') && r.status === 0);
      const poll = setInterval(() => (most = Math.max(most, inFlight())), 2);
      proxy.delay(ms);
      try {
        await run();
      } finally {
        proxy.delay(0);
        clearInterval(poll);
      }
      return most;
    }

    it('the one-by-one deletes run a few at a time, never more than 8', async () => {
      const { ns, made, half } = await seed(40);
      const inRange = made.filter((o) => matchesShard(o, half));
      expect(inRange.length).toBeGreaterThan(8);
      proxy.clearRequests();
      const most = await mostInFlight(100, () => client.deleteAllOf(ConfigMap, { namespace: ns, shardSelector: half }));
      expect(most).toBeGreaterThan(1);
      expect(most).toBeLessThanOrEqual(8);
      expect(proxy.count((r) => r.method === 'DELETE' && r.path.includes('/configmaps/'))).toBe(inRange.length);
      expect(names((await client.list(ConfigMap, { namespace: ns })).items)).toEqual(names(made.filter((o) => !matchesShard(o, half))));
      await client.delete(Namespace, { name: ns });
    });

    it('the first error other than NotFound or Conflict rejects; no further delete starts and none is left unawaited', async () => {
      const { ns, made, half } = await seed(40);
      expect(made.filter((o) => matchesShard(o, half)).length).toBeGreaterThan(8);
      proxy.clearRequests();
      // every single delete is refused (422): the ones started before the first answer settle, no more start
      const err = await client.deleteAllOf(ConfigMap, { namespace: ns, shardSelector: half, propagationPolicy: 'Sideways' as 'Orphan' }).catch((e: unknown) => e);
      expect(isInvalid(err)).toBe(true);
      const sent = proxy.requests.filter((r) => r.method === 'DELETE' && r.path.includes('/configmaps/'));
      expect(sent.length).toBeGreaterThan(0);
      expect(sent.length).toBeLessThanOrEqual(8);
      expect(sent.every((r) => r.status === 422)).toBe(true);
      expect((await client.list(ConfigMap, { namespace: ns })).items).toHaveLength(made.length);
      await client.delete(Namespace, { name: ns });
    });
  }
}

describe('deleteAllOf with a shard selector, ShardedListAndWatch on (the server deletes the shard)', () => deleteAllOfShard(true));
describe('deleteAllOf with a shard selector, the gate off (the server would delete everything; the client deletes the shard one by one)', () => deleteAllOfShard(false));
