/**
 * Work queue metrics: an implementation of `@kubeloop/workqueue`'s
 * `WorkQueueMetrics` over prom-client with controller-runtime's metric names,
 * labels and buckets, so existing dashboards work unchanged.
 */
import { Counter, Gauge, Histogram } from './prom.js';
import type { Registry } from 'prom-client';
import { monotonicNow } from '@kubeloop/workqueue';
import type { Clock, WorkQueueMetrics, WorkQueueProbe } from '@kubeloop/workqueue';
import { once } from './register.js';

/** Options of {@link createWorkQueueMetrics}. */
export interface WorkQueueMetricsOptions {
  /** The clock, in milliseconds, used to time waits and work. Default: `performance.now()`. */
  now?: Clock;
  /** A `cluster` label on every series (a fleet's per-cluster queues share a name). Default: none. */
  cluster?: string;
}

/**
 * controller-runtime's `prometheus.ExponentialBuckets(10e-9, 10, 12)`:
 * 10 ns to 1000 s, for both duration histograms.
 */
export const WORKQUEUE_DURATION_BUCKETS: readonly number[] = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000];

/** The metric names, as controller-runtime's `pkg/metrics/workqueue.go` spells them (`oldestWaiting` is kubeloop's own). */
export const WORKQUEUE_METRIC_NAMES = {
  depth: 'workqueue_depth',
  adds: 'workqueue_adds_total',
  queueDuration: 'workqueue_queue_duration_seconds',
  workDuration: 'workqueue_work_duration_seconds',
  unfinishedWork: 'workqueue_unfinished_work_seconds',
  longestRunningProcessor: 'workqueue_longest_running_processor_seconds',
  retries: 'workqueue_retries_total',
  oldestWaiting: 'kubeloop_workqueue_oldest_waiting_seconds',
} as const;

/** The `priority` label's values for a priority queue: a fixed set, whatever priorities the queue is given. */
export const PRIORITY_LABELS = ['high', '0', 'low'] as const;

/**
 * The `priority` label of a priority: `high` above 0, `0`, `low` below 0
 * (`LOW_PRIORITY`, -100, is `low`), so a queue has at most three series
 * whatever numbers its keys are added with.
 */
export function priorityLabel(priority: number): (typeof PRIORITY_LABELS)[number] {
  return priority > 0 ? 'high' : priority < 0 ? 'low' : '0';
}

/** Sums (or takes the max of) a per-priority map into the fixed label set. */
function byLabel(perPriority: ReadonlyMap<number, number>, fold: (a: number, b: number) => number): Map<string, number> {
  const out = new Map<string, number>(PRIORITY_LABELS.map((l) => [l, 0]));
  for (const [priority, n] of perPriority) {
    const label = priorityLabel(priority);
    out.set(label, fold(out.get(label)!, n));
  }
  return out;
}

type Labels = 'name' | 'controller' | 'cluster';

/** What one queue contributes to the gauges computed at scrape time. */
interface InFlight {
  readonly labels: Partial<Record<Labels, string>>;
  readonly now: Clock;
  /** Key -> when its processing started. */
  readonly started: Map<string, number>;
  /** The queue's waits, once it has attached (a queue of `@kubeloop/workqueue` does when created). */
  probe?: WorkQueueProbe;
}

/** Per registry: the in-flight work of each named queue, read by the gauges' `collect()`. */
const inFlightByRegistry = new WeakMap<Registry, Map<string, InFlight>>();

function scrapeGauge(registry: Registry, name: string, help: string, pick: (ages: number[]) => number): Gauge<Labels> {
  return once(registry, name, () => new Gauge<Labels>({
    name,
    help,
    labelNames: ['name', 'controller', 'cluster'],
    registers: [registry],
    collect() {
      for (const queue of inFlightByRegistry.get(registry)?.values() ?? []) {
        const t = queue.now();
        const ages = [...queue.started.values()].map((start) => Math.max(0, t - start) / 1000);
        this.set(queue.labels, pick(ages));
      }
    },
  }));
}

/**
 * Work queue metrics in `registry`, with controller-runtime's names, labels
 * (`name` and `controller`, both the queue's name; `workqueue_depth` also has
 * `priority`: empty for a FIFO queue, as controller-runtime's non-priority
 * queue; for a priority queue one of a fixed set, `high` (> 0), `0` and
 * `low` (< 0), where controller-runtime writes any number) and buckets,
 * plus kubeloop's `kubeloop_workqueue_oldest_waiting_seconds{priority}`, how
 * long the longest-waiting key of each priority label has waited (what
 * aging bounds). Many queues share one registry; each `name` is its own
 * series. `workqueue_unfinished_work_seconds`,
 * `workqueue_longest_running_processor_seconds` and the oldest wait are
 * computed when the registry is scraped (controller-runtime refreshes its
 * gauges every 500 ms), so no timer runs.
 *
 * @param registry - where the metrics are registered (reused when already there).
 * @param name - the queue's name, normally the controller's name.
 *
 * @example
 * ```ts
 * const registry = new Registry();
 * const queue = createWorkQueue({ name: 'harddisk', metrics: createWorkQueueMetrics(registry, 'harddisk') });
 * queue.add('default/disk-1');
 * console.log(await registry.metrics()); // workqueue_adds_total{name="harddisk",controller="harddisk"} 1 ...
 * ```
 */
export function createWorkQueueMetrics(registry: Registry, name: string, options: WorkQueueMetricsOptions = {}): WorkQueueMetrics {
  if (typeof name !== 'string' || name === '') throw new TypeError('a work queue metrics name must be a non-empty string');
  const now = options.now ?? monotonicNow;
  const registers = [registry];
  const labels: Partial<Record<Labels, string>> = options.cluster === undefined ? { name, controller: name } : { name, controller: name, cluster: options.cluster };
  const depthLabels = { ...labels, priority: '' };

  let inFlight = inFlightByRegistry.get(registry);
  if (inFlight === undefined) {
    inFlight = new Map();
    inFlightByRegistry.set(registry, inFlight);
  }
  const started = new Map<string, number>();
  const record: InFlight = { labels, now, started };
  // A queue created again under the same name (a restarted controller) takes the series over.
  inFlight.set(options.cluster === undefined ? name : `${name}\u0000${options.cluster}`, record);

  const depth = once(registry, WORKQUEUE_METRIC_NAMES.depth, () => new Gauge<Labels | 'priority'>({
    name: WORKQUEUE_METRIC_NAMES.depth,
    help: 'Current depth of workqueue by workqueue and priority',
    labelNames: ['name', 'controller', 'cluster', 'priority'],
    registers,
  }));
  const adds = once(registry, WORKQUEUE_METRIC_NAMES.adds, () => new Counter<Labels>({
    name: WORKQUEUE_METRIC_NAMES.adds,
    help: 'Total number of adds handled by workqueue',
    labelNames: ['name', 'controller', 'cluster'],
    registers,
  }));
  const queueDuration = once(registry, WORKQUEUE_METRIC_NAMES.queueDuration, () => new Histogram<Labels>({
    name: WORKQUEUE_METRIC_NAMES.queueDuration,
    help: 'How long in seconds an item stays in workqueue before being requested',
    labelNames: ['name', 'controller', 'cluster'],
    buckets: [...WORKQUEUE_DURATION_BUCKETS],
    registers,
  }));
  const workDuration = once(registry, WORKQUEUE_METRIC_NAMES.workDuration, () => new Histogram<Labels>({
    name: WORKQUEUE_METRIC_NAMES.workDuration,
    help: 'How long in seconds processing an item from workqueue takes.',
    labelNames: ['name', 'controller', 'cluster'],
    buckets: [...WORKQUEUE_DURATION_BUCKETS],
    registers,
  }));
  const unfinished = scrapeGauge(
    registry,
    WORKQUEUE_METRIC_NAMES.unfinishedWork,
    "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
    (ages) => ages.reduce((sum, age) => sum + age, 0),
  );
  const longest = scrapeGauge(
    registry,
    WORKQUEUE_METRIC_NAMES.longestRunningProcessor,
    'How many seconds has the longest running processor for workqueue been running.',
    (ages) => ages.reduce((max, age) => Math.max(max, age), 0),
  );
  const retries = once(registry, WORKQUEUE_METRIC_NAMES.retries, () => new Counter<Labels>({
    name: WORKQUEUE_METRIC_NAMES.retries,
    help: 'Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)',
    labelNames: ['name', 'controller', 'cluster'],
    registers,
  }));

  const oldest = once(registry, WORKQUEUE_METRIC_NAMES.oldestWaiting, () => new Gauge<Labels | 'priority'>({
    name: WORKQUEUE_METRIC_NAMES.oldestWaiting,
    help: 'How many seconds the longest-waiting key of each priority (high: > 0, 0, low: < 0; empty for a FIFO queue) has waited at it; 0 when none waits',
    labelNames: ['name', 'controller', 'cluster', 'priority'],
    registers,
    collect() {
      for (const queue of inFlightByRegistry.get(registry)?.values() ?? []) {
        const ages = queue.probe?.oldestWaitMs() ?? new Map<number, number>();
        if (queue.probe?.priorities === true) {
          for (const [label, ms] of byLabel(ages, Math.max)) this.set({ ...queue.labels, priority: label }, ms / 1000);
        } else this.set({ ...queue.labels, priority: '' }, Math.max(0, ...ages.values()) / 1000);
      }
    },
  }));

  // Every series exists from the start, at zero, as controller-runtime's do.
  depth.set(depthLabels, 0);
  oldest.set(depthLabels, 0);
  adds.inc(labels, 0);
  queueDuration.zero(labels);
  workDuration.zero(labels);
  unfinished.set(labels, 0);
  longest.set(labels, 0);
  retries.inc(labels, 0);

  /** Key -> when it was first marked for processing since it was last taken. */
  const addedAt = new Map<string, number>();
  /** Whether the queue reports its depth per priority (a priority queue): the `priority=""` series are then dropped for the fixed labels. */
  let perPriority = false;
  /** The series of PRIORITY_LABELS, in order, and the depth last set on each. */
  const classLabels = PRIORITY_LABELS.map((priority) => ({ ...labels, priority }));
  const lastDepth = [0, 0, 0];
  const becomePerPriority = (): void => {
    if (perPriority) return;
    perPriority = true;
    depth.remove(depthLabels);
    oldest.remove(depthLabels);
    for (const series of classLabels) {
      depth.set(series, 0);
      oldest.set(series, 0);
    }
  };
  return {
    attach(probe) {
      record.probe = probe;
      if (probe.priorities) becomePerPriority();
    },
    add(key) {
      adds.inc(labels);
      if (!addedAt.has(key)) addedAt.set(key, now());
    },
    depth(n, byPriority) {
      if (byPriority === undefined) depth.set(depthLabels, n);
      else {
        becomePerPriority();
        // Per add or get, one label's count changes: only that series is set (a set hashes its labels).
        let high = 0;
        let zero = 0;
        let low = 0;
        for (const [priority, count] of byPriority) {
          if (priority > 0) high += count;
          else if (priority < 0) low += count;
          else zero += count;
        }
        const counts = [high, zero, low];
        for (let i = 0; i < 3; i++) {
          if (counts[i] === lastDepth[i]) continue;
          lastDepth[i] = counts[i]!;
          depth.set(classLabels[i]!, counts[i]!);
        }
      }
      // No key is waiting, so no wait is being timed (keys dropped at shut down).
      if (n === 0) addedAt.clear();
    },
    get(key) {
      const t = now();
      started.set(key, t);
      const added = addedAt.get(key);
      if (added !== undefined) {
        queueDuration.observe(labels, Math.max(0, t - added) / 1000);
        addedAt.delete(key);
      }
    },
    done(key) {
      const start = started.get(key);
      if (start !== undefined) {
        workDuration.observe(labels, Math.max(0, now() - start) / 1000);
        started.delete(key);
      }
    },
    retry() {
      retries.inc(labels);
    },
  };
}
