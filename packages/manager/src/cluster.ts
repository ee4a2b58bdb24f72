/**
 * A cluster: everything a controller needs to talk to one API server, made
 * from one KubeConfig (or one transport): the client (cached reads, live
 * writes), a live `apiReader`, the informer cache, the REST mapper, the
 * scheme and event recorders. As controller-runtime's `pkg/cluster`: a
 * manager is a cluster plus runnables, leader election and servers, and
 * more clusters (multi-cluster controllers) build on the same seam.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { createInformerCache, isNotServed } from '@kubeloop/cache';
import type { InformerCache, InformerCacheOptions, Namespaces } from '@kubeloop/cache';
import { createClient, createTransport, loadKubeConfig, transportDiscovery } from '@kubeloop/client';
import type { ApiWarning, CachedClient, Client, KubeConfigLike, Transport, TransportOptions, TypeRef } from '@kubeloop/client';
import type { ReadYourWritesOptions } from '@kubeloop/client/internal';
import { createDynamicRESTMapper } from '@kubeloop/mapper';
import type { RESTMapper } from '@kubeloop/mapper';
import { builtinScheme } from '@kubeloop/scheme';
import type { ResourceDescriptor, Scheme } from '@kubeloop/scheme';
import { describeError } from './errors.js';
import { createEventRecorderProvider } from './events/recorder.js';
import type { EventRecorder, EventRecorderProvider, EventRecorderTuning } from './events/recorder.js';
import { createLogger } from './log/logging.js';
import { restClientMetrics } from './metrics/controller-metrics.js';
import { registerInformerMetrics } from './metrics/informer-metrics.js';
import { readYourWritesMetrics, warningMetrics } from './metrics/client-metrics.js';
import { validateClusterOptions } from './options-validation.js';
import { OwnWrites } from './controller/own-writes.js';

/** Each cluster client's own writes, for own-write echo detection (controllers find them by their client). */
const ownWritesByClient = new WeakMap<object, OwnWrites>();

/** The own writes of a client made by {@link createCluster}; undefined for any other client. */
export function ownWritesOf(client: object): OwnWrites | undefined {
  return ownWritesByClient.get(client);
}

/** Options for {@link createCluster}. Every field is optional. */
export interface ClusterOptions {
  /** The cluster's name in a fleet (`@kubeloop/manager/fleet`): a `cluster` field on its log lines and a `cluster` label on its informer metrics. Default: none (a manager's own cluster). */
  readonly name?: string;
  /** Where to connect. Default: KUBECONFIG, ~/.kube/config, or in-cluster (ignored when `transport` is given). */
  readonly kubeConfig?: KubeConfigLike;
  /** A ready transport to use instead of one made from `kubeConfig` (a test double such as `@kubeloop/testing`'s fake API, or a shared one). Default: made from `kubeConfig`. */
  readonly transport?: Transport;
  /** Tuning of the transport made here (rate limits, timeouts). Default: the transport's defaults. */
  readonly transportOptions?: TransportOptions;
  /** The kinds the client types. Default: `builtinScheme`. */
  readonly scheme?: Scheme;
  /** Field manager for writes and server-side apply. Default: none (apply then needs a per-call fieldManager). */
  readonly fieldOwner?: string;
  /**
   * Namespaces the cache covers: names, or names with settings of their own
   * (label and field selectors, a transform: controller-runtime's
   * `cache.Options.DefaultNamespaces`; see `@kubeloop/cache`'s
   * `NamespaceOptions`). Namespaced Roles are generated for them. Default: all.
   *
   * @example
   * ```ts
   * const cluster = createCluster({ namespaces: { payments: { labelSelector: 'app.kubernetes.io/managed-by=payments-operator' }, ops: {} } });
   * ```
   */
  readonly namespaces?: Namespaces;
  /** More cache options (per-kind selectors, transforms, reflector tuning). */
  readonly cache?: Omit<InformerCacheOptions, 'client' | 'namespaces'>;
  /** Kinds the client never reads from the cache (Secrets, say). Default: none. */
  readonly uncached?: readonly (ResourceDescriptor | TypeRef)[];
  /**
   * Read-your-writes for the client's cached reads: after a write through
   * `client` returns resourceVersion r, a cached get or list of that object
   * waits for the cache to see r (up to `timeoutMs`, default 2000), then
   * reads live; counted in `kubeloop_client_read_your_writes_total`. `false`
   * turns it off. Default: on (its cost: docs/benchmarks.md, operator).
   */
  readonly readYourWrites?: false | ReadYourWritesOptions;
  /** The logger for cache errors and event-recorder failures. Default: pino at `KUBELOOP_LOG_LEVEL` / `LOG_LEVEL` / info. */
  readonly logger?: Logger;
  /** Where `rest_client_requests_total` and the informer metrics go. Default: none. */
  readonly registry?: Registry;
  /** `reportingInstance` of recorded events. Default: the host name. */
  readonly eventInstance?: string;
  /** Tuning of the event recorders (queue size, spam filter, series interval, retries). Default: client-go's; see `EventRecorderTuning`. */
  readonly eventRecorder?: EventRecorderTuning;
}

/**
 * One API server, as a controller sees it.
 *
 * @example
 * ```ts
 * const cluster = createCluster({ kubeConfig, scheme, fieldOwner: 'my-operator' });
 * const disk = await cluster.client.get(HardDisk, { namespace: 'default', name: 'disk-1' }); // starts the HardDisk informer
 * await cluster.stop();
 * ```
 */
export interface Cluster {
  /** Reads from the cache (unless the kind is uncached), writes to the API server. Reads from the cache are deeply read-only. */
  readonly client: CachedClient;
  /** A client whose reads always go to the API server (mutable results). */
  readonly apiReader: Client;
  readonly cache: InformerCache;
  readonly scheme: Scheme;
  readonly mapper: RESTMapper;
  /** The transport of the client, `apiReader`, cache and mapper. Event recorders write over a second one made from the same KubeConfig (this one when the cluster was given a transport). */
  readonly transport: Transport;
  /** Makes event recorders named after their controller. */
  readonly recorders: EventRecorderProvider;
  /** An event recorder reporting as `name`. */
  recorderFor(name: string): EventRecorder;
  /** Stop the informers, write pending events (within the recorder's `stopTimeoutMs`) and close idle connections. Idempotent. */
  stop(): Promise<void>;
}

/**
 * The API server's warnings, as controller-runtime's deduplicating warning
 * logger: each distinct text logged once (at warn, with the request that
 * drew it first), every one counted, and handed to the caller's own
 * `transportOptions.onWarning` too.
 */
function warningHandler(logger: Logger, registry: Registry | undefined, own: ((w: ApiWarning) => void) | undefined): (w: ApiWarning) => void {
  const count = registry ? warningMetrics(registry) : undefined;
  const seen = new Set<string>();
  return (w) => {
    count?.(w);
    if (!seen.has(w.text)) {
      // Bounded: a server that put a fresh id in every warning must not grow this forever.
      if (seen.size >= 1024) seen.clear();
      seen.add(w.text);
      logger.warn({ warning: w.text, code: w.code, method: w.method, path: w.path }, 'the API server warned (logged once per text)');
    }
    own?.(w);
  };
}

/**
 * Create a cluster: client, apiReader, cache, mapper and event recorders
 * over one transport. Nothing starts until used: informers start on the
 * first cached read or controller.
 *
 * @example
 * ```ts
 * import { createCluster } from '@kubeloop/manager';
 * const cluster = createCluster({ fieldOwner: 'reporter' });
 * const nodes = await cluster.client.list(Node);
 * ```
 */
export function createCluster(options: ClusterOptions = {}): Cluster {
  validateClusterOptions(options);
  const baseLogger = options.logger ?? createLogger();
  const logger = options.name === undefined ? baseLogger : baseLogger.child({ cluster: options.name });
  const onRequest = options.registry ? restClientMetrics(options.registry) : undefined;
  const transportOptions = { ...options.transportOptions, ...(onRequest ? { onRequest } : {}), onWarning: warningHandler(logger, options.registry, options.transportOptions?.onWarning) };
  // Event writes get a transport of their own (as client-go's event broadcaster gets a client of its
  // own): its own keep-alive pool and, when rate limiting is on, its own token bucket. A burst of events
  // then never waits behind reconcile traffic or behind watches holding the main pool's sockets, and
  // never spends the reconciles' request budget. A transport given ready-made (a test double, one shared
  // on purpose) is shared, since there is no KubeConfig to make a second one from.
  let transport: Transport;
  let eventTransport: Transport;
  if (options.transport) {
    transport = eventTransport = options.transport;
  } else {
    const kubeConfig = options.kubeConfig ?? loadKubeConfig();
    transport = createTransport(kubeConfig, transportOptions);
    eventTransport = createTransport(kubeConfig, transportOptions);
  }
  const scheme = options.scheme ?? builtinScheme;
  const mapper = createDynamicRESTMapper(transportDiscovery(transport));
  const base = { transport, scheme, mapper, ...(options.fieldOwner ? { fieldOwner: options.fieldOwner } : {}) };
  const apiReader = createClient(base);
  const cache = createInformerCache({
    ...options.cache,
    client: apiReader,
    ...(options.namespaces ? { namespaces: options.namespaces } : {}),
    onError: (kind, err, phase) => {
      // Told once per outage: the kind's CRD is not installed (yet), or was deleted.
      if (isNotServed(err)) logger.info({ kind, phase, err: describeError(err) }, 'kind not served by the API server (its CRD is not installed, or was deleted); waiting for it');
      else logger.warn({ kind, phase, err: describeError(err) }, 'informer error; retrying');
      options.cache?.onError?.(kind, err, phase);
    },
  });
  const onRead = options.registry ? readYourWritesMetrics(options.registry) : undefined;
  const ryw = options.readYourWrites;
  const readYourWrites =
    ryw === false
      ? false
      : {
          ...ryw,
          ...(onRead || ryw?.onRead
            ? {
                onRead: (info: Parameters<NonNullable<ReadYourWritesOptions['onRead']>>[0]) => {
                  onRead?.(info);
                  ryw?.onRead?.(info);
                },
              }
            : {}),
        };
  const ownWrites = new OwnWrites();
  const client = createClient({ ...base, cache, readYourWrites, onWrite: (kind, key, answer) => ownWrites.wrote(kind, key, answer), ...(options.uncached ? { uncached: options.uncached } : {}) });
  ownWritesByClient.set(client, ownWrites);
  const unregisterMetrics = options.registry ? registerInformerMetrics(options.registry, cache, options.name) : undefined;
  const eventClient = eventTransport === transport ? apiReader : createClient({ ...base, transport: eventTransport });
  const recorders = createEventRecorderProvider({
    ...options.eventRecorder,
    client: eventClient,
    logger,
    instance: options.eventInstance ?? hostname(),
    ...(options.registry ? { registry: options.registry } : {}),
  });
  let stopping: Promise<void> | undefined;
  return {
    client,
    apiReader,
    cache,
    scheme,
    mapper,
    transport,
    recorders,
    recorderFor: (name) => recorders.recorderFor(name),
    stop: () =>
      (stopping ??= (async () => {
        await cache.stop();
        unregisterMetrics?.();
        await recorders.stop();
        if (eventTransport !== transport) eventTransport.close();
        transport.close();
      })()),
  };
}
