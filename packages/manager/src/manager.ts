/**
 * The manager: a cluster (client, informer cache, mapper from one
 * KubeConfig) plus controllers and other runnables, leadership, health,
 * readiness and metrics servers, and graceful shutdown. This file wires the
 * parts, each in a file named for it: options (`options.ts`), runnable
 * groups (`runnable-groups.ts`), leadership gates (`leadership.ts`),
 * readiness (`readiness.ts`), signals (`signals.ts`), the DI container
 * (`container.ts`), the HTTP servers (`server/manager-servers.ts`).
 *
 * Start order: HTTP servers (probes, metrics, then the webhook server),
 * caches (a warm standby's controller sources), runnables that do not need
 * leadership, the leadership gate, then leader-only runnables (controllers
 * by default), once per leadership term. Stop in reverse, within a graceful
 * shutdown timeout. Losing leadership for good (a Lease) skips graceful
 * shutdown, as controller-runtime does: leader-only work is cancelled at
 * once and `start()` rejects within `leaseLossExitTimeoutMs`.
 */
import 'reflect-metadata';
import type { Logger } from 'pino';
import { Registry } from './metrics/prom.js';
import { container as rootContainer } from 'tsyringe';
import type { DependencyContainer } from 'tsyringe';
import type { InformerCache } from '@kubeloop/cache';
import { isMetadataRef } from '@kubeloop/client/internal';
import type { CachedClient, Client, KindRef } from '@kubeloop/client';
import type { RESTMapper } from '@kubeloop/mapper';
import type { KubeObject, ResourceDescriptor, Scheme } from '@kubeloop/scheme';
import { createTokenAuthorizer, createWebhookServer, prometheusWebhookMetrics } from '@kubeloop/webhook';
import type { Defaulter, TokenAuthorizer, WebhookServer } from '@kubeloop/webhook';
import { validateManagerOptions } from './options-validation.js';
import { createCluster } from './cluster.js';
import { inspectHandler } from './server/inspect.js';
import { exitWithin } from './signals.js';
import type { Cluster } from './cluster.js';
import { construct, createManagerContainer } from './container.js';
import { ControllerBuilder, nameOf } from './controller/builder.js';
import type { ControllerDefinition } from './controller/builder.js';
import { hostControllerEntry, untilAborted } from './controller/host-controller.js';
import { ControllerRegistry, setRegistry } from './controller/registry.js';
import { DEFAULT_CRD_POLL_INTERVAL_MS, KindWaiter } from './controller/kind-waiter.js';
import type { ControllerStatus, ReconcileReport } from './controller/controller.js';
import { controllerRegistrationOf, webhookRegistrationOf } from './controller/di.js';
import type { AdmissionClass, ControllerRegistration, ReconcilerClass, WebhookRegistration } from './controller/di.js';
import { toReconciler } from './controller/reconcile.js';
import type { Reconciler, ReconcilerLike } from './controller/reconcile.js';
import { describeError, isManagerError, ManagerError } from './errors.js';
import type { EventRecorder } from './events/recorder.js';
import { alwaysLeader, leaseElection, registerLeadershipMetric } from './leadership.js';
import type { LeadershipGate, LeadershipState } from './leadership.js';
import { createLogger } from './log/logging.js';
import { registerDefaultMetrics } from './metrics/process-metrics.js';
import { holdMemoryReducer } from './memory-reducer.js';
import { serves } from './options.js';
import type { ManagerOptions } from './options.js';
import { addedPermissions } from './rbac/extra.js';
import { cacheFollowsNamespaces, requiredPermissions } from './rbac/permissions.js';
import type { PermissionRequirement } from './rbac/permissions.js';
import { resolveTracing } from './tracing/config.js';
import { Profiler } from './server/profiles.js';
import type { TracingConfig } from './tracing/config.js';
import { startTracing } from './tracing/tracing.js';
import { traced } from '@kubeloop/client/internal';
import { controllersCheck, informersCheck, leadershipCheck, Probes } from './readiness.js';
import { RunnableGroup, runnableFn, waitAtMost } from './runnable-groups.js';
import type { Runnable, RunnableEntry, RunnableFn } from './runnable-groups.js';
import type { HealthCheck } from './server/http-servers.js';
import { parseBindAddress } from './server/http-servers.js';
import { startManagerServers } from './server/manager-servers.js';
import type { ManagerServers } from './server/manager-servers.js';
import { ConversionEndpoint, webhookBuilder } from './webhook/builder.js';
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

class KubeManager implements Manager {
  readonly cluster: Cluster;
  readonly logger: Logger;
  readonly container: DependencyContainer;
  readonly registry: Registry;
  metricsUrl: string | undefined;
  healthUrl: string | undefined;
  readonly webhookServer: WebhookServer | undefined;
  /**
   * The runnable groups, in start order: servers (the webhook server), caches
   * (leader-only controllers' sources on a warm standby), others (no
   * leadership needed), leader-only (one term per leadership term). They stop
   * in reverse.
   */
  private readonly servers: RunnableGroup;
  private readonly caches: RunnableGroup;
  private readonly others: RunnableGroup;
  private readonly leaderOnly: RunnableGroup;
  private readonly gate: LeadershipGate;
  /** Tracing as the options and the environment say; undefined: off. */
  private readonly tracing: TracingConfig | undefined;
  /** Every controller, the manager's own and its fleets'. */
  private readonly registryOfControllers: ControllerRegistry;
  /** Waits for the CRDs controllers lack, all in one discovery poll. */
  private readonly kindWaiter: KindWaiter;
  private conversionEndpoint: ConversionEndpoint | undefined;
  private readonly webhookRecords: RegisteredWebhook[] = [];
  private readonly probes = new Probes();
  private readonly metricsAuthorizer: TokenAuthorizer | undefined;
  private readonly reconcileListeners = new Set<(report: ReconcileReport) => void>();
  private phase: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  private leading = false;
  private runnableCount = 0;
  /** Told of a runnable that failed; set by start(). */
  private fail: (err: ManagerError) => void = () => undefined;

  constructor(private readonly options: ManagerOptions) {
    // A bad bind address fails here, where it was written, not at start().
    if (serves(options.metricsBindAddress)) parseBindAddress(options.metricsBindAddress);
    if (serves(options.healthProbeBindAddress)) parseBindAddress(options.healthProbeBindAddress);
    if (options.leaderElection && options.leadership) {
      throw new ManagerError('InvalidOptions', 'give leaderElection (a Lease election) or leadership (any gate), not both: leaderElection: config is shorthand for leadership: leaseElection(config)');
    }
    if (options.leadership !== undefined && typeof options.leadership?.run !== 'function') {
      throw new ManagerError('InvalidOptions', 'leadership must be a LeadershipGate (an object with run(context)): leaseElection(config), alwaysLeader() or your own');
    }
    this.gate = options.leadership ?? (options.leaderElection ? leaseElection(options.leaderElection) : alwaysLeader());
    this.tracing = resolveTracing(options.tracing);
    this.registry = options.registry ?? new Registry();
    this.logger = options.logger ?? createLogger();
    const onFailure = (entry: RunnableEntry, err: unknown): void => {
      this.logger.error({ err, runnable: entry.name }, 'runnable failed; stopping the manager');
      this.fail(isManagerError(err) ? err : new ManagerError('RunnableFailed', `${entry.name} failed: ${describeError(err)}`, { cause: err }));
    };
    this.servers = new RunnableGroup('servers', onFailure);
    this.caches = new RunnableGroup('caches', onFailure);
    this.others = new RunnableGroup('others', onFailure);
    this.leaderOnly = new RunnableGroup('leader-only', onFailure);
    this.cluster =
      options.cluster ??
      createCluster({
        ...(options.kubeConfig ? { kubeConfig: options.kubeConfig } : {}),
        ...(options.transport ? { transport: options.transport } : {}),
        ...(options.transportOptions ? { transportOptions: options.transportOptions } : {}),
        ...(options.scheme ? { scheme: options.scheme } : {}),
        ...(options.fieldOwner ? { fieldOwner: options.fieldOwner } : {}),
        ...(options.namespaces ? { namespaces: options.namespaces } : {}),
        ...(options.cache ? { cache: options.cache } : {}),
        ...(options.uncached ? { uncached: options.uncached } : {}),
        ...(options.readYourWrites !== undefined ? { readYourWrites: options.readYourWrites } : {}),
        ...(options.leaderElection?.identity ? { eventInstance: options.leaderElection.identity } : {}),
        ...(options.eventRecorder ? { eventRecorder: options.eventRecorder } : {}),
        logger: this.logger,
        registry: this.registry,
      });
    this.registryOfControllers = new ControllerRegistry({
      logger: this.logger,
      registry: this.registry,
      exemplars: this.tracing !== undefined,
      defaultSyncPeriodMs: options.syncPeriodMs ?? 36_000_000,
      observe: (report) => {
        for (const listener of this.reconcileListeners) {
          try {
            listener(report);
          } catch (err) {
            this.logger.error({ err, controller: report.controller }, 'a reconcile listener threw; ignored');
          }
        }
      },
    });
    setRegistry(this, this.registryOfControllers);
    if (options.defaultMetrics !== false) registerDefaultMetrics(this.registry);
    registerLeadershipMetric(this.registry, () => this.leadershipState());
    const secure = options.secureMetrics;
    if (secure) {
      if (secure.certificates !== undefined && typeof secure.certificates?.start !== 'function') {
        throw new ManagerError('InvalidOptions', 'secureMetrics.certificates must be a certificate source: watchCertificateFiles({ certFile, keyFile }), managedCertificates(...) or staticCertificate(...) of @kubeloop/webhook');
      }
      if (secure.authorization !== false) {
        const tuning = typeof secure.authorization === 'object' ? secure.authorization : {};
        this.metricsAuthorizer = createTokenAuthorizer({ log: this.logger.child({ component: 'metrics' }), ...tuning, client: this.apiReader });
      }
    }
    if (options.profiling && (!this.metricsAuthorizer || !serves(options.metricsBindAddress))) {
      throw new ManagerError('InvalidOptions', 'profiling is served by the metrics server behind its authentication and authorization: set metricsBindAddress and secureMetrics (with authorization on), or drop profiling');
    }
    if (options.profiling) new Profiler(options.profiling === true ? {} : options.profiling); // its options checked now, not at start
    if (options.webhook) {
      const server = createWebhookServer({
        ...options.webhook,
        metrics: options.webhook.metrics ?? prometheusWebhookMetrics(this.registry),
        log: options.webhook.log ?? this.logger.child({ component: 'webhook' }),
      });
      this.webhookServer = server;
      // Every replica serves admissions and conversions, leader or not, until the others have stopped.
      // A server with nothing registered at start does not listen, nor ask for a certificate: a
      // project's main can configure it before it has any webhook.
      let serving = false;
      const run = async (signal: AbortSignal): Promise<void> => {
        if (server.paths.length === 0) {
          this.logger.info({ component: 'webhook' }, 'no webhook is registered: the webhook server does not start');
          if (signal.aborted) return;
          await new Promise<void>((done) => signal.addEventListener('abort', () => done(), { once: true }));
          return;
        }
        serving = true;
        await server.start(signal);
      };
      this.servers.add({ run, name: `runnable ${this.runnableCount++} (webhook server)` });
      this.probes.readyz.set('webhook', () => (serving || server.paths.length > 0 ? server.readyCheck() : undefined));
    }

    this.kindWaiter = new KindWaiter(this.cluster.mapper, options.crdPollIntervalMs ?? DEFAULT_CRD_POLL_INTERVAL_MS);
    this.container = createManagerContainer(options.container ?? rootContainer, this.cluster, this.logger, this);

    this.probes.healthz.set('ping', () => undefined);
    this.probes.readyz.set('informers', informersCheck(this.cache, options.informerStaleAfterMs ?? 60_000));
    this.probes.readyz.set('controllers', controllersCheck(() => this.controllers()));
    if (options.leaderElection || options.leadership) this.probes.readyz.set('leader-election', leadershipCheck(this.gate, () => this.leadershipState()));
  }

  get client(): CachedClient {
    return this.cluster.client;
  }
  get apiReader(): Client {
    return this.cluster.apiReader;
  }
  get cache(): InformerCache {
    return this.cluster.cache;
  }
  get scheme(): Scheme {
    return this.cluster.scheme;
  }
  get mapper(): RESTMapper {
    return this.cluster.mapper;
  }

  controller(): ControllerBuilder {
    return new ControllerBuilder((def, reconciler) => this.addController(def, reconciler));
  }

  register(reconcilerClass: ReconcilerClass, registration?: ControllerRegistration): void {
    const reg = registration ?? controllerRegistrationOf(reconcilerClass);
    if (!reg) {
      throw new ManagerError('InvalidRegistration', `${reconcilerClass.name} has no @controller(...) decoration and no registration was given`);
    }
    const instance: Reconciler = construct(this.container, reconcilerClass, reg.inject);
    if (typeof instance.reconcile !== 'function') throw new ManagerError('InvalidRegistration', `${reconcilerClass.name} has no reconcile method`);
    this.addController(reg, instance);
  }

  addController(definition: ControllerDefinition, reconciler: ReconcilerLike): void {
    this.refuseWhenStopping('controllers');
    const name = nameOf(definition);
    const controllers = this.registryOfControllers;
    controllers.checkFree(name);
    const controller = controllers.build(name, toReconciler(reconciler), definition, {
      cluster: this.cluster,
      waitForKind: (kind, signal) => this.kindWaiter.wait(kind, signal),
      recorder: () => this.recorderFor(name),
      electedLeadership: this.options.leaderElection !== undefined || this.options.leadership !== undefined,
    });
    const groups = { caches: this.caches, others: this.others, leaderOnly: this.leaderOnly };
    controllers.add(hostControllerEntry(controller, definition, groups, this.options.warmStandby ?? WARM_STANDBY_DEFAULT));
  }

  async pauseController(name: string): Promise<void> {
    await this.registryOfControllers.require(name).pause();
  }

  resumeController(name: string): void {
    this.registryOfControllers.require(name).resume();
  }

  async removeController(name: string): Promise<void> {
    const entry = this.registryOfControllers.require(name);
    this.registryOfControllers.delete(name);
    const reason = new ManagerError('RunnableFailed', `controller ${name} removed`);
    const gracefulMs = this.options.gracefulShutdownTimeoutMs ?? 30_000;
    const stopped = await waitAtMost(entry.stop(reason), gracefulMs);
    // Informers no remaining controller reads are stopped and forgotten.
    const stillRead = new Set<string>();
    for (const e of this.registryOfControllers.all()) for (const k of e.hostKinds()) stillRead.add(this.informerId(k));
    for (const kind of entry.hostKinds()) {
      const id = this.informerId(kind);
      if (stillRead.has(id)) continue;
      stillRead.add(id);
      await this.cache.removeInformer(kind);
    }
    this.logger.info({ controller: name }, 'controller removed');
    if (!stopped) throw new ManagerError('ShutdownTimeout', `controller ${name} did not stop within ${gracefulMs} ms; it is forgotten, its reconcile in flight still runs`);
  }

  private informerId(kind: KindRef): string {
    return isMetadataRef(kind) ? `metadata ${kind.of.apiVersion} ${kind.of.kind}` : `object ${kind.apiVersion} ${kind.kind}`;
  }

  onReconcile(listener: (report: ReconcileReport) => void): () => void {
    // a wrapper per call, so the same function subscribed twice is told twice and unsubscribes once each
    const entry = (report: ReconcileReport): void => listener(report);
    this.reconcileListeners.add(entry);
    return () => {
      this.reconcileListeners.delete(entry);
    };
  }

  webhook<T extends KubeObject>(kind: ResourceDescriptor<T>): WebhookBuilder<T> {
    if (!this.webhookServer) {
      throw new ManagerError('InvalidOptions', `webhook(${kind.kind}) needs a webhook server: set createManager({ webhook: { certificates, port } })`);
    }
    this.conversionEndpoint ??= new ConversionEndpoint(this.webhookServer);
    return webhookBuilder(kind, this.webhookServer, this.conversionEndpoint, (w) => this.webhookRecords.push(w));
  }

  registeredWebhooks(): RegisteredWebhook[] {
    return [...this.webhookRecords];
  }

  registerWebhook(webhookClass: AdmissionClass, registration?: WebhookRegistration): void {
    const reg = registration ?? webhookRegistrationOf(webhookClass);
    if (!reg) throw new ManagerError('InvalidRegistration', `${webhookClass.name} has no @webhook({ for }) decoration and no registration was given`);
    const instance = construct(this.container, webhookClass, reg.inject) as Record<string, unknown>;
    const validates = ['validateCreate', 'validateUpdate', 'validateDelete'].some((m) => typeof instance[m] === 'function');
    const defaults = typeof instance['default'] === 'function';
    if (!validates && !defaults) throw new ManagerError('InvalidRegistration', `${webhookClass.name} has no validateCreate, validateUpdate, validateDelete or default method`);
    const builder = this.webhook(reg.for).withOptions(reg.options ?? {});
    if (validates) builder.withValidator(instance);
    if (defaults) builder.withDefaulter(instance as unknown as Defaulter<KubeObject>);
    builder.complete();
  }

  add(runnable: Runnable | RunnableFn, options: { needLeaderElection?: boolean } = {}): void {
    this.refuseWhenStopping('runnables');
    this.groupFor(options.needLeaderElection ?? true).add({ run: runnableFn(runnable), name: `runnable ${this.runnableCount++}` });
  }

  private refuseWhenStopping(what: string): void {
    if (this.phase === 'stopping' || this.phase === 'stopped') throw new ManagerError('InvalidRegistration', `${what} cannot be added to a manager that is ${this.phase}`);
  }

  private groupFor(needLeaderElection: boolean): RunnableGroup {
    return needLeaderElection ? this.leaderOnly : this.others;
  }

  addHealthzCheck(name: string, check: HealthCheck): void {
    this.probes.healthz.set(name, check);
  }

  addReadyzCheck(name: string, check: HealthCheck): void {
    this.probes.readyz.set(name, check);
  }

  removeReadyzCheck(name: string): void {
    this.probes.readyz.delete(name);
  }

  recorderFor(name: string): EventRecorder {
    return this.cluster.recorderFor(name);
  }

  controllers(): readonly ControllerStatus[] {
    return this.registryOfControllers.all().map((e) => e.status());
  }

  permissions(): PermissionRequirement[] {
    const secure = this.options.secureMetrics;
    const leadership = this.gate.permissions?.();
    return [
      ...requiredPermissions({
        scheme: this.scheme,
        controllers: this.registryOfControllers.all().flatMap((e) => (e.definition ? [e.definition] : [])),
        ...(this.options.namespaces ? { namespaces: this.options.namespaces } : {}),
        ...(cacheFollowsNamespaces(this.options.cache) ? { followsNamespaces: true } : {}),
        ...(leadership ? { leadership } : {}),
        metricsAuthorization: Boolean(secure && secure.authorization !== false && serves(this.options.metricsBindAddress)),
      }),
      ...addedPermissions(this, 'host'),
    ];
  }

  isLeader(): boolean {
    return this.leading;
  }

  leadershipState(): LeadershipState | undefined {
    if (this.phase !== 'running') return undefined;
    if (this.leading) return 'leading';
    return this.registryOfControllers.all().some((e) => e.warm) ? 'warm standby' : 'standby';
  }

  async start(signal?: AbortSignal): Promise<void> {
    if (this.phase !== 'new') throw new ManagerError('InvalidRegistration', 'a manager starts once');
    this.phase = 'running';
    const log = this.logger;
    const gracefulMs = this.options.gracefulShutdownTimeoutMs ?? 30_000;
    const stop = new AbortController();
    const onExternal = (): void => stop.abort(signal?.reason);
    if (signal?.aborted) stop.abort(signal.reason);
    else signal?.addEventListener('abort', onExternal, { once: true });

    let failure: ManagerError | undefined;
    this.fail = (err: ManagerError): void => {
      failure ??= err;
      stop.abort(err);
    };

    // 0. tracing, when on: the OpenTelemetry SDK is imported now, never while off
    let leaveTracing: (() => Promise<void>) | undefined;
    // 1. HTTP servers (probes, metrics; then the webhook server)
    let http: ManagerServers;
    try {
      if (this.tracing) leaveTracing = await startTracing(this.tracing);
      http = await startManagerServers(this.options, {
        probes: this.probes,
        registry: this.registry,
        authorizer: this.metricsAuthorizer,
        log,
        signal: stop.signal,
        // Exemplars (trace IDs on the reconcile-time histogram) are written in OpenMetrics only.
        openMetrics: this.tracing !== undefined,
        inspect: inspectHandler({
          names: () => this.registryOfControllers.inspectNames(),
          controller: (name) => this.registryOfControllers.inspectable(name),
          pause: (name) => this.registryOfControllers.pause(name),
          resume: (name) => this.registryOfControllers.resume(name),
        }),
      });
    } catch (err) {
      this.phase = 'stopped';
      await leaveTracing?.();
      throw err;
    }
    this.healthUrl = http.healthUrl;
    this.metricsUrl = http.metricsUrl;
    const releaseReducer = this.options.releaseIdleMemory === false ? undefined : holdMemoryReducer();
    this.servers.start(stop.signal);
    // 2. caches: informers start lazily with the first read or source; a warm standby's leader-only controllers start their sources now
    this.caches.start(stop.signal);
    // 3. runnables without leadership
    this.others.start(stop.signal);
    // 4. leadership; 5. leader-only runnables, one term per leadership term
    const gate = this.gate;
    const electing = gate
      .run({
        signal: stop.signal,
        cluster: this.cluster,
        registry: this.registry,
        logger: log,
        lead: (term, fence) => {
          if (term.aborted || stop.signal.aborted) return;
          this.leading = true;
          term.addEventListener('abort', () => {
            this.leading = false;
            void leadershipSpan('leadership ended', gate.description);
          }, { once: true });
          log.info({ leadership: gate.description }, 'leading; starting leader-only runnables');
          void leadershipSpan('leadership started', gate.description);
          // Leader-only work writes under the term's fence: refused once the gate may no longer lead.
          this.leaderOnly.start(term, fence);
        },
        stepDown: async () => {
          await waitAtMost(this.leaderOnly.settled(), gracefulMs);
        },
      })
      .then(
        (end) => {
          if (end === 'lost' && !stop.signal.aborted) {
            log.error({ leadership: gate.description }, 'leadership lost; stopping leader-only work and exiting');
            this.fail(new ManagerError('LeaderElectionLost', `lost leadership (${gate.description})`));
          }
        },
        (err: unknown) => {
          log.error({ err, leadership: gate.description }, 'the leadership gate failed; stopping the manager');
          this.fail(isManagerError(err) ? err : new ManagerError('RunnableFailed', `leadership (${gate.description}) failed: ${describeError(err)}`, { cause: err }));
        },
      );
    log.info({ controllers: this.registryOfControllers.names(), leadership: gate.description }, 'manager started');

    // Run until told to stop, or until something fails.
    await untilAborted(stop.signal);
    signal?.removeEventListener('abort', onExternal);
    releaseReducer?.();
    // Stopped by signalHandler()'s SIGTERM: the process ends within the graceful bound, whatever holds it.
    exitWithin(signal, gracefulMs, log);
    this.phase = 'stopping';
    const leaseLost = isManagerError(failure) && failure.reason === 'LeaderElectionLost';
    log.info({ reason: failure?.message ?? 'stop requested' }, 'stopping');

    // Stop in reverse: leader-only work, the others, the caches, the servers, within the graceful timeout;
    // after a lost lease, within the short lease-loss bound.
    const timeoutMs = leaseLost ? (this.options.leaseLossExitTimeoutMs ?? 2_000) : gracefulMs;
    const reason: unknown = stop.signal.reason;
    const drain = async (): Promise<void> => {
      await this.leaderOnly.stop(reason);
      await this.others.stop(reason);
      await this.caches.stop(reason);
      await this.servers.stop(reason);
      await electing;
    };
    const timedOut = !(await waitAtMost(drain(), timeoutMs));
    this.leading = false;
    // Pending events get written (the recorder bounds it at 5 s), unless the lease was lost: then exit fast.
    await waitAtMost(this.cluster.stop(), leaseLost ? 1_000 : 6_000);
    await http.close();
    await leaveTracing?.();
    this.phase = 'stopped';
    log.info('manager stopped');
    if (failure) throw failure;
    if (timedOut) throw new ManagerError('ShutdownTimeout', `runnables did not stop within ${timeoutMs} ms`);
  }
}

/** Whether leader-only controllers keep warm on a standby when neither the manager's nor the controller's options say (see `ManagerOptions.warmStandby` for why). */
const WARM_STANDBY_DEFAULT = true;

/** A leadership change as a span of its own (a new trace): nothing when tracing is off. */
function leadershipSpan(name: string, description: string): Promise<void> {
  return traced(name, { root: true, attributes: { 'kubeloop.leadership': description } }, () => Promise.resolve());
}

