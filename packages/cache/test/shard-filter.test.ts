/**
 * A cache that keeps one shard of a kind: filtered by kube-apiserver where
 * it has `ShardedListAndWatch` (the shared plane), by the reflector where it
 * has not (a plane of its own without the gate), by the controller owner's
 * uid for owned objects, and relisted when the ranges change.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy, Environment } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { createClient, fnv1a64, loadKubeConfig } from '@kubeloop/client';
import { HASH_SPACE_END, inShardRanges } from '@kubeloop/client/internal';
import type { Client, ShardRange } from '@kubeloop/client';
import { createInformerCache, staticShard } from '../src/index.js';
import type { InformerCache, ShardFilter } from '../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';

const LOWER: ShardRange[] = [{ start: 0n, end: 1n << 63n }];
const UPPER: ShardRange[] = [{ start: 1n << 63n, end: HASH_SPACE_END }];

async function eventually(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A namespace with `count` ConfigMaps; returns their uids by name. */
async function seed(client: Client, ns: string, count: number): Promise<Map<string, string>> {
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  const made = await Promise.all(Array.from({ length: count }, (_, i) => client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: ns } })));
  return new Map(made.map((o) => [o.metadata.name, o.metadata.uid!]));
}

function inRange(uids: Map<string, string>, ranges: readonly ShardRange[]): string[] {
  return [...uids].filter(([, uid]) => inShardRanges(fnv1a64(uid), ranges)).map(([name]) => name).sort();
}

function cachedNames(cache: InformerCache, ns: string): Promise<string[]> {
  return cache.list(ConfigMap, { namespace: ns }).then((l) => l.items.map((o) => o.metadata!.name!).sort());
}

/** A filter whose ranges the test switches. */
function switchable(initial: readonly ShardRange[]): ShardFilter & { set(r: readonly ShardRange[]): void } {
  let ranges = initial;
  const listeners = new Set<() => void>();
  return {
    by: 'uid',
    ranges: () => ranges,
    subscribe: (l) => (listeners.add(l), () => listeners.delete(l)),
    set(r) {
      ranges = r;
      for (const l of listeners) l();
    },
  };
}

describe('with ShardedListAndWatch (the server filters)', () => {
  let env: Environment;
  let proxy: ApiProxy;
  let client: Client;
  const ns = uniqueName('shard-on');
  let uids: Map<string, string>;

  beforeAll(async () => {
    env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
    await env.start();
    proxy = await startApiProxy(env.kubeConfig);
    client = createClient({ kubeConfig: proxy.kubeConfig, fieldOwner: 'shard-test' });
    uids = await seed(createClient({ kubeConfig: loadKubeConfig(testKubeconfigPath()), fieldOwner: 'shard-test' }), ns, 30);
  });
  afterAll(async () => {
    await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
    await proxy.close();
    await env.stop();
  });

  it('holds exactly the objects in range, and the server sent nothing else', async () => {
    const cache = createInformerCache({ client, namespaces: [ns], byKind: [{ kind: ConfigMap, options: { shard: staticShard('uid', LOWER) } }] });
    try {
      const expected = inRange(uids, LOWER);
      expect(expected.length).toBeGreaterThan(0);
      expect(expected.length).toBeLessThan(uids.size);
      expect(await cachedNames(cache, ns)).toEqual(expected);
      const stats = cache.informerInfo(ConfigMap)!.stats[0]!;
      expect(stats.shardServer).toBe('honoured');
      expect(stats.shardDropped).toBe(0);
      expect(proxy.requests.some((r) => r.url.includes('shardSelector='))).toBe(true);
      // Objects created later arrive through the sharded watch, in range only.
      const more = await Promise.all(Array.from({ length: 10 }, (_, i) => client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `late-${i}`, namespace: ns } })));
      for (const o of more) uids.set(o.metadata.name, o.metadata.uid!);
      await eventually(() => cache.informerInfo(ConfigMap)!.storeSize === inRange(uids, LOWER).length, 'the late objects in range');
      expect(await cachedNames(cache, ns)).toEqual(inRange(uids, LOWER));
      expect(cache.informerInfo(ConfigMap)!.stats[0]!.shardDropped).toBe(0);
      // The server sent the watch events of the late objects in range, and no others.
      const lateInRange = more.filter((o) => inShardRanges(fnv1a64(o.metadata.uid!), LOWER)).length;
      expect(cache.informerInfo(ConfigMap)!.stats[0]!.watchEvents).toBe(lateInRange);
    } finally {
      await cache.stop();
    }
  });

  it('relists when the ranges change: what left is deleted, what came is added', async () => {
    const filter = switchable(LOWER);
    const cache = createInformerCache({ client, namespaces: [ns], byKind: [{ kind: ConfigMap, options: { shard: filter } }] });
    try {
      const informer = await cache.getInformer(ConfigMap);
      const events: string[] = [];
      informer.addEventHandler({ onAdd: (o) => void events.push(`add ${o.metadata!.name}`), onDelete: (o) => void events.push(`delete ${o.metadata!.name}`) });
      await eventually(() => events.length === inRange(uids, LOWER).length, 'the initial adds');
      events.length = 0;
      filter.set(UPPER);
      await eventually(() => cache.informerInfo(ConfigMap)!.storeSize === inRange(uids, UPPER).length && events.length === uids.size, 'the switch to the upper half');
      expect(await cachedNames(cache, ns)).toEqual(inRange(uids, UPPER));
      expect(events.filter((e) => e.startsWith('delete')).map((e) => e.slice(7)).sort()).toEqual(inRange(uids, LOWER));
      expect(events.filter((e) => e.startsWith('add')).map((e) => e.slice(4)).sort()).toEqual(inRange(uids, UPPER));
      // No ranges: nothing held, still synced.
      filter.set([]);
      await eventually(() => cache.informerInfo(ConfigMap)!.storeSize === 0, 'an empty shard');
      expect(cache.informerInfo(ConfigMap)!.synced).toBe(true);
      expect(cache.informerInfo(ConfigMap)!.stats[0]!.errors).toBe(0);
    } finally {
      await cache.stop();
    }
  });

  it('owned objects follow their controller owner, filtered here (the server cannot hash owner references)', async () => {
    const owners = [...uids].slice(0, 12);
    await Promise.all(
      owners.map(([name, uid]) =>
        client.create({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: `owned-${name}`, namespace: ns, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name, uid, controller: true }] },
        }),
      ),
    );
    const orphan = await client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'orphan', namespace: ns } });
    const Secret = { apiVersion: 'v1', kind: 'Secret' } as const;
    const cache = createInformerCache({ client, namespaces: [ns], byKind: [{ kind: Secret, options: { shard: staticShard('controller-owner', LOWER) } }] });
    try {
      const held = (await cache.list(Secret, { namespace: ns })).items.map((o: KubeObject) => o.metadata!.name!).sort();
      const expected = owners.filter(([, uid]) => inShardRanges(fnv1a64(uid), LOWER)).map(([name]) => `owned-${name}`);
      if (inShardRanges(fnv1a64(orphan.metadata.uid!), LOWER)) expected.push('orphan');
      expect(held).toEqual(expected.sort());
      expect(cache.informerInfo(Secret)!.stats[0]!.shardServer).toBe('off');
    } finally {
      await cache.stop();
    }
  });
});

describe('without the gate (the reflector filters)', () => {
  let env: Environment;
  let client: Client;
  const ns = uniqueName('shard-off');

  beforeAll(async () => {
    env = createEnvironment({ featureGates: { ShardedListAndWatch: false } });
    await env.start();
    client = createClient({ kubeConfig: loadKubeConfig(env.kubeconfigPath), fieldOwner: 'shard-test' });
  });
  afterAll(async () => {
    await env.stop();
  });

  it('holds exactly the objects in range, having seen that the server ignored the selector', async () => {
    const uids = await seed(client, ns, 30);
    const cache = createInformerCache({ client, namespaces: [ns], byKind: [{ kind: ConfigMap, options: { shard: staticShard('uid', UPPER) } }] });
    try {
      expect(await cachedNames(cache, ns)).toEqual(inRange(uids, UPPER));
      const stats = cache.informerInfo(ConfigMap)!.stats[0]!;
      expect(stats.shardServer).toBe('ignored');
      expect(stats.shardDropped).toBe(uids.size - inRange(uids, UPPER).length);
      const more = await Promise.all(Array.from({ length: 10 }, (_, i) => client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `late-${i}`, namespace: ns } })));
      for (const o of more) uids.set(o.metadata.name, o.metadata.uid!);
      await eventually(() => cache.informerInfo(ConfigMap)!.stats[0]!.shardDropped + cache.informerInfo(ConfigMap)!.storeSize === uids.size, 'the late objects');
      expect(await cachedNames(cache, ns)).toEqual(inRange(uids, UPPER));
      // Every late object's event was received (the memory share is kept, the traffic is not).
      expect(cache.informerInfo(ConfigMap)!.stats[0]!.watchEvents).toBe(more.length);
    } finally {
      await cache.stop();
    }
  });
});
