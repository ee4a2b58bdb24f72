/**
 * Informer metrics none of the anchors export, read from the cache at
 * scrape time: relists, 410s, watch restarts, errors, watch events
 * received, objects left out of a shard, whether the server filters the
 * shard, store size, synced, last list duration, age of the last event.
 */
import { Counter, Gauge } from './prom.js';
import type { Registry } from 'prom-client';
import type { InformerCache } from '@kubeloop/cache';
import { once } from './register.js';

/**
 * Whether the API server filters a sharded informer's objects: true while it
 * honours `shardSelector`, false once it sent something out of range (the
 * reflector filters), undefined when it is not asked (no shard filter,
 * `controller-owner`, `serverSide: false`, or before the first list).
 */
export function serverFiltersShard(informer: ReturnType<InformerCache['informers']>[number]): boolean | undefined {
  const asked = informer.stats.filter((s) => s.shardServer !== 'off');
  return asked.length === 0 ? undefined : asked.every((s) => s.shardServer === 'honoured');
}

/** The caches each registry reports, with the `cluster` label of each (none for a manager's own cluster). */
const cachesByRegistry = new WeakMap<Registry, Map<InformerCache, string | undefined>>();

/** Each reported cache's informers, with their labels. */
function* informersOf(registry: Registry): Generator<[Record<string, string>, ReturnType<InformerCache['informers']>[number]]> {
  for (const [cache, cluster] of cachesByRegistry.get(registry) ?? []) {
    for (const i of cache.informers()) yield [cluster === undefined ? { kind: i.kind } : { kind: i.kind, cluster }, i];
  }
}

/**
 * Informer metrics, read from the caches at scrape time: list duration,
 * relists, 410s, watch restarts, store size, age of the last event, synced.
 * Many caches may report into one registry (a fleet's clusters, each with a
 * `cluster` label); the returned function takes this one out again, and its
 * series vanish from the next scrape.
 */
export function registerInformerMetrics(registry: Registry, cache: InformerCache, cluster?: string): () => void {
  let caches = cachesByRegistry.get(registry);
  if (caches === undefined) {
    caches = new Map();
    cachesByRegistry.set(registry, caches);
  }
  caches.set(cache, cluster);
  const counters: [string, string, (s: { lists: number; relists: number; gone: number; watchRestarts: number; errors: number; watchEvents: number; shardDropped: number }) => number][] = [
    ['kubeloop_informer_relists_total', 'Lists after the first (410 Gone, unexpected errors)', (s) => s.relists],
    ['kubeloop_informer_gone_total', '410 Gone / Expired answers to list or watch', (s) => s.gone],
    ['kubeloop_informer_watch_restarts_total', 'Watches opened after the first', (s) => s.watchRestarts],
    ['kubeloop_informer_errors_total', 'List and watch errors (each retried)', (s) => s.errors],
    ['kubeloop_informer_watch_events_total', 'Watch events received after the initial state (added, modified, deleted), those out of the shard included', (s) => s.watchEvents],
    ['kubeloop_informer_shard_dropped_total', 'Listed objects and watch events left out because they were out of the shard', (s) => s.shardDropped],
  ];
  for (const [name, help, pick] of counters) {
    once(registry, name, () => new Counter({
      name,
      help,
      labelNames: ['kind', 'cluster'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [labels, i] of informersOf(registry)) this.inc(labels, i.stats.reduce((a, s) => a + pick(s), 0));
      },
    }));
  }
  const gauges: [string, string, (i: ReturnType<InformerCache['informers']>[number]) => number][] = [
    ['kubeloop_informer_store_objects', 'Objects in the informer store', (i) => i.storeSize],
    ['kubeloop_informer_synced', '1 once the informer has its initial state', (i) => (i.synced ? 1 : 0)],
    ['kubeloop_informer_last_list_duration_seconds', 'Duration of the last list', (i) => Math.max(0, ...i.stats.map((s) => s.lastListMs)) / 1000],
    ['kubeloop_informer_last_event_age_seconds', 'Seconds since the last event, bookmark or list', (i) => {
      const last = Math.max(0, ...i.stats.map((s) => s.lastEventAt));
      return last === 0 ? -1 : (Date.now() - last) / 1000;
    }],
  ];
  for (const [name, help, read] of gauges) {
    once(registry, name, () => new Gauge({
      name,
      help,
      labelNames: ['kind', 'cluster'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [labels, i] of informersOf(registry)) this.set(labels, read(i));
      },
    }));
  }
  // Whether the API server filters a sharded informer by `shardSelector`: 1 while it does, 0 once it
  // sent something out of range (no ShardedListAndWatch: the reflector filters). No series while the
  // server is not asked (no shard, `controller-owner`, `serverSide: false`).
  once(registry, 'kubeloop_informer_shard_server_filtered', () => new Gauge({
    name: 'kubeloop_informer_shard_server_filtered',
    help: '1 while the API server filters the shard (shardSelector honoured), 0 once it ignored it (filtered here)',
    labelNames: ['kind', 'cluster'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, i] of informersOf(registry)) {
        const filters = serverFiltersShard(i);
        if (filters !== undefined) this.set(labels, filters ? 1 : 0);
      }
    },
  }));
  const registered = caches;
  return () => {
    registered.delete(cache);
  };
}
