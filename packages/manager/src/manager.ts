/**
 * The manager: a cluster (client, informer cache, mapper from one
 * KubeConfig) plus controllers and other runnables, leadership, health,
 * readiness and metrics servers, and graceful shutdown. This file is its
 * API (controller-runtime's `manager.go`): the `Manager` interface and
 * `createManager`; `kube-manager.ts` wires the parts and starts and stops
 * them (`internal.go`), each part in a file named for it.
 */
import 'reflect-metadata';
import type { Logger } from 'pino';
import type { Registry } from './metrics/prom.js';
import type { DependencyContainer } from 'tsyringe';
import type { InformerCache } from '@kubeloop/cache';
import type { CachedClient, Client } from '@kubeloop/client';
import type { RESTMapper } from '@kubeloop/mapper';
import type { KubeObject, ResourceDescriptor, Scheme } from '@kubeloop/scheme';
import type { WebhookServer } from '@kubeloop/webhook';
import { validateManagerOptions } from './options-validation.js';
import type { Cluster } from './cluster.js';
import type { ControllerBuilder } from './controller/builder.js';
import type { ControllerDefinition } from './controller/builder.js';
import type { ControllerStatus, ReconcileReport } from './controller/controller.js';
import type { AdmissionClass, ControllerRegistration, ReconcilerClass, WebhookRegistration } from './controller/di.js';
import type { ReconcilerLike } from './controller/reconcile.js';
import type { EventRecorder } from './events/recorder.js';
import type { LeadershipState } from './leadership.js';
import { KubeManager } from './kube-manager.js';
import type { ManagerOptions } from './options.js';
import type { PermissionRequirement } from './rbac/permissions.js';
import type { Runnable, RunnableFn } from './runnable-groups.js';
import type { HealthCheck } from './server/http-servers.js';
import type { RegisteredWebhook, WebhookBuilder } from './webhook/builder.js';

/** The manager. */
export interface Manager {
  /** The cluster the manager runs on (client, apiReader, cache, mapper, recorders). */
  readonly cluster: Cluster;
  /** `cluster.client`: reads from the cache (deeply read-only), writes to the API server. */
  readonly client: CachedClient;
  /** Reads that always go to the API server. */
  readonly apiReader: Client;
  readonly cache: InformerCache;
  readonly scheme: Scheme;
  readonly mapper: RESTMapper;
  readonly logger: Logger;
  readonly container: DependencyContainer;
  readonly registry: Registry;
  /** Set once started with a metrics server. */
  readonly metricsUrl: string | undefined;
  /** Set once started with a probe server. */
  readonly healthUrl: string | undefined;
  /** A fluent builder whose `complete` registers the controller. */
  controller(): ControllerBuilder;
  /**
   * Register a reconciler class: its `@controller` decoration, or
   * `registration`. Resolved from the container. On a running manager the
   * controller starts at once (see `addController`).
   */
  register(reconcilerClass: ReconcilerClass, registration?: ControllerRegistration): void;
  /**
   * Register a reconciler object or function under a definition. Before
   * `start` it waits for it; on a running manager it starts at once: its
   * sources (and their informers) now, its workers while this replica leads
   * (or now, for a controller that does not need leadership). A kind whose
   * CRD was installed after start is found by the mapper on first use.
   *
   * @throws {@link ManagerError} `InvalidRegistration` for a name already registered, or once the manager is stopping.
   * @example
   * ```ts
   * // A CRD installed while the manager runs gets its controller.
   * manager.controller().for(Widget).complete(reconcileWidget);
   * ```
   */
  addController(definition: ControllerDefinition, reconciler: ReconcilerLike): void;
  /**
   * Stop a controller and forget it: its workers stop taking keys (a
   * reconcile in flight finishes, bounded by `gracefulShutdownTimeoutMs`),
   * its sources stop, and the informers no other controller reads are
   * stopped and dropped from the cache (and its informer metrics); a later
   * cached read of such a kind starts its informer again. The name may be
   * registered again.
   *
   * @throws {@link ManagerError} `InvalidRegistration` when no controller has that name; `ShutdownTimeout` when a reconcile outlived the bound (the controller is forgotten all the same).
   * @example
   * ```ts
   * await manager.removeController('widget');
   * ```
   */
  removeController(name: string): Promise<void>;
  /**
   * Pause a registered controller on a running manager: its workers take no
   * more keys (its sources keep the queue up to date, duplicates collapsed),
   * `kubeloop_controller_paused` is 1 and `controllers()` says `paused`.
   * Resolves once the reconciles in flight have finished. Lasts across
   * leadership terms until {@link Manager.resumeController}.
   *
   * @throws {@link ManagerError} `InvalidRegistration` when no controller has that name.
   * @example
   * ```ts
   * await manager.pauseController('harddisk'); // e.g. during a storage backend's maintenance
   * manager.resumeController('harddisk');      // what changed meanwhile is reconciled now
   * ```
   */
  pauseController(name: string): Promise<void>;
  /**
   * Let a paused controller take keys again; a no-op when it is not paused.
   *
   * @throws {@link ManagerError} `InvalidRegistration` when no controller has that name.
   * @example
   * ```ts
   * manager.resumeController('harddisk');
   * ```
   */
  resumeController(name: string): void;
  /**
   * Add a runnable; by default it runs only while this replica leads. On a
   * running manager it starts at once in its group (a leader-only one when,
   * and only while, this replica leads).
   *
   * @throws {@link ManagerError} `InvalidRegistration` once the manager is stopping.
   * @example
   * ```ts
   * manager.add(async (signal) => { while (await sleep(60_000, signal)) await pruneOldBackups(); });
   * manager.add(createWebhookServer({ certificates }), { needLeaderElection: false });
   * ```
   */
  add(runnable: Runnable | RunnableFn, options?: { needLeaderElection?: boolean }): void;
  /** The webhook server `ManagerOptions.webhook` configured, or undefined. */
  readonly webhookServer: WebhookServer | undefined;
  /**
   * Admission webhooks (validator, defaulter) for a kind, on the webhook server.
   *
   * @throws {@link ManagerError} `InvalidOptions` when `ManagerOptions.webhook` is not set.
   * @example
   * ```ts
   * const manager = createManager({ scheme, webhook: { certificates: watchCertificateFiles({ certFile, keyFile }) } });
   * manager.webhook(HardDisk).withValidator(hardDiskValidator(new StorageClassCatalog())).withDefaulter(defaultHardDisk).withConversion(hardDiskConversion).complete();
   * ```
   */
  webhook<T extends KubeObject>(kind: ResourceDescriptor<T>): WebhookBuilder<T>;
  /**
   * Register an admission webhook class (a validator, a defaulter, or both)
   * for its kind: its `@webhook({ for })` decoration, or `registration`.
   * Constructed from the manager's container, as reconciler classes are.
   *
   * @throws {@link ManagerError} `InvalidRegistration` (no decoration or registration, neither validate nor default methods, no webhook server), `Resolution` (a constructor parameter cannot be resolved).
   * @example
   * ```ts
   * manager.registerWebhook(HardDiskAdmission, { for: HardDisk, inject: [StorageClassCatalog] });
   * ```
   */
  registerWebhook(webhookClass: AdmissionClass, registration?: WebhookRegistration): void;
  /**
   * The webhooks registered with {@link Manager.webhook} and
   * {@link Manager.registerWebhook}, in registration order: what the API
   * server must be told (the webhook configurations, the CRD conversions).
   * `kubeloop generate webhooks` writes config/webhook/manifests.yaml from
   * it; main can name the configurations managed certificates inject their
   * CA into. Webhooks put on `webhookServer` directly are not listed.
   *
   * @example
   * ```ts
   * for (const w of manager.registeredWebhooks()) console.log(w.type, w.path, w.operations.join(','));
   * ```
   */
  registeredWebhooks(): RegisteredWebhook[];
  addHealthzCheck(name: string, check: HealthCheck): void;
  addReadyzCheck(name: string, check: HealthCheck): void;
  /**
   * Take a `/readyz` check out (a fleet's member that left). Unknown names are ignored.
   *
   * @example
   * ```ts
   * manager.addReadyzCheck('backend', () => { if (!backendUp()) throw new Error('backend unreachable'); });
   * manager.removeReadyzCheck('backend');
   * ```
   */
  removeReadyzCheck(name: string): void;
  /** An event recorder reporting as `name`. */
  recorderFor(name: string): EventRecorder;
  /** Each controller's progress. */
  controllers(): readonly ControllerStatus[];
  /**
   * The API permissions this manager needs as registered and configured:
   * reads of every kind its controllers watch, what they declare in
   * `permissions`, status and finalizers of their `for` kinds, the event
   * recorder's events, leader election's leases, secure metrics' reviews,
   * and what its fleets need in it (their host watches and declared host
   * writes, their provider's reads: `@kubeloop/manager/fleet`'s
   * `memberPermissions` says what they need in member clusters); namespaced ones limited to `namespaces` when the manager is. See
   * `requiredPermissions` and `rolesFor` of `@kubeloop/manager/rbac`;
   * `kubeloop generate rbac` writes roles from it.
   *
   * @throws {@link ManagerError} `InvalidRegistration` when a watched kind's resource name or scope is unknown.
   * @example
   * ```ts
   * for (const p of manager.permissions()) console.log(p.group, p.resource, p.verbs.join(','), p.reason);
   * ```
   */
  permissions(): PermissionRequirement[];
  /** True while this manager leads (always true without leader election, once started). */
  isLeader(): boolean;
  /**
   * `leading`, `warm standby` (not leading; leader-only controllers keep
   * their caches and queues filled) or `standby`; undefined before start
   * and after stop. `/readyz` says the same (`[+]leader-election ok:
   * warm standby`), as does the `kubeloop_leadership_state` gauge.
   *
   * @example
   * ```ts
   * if (manager.leadershipState() === 'warm standby') console.log('ready to take over without a sync');
   * ```
   */
  leadershipState(): LeadershipState | undefined;
  /**
   * Be told of every finished reconcile of every controller (tests wait on
   * it, see `waitForReconcile` of `@kubeloop/testing`). A listener runs on
   * the worker, after the reconcile: keep it quick; what it throws is logged
   * and ignored. Returns the unsubscribe function.
   *
   * @example
   * ```ts
   * const off = manager.onReconcile((r) => { if (r.result === 'error') console.log(r.request, r.error); });
   * off();
   * ```
   */
  onReconcile(listener: (report: ReconcileReport) => void): () => void;
  /**
   * Run until `signal` aborts (graceful stop: resolves), leadership is lost
   * (rejects with LeaderElectionLost) or a runnable fails (rejects with RunnableFailed).
   */
  start(signal?: AbortSignal): Promise<void>;
}

/**
 * Create a manager.
 *
 * @example
 * ```ts
 * const manager = createManager({ scheme: builtinScheme.extend(HardDisk), fieldOwner: 'harddisk-operator', healthProbeBindAddress: ':8081' });
 * manager.register(HardDiskReconciler); // a @controller class, built from the manager's container
 * await manager.start(signalHandler());
 * ```
 */
export function createManager(options: ManagerOptions = {}): Manager {
  validateManagerOptions(options);
  return new KubeManager(options);
}
