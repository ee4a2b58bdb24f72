/**
 * The manager's options: one object for `createManager`, every field
 * documented with its default; leader-election settings; how the metrics
 * server is secured.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { DependencyContainer } from 'tsyringe';
import type { CertificateSource, TokenAuthorizerOptions, WebhookServerOptions } from '@kubeloop/webhook';
import type { Cluster, ClusterOptions } from './cluster.js';
import type { LeadershipGate } from './leadership.js';
import type { TracingOptions } from './tracing/config.js';
import type { ProfilingOptions } from './server/profiles.js';

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

/**
 * Options for {@link createManager}. Every field is optional. The fields it
 * shares with {@link ClusterOptions} (kubeConfig, transport,
 * transportOptions, scheme, fieldOwner, namespaces, cache, uncached,
 * readYourWrites, eventRecorder) build the manager's cluster, with the
 * defaults documented there; none of them is used with `cluster`.
 */
export interface ManagerOptions
  extends Pick<ClusterOptions, 'kubeConfig' | 'transport' | 'transportOptions' | 'scheme' | 'fieldOwner' | 'namespaces' | 'cache' | 'uncached' | 'readYourWrites' | 'eventRecorder'> {
  /** A ready cluster to run on; then the options shared with ClusterOptions are not used. Default: one made from those options. */
  readonly cluster?: Cluster;
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
  /**
   * Serve the inspect endpoint on the metrics server: `GET /inspect` (every
   * controller's queue depth by priority, oldest wait, keys in flight and in
   * backoff with their last error redacted as logs are, suspected
   * self-triggers), `GET /inspect/<controller>` (with its recent
   * reconciles), `GET /inspect/<controller>/<namespace>/<name>` (a key's
   * triggers and last reconciles), and `POST /inspect/<controller>/pause` or
   * `/resume`. It is behind the same authentication and authorization as
   * /metrics: with `secureMetrics`, a caller needs `get` (and for pause and
   * resume `post`) on the path (`nonResourceURLs: ['/inspect', '/inspect/*']`);
   * on a metrics server without authorization it is served only when this is
   * `true`, and then pause and resume are refused (403) and reads are served
   * to whoever can reach /metrics (object names and redacted errors).
   * `kubeloop inspect <url>` prints it. Default: served when the metrics
   * server authenticates and authorizes requests (`secureMetrics`), not on a
   * plain one.
   */
  readonly inspect?: boolean;
  /** Where /healthz and /readyz listen, in the forms of `metricsBindAddress`. Default: no probe server. */
  readonly healthProbeBindAddress?: string;
  /**
   * Leader election on a Lease: shorthand for `leadership:
   * leaseElection(leaderElection)`. Default: off (every replica runs every
   * controller).
   */
  readonly leaderElection?: LeaderElectionConfig;
  /**
   * The gate that says when leader-only runnables (controllers by default)
   * run: `leaseElection(config)`, `alwaysLeader()`, or your own
   * `LeadershipGate`. Give this or `leaderElection`, not both. Default:
   * `leaderElection`'s Lease when set, else `alwaysLeader()`.
   *
   * @example
   * ```ts
   * createManager({ leadership: leaseElection({ name: 'harddisk-operator' }) });
   * ```
   */
  readonly leadership?: LeadershipGate;
  /**
   * While this replica does not lead, its leader-only controllers start
   * their sources (informers, cache, queue) but no workers, so that taking
   * over needs no list and no sync: the queue already holds every key and
   * what changed since. A controller's own `warmStandby` option overrides
   * this. `/readyz` says `warm standby` or `standby`.
   * Default: true. A warm standby holds what the leader holds (its caches'
   * memory: at 10,000 ConfigMaps 14.5 MiB more heap and 52 MiB more RSS than
   * a cold one; one list and watch per kind on the API server); a standby
   * must be sized to lead anyway, since it takes over without a restart, and
   * warm it reconciles 1 ms after it leads instead of 2.3 s (docs/benchmarks.md,
   * failover).
   * controller-runtime's `EnableWarmup` is off by default; Java Operator
   * SDK warms by default. `false` keeps standbys idle (no informer, no
   * watch) until they lead.
   */
  readonly warmStandby?: boolean;
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
  /**
   * Let V8 give a burst's memory back to the operating system once the
   * process goes quiet. V8's memory reducer does that, but on Node 24 and
   * later it never sees a quiet process unless something allocates on the
   * embedder's C++ heap; while running, the manager compiles a
   * one-character `vm.Script` once a minute so that it does (see
   * docs/benchmarks.md, "Returning the burst's memory": 77 MiB to 71 MiB for
   * the example holding 1,000 HardDisks it had just reconciled). Process-wide;
   * turn it off only when something else in the process already allocates
   * there. Default: true.
   */
  readonly releaseIdleMemory?: boolean;
  /**
   * `/readyz` fails when an informer has been out of contact with the API
   * server (failed lists or watches, no watch open) for longer than this.
   * Default: 60 000 ms.
   */
  readonly informerStaleAfterMs?: number;
  /**
   * How often, while a controller waits for a CRD (its `for` kind's or a
   * watched kind's: not installed yet, or deleted under the running
   * manager), discovery is asked whether the kind is served again. Every
   * waiting kind is asked about at the same moment, so this costs at most
   * one discovery request (`GET /apis`) per interval however many kinds
   * wait. Default: 10 000 ms.
   */
  readonly crdPollIntervalMs?: number;
  /**
   * Every controller re-enqueues every cached object of its `for` kind this
   * often (jittered ±10 %, at low priority) unless its own options say
   * otherwise; 0 turns it off. Default: 36 000 000 (10 hours, as
   * controller-runtime's `SyncPeriod`).
   */
  readonly syncPeriodMs?: number;
  /**
   * OpenTelemetry tracing (docs/tracing.md): a span per reconcile, per API
   * request, per webhook request served (continuing the API server's trace)
   * and per leadership change, exported over OTLP/HTTP; W3C trace context on
   * every request to the API server; `trace_id` and `span_id` on the log
   * lines of a reconcile and of a webhook request. `true` or options turn it
   * on; `false` keeps it off whatever the environment says. Default: off,
   * unless the standard variables ask for it (`OTEL_EXPORTER_OTLP_ENDPOINT`,
   * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_TRACES_EXPORTER=otlp`) or the
   * process registered an OpenTelemetry SDK itself; `OTEL_SDK_DISABLED=true`
   * and `OTEL_TRACES_EXPORTER=none` keep it off. While off, no OpenTelemetry
   * module is loaded.
   *
   * @example
   * ```ts
   * createManager({ tracing: { endpoint: 'http://otel-collector.observability:4318/v1/traces', sampleRatio: 0.1 } });
   * ```
   */
  readonly tracing?: boolean | TracingOptions;
  /**
   * Profiles on demand from the metrics server, behind its authentication
   * and authorization (so `secureMetrics` with authorization is required):
   * `GET /debug/profile/cpu?seconds=30` (a `.cpuprofile` for Chrome DevTools
   * or speedscope), `/debug/profile/heap` (a `.heapsnapshot`; the process
   * stops while V8 writes it), `/debug/profile/heap-sampling?seconds=30` (a
   * `.heapprofile`). The caller's token needs `get` on the path as a
   * non-resource URL (`nonResourceURLs: ['/debug/profile/*']`). One profile
   * at a time (409 while one is taken); `seconds` at most
   * `maxDurationMs`. `kubeloop profile <url> --cpu 30s -o x.cpuprofile`
   * fetches one. Default: off (404).
   *
   * @example
   * ```ts
   * createManager({ metricsBindAddress: ':8443', secureMetrics: {}, profiling: true });
   * ```
   */
  readonly profiling?: boolean | ProfilingOptions;
}

/** Whether a bind address asks for a server: `"0"` and `""` turn it off, as controller-runtime's `"0"`. */
export function serves(address: string | undefined): address is string {
  return address !== undefined && address !== '' && address !== '0';
}
