/**
 * Conformance: `shardSelector` on lists, watches and delete-collections (ShardedListAndWatch), on envtest (gate on) and on the fake.
 * The per-backend tests check answers against `matchesShard`, which the fake itself filters with: on the fake they
 * only say the fake applies that function. The last block checks the fake against kube-apiserver itself, with no
 * shared oracle: the same namespaces on both, the same namespace-hash ranges, the same answer.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, fnv1a64, loadKubeConfig, matchesShard, renderShardSelector } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import type { ShardSelector } from '@kubeloop/client';
import { ConfigMap } from '@kubeloop/scheme';
import { BACKENDS, useBackend } from './backends.js';
import { configMap, expectStatus, raw } from './support.js';
import { createFakeApiServer } from '../../src/index.js';
import type { FakeApiServer } from '../../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../../test/support/env.js';

const HALF = 1n << 63n;
const SELECTORS: [string, ShardSelector][] = [
  ['lower half of uids', { field: 'object.metadata.uid', ranges: [{ start: 0n, end: HALF }] }],
  ['upper half of uids', { field: 'object.metadata.uid', ranges: [{ start: HALF, end: 1n << 64n }] }],
  ['two quarters of uids', { field: 'object.metadata.uid', ranges: [{ start: 0n, end: HALF / 2n }, { start: HALF, end: HALF + HALF / 2n }] }],
];

/** 1-3 disjoint ranges of the 64-bit space: sorted distinct cut points, paired up. */
const RANGES = fc
  .uniqueArray(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), { minLength: 2, maxLength: 6 })
  .map((cuts) => {
    const sorted = [...cuts].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const out: { start: bigint; end: bigint }[] = [];
    for (let i = 0; i + 1 < sorted.length; i += 2) out.push({ start: sorted[i]!, end: sorted[i + 1]! });
    return out;
  });

const namesOf = (items: unknown): string[] => ((items ?? []) as { metadata: { name: string } }[]).map((o) => o.metadata.name).sort();

describe.each(BACKENDS)('shard selectors ($backend)', ({ backend }) => {
  const h = useBackend(backend);
  let run: string;

  beforeAll(async () => {
    run = h().name('shard');
    const client = h().client();
    for (let i = 0; i < 24; i++) await client.create(configMap(h().namespace, `${run}-${i}`, {}, { run }));
  });

  it.each(SELECTORS)('a list with %s returns exactly the objects whose uid hashes into the ranges', async (_what, selector) => {
    const client = h().client();
    const all = await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run } });
    const sharded = await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run }, shardSelector: selector });
    const expected = all.items.filter((o) => matchesShard(o, selector)).map((o) => o.metadata!.name).sort();
    expect(sharded.items.map((o) => o.metadata!.name).sort()).toEqual(expected);
    expect(expected.length).toBeLessThan(all.items.length);
  });

  it('generated uid ranges: a list returns exactly the objects whose uid hashes into them (the oracle the server is checked against in client/test/shard.test.ts)', async () => {
    const client = h().client();
    const all = await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run } });
    await fc.assert(
      fc.asyncProperty(RANGES, async (r) => {
        const selector: ShardSelector = { field: 'object.metadata.uid', ranges: r };
        const sharded = await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run }, shardSelector: selector });
        const expected = all.items.filter((o) => matchesShard(o, selector)).map((o) => o.metadata!.name).sort();
        expect(sharded.items.map((o) => o.metadata!.name).sort()).toEqual(expected);
      }),
      { numRuns: 40, seed: 20 },
    );
  });

  it('a namespace range selects every object of a namespace whose hash is in it, or none', async () => {
    const client = h().client();
    const hash = fnv1a64(h().namespace);
    const inside: ShardSelector = { field: 'object.metadata.namespace', ranges: [{ start: hash, end: hash + 1n }] };
    const outside: ShardSelector = { field: 'object.metadata.namespace', ranges: hash === 0n ? [{ start: 1n, end: 2n }] : [{ start: 0n, end: hash }] };
    expect((await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run }, shardSelector: inside })).items).toHaveLength(24);
    expect((await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run }, shardSelector: outside })).items).toHaveLength(0);
  });

  it('a watch with a shard selector sends only the objects in range', async () => {
    const client = h().client();
    const selector = SELECTORS[0]![1];
    const ac = new AbortController();
    const seen: string[] = [];
    const listed = await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run }, limit: 1 });
    const names = Array.from({ length: 12 }, (_, i) => `${run}-w${i}`);
    const watching = (async () => {
      for await (const ev of await client.watch(ConfigMap, { namespace: h().namespace, labelSelector: { run }, shardSelector: selector, resourceVersion: listed.metadata!.resourceVersion!, signal: ac.signal })) {
        if (ev.type === 'ADDED') seen.push(ev.object.metadata!.name!);
      }
    })().catch(() => undefined);
    const created = [];
    for (const name of names) created.push(await client.create(configMap(h().namespace, name, {}, { run })));
    const expected = created.filter((o) => matchesShard(o, selector)).map((o) => o.metadata.name).sort();
    const started = Date.now();
    while (seen.length < expected.length && Date.now() - started < 10_000) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    ac.abort();
    await watching;
    expect(seen.sort()).toEqual(expected);
  });

  it('generated uid ranges: a delete-collection deletes exactly the objects in range (a dry run first deletes nothing) and answers with them', async () => {
    const client = h().client();
    const path = `/api/v1/namespaces/${h().namespace}/configmaps`;
    await fc.assert(
      fc.asyncProperty(RANGES, async (r) => {
        const batch = h().name('shard-del');
        const made = await Promise.all(Array.from({ length: 6 }, (_, i) => client.create(configMap(h().namespace, `${batch}-${i}`, {}, { batch }))));
        const selector: ShardSelector = { field: 'object.metadata.uid', ranges: r };
        const inRange = made.filter((o) => matchesShard(o, selector)).map((o) => o.metadata.name).sort();
        const rest = made.filter((o) => !matchesShard(o, selector)).map((o) => o.metadata.name).sort();
        const query = { labelSelector: `batch=${batch}`, shardSelector: renderShardSelector(selector) };
        const dry = await raw(h(), 'DELETE', path, { query: { ...query, dryRun: 'All' } });
        expect(dry.status).toBe(200);
        expect(namesOf(dry.body['items'])).toEqual(inRange);
        expect((await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { batch } })).items).toHaveLength(made.length);
        const done = await raw(h(), 'DELETE', path, { query });
        expect(done.status).toBe(200);
        expect(namesOf(done.body['items'])).toEqual(inRange);
        expect(namesOf((await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { batch } })).items)).toEqual(rest);
      }),
      { numRuns: 6, seed: 21 },
    );
  });

  it("the client's deleteAllOf with a shard selector deletes the shard and leaves the rest", async () => {
    const client = h().client();
    const batch = h().name('shard-all');
    const made = await Promise.all(Array.from({ length: 8 }, (_, i) => client.create(configMap(h().namespace, `${batch}-${i}`, {}, { batch }))));
    const selector = SELECTORS[1]![1];
    await client.deleteAllOf(ConfigMap, { namespace: h().namespace, labelSelector: { batch }, shardSelector: selector });
    const left = await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { batch } });
    expect(namesOf(left.items)).toEqual(made.filter((o) => !matchesShard(o, selector)).map((o) => o.metadata.name).sort());
  });

  it('a delete-collection with a malformed shard selector is refused (500 without a reason) and deletes nothing', async () => {
    const client = h().client();
    const batch = h().name('shard-bad');
    await client.create(configMap(h().namespace, batch, {}, { batch }));
    const res = await raw(h(), 'DELETE', `/api/v1/namespaces/${h().namespace}/configmaps`, { query: { labelSelector: `batch=${batch}`, shardSelector: "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')" } });
    // Unlike a list's, the 500 carries no reason.
    expect([res.status, res.body['reason']]).toEqual([500, undefined]);
    expect(String(res.body['message'])).toContain('invalid shard selector: ');
    expect((await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { batch } })).items).toHaveLength(1);
  });

  it('refuses a malformed shard selector as kube-apiserver v1.37 does: 500 InternalError, invalid shard selector', async () => {
    const client = h().client();
    const err = await expectStatus(client.list(ConfigMap, { namespace: h().namespace, shardSelector: "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')" }), 500, 'InternalError');
    expect(err.message).toContain('invalid shard selector: ');
  });
});

describe('the fake answers shard selectors as kube-apiserver does (the server is the oracle, not matchesShard)', () => {
  let real: Client;
  let fake: FakeApiServer;
  const run = uniqueName('shardns');
  /** Namespaces of the same names on both backends, one labelled ConfigMap in each: their hashes are the same on both. */
  const namespaces = Array.from({ length: 16 }, (_, i) => `${run}-${i}`);

  beforeAll(async () => {
    real = createClient({ kubeConfig: loadKubeConfig({ path: testKubeconfigPath() }), fieldOwner: 'conformance', transportOptions: { qps: 0 } });
    fake = createFakeApiServer();
    for (const client of [real, fake.client({ fieldOwner: 'conformance' })]) {
      for (const ns of namespaces) {
        await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
        await client.create(configMap(ns, 'one', {}, { run }));
      }
    }
  });
  afterAll(async () => {
    await Promise.all(namespaces.map((name) => real?.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name }).catch(() => undefined)));
    real?.transport.close();
    await fake?.close();
  });

  it('generated namespace-hash ranges: a cluster-wide list on the fake returns the namespaces kube-apiserver returns', async () => {
    const client = fake.client({ fieldOwner: 'conformance' });
    // FNV-1a hashes of names that differ only in their last characters lie
    // within about 2^48 of each other, so cut points drawn from the whole
    // 64-bit space almost never fall between them: cut at the namespaces'
    // own hashes (and one past them) as often as anywhere else.
    const hashes = namespaces.map((ns) => fnv1a64(ns));
    const cut = fc.oneof(
      fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
      fc.constantFrom(...hashes),
      fc.constantFrom(...hashes).map((x) => (x + 1n) % (1n << 64n)),
    );
    const ranges = fc.uniqueArray(cut, { minLength: 2, maxLength: 6 }).map((cuts) => {
      const sorted = [...cuts].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      const out: { start: bigint; end: bigint }[] = [];
      for (let i = 0; i + 1 < sorted.length; i += 2) out.push({ start: sorted[i]!, end: sorted[i + 1]! });
      return out;
    });
    let split = 0;
    await fc.assert(
      fc.asyncProperty(ranges, async (r) => {
        const shardSelector: ShardSelector = { field: 'object.metadata.namespace', ranges: r };
        const onServer = (await real.list(ConfigMap, { labelSelector: { run }, shardSelector })).items.map((o) => o.metadata!.namespace!).sort();
        const onFake = (await client.list(ConfigMap, { labelSelector: { run }, shardSelector })).items.map((o) => o.metadata!.namespace!).sort();
        expect(onFake).toEqual(onServer);
        if (onServer.length > 0 && onServer.length < namespaces.length) split++;
      }),
      { numRuns: 30, seed: 23 },
    );
    // The ranges did split the namespaces (an all-or-nothing answer on every run would check little).
    expect(split).toBeGreaterThan(5);
  });
});
