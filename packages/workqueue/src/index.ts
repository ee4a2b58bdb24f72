/**
 * `@kubeloop/workqueue` is the queue between a controller's event sources and
 * its workers, with client-go's semantics and no Kubernetes, DI, logging or
 * metrics dependency: a key is never held by two workers, duplicates
 * collapse, a key re-added while held runs once more after `done`, delayed
 * and rate-limited adds share one timer. A priority queue (controller-runtime's
 * default since v0.23) hands out high-priority keys first, and unlike
 * controller-runtime's ages keys so none starves. Rate limiters
 * compute per-key backoff; one token bucket and one abortable `sleep` serve
 * every package of kubeloop.
 *
 * @example
 * ```ts
 * import { createPriorityQueue, LOW_PRIORITY } from '@kubeloop/workqueue';
 *
 * const queue = createPriorityQueue({ name: 'harddisk' });
 * queue.addWithOptions('default/disk-1', { priority: LOW_PRIORITY });
 * for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
 *   try {
 *     await reconcile(key);
 *     queue.forget(key);
 *   } catch {
 *     queue.addRateLimited(key);
 *   } finally {
 *     queue.done(key);
 *   }
 * }
 * ```
 *
 * @packageDocumentation
 */
export { createPriorityQueue, createWorkQueue, DEFAULT_MAX_WAIT_MS, LOW_PRIORITY } from './queue.js';
export type { AddOptions, WorkQueue, WorkQueueOptions } from './queue.js';
export { bucketRateLimiter, defaultControllerRateLimiter, exponentialFailureRateLimiter, maxOfRateLimiter } from './rate-limiter.js';
export type { BucketRateLimiterOptions, DefaultControllerRateLimiterOptions, RateLimiter } from './rate-limiter.js';
export type { WorkQueueMetrics, WorkQueueProbe } from './metrics.js';
export { monotonicNow, TokenBucket } from './token-bucket.js';
export type { Clock } from './token-bucket.js';
export { sleep } from './sleep.js';
