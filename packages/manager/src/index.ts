/**
 * `@kubeloop/manager` runs controllers the way controller-runtime does: a
 * manager builds the client, informer cache and mapper from one KubeConfig;
 * controllers are registered through dependency injection (tsyringe) or a
 * fluent builder; a workqueue never hands one key to two workers and retries
 * failures with per-key backoff; leader election on a Lease; health,
 * readiness and Prometheus metrics with controller-runtime's names; pino
 * logging with per-reconcile child loggers.
 *
 * @example
 * ```ts
 * import { createManager, Result, signalHandler } from '@kubeloop/manager';
 * import { ConfigMap } from '@kubeloop/scheme';
 *
 * const manager = createManager({ fieldOwner: 'demo', healthProbeBindAddress: ':8081' });
 * manager.controller().for(ConfigMap).complete(async (req, ctx) => {
 *   const cm = await manager.client.get(ConfigMap, { namespace: req.namespace!, name: req.name });
 *   ctx.log.info({ keys: Object.keys(cm.data ?? {}) }, 'seen');
 *   return Result.done();
 * });
 * await manager.start(signalHandler());
 * ```
 *
 * @packageDocumentation
 */
// tsyringe needs the Reflect metadata polyfill before it loads.
import 'reflect-metadata';
export { createManager, signalHandler } from './manager.js';
export type { LeaderElectionConfig, Manager, ManagerOptions, Runnable, RunnableFn } from './manager.js';
export { ControllerBuilder } from './builder.js';
export type { ControllerDefinition, WatchOptions } from './builder.js';
export type { ControllerOptions, ControllerStatus } from './controller.js';
export { controller, TOKENS } from './di.js';
export type { ControllerRegistration, ReconcilerClass } from './di.js';
export { Result, requestKey, terminalError } from './reconcile.js';
export type { ReconcileContext, ReconcileFn, ReconcileResult, Reconciler, ReconcilerLike, Request } from './reconcile.js';
export { enqueueMapped, enqueueObject, enqueueOwner } from './handlers.js';
export type { EventHandler } from './handlers.js';
export { and, annotationsChanged, generationChanged, labelSelectorPredicate, labelsChanged, not, or, resourceVersionChanged } from './predicates.js';
export type { Predicate } from './predicates.js';
export { kindSource, observableSource } from './source.js';
export type { Source, SourceContext } from './source.js';
export type { EventRecorder, EventRecorderProvider } from './recorder.js';
export {
  containsFinalizer,
  createOrPatch,
  createOrUpdate,
  finalize,
  findStatusCondition,
  getControllerOf,
  isStatusConditionTrue,
  jsonEqual,
  setControllerReference,
  setOwnerReference,
  setStatusCondition,
} from './helpers.js';
export type { Condition, OperationResult } from './helpers.js';
export { createLogger, REDACT_PATHS } from './logging.js';
export type { LoggerConfig } from './logging.js';
export type { HealthCheck } from './http-servers.js';
export { createLeaderElector, formatMicroTime, LEADER_ELECTION_DEFAULTS, LEADER_ELECTION_JITTER_FACTOR, LEADER_ELECTION_STATUS_METRIC } from './leader-election.js';
export { createWorkQueue } from './workqueue.js';
export type { WorkQueue, WorkQueueOptions } from './workqueue.js';
export { bucketRateLimiter, defaultControllerRateLimiter, exponentialFailureRateLimiter, maxOfRateLimiter, monotonicNow } from './rate-limiter.js';
export type { BucketRateLimiterOptions, Clock, DefaultControllerRateLimiterOptions, RateLimiter } from './rate-limiter.js';
export { createWorkQueueMetrics, WORKQUEUE_DURATION_BUCKETS, WORKQUEUE_METRIC_NAMES } from './workqueue-metrics.js';
export type { WorkQueueMetrics, WorkQueueMetricsOptions } from './workqueue-metrics.js';
export type { LeaderElectionEnd, LeaderElector, LeaderElectorOptions } from './leader-election.js';
export { ManagerError, describeError, isManagerError } from './errors.js';
export type { ManagerErrorReason } from './errors.js';
