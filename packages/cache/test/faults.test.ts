/**
 * The informer cache under real faults, against real control planes: watches
 * closed by the server, connections reset, a black-holed and a silent network,
 * 410 from a compacted etcd (watch cache off), an API server restart, and
 * deletes while disconnected. In each, ConfigMaps are created, updated and
 * deleted throughout (through a client that bypasses the fault); afterwards
 * the cache's store and what a handler was told must both equal a fresh list
 * from the server (names and resourceVersions), the handler's event stream
 * must be self-consistent, and the reflector must have relisted exactly as
 * often as the fault should cost.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient, isClientError } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy, Environment } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { createInformerCache } from '../src/index.js';
import type { Informer, InformerCache, ReflectorOptions, ReflectorStats } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';
import { churn, compactEtcd, configMap, startTcpGate, waitConverged, waitFor, watchHandlers } from './fault-support.js';
import type { ChurnStats, CM, HandlerView } from './fault-support.js';

type KubeConfig = ApiProxy['kubeConfig'];

const FIELD_OWNER = 'kubeloop-cache-faults';

/** Short watches and backoff, so each fault is noticed and recovered from within seconds. */
const FAST: ReflectorOptions = { watchTimeoutSeconds: [2, 3], watchIdleTimeoutMs: 3000, backoffInitialMs: 100, backoffMaxMs: 1000 };

// Nothing here may end up as an uncaught exception or an unhandled rejection.
const stray: unknown[] = [];
const onStray = (err: unknown): void => {
  stray.push(err);
};
const measured: string[] = [];

// Two control planes of our own (a watch cache off and on, each restarted),
// started in the background while the scenarios on the shared one run.
const ownPlanes = inject('existingCluster')
  ? undefined
  : { cacheOff: createEnvironment({ apiServerFlags: { 'watch-cache': 'false' } }), cacheOn: createEnvironment() };
const starting = new Map<Environment, Promise<void>>();

beforeAll(() => {
  process.on('uncaughtException', onStray);
  process.on('unhandledRejection', onStray);
  for (const env of Object.values(ownPlanes ?? {})) {
    const started = env.start();
    started.catch(() => undefined); // awaited (and so reported) by the suite that needs it
    starting.set(env, started);
  }
});
// Each test's informer cache is stopped when the test ends, failed or not.
const caches = new Set<InformerCache>();
afterEach(async () => {
  await Promise.all([...caches].map((c) => c.stop()));
  caches.clear();
});
afterAll(async () => {
  await Promise.all(Object.values(ownPlanes ?? {}).map((env) => env.stop()));
  process.off('uncaughtException', onStray);
  process.off('unhandledRejection', onStray);
  if (measured.length > 0) process.stderr.write(`[cache faults]\n  ${measured.join('\n  ')}\n`);
  expect(stray).toEqual([]);
});

/** A started own control plane, a proxy in front of it, and a writer that bypasses the proxy. */
function ownPlane(pick: (planes: NonNullable<typeof ownPlanes>) => Environment): { env: () => Environment; proxy: () => ApiProxy; writer: () => Client } {
  let env: Environment | undefined;
  let proxy: ApiProxy | undefined;
  let writer: Client | undefined;
  beforeAll(async () => {
    env = pick(ownPlanes!);
    await starting.get(env);
    proxy = await startApiProxy(env.kubeConfig);
    writer = createClient({ kubeConfig: env.kubeConfig, fieldOwner: FIELD_OWNER });
  });
  afterAll(async () => {
    await proxy?.close();
  });
  return { env: () => env!, proxy: () => proxy!, writer: () => writer! };
}

interface Harness {
  readonly namespace: string;
  readonly informer: Informer<CM>;
  readonly view: HandlerView;
  /** Every error the reflector reported (each was retried). */
  readonly errors: unknown[];
  stats(): ReflectorStats;
}

/**
 * A fresh namespace holding `churn-0` … `churn-7` and the `extra` objects,
 * and an informer cache over it that reaches the server through `kubeConfig`
 * (the faulty path), synced, with a handler watching.
 */
async function setUp(writer: Client, kubeConfig: KubeConfig, reflector: ReflectorOptions, extra: readonly string[] = []): Promise<Harness> {
  const namespace = uniqueName('cache-faults');
  await writer.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  for (let i = 0; i < 8; i++) await writer.create(configMap(namespace, `churn-${i}`, 'initial'));
  for (const name of extra) await writer.create(configMap(namespace, name, 'initial'));
  const errors: unknown[] = [];
  const cache = createInformerCache({
    client: createClient({ kubeConfig, fieldOwner: FIELD_OWNER }),
    namespaces: [namespace],
    reflector,
    onError: (_kind, err) => errors.push(err),
  });
  caches.add(cache);
  const informer = await cache.getInformer(ConfigMap, { signal: AbortSignal.timeout(30_000) });
  const view = watchHandlers(informer);
  return { namespace, informer, view, errors, stats: () => informer.stats()[0]! };
}

/** Run the churn and the fault together; the churn goes on until the fault is over, and a little after. */
async function withChurn(writer: Client, h: Harness, seed: number, fault: () => Promise<void>, gapMs = 120): Promise<ChurnStats> {
  const faulted = fault();
  const [stats] = await Promise.all([
    churn(writer, { namespace: h.namespace, seed, pool: 14, minOps: 30, maxOps: 120, tailOps: 6, until: faulted.catch(() => undefined), gapMs }),
    faulted,
  ]);
  return stats;
}

/** The cache converged; the handler's stream was consistent; record the figures. */
async function expectConverged(live: Client, h: Harness, name: string, churned: ChurnStats): Promise<ReflectorStats> {
  const fresh = await waitConverged(live, h.informer, h.view, h.namespace);
  expect(h.view.violations).toEqual([]);
  expect(fresh.size).toBeGreaterThan(0);
  const s = h.stats();
  measured.push(
    `${name}: relists=${s.relists} gone=${s.gone} watchRestarts=${s.watchRestarts} errors=${s.errors} lists=${s.lists}` +
      ` | churn ${churned.ops} ops (${churned.creates}c/${churned.updates}u/${churned.deletes}d, ${churned.failures} failed), ${fresh.size} objects at the end`,
  );
  return s;
}

function reasons(errors: readonly unknown[]): string[] {
  return errors.map((e) => (isClientError(e) ? `${e.reason}: ${e.message}` : String(e)));
}

describe('the informer cache under faults, on the shared control plane through a proxy', () => {
  let proxy: ApiProxy;
  let writer: Client;

  beforeAll(async () => {
    const kc = testKubeConfig();
    proxy = await startApiProxy(kc);
    writer = createClient({ kubeConfig: kc, fieldOwner: FIELD_OWNER });
  });
  afterAll(async () => {
    await proxy.close();
  });

  it('watches closed by the server (short timeoutSeconds) are re-opened from the last resourceVersion: no relist', async () => {
    const h = await setUp(writer, proxy.kubeConfig, { ...FAST, watchTimeoutSeconds: [2, 2] });
    // Churn until the server has closed (and the reflector re-opened) the watch a few times.
    const churned = await withChurn(writer, h, 1, () => waitFor(() => h.stats().watchRestarts >= 3, () => `only ${h.stats().watchRestarts} watch restarts`));
    const s = await expectConverged(writer, h, 'server closes', churned);
    expect(s.watchRestarts).toBeGreaterThanOrEqual(3);
    expect(s.relists).toBe(0);
    expect(s.gone).toBe(0);
    expect(reasons(h.errors)).toEqual([]);
  });

  it('connections reset mid-stream, again and again: re-watch after backoff, no relist', async () => {
    const h = await setUp(writer, proxy.kubeConfig, FAST);
    const churned = await withChurn(writer, h, 2, async () => {
      for (let i = 0; i < 8; i++) {
        await sleep(700);
        proxy.resetConnections();
      }
    });
    const s = await expectConverged(writer, h, 'resets', churned);
    expect(s.relists).toBe(0);
    expect(s.gone).toBe(0);
    expect(s.errors).toBeGreaterThan(0);
    expect(reasons(h.errors).some((r) => r.startsWith('Network'))).toBe(true);
  });

  it('a black-holed network, then a silent one: the open timeout and the idle deadline notice, no relist', async () => {
    // The gate sits in front of the proxy: the proxy's black hole leaves
    // requests unanswered, but streams already flowing keep flowing; the
    // gate's silence stalls those too, which only the idle deadline notices.
    const gate = await startTcpGate(proxy.url);
    const KubeConfigClass = proxy.kubeConfig.constructor as new () => KubeConfig;
    const kc = new KubeConfigClass();
    kc.loadFromOptions({
      clusters: [{ name: 'gate', server: gate.url, skipTLSVerify: true }],
      users: [{ name: 'gate' }],
      contexts: [{ name: 'gate', cluster: 'gate', user: 'gate' }],
      currentContext: 'gate',
    });
    try {
      const h = await setUp(writer, kc, { ...FAST, watchTimeoutSeconds: [2, 2] });
      const isWatch = (r: ApiProxy['requests'][number]): boolean => r.url.includes('watch=true') && r.path.endsWith(`/namespaces/${h.namespace}/configmaps`);
      const openTimeout = (): boolean => reasons(h.errors).some((r) => r.startsWith('ClientTimeout') && r.includes('no answer'));
      const idleTimeout = (): boolean => reasons(h.errors).some((r) => r.startsWith('ClientTimeout') && r.includes('no data on the watch stream'));
      const churned = await withChurn(writer, h, 3, async () => {
        await sleep(1_000);
        // Phase 1: new requests go unanswered. The open stream ends at its
        // timeoutSeconds; the next watch hangs until its open timeout.
        proxy.blackhole(true);
        await sleep(3_500);
        proxy.blackhole(false);
        await waitFor(openTimeout, () => `no open timeout among ${JSON.stringify(reasons(h.errors))}`);
        // Phase 2: once a watch is streaming again, every byte stops, both ways.
        const before = proxy.count(isWatch);
        await waitFor(
          () => proxy.requests.filter(isWatch).slice(before).some((r) => r.status === 200),
          () => 'no watch re-opened after the black hole',
        );
        await sleep(300); // its headers are through; it streams for 2 s
        gate.silence(true);
        await sleep(4_000);
        gate.silence(false);
        await waitFor(idleTimeout, () => `no idle timeout among ${JSON.stringify(reasons(h.errors))}`);
      });
      const s = await expectConverged(writer, h, 'black hole + silence', churned);
      expect(s.relists).toBe(0);
      expect(s.gone).toBe(0);
      expect(s.errors).toBeGreaterThan(0);
      expect(openTimeout()).toBe(true);
      expect(idleTimeout()).toBe(true);
    } finally {
      await gate.close();
    }
  });

  it('deletes while disconnected reach the handlers as deletes when the watch resumes: no relist', async () => {
    const doomed = ['doomed-a', 'doomed-b', 'doomed-c'];
    const h = await setUp(writer, proxy.kubeConfig, FAST, doomed);
    const uids = new Map(doomed.map((n) => [n, h.informer.store.get(`${h.namespace}/${n}`)?.metadata?.uid ?? '']));
    const churned = await withChurn(writer, h, 6, async () => {
      await sleep(1_000);
      const failedBefore = h.errors.length;
      await proxy.refuse();
      for (const name of doomed) await writer.delete(ConfigMap, { namespace: h.namespace, name });
      await waitFor(() => h.errors.length >= failedBefore + 2, () => 'the reflector did not notice the refused connection');
      await sleep(1_500);
      await proxy.accept();
    });
    const s = await expectConverged(writer, h, 'deletes while disconnected', churned);
    expect(s.relists).toBe(0);
    expect(s.gone).toBe(0);
    expect(s.errors).toBeGreaterThan(0);
    for (const name of doomed) {
      const seen = h.view.deletes.filter((d) => d.key === `${h.namespace}/${name}`);
      // The watch resumed from before the deletes: each one arrives as a real DELETED event with the final state.
      expect(seen, name).toEqual([{ key: `${h.namespace}/${name}`, uid: uids.get(name), finalStateUnknown: false }]);
    }
  });
});

describe.skipIf(ownPlanes === undefined)('the informer cache under faults, on its own control plane with the watch cache off', () => {
  // Watches served straight from etcd: a compacted revision gives 410 Expired,
  // and an API server restart loses no history.
  const plane = ownPlane((p) => p.cacheOff);

  it.each([
    { how: 'LIST', useWatchList: false },
    { how: 'streaming list', useWatchList: true },
  ])('410 after etcd was compacted while disconnected: one relist (by $how), and deletes missed meanwhile are emitted (final state unknown)', async ({ how, useWatchList }) => {
    const [env, proxy, writer] = [plane.env(), plane.proxy(), plane.writer()];
    const doomed = ['doomed-a', 'doomed-b', 'doomed-c'];
    const h = await setUp(writer, proxy.kubeConfig, { ...FAST, useWatchList }, doomed);
    const uids = new Map(doomed.map((n) => [n, h.informer.store.get(`${h.namespace}/${n}`)?.metadata?.uid ?? '']));
    const churned = await withChurn(writer, h, useWatchList ? 8 : 4, async () => {
      await sleep(1_000);
      const failedBefore = h.errors.length;
      await proxy.refuse();
      for (const name of doomed) await writer.delete(ConfigMap, { namespace: h.namespace, name });
      await sleep(1_000);
      await compactEtcd(env);
      await waitFor(() => h.errors.length >= failedBefore + 2, () => 'the reflector did not notice the refused connection');
      await proxy.accept();
      await waitFor(() => h.stats().gone > 0, () => `no 410 after the compaction; errors: ${JSON.stringify(reasons(h.errors))}`);
    });
    const s = await expectConverged(writer, h, `410 (compaction), relist by ${how}`, churned);
    expect(s.gone).toBeGreaterThanOrEqual(1);
    expect(s.relists).toBe(1);
    expect(s.usedWatchList).toBe(useWatchList);
    expect(reasons(h.errors).some((r) => r.startsWith('Expired'))).toBe(true);
    // On the wire: the first list and exactly one relist, each of the kind asked for.
    const path = `/api/v1/namespaces/${h.namespace}/configmaps`;
    const lists = proxy.count((r) => r.path === path && !r.url.includes('watch=true'));
    const streamedLists = proxy.count((r) => r.path === path && r.url.includes('sendInitialEvents=true'));
    expect({ lists, streamedLists }).toEqual(useWatchList ? { lists: 0, streamedLists: 2 } : { lists: 2, streamedLists: 0 });
    for (const name of doomed) {
      const seen = h.view.deletes.filter((d) => d.key === `${h.namespace}/${name}`);
      expect(seen, name).toEqual([{ key: `${h.namespace}/${name}`, uid: uids.get(name), finalStateUnknown: true }]);
    }
  });

  it('an API server restart mid-run: re-watch from the last resourceVersion once it is back, no relist', async () => {
    const [env, proxy, writer] = [plane.env(), plane.proxy(), plane.writer()];
    const h = await setUp(writer, proxy.kubeConfig, FAST);
    const churned = await withChurn(writer, h, 5, async () => {
      await sleep(1_500);
      await env.restartApiServer({ downMs: 500 });
    });
    const s = await expectConverged(writer, h, 'apiserver restart, watch cache off', churned);
    expect(s.relists).toBe(0);
    expect(s.gone).toBe(0);
    expect(s.errors).toBeGreaterThan(0);
  });
});

describe.skipIf(ownPlanes === undefined)('the informer cache under faults, on its own control plane with the watch cache on', () => {
  const plane = ownPlane((p) => p.cacheOn);

  it('an API server restart mid-run: converges; at most one relist, and only for a 410 from the fresh watch cache', async () => {
    // The restarted server's watch cache starts at etcd's current revision, so
    // a watch from before it gets 410 "too old resource version" whenever
    // anything was written in between: one relist then, none otherwise.
    const [env, proxy, writer] = [plane.env(), plane.proxy(), plane.writer()];
    const h = await setUp(writer, proxy.kubeConfig, FAST);
    const churned = await withChurn(writer, h, 7, async () => {
      await sleep(1_500);
      await env.restartApiServer({ downMs: 500 });
    });
    const s = await expectConverged(writer, h, 'apiserver restart, watch cache on', churned);
    expect(s.relists).toBeLessThanOrEqual(1);
    expect(s.relists).toBe(s.gone);
    expect(s.errors).toBeGreaterThan(0);
  });
});
