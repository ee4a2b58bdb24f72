/**
 * Stages around a kind's list-watch, on the real API server: a filter stage
 * keeps what its predicate admits (an object that stops matching leaves the
 * cache with a delete, one that comes to match arrives), stages compose with
 * the shard stage, and a stage that changes its scope makes the reflector
 * relist.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { ConfigMap, Namespace } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { createClient, fnv1a64, mergePatch } from '@kubeloop/client';
import { inShardRanges } from '@kubeloop/client/internal';
import type { Client, ShardRange } from '@kubeloop/client';
import { createInformerCache, filterStage, passThrough, staticShard } from '../src/index.js';
import type { InformerCache, InformerEvent, ListWatchStage } from '../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';

let env: Environment;
let live: Client;
let ns: string;
const caches: InformerCache[] = [];
const LOWER: ShardRange[] = [{ start: 0n, end: 1n << 63n }];

async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const cachedNames = async (cache: InformerCache): Promise<string[]> => (await cache.list(ConfigMap, { namespace: ns })).items.map((o) => o.metadata!.name!).sort();
const scratch = (o: KubeObject): boolean => o.metadata?.labels?.['scratch'] === 'true';

beforeAll(async () => {
  env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  live = createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'stages-test' });
  ns = uniqueName('stages');
  await live.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  for (let i = 0; i < 12; i++) {
    await live.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: ns, labels: { scratch: String(i % 3 === 0) } } });
  }
});

afterAll(async () => {
  await Promise.all(caches.map((c) => c.stop()));
  await live?.delete(Namespace, { name: ns }).catch(() => undefined);
  await env?.stop();
});

describe('stages', () => {
  it('a filter stage keeps what it admits; an object that stops matching leaves with a delete, one that comes to match arrives', async () => {
    const cache = createInformerCache({ client: live, namespaces: [ns], byKind: [{ kind: ConfigMap, options: { stages: [filterStage((o) => !scratch(o))] } }] });
    caches.push(cache);
    const expected = Array.from({ length: 12 }, (_, i) => i).filter((i) => i % 3 !== 0).map((i) => `cm-${i}`).sort();
    expect(await cachedNames(cache)).toEqual(expected);
    const informer = await cache.getInformer(ConfigMap);
    const events: InformerEvent<KubeObject>[] = [];
    informer.addEventHandler((e) => void events.push(e));
    await live.patch({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-1', namespace: ns } }, mergePatch({ metadata: { labels: { scratch: 'true' } } }));
    await live.patch({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-0', namespace: ns } }, mergePatch({ metadata: { labels: { scratch: 'false' } } }));
    await eventually(() => events.some((e) => e.type === 'delete' && e.object.metadata?.name === 'cm-1') && events.some((e) => e.type === 'add' && e.object.metadata?.name === 'cm-0'), 'the delete of cm-1 and the add of cm-0');
    expect(await cachedNames(cache)).toEqual([...expected.filter((n) => n !== 'cm-1'), 'cm-0'].sort());
    // Put back for the next tests.
    await live.patch({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-1', namespace: ns } }, mergePatch({ metadata: { labels: { scratch: 'false' } } }));
    await live.patch({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-0', namespace: ns } }, mergePatch({ metadata: { labels: { scratch: 'true' } } }));
  });

  it('compose with the shard stage: the cache holds what both admit, and the shard still counts what it dropped', async () => {
    const cache = createInformerCache({ client: live, namespaces: [ns], byKind: [{ kind: ConfigMap, options: { shard: staticShard('uid', LOWER), stages: [filterStage((o) => !scratch(o))] } }] });
    caches.push(cache);
    const all = (await live.list(ConfigMap, { namespace: ns })).items;
    const inLower = all.filter((o) => inShardRanges(fnv1a64(o.metadata?.uid ?? ''), LOWER));
    const expected = inLower.filter((o) => !scratch(o)).map((o) => o.metadata?.name).sort();
    await eventually(async () => (await cachedNames(cache)).join() === expected.join(), 'the intersection of shard and filter');
    // The shard stage still asks the server (the shared plane has ShardedListAndWatch), which sent nothing out of range.
    const stats = cache.informerInfo(ConfigMap)!.stats[0]!;
    expect(stats.shardServer).toBe('honoured');
    expect(stats.shardDropped).toBe(0);
  });

  it('a stage whose scope changes makes the reflector relist, not counted as an error', async () => {
    let keepScratch = false;
    const listeners = new Set<() => void>();
    const switchable: ListWatchStage<KubeObject> = (inner) => {
      const filtered = filterStage<KubeObject>((o) => scratch(o) === keepScratch)(inner);
      return { ...filtered, ...passThrough(inner), subscribe: (l) => (listeners.add(l), () => void listeners.delete(l)), list: (o) => filtered.list(o), watch: (o) => filtered.watch(o) };
    };
    const cache = createInformerCache({ client: live, namespaces: [ns], byKind: [{ kind: ConfigMap, options: { stages: [switchable] } }] });
    caches.push(cache);
    const notScratch = ['cm-1', 'cm-10', 'cm-11', 'cm-2', 'cm-4', 'cm-5', 'cm-7', 'cm-8'];
    expect(await cachedNames(cache)).toEqual(notScratch);
    keepScratch = true;
    for (const l of listeners) l();
    await eventually(async () => (await cachedNames(cache)).join() === ['cm-0', 'cm-3', 'cm-6', 'cm-9'].join(), 'the relist with the new scope');
    const stats = cache.informerInfo(ConfigMap)!.stats[0]!;
    expect(stats.lists).toBe(2);
    expect(stats.errors).toBe(0);
  });
});
