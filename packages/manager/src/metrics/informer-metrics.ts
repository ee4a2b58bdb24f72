/**
 * Informer metrics none of the anchors export, read from the cache at
 * scrape time: relists, 410s, watch restarts, errors, store size, synced,
 * last list duration, age of the last event.
 */
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { InformerCache } from '@kubeloop/cache';
import { once } from './register.js';

/**
 * Informer metrics, read from the cache at scrape time: list duration,
 * relists, 410s, watch restarts, store size, age of the last event, synced.
 */
export function registerInformerMetrics(registry: Registry, cache: InformerCache): void {
  const counters: [string, string, (s: { lists: number; relists: number; gone: number; watchRestarts: number; errors: number }) => number][] = [
    ['kubeloop_informer_relists_total', 'Lists after the first (410 Gone, unexpected errors)', (s) => s.relists],
    ['kubeloop_informer_gone_total', '410 Gone / Expired answers to list or watch', (s) => s.gone],
    ['kubeloop_informer_watch_restarts_total', 'Watches opened after the first', (s) => s.watchRestarts],
    ['kubeloop_informer_errors_total', 'List and watch errors (each retried)', (s) => s.errors],
  ];
  for (const [name, help, pick] of counters) {
    once(registry, name, () => new Counter({
      name,
      help,
      labelNames: ['kind'],
      registers: [registry],
      collect() {
        this.reset();
        for (const i of cache.informers()) this.inc({ kind: i.kind }, i.stats.reduce((a, s) => a + pick(s), 0));
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
      labelNames: ['kind'],
      registers: [registry],
      collect() {
        this.reset();
        for (const i of cache.informers()) this.set({ kind: i.kind }, read(i));
      },
    }));
  }
}
