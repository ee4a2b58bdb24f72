/**
 * WatchList, the reflector's default: the initial state streamed by a watch
 * with `sendInitialEvents=true` up to the `k8s.io/initial-events-end`
 * bookmark, on a server that supports it; a paginated LIST, for good, on one
 * that refuses it (a control plane of its own with the WatchList feature
 * gate off). Every request is counted at envtest's proxy.
 */
import { createClient } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy, Environment, RecordedRequest } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createInformerCache } from '../src/index.js';
import type { InformerCache, ReflectorStats } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';

const FIELD_OWNER = 'kubeloop-watch-list-test';
const OBJECTS = 25;
const PAGE = 10;

/** A plane of our own whose API server refuses streaming lists, started while the shared-plane test runs. */
const refusing: Environment | undefined = inject('existingCluster') ? undefined : createEnvironment({ apiServerFlags: { 'feature-gates': 'WatchList=false' } });
const refusingStarted = refusing?.start();
refusingStarted?.catch(() => undefined); // awaited (and so reported) by the test that needs it

afterAll(async () => {
  await refusing?.stop();
});

interface Run {
  readonly cache: InformerCache;
  readonly stats: () => ReflectorStats;
  readonly size: () => number;
  readonly errors: unknown[];
}

/** `OBJECTS` ConfigMaps in a fresh namespace, then an informer cache (default reflector options but the page size) over them, through the proxy, synced. */
async function cacheOver(writer: Client, proxy: ApiProxy, namespace: string): Promise<Run> {
  await writer.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  for (let i = 0; i < OBJECTS; i++) await writer.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace }, data: { index: String(i) } });
  proxy.clearRequests();
  const errors: unknown[] = [];
  const cache = createInformerCache({
    client: createClient({ kubeConfig: proxy.kubeConfig, fieldOwner: FIELD_OWNER }),
    namespaces: [namespace],
    reflector: { pageSize: PAGE },
    onError: (_kind, err) => errors.push(err),
  });
  const informer = await cache.getInformer(ConfigMap, { signal: AbortSignal.timeout(30_000) });
  return { cache, errors, stats: () => informer.stats()[0]!, size: () => informer.store.size };
}

/** The requests for ConfigMaps in `namespace`, by what they were. */
function onTheWire(proxy: ApiProxy, namespace: string): { lists: number; streamed: number; watches: number; refused: number } {
  const mine = proxy.requests.filter((r: RecordedRequest) => r.path === `/api/v1/namespaces/${namespace}/configmaps`);
  const streamed = mine.filter((r) => r.url.includes('sendInitialEvents=true'));
  return {
    lists: mine.filter((r) => !r.url.includes('watch=true')).length,
    streamed: streamed.length,
    watches: mine.filter((r) => r.url.includes('watch=true') && !r.url.includes('sendInitialEvents=true')).length,
    refused: streamed.filter((r) => r.status >= 400).length,
  };
}

async function eventually(check: () => boolean, what: () => string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('WatchList by default', () => {
  it('on a server that streams: the initial state comes from one streaming request (no LIST), and the same stream carries later changes', async () => {
    const kubeConfig = testKubeConfig();
    await using proxy = await startApiProxy(kubeConfig);
    const writer = createClient({ kubeConfig, fieldOwner: FIELD_OWNER });
    const namespace = uniqueName('watch-list');
    const run = await cacheOver(writer, proxy, namespace);
    try {
      expect(run.size()).toBe(OBJECTS);
      expect(run.stats()).toMatchObject({ usedWatchList: true, lists: 1, relists: 0, lastListSize: OBJECTS });
      await writer.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'later', namespace } });
      await eventually(() => run.size() === OBJECTS + 1, () => `the cache holds ${run.size()} objects`);
      expect(onTheWire(proxy, namespace)).toEqual({ lists: 0, streamed: 1, watches: 0, refused: 0 });
      expect(run.errors).toEqual([]);
    } finally {
      await run.cache.stop();
    }
  });

  it.skipIf(refusing === undefined)('on a server that refuses streaming lists: one refused request, then paginated LISTs for good, and the cache works the same', async () => {
    await refusingStarted;
    const env = refusing!;
    await using proxy = await startApiProxy(env.kubeConfig);
    const writer = createClient({ kubeConfig: env.kubeConfig, fieldOwner: FIELD_OWNER });
    const namespace = uniqueName('watch-list-refused');
    const run = await cacheOver(writer, proxy, namespace);
    try {
      expect(run.size()).toBe(OBJECTS);
      expect(run.stats()).toMatchObject({ usedWatchList: false, lists: 1, relists: 0, lastListSize: OBJECTS });
      await writer.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'later', namespace } });
      await eventually(() => run.size() === OBJECTS + 1, () => `the cache holds ${run.size()} objects`);
      // 25 objects in pages of 10: three LIST requests, then a plain watch from the list's resourceVersion.
      expect(onTheWire(proxy, namespace)).toEqual({ lists: Math.ceil(OBJECTS / PAGE), streamed: 1, watches: 1, refused: 1 });
      // The refusal was reported once, as the server's answer.
      expect(run.errors).toHaveLength(1);
      expect(run.errors[0]).toMatchObject({ name: 'ClientError' });
    } finally {
      await run.cache.stop();
    }
  });
});
