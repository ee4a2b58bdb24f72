/**
 * Prometheus metrics of controllers and of the REST client, with
 * controller-runtime's names and labels, so existing dashboards work.
 */
import { Counter, Gauge, Histogram } from './prom.js';
import type { Registry } from 'prom-client';
import type { RequestInfo } from '@kubeloop/client/internal';
import { once } from './register.js';

// controller-runtime's reconcile_time_seconds buckets.
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10,
  15, 20, 25, 30, 40, 50, 60,
];

/** The exemplar labels of an observation without a trace (prom-client then keeps the bucket's last exemplar). */
const NO_EXEMPLAR: Readonly<Record<string, string>> = Object.freeze({});

/** The labels of one controller's series: its name, and in a fleet the cluster it runs for (absent otherwise). */
export interface ControllerLabels {
  readonly controller: string;
  readonly cluster?: string;
}

/** The reconcile metrics of every controller in one registry. */
export class ControllerMetrics {
  readonly reconcileTotal: Counter<'controller' | 'cluster' | 'result'>;
  readonly reconcileErrors: Counter<'controller' | 'cluster'>;
  readonly terminalErrors: Counter<'controller' | 'cluster'>;
  readonly panics: Counter<'controller' | 'cluster'>;
  readonly reconcileTime: Histogram<'controller' | 'cluster'>;
  readonly maxConcurrent: Gauge<'controller' | 'cluster'>;
  readonly activeWorkers: Gauge<'controller' | 'cluster'>;
  /** Reconciles skipped because their object was paused by its annotation. */
  readonly pausedSkips: Counter<'controller' | 'cluster'>;
  /** 1 while the controller is paused (`Manager.pauseController`), else 0. */
  readonly paused: Gauge<'controller' | 'cluster'>;
  /** Reconciles whose `reconcileTimeoutMs` ran out (each also counted as an error). */
  readonly reconcileTimeouts: Counter<'controller' | 'cluster'>;
  /** Not in controller-runtime (a panic in a Go predicate crashes the process): errors thrown by predicates, event handlers and sources. */
  readonly sourceErrors: Counter<'controller' | 'cluster'>;
  /** What enqueued keys: informer events by source (`for`, `owns`, `watches`) and event, requeues by reason. */
  readonly triggers: Counter<'controller' | 'cluster' | 'source' | 'event'>;
  /** Events that were only the echo of the controller's own write: enqueued (and reconciled) or dropped by `ignoreOwnWrites()`. */
  readonly ownWriteEvents: Counter<'controller' | 'cluster' | 'action'>;
  /** Keys reported as self-triggering (reconciled `selfTriggerThreshold` times in a row by nothing but their own writes). */
  readonly selfTriggered: Counter<'controller' | 'cluster'>;

  /** Whether the reconcile-time histogram keeps exemplars (made so while tracing is on). */
  private readonly exemplars: boolean;

  /**
   * The metrics of `registry`, made there the first time. `exemplars`: the
   * reconcile-time histogram, when made here, keeps the trace ID of a
   * reconcile as the exemplar of the bucket it fell in (tracing on).
   * Default: false.
   */
  constructor(registry: Registry, options: { readonly exemplars?: boolean } = {}) {
    const registers = [registry];
    this.reconcileTotal = once(registry, 'controller_runtime_reconcile_total', () => new Counter({ name: 'controller_runtime_reconcile_total', help: 'Total number of reconciliations per controller', labelNames: ['controller', 'cluster', 'result'], registers }));
    this.reconcileErrors = once(registry, 'controller_runtime_reconcile_errors_total', () => new Counter({ name: 'controller_runtime_reconcile_errors_total', help: 'Total number of reconciliation errors per controller', labelNames: ['controller', 'cluster'], registers }));
    this.terminalErrors = once(registry, 'controller_runtime_terminal_reconcile_errors_total', () => new Counter({ name: 'controller_runtime_terminal_reconcile_errors_total', help: 'Total number of terminal reconciliation errors per controller', labelNames: ['controller', 'cluster'], registers }));
    this.panics = once(registry, 'controller_runtime_reconcile_panics_total', () => new Counter({ name: 'controller_runtime_reconcile_panics_total', help: 'Total number of reconciliation panics (runtime exceptions: TypeError, ReferenceError, RangeError) per controller', labelNames: ['controller', 'cluster'], registers }));
    this.reconcileTime = once(registry, 'controller_runtime_reconcile_time_seconds', () => {
      const help = 'Length of time per reconciliation per controller';
      if (options.exemplars !== true) return new Histogram({ name: 'controller_runtime_reconcile_time_seconds', help, labelNames: ['controller', 'cluster'], buckets: RECONCILE_BUCKETS, registers });
      // prom-client refuses an exemplar metric in a registry of the Prometheus format: registered by hand, since the metrics
      // server writes the exemplars only in its OpenMetrics answer (openmetrics.ts) and the text format stays as it is.
      const h = new Histogram({ name: 'controller_runtime_reconcile_time_seconds', help, labelNames: ['controller', 'cluster'], buckets: RECONCILE_BUCKETS, registers: [], enableExemplars: true });
      registry.registerMetric(h);
      return h;
    });
    // Whoever made the histogram decided (a fleet's cluster shares its manager's).
    this.exemplars = (this.reconcileTime as { enableExemplars?: boolean }).enableExemplars === true;
    this.maxConcurrent = once(registry, 'controller_runtime_max_concurrent_reconciles', () => new Gauge({ name: 'controller_runtime_max_concurrent_reconciles', help: 'Maximum number of concurrent reconciles per controller', labelNames: ['controller', 'cluster'], registers }));
    this.activeWorkers = once(registry, 'controller_runtime_active_workers', () => new Gauge({ name: 'controller_runtime_active_workers', help: 'Number of currently used workers per controller', labelNames: ['controller', 'cluster'], registers }));
    this.reconcileTimeouts = once(registry, 'controller_runtime_reconcile_timeouts_total', () => new Counter({ name: 'controller_runtime_reconcile_timeouts_total', help: 'Total number of reconciliation timeouts per controller', labelNames: ['controller', 'cluster'], registers }));
    this.pausedSkips = once(registry, 'kubeloop_reconcile_paused_total', () => new Counter({ name: 'kubeloop_reconcile_paused_total', help: 'Reconciles skipped because the object carries the pause annotation, per controller', labelNames: ['controller', 'cluster'], registers }));
    this.paused = once(registry, 'kubeloop_controller_paused', () => new Gauge({ name: 'kubeloop_controller_paused', help: '1 while the controller is paused (its workers take no keys), else 0', labelNames: ['controller', 'cluster'], registers }));
    this.triggers = once(registry, 'kubeloop_reconcile_triggers_total', () => new Counter({ name: 'kubeloop_reconcile_triggers_total', help: 'What enqueued keys, per controller: informer events by source (for, owns, watches) and event (add, update, delete, initial-list, ...), requeues by reason (error-backoff, requeue-after, periodic-resync, ...)', labelNames: ['controller', 'cluster', 'source', 'event'], registers }));
    this.ownWriteEvents = once(registry, 'kubeloop_reconcile_own_write_events_total', () => new Counter({ name: 'kubeloop_reconcile_own_write_events_total', help: "Events that were only the echo of the controller's own write, per controller: enqueued, or dropped by ignoreOwnWrites()", labelNames: ['controller', 'cluster', 'action'], registers }));
    this.selfTriggered = once(registry, 'kubeloop_reconcile_self_triggered_total', () => new Counter({ name: 'kubeloop_reconcile_self_triggered_total', help: 'Keys reported as self-triggering (reconciled several times in a row by nothing but the controller\'s own writes), per controller', labelNames: ['controller', 'cluster'], registers }));
    this.sourceErrors = once(registry, 'kubeloop_controller_source_errors_total', () => new Counter({ name: 'kubeloop_controller_source_errors_total', help: 'Errors thrown by predicates, event handlers and sources per controller (the event is dropped)', labelNames: ['controller', 'cluster'], registers }));
  }

  /**
   * Observe one reconcile's duration; with exemplars, `traceId` (a sampled
   * reconcile span's) becomes the exemplar of its bucket (`trace_id`).
   */
  observeReconcile(labels: ControllerLabels, seconds: number, traceId: string | undefined): void {
    if (!this.exemplars) this.reconcileTime.observe(labels, seconds);
    else this.reconcileTime.observe({ labels, value: seconds, exemplarLabels: traceId === undefined ? NO_EXEMPLAR : { trace_id: traceId } });
  }

  /** Zero the counters of a controller so they appear before its first reconcile (as controller-runtime does). */
  initController(labels: ControllerLabels, maxConcurrent: number): void {
    for (const result of ['success', 'error', 'requeue', 'requeue_after']) this.reconcileTotal.inc({ ...labels, result }, 0);
    this.reconcileErrors.inc(labels, 0);
    this.terminalErrors.inc(labels, 0);
    this.panics.inc(labels, 0);
    this.maxConcurrent.set(labels, maxConcurrent);
    this.activeWorkers.set(labels, 0);
    this.reconcileTimeouts.inc(labels, 0);
    this.pausedSkips.inc(labels, 0);
    this.sourceErrors.inc(labels, 0);
    this.selfTriggered.inc(labels, 0);
    for (const action of ['enqueued', 'dropped']) this.ownWriteEvents.inc({ ...labels, action }, 0);
  }
}

/** `rest_client_requests_total{code,method,host}`: give its `observe` to the client transport's `onRequest`. */
export function restClientMetrics(registry: Registry): (info: RequestInfo) => void {
  const counter = once(registry, 'rest_client_requests_total', () => new Counter({ name: 'rest_client_requests_total', help: 'Number of HTTP requests, partitioned by status code, method, and host.', labelNames: ['code', 'method', 'host'], registers: [registry] }));
  return (info) => counter.inc({ code: String(info.code), method: info.method, host: info.host });
}

