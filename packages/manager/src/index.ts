/**
 * `@kubeloop/manager` runs controllers the way controller-runtime does: a
 * cluster (client, informer cache, mapper and event recorders from one
 * KubeConfig) plus controllers registered through dependency injection
 * (tsyringe) or a fluent builder, each over a priority work queue
 * (`@kubeloop/workqueue`) that never hands one key to two workers; leader
 * election (`@kubeloop/leaderelection`); health, readiness and Prometheus
 * metrics with controller-runtime's names; pino logging with per-reconcile
 * child loggers; and controllerutil-style helpers (owner references,
 * finalizers, create-or-update, conditions).
 *
 * @example
 * ```ts
 * import { createManager, Result, signalHandler } from '@kubeloop/manager';
 * import { ConfigMap } from '@kubeloop/scheme';
 *
 * const manager = createManager({ fieldOwner: 'demo', healthProbeBindAddress: '127.0.0.1:8081' });
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
// The manager and its cluster
export { createManager } from './manager.js';
export type { Manager } from './manager.js';
export type { LeaderElectionConfig, ManagerOptions, SecureMetricsOptions } from './options.js';
export type { TracingOptions } from './tracing/config.js';
export { TRACEPARENT_ANNOTATION } from '@kubeloop/client/internal';
export type { ProfilingOptions } from './server/profiles.js';
export type { Runnable, RunnableFn } from './runnable-groups.js';
export { signalHandler } from './signals.js';
export { alwaysLeader, leaseElection } from './leadership.js';
export type { LeadershipContext, LeadershipEnd, LeadershipGate, LeadershipState } from './leadership.js';
export { LEADER_BUCKET, ringLeadership } from './ring-leadership.js';
export { createCluster } from './cluster.js';
export type { Cluster, ClusterOptions } from './cluster.js';
export { ManagerError, isManagerError } from './errors.js';
export type { ManagerErrorReason } from './errors.js';
// Controllers
export { ControllerBuilder } from './controller/builder.js';
export type { BuilderWatchOptions, ControllerDefinition } from './controller/builder.js';
export { ringShardFilter } from './controller/shard.js';
export type { ControllerOptions, ControllerStatus, ReconcileReport } from './controller/controller.js';
export type { ControllerShard } from './controller/shard-stage.js';
export { controller, TOKENS, webhook } from './controller/di.js';
export type { AdmissionClass, ControllerRegistration, ReconcilerClass, WebhookRegistration } from './controller/di.js';
export { Result, terminalError } from './controller/reconcile.js';
export type { ReconcileContext, ReconcileFn, ReconcileResult, Reconciler, ReconcilerLike, Request, RequeueOptions } from './controller/reconcile.js';
export { enqueueMapped, enqueueObject, enqueueOwner } from './controller/handlers.js';
export type { EventHandler } from './controller/handlers.js';
export { and, annotationsChanged, generationChanged, labelSelectorPredicate, labelsChanged, not, or, resourceVersionChanged } from './controller/predicates.js';
export type { Predicate } from './controller/predicates.js';
export { kindSource, observableSource } from './controller/source.js';
export type { Source, SourceContext } from './controller/source.js';
export type { OwnWrites } from './controller/own-writes.js';
export { isPaused, PAUSED_ANNOTATION } from './controller/pause.js';
export type { PauseOptions } from './controller/pause.js';
export { ignoreOwnWrites } from './controller/own-writes.js';
export { describeTrigger } from './controller/triggers.js';
export type { Trigger, TriggerEvent, TriggerInput, TriggerOptions, TriggerSource } from './controller/triggers.js';
export type { BackoffKey, ControllerInspection, InFlightKey, KeyInspection, ReconcileRecord, SelfTriggerSuspect } from './controller/inspection.js';
// controllerutil
export { getControllerOf, setControllerReference, setOwnerReference } from './controllerutil/owner-references.js';
export { containsFinalizer, finalize } from './controllerutil/finalizers.js';
export { createOrPatch, createOrUpdate } from './controllerutil/create-or-update.js';
export { findStatusCondition, isStatusConditionTrue, setStatusCondition } from './controllerutil/conditions.js';
export type { Condition } from './controllerutil/conditions.js';
export type { OperationResult, StartingObject } from './controllerutil/create-or-update.js';
// Observability
export type { EventRecorder, EventRecorderProvider, EventRecorderTuning, EventType } from './events/recorder.js';
export { createLogger } from './log/logging.js';
export type { LoggerConfig } from './log/logging.js';
export type { HealthCheck } from './server/http-servers.js';
// Webhooks registered on the manager
export type { AdmissionOperation, RegisteredWebhook, WebhookBuilder } from './webhook/builder.js';
// prom-client's metric classes, the copy the manager's registry is made with: `new Counter({ ..., registers: [manager.registry] })`.
export { Counter, Gauge, Histogram, Registry } from './metrics/prom.js';
