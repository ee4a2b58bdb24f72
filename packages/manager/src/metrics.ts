/**
 * Prometheus metrics with controller-runtime's names and labels, so
 * existing dashboards work, plus informer metrics none of the anchors export.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Registry } from 'prom-client';
import type { InformerCache } from '@kubeloop/cache';
import type { RequestInfo } from '@kubeloop/client';

// controller-runtime's reconcile_time_seconds buckets.
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10,
  15, 20, 25, 30, 40, 50, 60,
];

function once<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

/** The reconcile metrics of every controller in one registry. */
export class ControllerMetrics {
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  readonly reconcileErrors: Counter<'controller'>;
  readonly terminalErrors: Counter<'controller'>;
  readonly panics: Counter<'controller'>;
  readonly reconcileTime: Histogram<'controller'>;
  readonly maxConcurrent: Gauge<'controller'>;
  readonly activeWorkers: Gauge<'controller'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.reconcileTotal = once(registry, 'controller_runtime_reconcile_total', () => new Counter({ name: 'controller_runtime_reconcile_total', help: 'Total number of reconciliations per controller', labelNames: ['controller', 'result'], registers }));
    this.reconcileErrors = once(registry, 'controller_runtime_reconcile_errors_total', () => new Counter({ name: 'controller_runtime_reconcile_errors_total', help: 'Total number of reconciliation errors per controller', labelNames: ['controller'], registers }));
    this.terminalErrors = once(registry, 'controller_runtime_terminal_reconcile_errors_total', () => new Counter({ name: 'controller_runtime_terminal_reconcile_errors_total', help: 'Total number of terminal reconciliation errors per controller', labelNames: ['controller'], registers }));
    this.panics = once(registry, 'controller_runtime_reconcile_panics_total', () => new Counter({ name: 'controller_runtime_reconcile_panics_total', help: 'Total number of reconciliation panics (runtime exceptions: TypeError, ReferenceError, RangeError) per controller', labelNames: ['controller'], registers }));
    this.reconcileTime = once(registry, 'controller_runtime_reconcile_time_seconds', () => new Histogram({ name: 'controller_runtime_reconcile_time_seconds', help: 'Length of time per reconciliation per controller', labelNames: ['controller'], buckets: RECONCILE_BUCKETS, registers }));
    this.maxConcurrent = once(registry, 'controller_runtime_max_concurrent_reconciles', () => new Gauge({ name: 'controller_runtime_max_concurrent_reconciles', help: 'Maximum number of concurrent reconciles per controller', labelNames: ['controller'], registers }));
    this.activeWorkers = once(registry, 'controller_runtime_active_workers', () => new Gauge({ name: 'controller_runtime_active_workers', help: 'Number of currently used workers per controller', labelNames: ['controller'], registers }));
  }

  /** Zero the counters of a controller so they appear before its first reconcile (as controller-runtime does). */
  initController(controller: string, maxConcurrent: number): void {
    for (const result of ['success', 'error', 'requeue', 'requeue_after']) this.reconcileTotal.inc({ controller, result }, 0);
    this.reconcileErrors.inc({ controller }, 0);
    this.terminalErrors.inc({ controller }, 0);
    this.panics.inc({ controller }, 0);
    this.maxConcurrent.set({ controller }, maxConcurrent);
    this.activeWorkers.set({ controller }, 0);
  }
}

/** `rest_client_requests_total{code,method,host}`: give its `observe` to the client transport's `onRequest`. */
export function restClientMetrics(registry: Registry): (info: RequestInfo) => void {
  const counter = once(registry, 'rest_client_requests_total', () => new Counter({ name: 'rest_client_requests_total', help: 'Number of HTTP requests, partitioned by status code, method, and host.', labelNames: ['code', 'method', 'host'], registers: [registry] }));
  return (info) => counter.inc({ code: String(info.code), method: info.method, host: info.host });
}

/**
 * Informer metrics, read from the cache at scrape time: list duration,
 * relists, 410s, watch restarts, store size, age of the last event, synced.
 */
export function registerInformerMetrics(registry: Registry, cache: InformerCache): void {
  const sum = (kind: string, pick: (s: { lists: number; relists: number; gone: number; watchRestarts: number; errors: number }) => number): number =>
    (cache.informers().find((i) => i.kind === kind)?.stats ?? []).reduce((a, s) => a + pick(s), 0);
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
        for (const i of cache.informers()) this.inc({ kind: i.kind }, sum(i.kind, pick));
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
