/**
 * The manager's implementation (controller-runtime's `internal.go`): the
 * parts wired from the options in the constructor, start and stop. Each
 * part is a file of its own: the cluster (`cluster.ts`), the runnable
 * groups (`runnable-groups.ts`), the controller registry
 * (`controller/registry.ts`), the leadership gate's run
 * (`leadership-run.ts`), readiness (`readiness.ts`), the HTTP servers
 * (`server/manager-servers.ts`), the webhook server
 * (`webhook/manager-webhooks.ts`), the DI container (`container.ts`).
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
import { namespaceNames } from '@kubeloop/cache';
import type { InformerCache } from '@kubeloop/cache';
import { isMetadataRef } from '@kubeloop/client/internal';
import type { CachedClient, Client, KindRef } from '@kubeloop/client';
import type { RESTMapper } from '@kubeloop/mapper';
import type { KubeObject, ResourceDescriptor, Scheme } from '@kubeloop/scheme';
import { createTokenAuthorizer } from '@kubeloop/webhook';
import type { TokenAuthorizer, WebhookServer } from '@kubeloop/webhook';
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
import { controllerRegistrationOf } from './controller/di.js';
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
import { controllersCheck, informersCheck, leadershipCheck, Probes } from './readiness.js';
import { RunnableGroup, runnableFn, waitAtMost } from './runnable-groups.js';
import type { Runnable, RunnableEntry, RunnableFn } from './runnable-groups.js';
import type { HealthCheck } from './server/http-servers.js';
import { parseBindAddress } from './server/http-servers.js';
import { startManagerServers } from './server/manager-servers.js';
import type { ManagerServers } from './server/manager-servers.js';
import type { RegisteredWebhook, WebhookBuilder } from './webhook/builder.js';
import type { Manager } from './manager.js';
import { runGate } from './leadership-run.js';
import { ManagerWebhooks } from './webhook/manager-webhooks.js';

export class KubeManager implements Manager {
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
  private readonly webhooks: ManagerWebhooks;
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
    this.cluster = options.cluster ?? managerCluster(options, this.logger, this.registry);
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
    this.metricsAuthorizer = metricsAuthorizer(options, this.logger, this.apiReader);
    if (options.profiling && (!this.metricsAuthorizer || !serves(options.metricsBindAddress))) {
      throw new ManagerError('InvalidOptions', 'profiling is served by the metrics server behind its authentication and authorization: set metricsBindAddress and secureMetrics (with authorization on), or drop profiling');
    }
    if (options.profiling) new Profiler(options.profiling === true ? {} : options.profiling); // its options checked now, not at start
    this.webhooks = new ManagerWebhooks(options.webhook, { registry: this.registry, logger: this.logger, servers: this.servers, probes: this.probes, name: `runnable ${this.runnableCount++} (webhook server)` });
    this.webhookServer = this.webhooks.server;

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
    return this.webhooks.webhook(kind);
  }

  registeredWebhooks(): RegisteredWebhook[] {
    return this.webhooks.registered();
  }

  registerWebhook(webhookClass: AdmissionClass, registration?: WebhookRegistration): void {
    this.webhooks.register(this.container, webhookClass, registration);
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
        ...(this.options.namespaces ? { namespaces: namespaceNames(this.options.namespaces) } : {}),
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
    // 0. tracing, when on; 1. HTTP servers (probes, metrics; then the webhook server)
    const { http, leaveTracing } = await this.startServers(stop.signal);
    const releaseReducer = this.options.releaseIdleMemory === false ? undefined : holdMemoryReducer();
    // 2. caches (a warm standby's controller sources), 3. runnables without leadership
    for (const group of [this.servers, this.caches, this.others]) group.start(stop.signal);
    // 4. leadership; 5. leader-only runnables, one term per leadership term
    const groups = { leaderOnly: this.leaderOnly, setLeading: (l: boolean) => (this.leading = l), fail: (err: ManagerError) => this.fail(err) };
    const electing = runGate(this.gate, { signal: stop.signal, cluster: this.cluster, registry: this.registry, logger: this.logger, gracefulMs, ...groups });
    this.logger.info({ controllers: this.registryOfControllers.names(), leadership: this.gate.description }, 'manager started');
    // Run until told to stop, or until something fails.
    await untilAborted(stop.signal);
    signal?.removeEventListener('abort', onExternal);
    releaseReducer?.();
    // Stopped by signalHandler()'s SIGTERM: the process ends within the graceful bound, whatever holds it.
    exitWithin(signal, gracefulMs, this.logger);
    this.phase = 'stopping';
    const timeoutMs = await this.shutdown(failure, stop.signal.reason, electing, gracefulMs);
    await http.close();
    await leaveTracing?.();
    this.phase = 'stopped';
    this.logger.info('manager stopped');
    if (failure) throw failure;
    if (timeoutMs !== undefined) throw new ManagerError('ShutdownTimeout', `runnables did not stop within ${timeoutMs} ms`);
  }

  /** Tracing (when on: the OpenTelemetry SDK is imported now, never while off), then the probe and metrics servers. */
  private async startServers(signal: AbortSignal): Promise<{ http: ManagerServers; leaveTracing: (() => Promise<void>) | undefined }> {
    let leaveTracing: (() => Promise<void>) | undefined;
    try {
      if (this.tracing) leaveTracing = await startTracing(this.tracing);
      const controllers = this.registryOfControllers;
      const http = await startManagerServers(this.options, {
        probes: this.probes,
        registry: this.registry,
        authorizer: this.metricsAuthorizer,
        log: this.logger,
        signal,
        // Exemplars (trace IDs on the reconcile-time histogram) are written in OpenMetrics only.
        openMetrics: this.tracing !== undefined,
        inspect: inspectHandler({
          names: () => controllers.inspectNames(),
          controller: (name) => controllers.inspectable(name),
          pause: (name) => controllers.pause(name),
          resume: (name) => controllers.resume(name),
        }),
      });
      this.healthUrl = http.healthUrl;
      this.metricsUrl = http.metricsUrl;
      return { http, leaveTracing };
    } catch (err) {
      this.phase = 'stopped';
      await leaveTracing?.();
      throw err;
    }
  }

  /**
   * Stop in reverse: leader-only work, the others, the caches, the servers,
   * within the graceful timeout; after a lost lease, within the short
   * lease-loss bound, and pending events are not waited for. Resolves to the
   * bound when it ran out, else undefined.
   */
  private async shutdown(failure: ManagerError | undefined, reason: unknown, electing: Promise<void>, gracefulMs: number): Promise<number | undefined> {
    const leaseLost = isManagerError(failure) && failure.reason === 'LeaderElectionLost';
    this.logger.info({ reason: failure?.message ?? 'stop requested' }, 'stopping');
    const timeoutMs = leaseLost ? (this.options.leaseLossExitTimeoutMs ?? 2_000) : gracefulMs;
    const drain = async (): Promise<void> => {
      for (const group of [this.leaderOnly, this.others, this.caches, this.servers]) await group.stop(reason);
      await electing;
    };
    const timedOut = !(await waitAtMost(drain(), timeoutMs));
    this.leading = false;
    // Pending events get written (the recorder bounds it at 5 s), unless the lease was lost: then exit fast.
    await waitAtMost(this.cluster.stop(), leaseLost ? 1_000 : 6_000);
    return timedOut ? timeoutMs : undefined;
  }
}

/** Whether leader-only controllers keep warm on a standby when neither the manager's nor the controller's options say (see `ManagerOptions.warmStandby` for why). */
const WARM_STANDBY_DEFAULT = true;

/** The manager's cluster, made from its options. */
function managerCluster(options: ManagerOptions, logger: Logger, registry: Registry): Cluster {
  return createCluster({
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
    logger,
    registry,
  });
}

/** The secure metrics server's token authorizer, when it authorizes (its certificate source checked now). */
function metricsAuthorizer(options: ManagerOptions, logger: Logger, apiReader: Client): TokenAuthorizer | undefined {
  const secure = options.secureMetrics;
  if (!secure) return undefined;
  if (secure.certificates !== undefined && typeof secure.certificates?.start !== 'function') {
    throw new ManagerError('InvalidOptions', 'secureMetrics.certificates must be a certificate source: watchCertificateFiles({ certFile, keyFile }), managedCertificates(...) or staticCertificate(...) of @kubeloop/webhook');
  }
  if (secure.authorization === false) return undefined;
  const tuning = typeof secure.authorization === 'object' ? secure.authorization : {};
  return createTokenAuthorizer({ log: logger.child({ component: 'metrics' }), ...tuning, client: apiReader });
}
