/**
 * `@kubeloop/manager/internal`: what kubeloop's own packages (and extensions built like
 * them) share with this package, kept out of the root so that the root holds
 * what an operator author uses every day. No stability promise beyond the
 * package's version: these names may move or change with any release.
 *
 * @packageDocumentation
 */
export type { SecureMetricsOptions } from './options.js';
export type { RunnableFn } from './runnable-groups.js';
export type { LeadershipEnd, LeadershipState } from './leadership.js';
export type { AdmissionOperation, RegisteredWebhook, WebhookBuilder } from './webhook/builder.js';
export type { ClusterOptions } from './cluster.js';
export type { BuilderWatchOptions } from './controller/builder.js';
export type { AdmissionClass, ReconcilerClass, WebhookRegistration } from './controller/di.js';
export { requestKey } from './controller/reconcile.js';
export type { ReconcilerLike, RequeueOptions } from './controller/reconcile.js';
export type { EventHandler } from './controller/handlers.js';
export type { SourceContext } from './controller/source.js';
export type { OperationResult, StartingObject } from './controllerutil/create-or-update.js';
export { createEventRecorderProvider } from './events/recorder.js';
export type { EventDropReason, EventRecorderOptions, EventRecorderTuning, EventType, EventWriter } from './events/recorder.js';
export type { LoggerConfig } from './log/logging.js';
export type { HealthCheck } from './server/http-servers.js';
export { createWorkQueueMetrics } from './metrics/workqueue-metrics.js';
export type { WorkQueueMetricsOptions } from './metrics/workqueue-metrics.js';
export { leaderElectionMetrics } from './metrics/leader-election-metrics.js';
export type { ControllerStatus, ReconcileReport } from './controller/controller.js';
export { TriggerLedger } from './controller/triggers.js';
export type { SourceTrigger, TakenTriggers } from './controller/triggers.js';
export { ControllerMetrics } from './metrics/controller-metrics.js';
export type { ControllerLabels } from './metrics/controller-metrics.js';
