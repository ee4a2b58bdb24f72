/**
 * Sharded controllers on the real API server: three managers split the
 * ConfigMaps of a namespace through a shard ring, each caching only its
 * share (the server filters with ShardedListAndWatch); a fourth joins and
 * one leaves while every object is changed. Every reconcile logs its start
 * and end per key and replica: no key is reconciled by two replicas at
 * once, and none is left out.
 */
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fnv1a64, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createShardRing } from '@kubeloop/leaderelection';
import type { ShardRing } from '@kubeloop/leaderelection';
import { ConfigMap } from '@kubeloop/scheme';
import { Result, ringShardFilter } from '../../src/index.js';
import { eventually, newNamespace, run, testClient, testManager } from '../support.js';
import type { Running } from '../support.js';

const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300, buckets: 32 };
const OBJECTS = 60;

interface Interval {
  readonly key: string;
  readonly replica: string;
  readonly start: number;
  end: number;
  readonly generation: string;
}

describe('sharded controllers', () => {
  let client: Client;
  let ns: string;
  const intervals: Interval[] = [];
  const replicas: { id: string; ring: ShardRing; running: Running; cached: () => number }[] = [];

  function start(id: string): void {
    const ring = createShardRing({ client, namespace: ns, name: 'cms', identity: id, ...TIMING });
    const manager = testManager(ns, { cache: { byKind: [{ kind: ConfigMap, options: { shard: ringShardFilter(ring) } }] } });
    manager.add((signal) => ring.run(signal), { needLeaderElection: false });
    manager
      .controller()
      .for(ConfigMap)
      .withOptions({ needLeaderElection: false, maxConcurrentReconciles: 4, shard: { ring } })
      .complete(async (request) => {
        const cm = await manager.client.get(ConfigMap, { namespace: request.namespace!, name: request.name }).catch(() => undefined);
        const interval: Interval = { key: request.name, replica: id, start: performance.now(), end: Infinity, generation: cm?.data?.['round'] ?? '' };
        intervals.push(interval);
        await new Promise((r) => setTimeout(r, 30));
        interval.end = performance.now();
        return Result.done();
      });
    replicas.push({ id, ring, running: run(manager), cached: () => manager.cluster.cache.informerInfo(ConfigMap)?.storeSize ?? 0 });
  }

  function overlapping(): string[] {
    const byKey = new Map<string, Interval[]>();
    for (const i of intervals) byKey.set(i.key, [...(byKey.get(i.key) ?? []), i]);
    const found: string[] = [];
    for (const [key, list] of byKey)
      for (let a = 0; a < list.length; a++)
        for (let b = a + 1; b < list.length; b++) {
          const x = list[a]!;
          const y = list[b]!;
          if (x.replica !== y.replica && x.start < y.end && y.start < x.end) found.push(`${key}: ${x.replica} and ${y.replica}`);
        }
    return found;
  }

  const reconciledIn = (round: string): Set<string> => new Set(intervals.filter((i) => i.generation === round && i.end !== Infinity).map((i) => i.key));

  async function touchAll(round: string): Promise<void> {
    await Promise.all(Array.from({ length: OBJECTS }, (_, i) => client.patch(ConfigMap, { namespace: ns, name: `cm-${i}` }, mergePatch({ data: { round } }))));
  }

  beforeAll(async () => {
    client = testClient();
    ns = await newNamespace(client, 'sharded');
    await Promise.all(Array.from({ length: OBJECTS }, (_, i) => client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: ns }, data: { round: '0' } })));
  });
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.running.stop().catch(() => undefined)));
    await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
  });

  it('three replicas reconcile every object once between them, each caching about a third', async () => {
    for (const id of ['a', 'b', 'c']) start(id);
    await eventually(() => reconciledIn('0').size, (n) => n === OBJECTS, 'every object reconciled', 30_000);
    await eventually(() => replicas.map((r) => r.ring.active().size).reduce((a, b) => a + b, 0), (n) => n === TIMING.buckets, 'every bucket active');
    // Settled, the caches hold disjoint shares: every object once across the three, none holding nearly all.
    const cached = await eventually(() => replicas.map((r) => r.cached()), (c) => c.reduce((a, b) => a + b, 0) === OBJECTS, 'the caches to hold one share each');
    for (const c of cached) expect(c).toBeLessThan(OBJECTS * 0.6);
    expect(overlapping()).toEqual([]);
  });

  it('a fourth joins while every object changes: each change reconciled, never by two replicas at once', async () => {
    start('d');
    await touchAll('1');
    await eventually(() => reconciledIn('1').size, (n) => n === OBJECTS, 'every change reconciled', 30_000);
    await eventually(() => replicas[3]!.ring.active().size, (n) => n === TIMING.buckets / 4, 'the fourth holds its quarter');
    await touchAll('2');
    await eventually(() => reconciledIn('2').size, (n) => n === OBJECTS, 'every change reconciled after the join', 30_000);
    expect(intervals.some((i) => i.replica === 'd')).toBe(true);
    expect(overlapping()).toEqual([]);
  });

  it('one leaves while every object changes: its keys go to the others, nothing lost', async () => {
    const leaving = replicas[0]!;
    const stopped = leaving.running.stop();
    await touchAll('3');
    await stopped;
    await eventually(() => reconciledIn('3').size, (n) => n === OBJECTS, 'every change reconciled after the leave', 30_000);
    expect(overlapping()).toEqual([]);
  });

  it('a deleted object gets a final reconcile from the replica that reconciled it (its uid remembered)', async () => {
    const deleted = Array.from({ length: 10 }, (_, i) => `cm-${i}`);
    const uids = new Map(await Promise.all(deleted.map(async (name) => [name, (await client.get(ConfigMap, { namespace: ns, name })).metadata!.uid!] as const)));
    const live = replicas.slice(1);
    /** The replica that reconciled `name` last, and whether the ring (settled after the leave) gives its bucket to it alone. */
    const lastReconciler = (name: string): string | undefined => intervals.filter((i) => i.key === name && i.generation !== '').at(-1)?.replica;
    const owners = (name: string): string[] => live.filter((r) => r.ring.owns(fnv1a64(uids.get(name)!))).map((r) => r.id);
    const before = await eventually(
      () => deleted.map((name) => ({ name, last: lastReconciler(name), owners: owners(name) })),
      (xs) => xs.every((x) => x.owners.length === 1 && x.owners[0] === x.last),
      'each object owned by the one replica that reconciled it last',
      30_000,
    );
    await Promise.all(deleted.map((name) => client.delete(ConfigMap, { namespace: ns, name })));
    // The reconciler reads the object: gone, it records an empty round.
    await eventually(() => deleted.filter((name) => reconciledIn('').has(name)), (seen) => seen.length === deleted.length, 'a final reconcile of every deleted object', 30_000);
    // Each final reconcile came from the replica that reconciled the object before it was deleted, and from no other.
    const finals = Object.fromEntries(deleted.map((name) => [name, [...new Set(intervals.filter((i) => i.key === name && i.generation === '').map((i) => i.replica))]]));
    expect(finals).toEqual(Object.fromEntries(before.map((x) => [x.name, [x.last]])));
    expect(overlapping()).toEqual([]);
  });
});
