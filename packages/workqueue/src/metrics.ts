/**
 * The hooks a work queue calls to report what it does. The queue stays free
 * of any metrics library; `@kubeloop/manager` implements them over
 * prom-client with controller-runtime's names.
 */

/**
 * What a work queue reports. Every call is synchronous and must not throw.
 * The queue calls, in order of a key's life: `add` when a key is marked for
 * processing (not when it was already waiting: duplicates collapse), `depth`
 * whenever the number of waiting keys changes, `get` when a worker takes the
 * key, `done` when the worker gives it back. `retry` counts every add with a
 * delay > 0 (rate-limited requeues, `requeueAfter`, `addAfter`).
 *
 * @example
 * ```ts
 * const adds: string[] = [];
 * const metrics: WorkQueueMetrics = { add: (key) => adds.push(key), depth() {}, get() {}, done() {}, retry() {} };
 * const queue = createWorkQueue({ metrics });
 * ```
 */
export interface WorkQueueMetrics {
  /** `key` was marked for processing; `workqueue_adds_total` counts these. */
  add(key: string): void;
  /**
   * The number of keys waiting to be handed out (including keys re-added
   * while in flight) is now `n`. A priority queue also passes how many of
   * them wait at each priority (a priority it has seen stays, at 0, once
   * empty); the FIFO queue passes none.
   */
  depth(n: number, byPriority?: ReadonlyMap<number, number>): void;
  /** A worker took `key`: its wait in the queue ends and its processing starts. */
  get(key: string): void;
  /** The worker that held `key` called `done`. */
  done(key: string): void;
  /** `key` was scheduled to be added after a delay > 0. */
  retry(key: string): void;
  /**
   * Called once, when the queue is created, with what the metrics may read
   * from it later (at scrape time: nothing is pushed per add). Optional.
   */
  attach?(queue: WorkQueueProbe): void;
}

/** What a queue lets its metrics read when they are scraped. */
export interface WorkQueueProbe {
  /** Whether it is a priority queue ({@link WorkQueueMetrics.depth} then has a per-priority map). */
  readonly priorities: boolean;
  /** As `WorkQueue.oldestWaitMs`: per priority with waiting keys, the longest wait in ms. */
  oldestWaitMs(): ReadonlyMap<number, number>;
}
