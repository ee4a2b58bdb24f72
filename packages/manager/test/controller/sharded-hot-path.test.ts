/**
 * What a sharded controller's hot path costs, counted on the real API
 * server: every FNV-1a hash of an object's uid (by who hashed it: the
 * controller's shard stage or the cache's shard stage admitting the object
 * to its shard; both ask `shardHash`, which lives in the cache and remembers
 * recent hashes) and every cache read of the controller, while a sharded
 * manager reconciles N ConfigMaps, then N changes of them. Each object's
 * uid is hashed once in all, when the cache admits its creation: the
 * controller's bucket reuses that hash, and a change hashes nothing; each
 * reconcile reads the cache once (the pause check; the bucket comes from
 * the event, not a second read). Sharded by namespace, the namespace is
 * hashed once whatever the number of objects.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import type * as clientModule from '@kubeloop/client';
import { createShardRing } from '@kubeloop/leaderelection';
import type { ShardRing } from '@kubeloop/leaderelection';
import { ConfigMap } from '@kubeloop/scheme';
import { Result, ringShardFilter } from '../../src/index.js';
import type { Manager } from '../../src/index.js';
import { eventually, newNamespace, run, testClient, testManager } from '../support.js';
import type { Running } from '../support.js';

/** Every hash of a string, with the file that asked for it. */
const hashed = vi.hoisted(() => [] as { text: string; caller: string }[]);

vi.mock('@kubeloop/client', async (importOriginal) => {
  const real = await importOriginal<typeof clientModule>();
  return {
    ...real,
    fnv1a64: (text: string): bigint => {
      // Frame 0 is "Error", 1 this function, 2 its caller.
      hashed.push({ text, caller: new Error().stack?.split('\n')[2] ?? '' });
      return real.fnv1a64(text);
    },
  };
});

const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300, buckets: 16 };
const OBJECTS = 40;

describe('a sharded controller\'s hot path', () => {
  let client: Client;
  let ns: string;
  let ring: ShardRing;
  let manager: Manager;
  let running: Running;
  /** The round of each object as its reconciles saw it, in order. */
  const seen = new Map<string, string[]>();
  let reconciles = 0;
  let cacheGets = 0;
  const uids = new Set<string>();

  /** Hashes of the objects' uids since `from`, by the controller's shard stage and by the cache. */
  function hashesSince(from: number): { controller: number; cache: number; other: string[] } {
    const mine = hashed.slice(from).filter((h) => uids.has(h.text));
    const controller = mine.filter((h) => h.caller.includes('/packages/manager/src/')).length;
    const cache = mine.filter((h) => h.caller.includes('/packages/cache/src/')).length;
    return { controller, cache, other: mine.filter((h) => !h.caller.includes('/packages/manager/src/') && !h.caller.includes('/packages/cache/src/')).map((h) => h.caller) };
  }

  beforeAll(async () => {
    client = testClient();
    ns = await newNamespace(client, 'hot-path');
    ring = createShardRing({ client, namespace: ns, name: 'hot-path', identity: 'only', ...TIMING });
    manager = testManager(ns, { cache: { byKind: [{ kind: ConfigMap, options: { shard: ringShardFilter(ring) } }] } });
    manager.add((signal) => ring.run(signal), { needLeaderElection: false });
    // Every read the controller makes of its cache.
    const cache = manager.cluster.cache;
    const get = cache.get.bind(cache);
    Object.defineProperty(cache, 'get', { value: (...args: Parameters<typeof get>) => (cacheGets++, get(...args)) });
    manager
      .controller()
      .for(ConfigMap)
      .withOptions({ maxConcurrentReconciles: 4, shard: { ring } })
      .complete(async (request) => {
        reconciles++;
        // Read live (not through the cache), so only the controller's own reads are counted.
        const cm = await client.get(ConfigMap, { namespace: request.namespace!, name: request.name }).catch(() => undefined);
        seen.set(request.name, [...(seen.get(request.name) ?? []), cm?.data?.['round'] ?? '']);
        return Result.done();
      });
  });
  afterAll(async () => {
    await running?.stop().catch(() => undefined);
    await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
  });

  it('objects created: each uid hashed once in all (the cache\'s admission; the controller reuses it), one cache read per reconcile', async () => {
    running = run(manager);
    await eventually(() => ring.active().size, (n) => n === TIMING.buckets, 'the only member to work on every bucket', 30_000);
    await eventually(() => manager.controllers().every((c) => c.synced), (ok) => ok, 'the controller synced');
    const from = hashed.length;
    const created = await Promise.all(Array.from({ length: OBJECTS }, (_, i) => client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: ns }, data: { round: '0' } })));
    for (const cm of created) uids.add(cm.metadata.uid!);
    await eventually(() => [...seen.values()].filter((rounds) => rounds.includes('0')).length, (n) => n === OBJECTS, 'every object reconciled', 30_000);
    const first = hashesSince(from);
    process.stderr.write(`[sharded hot path] ${OBJECTS} creations: ${reconciles} reconciles, ${cacheGets} cache reads, ${first.controller} controller hashes, ${first.cache} reflector hashes\n`);
    expect(first.other).toEqual([]);
    // shardHash lives in the cache: every hash is counted there, the controller's bucket lookups included.
    expect(first.controller).toBe(0);
    expect(first.cache).toBe(OBJECTS);
    expect(cacheGets).toBe(reconciles);
  });

  it('a change of each object: nothing hashed (the uids\' hashes are remembered), one cache read per reconcile', async () => {
    const from = hashed.length;
    const readsBefore = cacheGets;
    const reconcilesBefore = reconciles;
    await Promise.all(Array.from({ length: OBJECTS }, (_, i) => client.patch(ConfigMap, { namespace: ns, name: `cm-${i}` }, mergePatch({ data: { round: '1' } }))));
    await eventually(() => [...seen.values()].filter((rounds) => rounds.includes('1')).length, (n) => n === OBJECTS, 'every change reconciled', 30_000);
    const changed = hashesSince(from);
    const reads = cacheGets - readsBefore;
    const done = reconciles - reconcilesBefore;
    process.stderr.write(`[sharded hot path] ${OBJECTS} changes: ${done} reconciles, ${reads} cache reads, ${changed.controller} controller hashes, ${changed.cache} reflector hashes\n`);
    expect(changed.other).toEqual([]);
    // The cache's admission of each change and the controller's bucket both find the uid's hash remembered.
    expect(changed.controller + changed.cache).toBe(0);
    expect(done).toBeGreaterThanOrEqual(OBJECTS);
    expect(reads).toBe(done);
  });
});

describe('a controller sharded by namespace', () => {
  let client: Client;
  let ns: string;
  let running: Running | undefined;

  beforeAll(async () => {
    client = testClient();
    ns = await newNamespace(client, 'hot-path-ns');
  });
  afterAll(async () => {
    await running?.stop().catch(() => undefined);
    await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
  });

  it('hashes the namespace once in all, whatever the number of objects and changes; one cache read per reconcile', async () => {
    const ring = createShardRing({ client, namespace: ns, name: 'hot-path-ns', identity: 'only', ...TIMING });
    const manager = testManager(ns, { cache: { byKind: [{ kind: ConfigMap, options: { shard: ringShardFilter(ring, 'namespace') } }] } });
    manager.add((signal) => ring.run(signal), { needLeaderElection: false });
    let reads = 0;
    let reconciles = 0;
    const cache = manager.cluster.cache;
    const get = cache.get.bind(cache);
    Object.defineProperty(cache, 'get', { value: (...args: Parameters<typeof get>) => (reads++, get(...args)) });
    const rounds = new Map<string, string[]>();
    manager
      .controller()
      .for(ConfigMap)
      .withOptions({ maxConcurrentReconciles: 4, shard: { ring, by: 'namespace' } })
      .complete(async (request) => {
        reconciles++;
        const cm = await client.get(ConfigMap, { namespace: request.namespace!, name: request.name }).catch(() => undefined);
        rounds.set(request.name, [...(rounds.get(request.name) ?? []), cm?.data?.['round'] ?? '']);
        return Result.done();
      });
    const from = hashed.length;
    running = run(manager);
    await eventually(() => ring.active().size, (n) => n === TIMING.buckets, 'the only member to work on every bucket', 30_000);
    await Promise.all(Array.from({ length: OBJECTS }, (_, i) => client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: ns }, data: { round: '0' } })));
    await eventually(() => [...rounds.values()].filter((r) => r.includes('0')).length, (n) => n === OBJECTS, 'every object reconciled', 30_000);
    await Promise.all(Array.from({ length: OBJECTS }, (_, i) => client.patch(ConfigMap, { namespace: ns, name: `cm-${i}` }, mergePatch({ data: { round: '1' } }))));
    await eventually(() => [...rounds.values()].filter((r) => r.includes('1')).length, (n) => n === OBJECTS, 'every change reconciled', 30_000);
    const nsHashes = hashed.slice(from).filter((h) => h.text === ns).length;
    process.stderr.write(`[sharded hot path, by namespace] ${OBJECTS} creations and ${OBJECTS} changes: ${reconciles} reconciles, ${reads} cache reads, ${nsHashes} hashes of the namespace\n`);
    // Once in all: the cache's shard stage and the controller's bucket share it.
    expect(nsHashes).toBe(1);
    expect(reads).toBe(reconciles);
  });
});
