/**
 * The manager: a cluster (client, informer cache, mapper from one
 * KubeConfig) plus controllers and other runnables, leader election, health,
 * readiness and metrics servers, and graceful shutdown.
 *
 * Start order: HTTP servers, caches, runnables that do not need leadership,
 * leader election, then leader-only runnables (controllers by default).
 * Stop in reverse, within a graceful shutdown timeout. Losing the lease
 * skips graceful shutdown, as controller-runtime does: leader-only work is
 * cancelled at once and `start()` rejects within `leaseLossExitTimeoutMs`.
 */
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { container as rootContainer } from 'tsyringe';
import type { DependencyContainer, InjectionToken } from 'tsyringe';
import type { InformerCache, InformerCacheOptions } from '@kubeloop/cache';
import { createClient } from '@kubeloop/client';
import type { CachedClient, Client, KubeConfigLike, Transport, TransportOptions, TypeRef } from '@kubeloop/client';
import { createLeaderElector } from '@kubeloop/leaderelection';
import type { LeaderElector } from '@kubeloop/leaderelection';
import type { RESTMapper } from '@kubeloop/mapper';
import type { KubeObject, ResourceDescriptor, Scheme } from '@kubeloop/scheme';
import { createCluster } from './cluster.js';
import type { Cluster } from './cluster.js';
import { ControllerBuilder, forGroupKind, nameOf, sourcesOf } from './controller/builder.js';
import type { ControllerDefinition } from './controller/builder.js';
import { Controller } from './controller/controller.js';
import type { ControllerStatus, ReconcileReport } from './controller/controller.js';
import { controllerRegistrationOf, TOKENS, webhookRegistrationOf } from './controller/di.js';
import type { AdmissionClass, ControllerRegistration, ReconcilerClass, WebhookRegistration } from './controller/di.js';
import { toReconciler } from './controller/reconcile.js';
import type { Reconciler, ReconcilerLike } from './controller/reconcile.js';
import { describeError, isManagerError, ManagerError } from './errors.js';
import type { EventRecorder, EventRecorderTuning } from './events/recorder.js';
import { createLogger } from './log/logging.js';
import { ControllerMetrics } from './metrics/controller-metrics.js';
import { leaderElectionMetrics } from './metrics/leader-election-metrics.js';
import { registerDefaultMetrics } from './metrics/process-metrics.js';
import { parseBindAddress, startHealthServer, startMetricsServer } from './server/http-servers.js';
import { createTokenAuthorizer, createWebhookServer, prometheusWebhookMetrics, selfSignedCertificate } from '@kubeloop/webhook';
import type { CertificateSource, Defaulter, TokenAuthorizer, TokenAuthorizerOptions, WebhookServer, WebhookServerOptions } from '@kubeloop/webhook';
import { ConversionEndpoint, webhookBuilder } from './webhook/builder.js';
import type { WebhookBuilder } from './webhook/builder.js';
import type { HealthCheck } from './server/http-servers.js';
import { requiredPermissions } from './rbac/permissions.js';
import type { PermissionRequirement } from './rbac/permissions.js';

/** Something the manager runs until its signal aborts. */
export interface Runnable {
  start(signal: AbortSignal): Promise<void>;
}

/** A runnable as a function. */
export type RunnableFn = (signal: AbortSignal) => Promise<void>;

/** Leader-election settings; see `createLeaderElector` for each timing's meaning. */
export interface LeaderElectionConfig {
  /** Lease name (the election id). */
  readonly name: string;
  /** Lease namespace. Default: the in-cluster namespace, else `default`. */
  readonly namespace?: string;
  /** Default: hostname plus a random suffix. */
  readonly identity?: string;
  /** Default: 15 000. */
  readonly leaseDurationMs?: number;
  /** Default: 10 000. */
  readonly renewDeadlineMs?: number;
  /** Default: 2 000. */
  readonly retryPeriodMs?: number;
  /** Give the lease up on a clean shutdown so a standby takes over at once. Default: false. */
  readonly releaseOnCancel?: boolean;
}

/** How the metrics server is secured ({@link ManagerOptions.secureMetrics}). */
export interface SecureMetricsOptions {
  /**
   * Where the serving certificate comes from (`watchCertificateFiles`,
   * `managedCertificates`, `staticCertificate` of `@kubeloop/webhook`).
   * Default: `selfSignedCertificate()`, made at start, as controller-runtime
   * does without a certificate directory (scrapers must skip verification).
   */
  readonly certificates?: CertificateSource;
  /** Authenticate and authorize callers by bearer token. Default: true (TokenReview + SubjectAccessReview through the manager's client, decisions cached 10 s). */
  readonly authorization?: boolean | Omit<TokenAuthorizerOptions, 'client'>;
  /** Lowest TLS version served. Default: `TLSv1.2`. */
  readonly minTlsVersion?: 'TLSv1.2' | 'TLSv1.3';
}

/** Options for {@link createManager}. Every field is optional. */
export interface ManagerOptions {
  /** Where to connect. Default: KUBECONFIG, ~/.kube/config, or in-cluster (ignored when `transport` or `cluster` is given). */
  readonly kubeConfig?: KubeConfigLike;
  /** A ready transport instead of one made from `kubeConfig` (for example `@kubeloop/testing`'s fake API). Default: made from `kubeConfig`. */
  readonly transport?: Transport;
  /** A ready cluster to run on; then kubeConfig, transport, scheme, fieldOwner, namespaces, cache, uncached, transportOptions and eventRecorder are not used. Default: one made from those options. */
  readonly cluster?: Cluster;
  /** The kinds the client types. Default: `builtinScheme`. */
  readonly scheme?: Scheme;
  /** Field manager for writes and server-side apply. Default: none (apply then needs a per-call fieldManager). */
  readonly fieldOwner?: string;
  /** Namespaces the cache covers. Default: all. */
  readonly namespaces?: readonly string[];
  /** More cache options (per-kind selectors, transforms, reflector tuning). */
  readonly cache?: Omit<InformerCacheOptions, 'client' | 'namespaces'>;
  /** Kinds the client never reads from the cache (Secrets, say). Default: none. */
  readonly uncached?: readonly (ResourceDescriptor | TypeRef)[];
  /**
   * Where /metrics listens: `host:port` (`127.0.0.1:8080`), `:port` for every
   * interface, IPv4 and IPv6 (an explicit choice: anyone who can reach the
   * pod can scrape), or `[ipv6]:port`; port 0 picks a free one. `"0"` or
   * `""` turns the server off, as controller-runtime's `"0"` does. Checked by
   * `createManager` (ManagerError `InvalidOptions`). Default: no metrics server.
   */
  readonly metricsBindAddress?: string;
  /**
   * Serve /metrics over HTTPS, and only to callers whose bearer token may
   * `get` the path: a TokenReview says who the token is, a
   * SubjectAccessReview whether a ClusterRole with
   * `nonResourceURLs: ['/metrics'], verbs: ['get']` is bound to them (to
   * Prometheus's ServiceAccount, say); 401 without a valid token, 403 without
   * the permission. As controller-runtime's `SecureServing` with
   * `filters.WithAuthenticationAndAuthorization`, kubebuilder's default. The
   * operator then needs `create` on `tokenreviews.authentication.k8s.io` and
   * `subjectaccessreviews.authorization.k8s.io`. `authorization: false` keeps
   * TLS alone; an object tunes the decision cache (TTL 10 s by default).
   * Certificates rotate as the webhook server's do. Default: plain HTTP,
   * every caller served.
   *
   * @example
   * ```ts
   * createManager({ metricsBindAddress: ':8443', secureMetrics: { certificates: watchCertificateFiles({ certFile: '/certs/tls.crt', keyFile: '/certs/tls.key' }) } });
   * ```
   */
  readonly secureMetrics?: SecureMetricsOptions;
  /** Where /healthz and /readyz listen, in the forms of `metricsBindAddress`. Default: no probe server. */
  readonly healthProbeBindAddress?: string;
  /** Leader election. Default: off (every replica runs every controller). */
  readonly leaderElection?: LeaderElectionConfig;
  /**
   * The webhook server (admission and conversion, `@kubeloop/webhook`): every
   * replica runs it, leader or not; `/readyz` includes its check `webhook`;
   * its metrics (`controller_runtime_webhook_*`) go to the manager's registry
   * and its logs to the manager's logger unless these options say otherwise.
   * Register webhooks with `manager.webhook(Kind)` or on `manager.webhookServer`.
   * Default: no webhook server.
   */
  readonly webhook?: WebhookServerOptions;
  /** How long stopping may take before the manager gives up waiting (reconciles that ignore their signal included). Default: 30 000 ms. */
  readonly gracefulShutdownTimeoutMs?: number;
  /**
   * After losing the lease, how long `start()` waits for leader-only work to
   * notice its aborted signal before it rejects with `LeaderElectionLost`
   * anyway (graceful shutdown is skipped, as controller-runtime does). Exit
   * the process then: a new leader may already be working. Default: 2 000 ms.
   */
  readonly leaseLossExitTimeoutMs?: number;
  /** The root logger. Default: pino at `KUBELOOP_LOG_LEVEL` / `LOG_LEVEL` / info. */
  readonly logger?: Logger;
  /** Parent DI container. Default: tsyringe's root container (a child is made per manager). */
  readonly container?: DependencyContainer;
  /** Prometheus registry. Default: a new one. */
  readonly registry?: Registry;
  /**
   * Register prom-client's default process and Node.js metrics
   * (`process_cpu_seconds_total`, `process_resident_memory_bytes`,
   * `nodejs_eventloop_lag_seconds`, `nodejs_heap_size_used_bytes`, ...) in
   * the registry, as controller-runtime registers the process and Go
   * collectors. Once per registry. Default: true.
   */
  readonly defaultMetrics?: boolean;
  /** Transport tuning (QPS, burst, timeouts). */
  readonly transportOptions?: TransportOptions;
  /** Tuning of the event recorders (queue size, spam filter, series interval, retries); not used with `cluster`. Default: client-go's; see `EventRecorderTuning`. */
  readonly eventRecorder?: EventRecorderTuning;
  /**
   * `/readyz` fails when an informer has been out of contact with the API
   * server (failed lists or watches, no watch open) for longer than this.
   * Default: 60 000 ms.
   */
  readonly informerStaleAfterMs?: number;
  /**
   * Every controller re-enqueues every cached object of its `for` kind this
   * often (jittered ±10 %, at low priority) unless its own options say
   * otherwise; 0 turns it off. Default: 36 000 000 (10 hours, as
   * controller-runtime's `SyncPeriod`).
   */
  readonly syncPeriodMs?: number;
}

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
  /** Register a reconciler class: its `@controller` decoration, or `registration`. Resolved from the container. */
  register(reconcilerClass: ReconcilerClass, registration?: ControllerRegistration): void;
  /** Register a reconciler object or function under a definition. */
  addController(definition: ControllerDefinition, reconciler: ReconcilerLike): void;
  /** Add a runnable; by default it runs only while leading when leader election is on. */
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
   * manager.webhook(HardDisk).withValidator(hardDiskValidator).withDefaulter(hardDiskDefaulter).withConversion(hardDiskConversion).complete();
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
  addHealthzCheck(name: string, check: HealthCheck): void;
  addReadyzCheck(name: string, check: HealthCheck): void;
  /** An event recorder reporting as `name`. */
  recorderFor(name: string): EventRecorder;
  /** Each controller's progress. */
  controllers(): readonly ControllerStatus[];
  /**
   * The API permissions this manager needs as registered and configured:
   * reads of every kind its controllers watch, what they declare in
   * `permissions`, status and finalizers of their `for` kinds, the event
   * recorder's events, leader election's leases, secure metrics' reviews;
   * namespaced ones limited to `namespaces` when the manager is. See
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
 * An AbortSignal that aborts on the first SIGTERM or SIGINT; a second one
 * exits the process at once (as controller-runtime's SetupSignalHandler).
 *
 * @example
 * ```ts
 * await manager.start(signalHandler());
 * ```
 */
export function signalHandler(): AbortSignal {
  const ac = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (ac.signal.aborted) process.exit(1);
    ac.abort(new ManagerError('RunnableFailed', `received ${signal}`));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return ac.signal;
}

/** Whether a bind address asks for a server: `"0"` and `""` turn it off, as controller-runtime's `"0"`. */
function serves(address: string | undefined): address is string {
  return address !== undefined && address !== '' && address !== '0';
}

/** A timer that keeps nothing alive. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function inClusterNamespace(): string {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || 'default';
  } catch {
    return 'default';
  }
}

/**
 * Create a manager.
 *
 * @example
 * ```ts
 * const manager = createManager({ scheme: builtinScheme.extend(HardDisk), fieldOwner: 'harddisk-operator', healthProbeBindAddress: ':8081' });
 * manager.controller().for(HardDisk).owns(ConfigMap).complete(new HardDiskReconciler(manager.client));
 * await manager.start(signalHandler());
 * ```
 */
export function createManager(options: ManagerOptions = {}): Manager {
  return new KubeManager(options);
}

interface RunnableEntry {
  readonly run: RunnableFn;
  readonly needLeaderElection: boolean;
  readonly name: string;
}

class KubeManager implements Manager {
  readonly cluster: Cluster;
  readonly logger: Logger;
  readonly container: DependencyContainer;
  readonly registry: Registry;
  metricsUrl: string | undefined;
  healthUrl: string | undefined;
  readonly webhookServer: WebhookServer | undefined;
  private readonly runnables: RunnableEntry[] = [];
  private readonly controllerList: Controller[] = [];
  private readonly definitions: ControllerDefinition[] = [];
  private conversionEndpoint: ConversionEndpoint | undefined;
  private readonly healthz = new Map<string, HealthCheck>();
  private readonly readyz = new Map<string, HealthCheck>();
  private readonly metrics: ControllerMetrics;
  private elector: LeaderElector | undefined;
  private readonly metricsAuthorizer: TokenAuthorizer | undefined;
  private readonly reconcileListeners = new Set<(report: ReconcileReport) => void>();
  private started = false;
  private leading = false;
  /** Set when a graceful stop begins (not on lease loss). */
  private stopping = false;

  constructor(private readonly options: ManagerOptions) {
    // A bad bind address fails here, where it was written, not at start().
    if (serves(options.metricsBindAddress)) parseBindAddress(options.metricsBindAddress);
    if (serves(options.healthProbeBindAddress)) parseBindAddress(options.healthProbeBindAddress);
    this.registry = options.registry ?? new Registry();
    this.logger = options.logger ?? createLogger();
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
        ...(options.leaderElection?.identity ? { eventInstance: options.leaderElection.identity } : {}),
        ...(options.eventRecorder ? { eventRecorder: options.eventRecorder } : {}),
        logger: this.logger,
        registry: this.registry,
      });
    this.metrics = new ControllerMetrics(this.registry);
    if (options.defaultMetrics !== false) registerDefaultMetrics(this.registry);
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
    if (options.webhook) {
      const server = createWebhookServer({
        ...options.webhook,
        metrics: options.webhook.metrics ?? prometheusWebhookMetrics(this.registry),
        log: options.webhook.log ?? this.logger.child({ component: 'webhook' }),
      });
      this.webhookServer = server;
      // Every replica serves admissions and conversions, leader or not.
      this.add(server, { needLeaderElection: false });
      this.readyz.set('webhook', () => server.readyCheck());
    }

    this.container = (options.container ?? rootContainer).createChildContainer();
    this.container.registerInstance(TOKENS.Client, this.client);
    this.container.registerInstance(TOKENS.ApiReader, this.apiReader);
    this.container.registerInstance(TOKENS.Logger, this.logger);
    this.container.registerInstance(TOKENS.EventRecorderProvider, this.cluster.recorders);
    this.container.registerInstance(TOKENS.Scheme, this.scheme);
    this.container.registerInstance(TOKENS.Cache, this.cache);
    this.container.registerInstance(TOKENS.Cluster, this.cluster);
    this.container.registerInstance(TOKENS.Manager, this);

    this.healthz.set('ping', () => undefined);
    this.readyz.set('informers', () => {
      const informers = this.cache.informers();
      const unsynced = informers.filter((i) => !i.synced);
      const staleAfter = options.informerStaleAfterMs ?? 60_000;
      const now = Date.now();
      const stale = informers.filter((i) => i.synced && i.stats.some((st) => st.disconnectedSince > 0 && now - st.disconnectedSince > staleAfter));
      if (stale.length > 0) {
        throw new Error(
          `stale: ${stale
            .map((i) => {
              const since = Math.max(...i.stats.map((st) => st.disconnectedSince));
              const err = i.stats.map((st) => st.lastError).find((e) => e !== undefined);
              return `${i.kind} out of contact for ${Math.round((now - since) / 1000)} s${err ? ` (${describeError(err)})` : ''}`;
            })
            .join('; ')}`,
        );
      }
      // Objects the API server has that the cache could not take (a transform threw, say): the cache is incomplete.
      const incomplete = informers.filter((i) => (i.unprepared ?? 0) > 0);
      if (incomplete.length > 0) throw new Error(`incomplete: ${incomplete.map((i) => `${i.kind} lacks ${i.unprepared ?? 0} object(s) that could not be prepared`).join('; ')}`);
      if (unsynced.length > 0) {
        throw new Error(
          `not synced: ${unsynced
            .map((i) => {
              const err = i.stats.map((s) => s.lastError).find((e) => e !== undefined);
              return err ? `${i.kind} (${describeError(err)})` : i.kind;
            })
            .join('; ')}`,
        );
      }
    });
    this.readyz.set('controllers', () => {
      const waiting = this.controllerList.map((c) => c.status()).filter((s) => s.started && !s.synced);
      if (waiting.length > 0) throw new Error(waiting.map((s) => `${s.name} waiting for ${s.waitingFor.join(', ')}`).join('; '));
    });
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
    let instance: Reconciler;
    try {
      instance = reg.inject
        ? new reconcilerClass(...(reg.inject.map((t) => this.container.resolve(t) as unknown) as never[]))
        : this.container.resolve(reconcilerClass as unknown as InjectionToken<Reconciler>);
    } catch (cause) {
      throw new ManagerError('Resolution', `cannot construct ${reconcilerClass.name}: ${describeError(cause)}`, { cause });
    }
    if (typeof instance.reconcile !== 'function') throw new ManagerError('InvalidRegistration', `${reconcilerClass.name} has no reconcile method`);
    this.addController(reg, instance);
  }

  addController(definition: ControllerDefinition, reconciler: ReconcilerLike): void {
    if (this.started) throw new ManagerError('InvalidRegistration', 'controllers must be added before start');
    const name = nameOf(definition);
    if (this.controllerList.some((c) => c.name === name)) {
      throw new ManagerError('InvalidRegistration', `a controller named ${JSON.stringify(name)} is already registered; give one a unique name`);
    }
    const { group, kind } = forGroupKind(definition);
    const controller = new Controller(name, toReconciler(reconciler), sourcesOf(definition), definition.options ?? {}, {
      cache: this.cache,
      logger: this.logger,
      registry: this.registry,
      metrics: this.metrics,
      group,
      kind,
      forKind: definition.for,
      defaultSyncPeriodMs: this.options.syncPeriodMs ?? 36_000_000,
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
    this.controllerList.push(controller);
    this.definitions.push(definition);
    this.runnables.push({ run: (s) => controller.start(s), needLeaderElection: controller.needLeaderElection, name: `controller ${name}` });
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
    return webhookBuilder(kind, this.webhookServer, this.conversionEndpoint);
  }

  registerWebhook(webhookClass: AdmissionClass, registration?: WebhookRegistration): void {
    const reg = registration ?? webhookRegistrationOf(webhookClass);
    if (!reg) throw new ManagerError('InvalidRegistration', `${webhookClass.name} has no @webhook({ for }) decoration and no registration was given`);
    let instance: Record<string, unknown>;
    try {
      instance = (reg.inject
        ? new webhookClass(...(reg.inject.map((t) => this.container.resolve(t) as unknown) as never[]))
        : this.container.resolve(webhookClass as unknown as InjectionToken<object>)) as Record<string, unknown>;
    } catch (cause) {
      throw new ManagerError('Resolution', `cannot construct ${webhookClass.name}: ${describeError(cause)}`, { cause });
    }
    const validates = ['validateCreate', 'validateUpdate', 'validateDelete'].some((m) => typeof instance[m] === 'function');
    const defaults = typeof instance['default'] === 'function';
    if (!validates && !defaults) throw new ManagerError('InvalidRegistration', `${webhookClass.name} has no validateCreate, validateUpdate, validateDelete or default method`);
    const builder = this.webhook(reg.for).withOptions(reg.options ?? {});
    if (validates) builder.withValidator(instance);
    if (defaults) builder.withDefaulter(instance as unknown as Defaulter<KubeObject>);
    builder.complete();
  }

  add(runnable: Runnable | RunnableFn, options: { needLeaderElection?: boolean } = {}): void {
    if (this.started) throw new ManagerError('InvalidRegistration', 'runnables must be added before start');
    const run = typeof runnable === 'function' ? runnable : (s: AbortSignal) => runnable.start(s);
    this.runnables.push({ run, needLeaderElection: options.needLeaderElection ?? true, name: `runnable ${this.runnables.length}` });
  }

  addHealthzCheck(name: string, check: HealthCheck): void {
    this.healthz.set(name, check);
  }

  addReadyzCheck(name: string, check: HealthCheck): void {
    this.readyz.set(name, check);
  }

  recorderFor(name: string): EventRecorder {
    return this.cluster.recorderFor(name);
  }

  controllers(): readonly ControllerStatus[] {
    return this.controllerList.map((c) => c.status());
  }

  permissions(): PermissionRequirement[] {
    const le = this.options.leaderElection;
    const secure = this.options.secureMetrics;
    return requiredPermissions({
      scheme: this.scheme,
      controllers: this.definitions,
      ...(this.options.namespaces ? { namespaces: this.options.namespaces } : {}),
      ...(le ? { leaderElectionNamespace: le.namespace ?? inClusterNamespace() } : {}),
      metricsAuthorization: Boolean(secure && secure.authorization !== false && serves(this.options.metricsBindAddress)),
    });
  }

  isLeader(): boolean {
    return this.leading;
  }

  async start(signal?: AbortSignal): Promise<void> {
    if (this.started) throw new ManagerError('InvalidRegistration', 'a manager starts once');
    this.started = true;
    const log = this.logger;
    const gracefulMs = this.options.gracefulShutdownTimeoutMs ?? 30_000;
    const stop = new AbortController();
    const onExternal = (): void => stop.abort(signal?.reason);
    if (signal?.aborted) stop.abort(signal.reason);
    else signal?.addEventListener('abort', onExternal, { once: true });

    let failure: ManagerError | undefined;
    const fail = (err: ManagerError): void => {
      failure ??= err;
      stop.abort(err);
    };

    // 1. HTTP servers
    const closers: (() => Promise<void>)[] = [];
    try {
      if (serves(this.options.healthProbeBindAddress)) {
        const s = await startHealthServer(this.options.healthProbeBindAddress, this.healthz, this.readyz, { onError: (err) => log.error({ err }, 'health probe server error') });
        this.healthUrl = s.url;
        closers.push(s.close);
        log.info({ url: s.url }, 'health probes listening');
      }
      if (serves(this.options.metricsBindAddress)) {
        const secure = this.options.secureMetrics;
        const authorizer = this.metricsAuthorizer;
        const s = await startMetricsServer(this.options.metricsBindAddress, this.registry, {
          onError: (err) => log.error({ err }, 'metrics server error'),
          ...(secure ? { tls: { certificates: secure.certificates ?? selfSignedCertificate(), ...(secure.minTlsVersion ? { minVersion: secure.minTlsVersion } : {}) } } : {}),
          ...(authorizer ? { authorize: (request: { authorization?: string | undefined; path: string; verb: string }) => authorizer.authorize(request, stop.signal) } : {}),
        });
        this.metricsUrl = s.url;
        closers.push(s.close);
        log.info({ url: s.url }, 'metrics listening');
      }
    } catch (cause) {
      for (const close of closers) await close();
      throw new ManagerError('InvalidOptions', `cannot listen: ${describeError(cause)}`, { cause });
    }

    // 2. caches start lazily with the first read or controller; 3. runnables without leadership
    const running: { name: string; done: Promise<void>; stop: AbortController; leader: boolean }[] = [];
    const launch = (entry: RunnableEntry, parent: AbortSignal): void => {
      // Nothing starts after stop (an already aborted signal, leadership lost meanwhile).
      if (parent.aborted) return;
      const ac = new AbortController();
      const abort = (): void => ac.abort(parent.reason);
      parent.addEventListener('abort', abort, { once: true });
      // A runnable that throws instead of rejecting fails the same way (and does not escape start()).
      const done = new Promise<void>((resolve) => resolve(entry.run(ac.signal))).catch((err: unknown) => {
        if (ac.signal.aborted) return;
        log.error({ err, runnable: entry.name }, 'runnable failed; stopping the manager');
        fail(isManagerError(err) ? err : new ManagerError('RunnableFailed', `${entry.name} failed: ${describeError(err)}`, { cause: err }));
      });
      running.push({ name: entry.name, done, stop: ac, leader: entry.needLeaderElection });
    };
    for (const entry of this.runnables.filter((r) => !r.needLeaderElection)) launch(entry, stop.signal);

    // 4. leader election; 5. leader-only runnables
    const leaderOnly = this.runnables.filter((r) => r.needLeaderElection);
    let electing: Promise<unknown> = Promise.resolve();
    const le = this.options.leaderElection;
    if (le) {
      // Leader election has its own connections and no Retry-After waits (each attempt has its own
      // deadline): renewals never queue behind reconcile traffic or watches, as in controller-runtime.
      const leTransport = this.cluster.transport.fork({ maxRetries: 0 });
      closers.push(() => Promise.resolve(leTransport.close()));
      const elector = createLeaderElector({
        client: createClient({ transport: leTransport, scheme: this.scheme, mapper: this.mapper }),
        namespace: le.namespace ?? inClusterNamespace(),
        name: le.name,
        ...(le.identity ? { identity: le.identity } : {}),
        ...(le.leaseDurationMs ? { leaseDurationMs: le.leaseDurationMs } : {}),
        ...(le.renewDeadlineMs ? { renewDeadlineMs: le.renewDeadlineMs } : {}),
        ...(le.retryPeriodMs ? { retryPeriodMs: le.retryPeriodMs } : {}),
        releaseOnCancel: le.releaseOnCancel ?? false,
        metrics: leaderElectionMetrics(this.registry),
        onStartedLeading: (leaderSignal) => {
          this.leading = true;
          log.info({ identity: elector.identity, lease: `${elector.namespace}/${elector.name}` }, 'became leader; starting leader-only runnables');
          for (const entry of leaderOnly) launch(entry, leaderSignal);
        },
        // On a graceful stop the lease is released (releaseOnCancel) only after leader-only work has drained
        // (bounded by the graceful timeout), so two leaders never overlap. On a lost lease nothing is released
        // and nothing is awaited: the signal has aborted leader-only work and the manager exits at once.
        onStoppedLeading: async () => {
          this.leading = false;
          if (!this.stopping) return;
          await Promise.race([Promise.all(running.filter((r) => r.leader).map((r) => r.done)), delay(gracefulMs)]);
        },
        onNewLeader: (identity) => log.info({ leader: identity }, 'new leader observed'),
        onError: (err) => log.warn({ err: describeError(err) }, 'leader election error; retrying'),
      });
      this.elector = elector;
      this.readyz.set('leader-election', () => {
        const err = elector.check();
        if (err) throw err;
      });
      electing = elector.run(stop.signal).then((end) => {
        if (end === 'lost' && !stop.signal.aborted) {
          log.error('leader election lost; stopping leader-only work and exiting');
          fail(new ManagerError('LeaderElectionLost', `lost the lease ${elector.namespace}/${elector.name}`));
        }
      });
    } else {
      this.leading = true;
      for (const entry of leaderOnly) launch(entry, stop.signal);
    }
    log.info({ controllers: this.controllerList.map((c) => c.name) }, 'manager started');

    // Run until told to stop, or until something fails.
    await new Promise<void>((resolve) => {
      if (stop.signal.aborted) resolve();
      else stop.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    signal?.removeEventListener('abort', onExternal);
    const leaseLost = isManagerError(failure) && failure.reason === 'LeaderElectionLost';
    if (!leaseLost) this.stopping = true;
    log.info({ reason: failure?.message ?? 'stop requested' }, 'stopping');

    // Stop in reverse: leader-only work, then the others, within the graceful timeout;
    // after a lost lease, within the short lease-loss bound.
    const timeoutMs = leaseLost ? (this.options.leaseLossExitTimeoutMs ?? 2_000) : gracefulMs;
    let timedOut = false;
    const drain = async (): Promise<void> => {
      for (const r of running.filter((x) => x.leader)) r.stop.abort(stop.signal.reason);
      await Promise.all(running.filter((x) => x.leader).map((x) => x.done));
      for (const r of running.filter((x) => !x.leader)) r.stop.abort(stop.signal.reason);
      await Promise.all(running.map((x) => x.done));
      await electing;
    };
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      drain(),
      new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          timedOut = true;
          resolve();
        }, timeoutMs);
      }),
    ]);
    if (timer) clearTimeout(timer);
    this.leading = false;
    // Pending events get written (the recorder bounds it at 5 s), unless the lease was lost: then exit fast.
    await Promise.race([this.cluster.stop(), delay(leaseLost ? 1_000 : 6_000)]);
    for (const close of closers.reverse()) await close();
    log.info('manager stopped');
    if (failure) throw failure;
    if (timedOut) throw new ManagerError('ShutdownTimeout', `runnables did not stop within ${timeoutMs} ms`);
  }
}
