/**
 * One client for any kind: the scheme names the kind, the mapper turns it
 * into a resource and scope, and that gives the REST path. Reads may be
 * routed to a cache Reader; writes always go to the API server.
 */
import { createDynamicRESTMapper, isMapperError } from '@kubeloop/mapper';
import type { RESTMapper, RESTMapping } from '@kubeloop/mapper';
import { builtinScheme, parseApiVersion, parseJson, stringifyJson } from '@kubeloop/scheme';
import type { KubeObject, ResourceDescriptor, Scheme } from '@kubeloop/scheme';
import { transportDiscovery } from './discovery.js';
import { forEachBounded } from './internal/bounded.js';
import { currentTracer, stampObject, stampPatchBody } from './tracing.js';
import { ClientError, isClientError, isConflict, isNotFound } from './errors.js';
import { isMetadataRef } from './kinds.js';
import type { AnyKubeObject, DeepReadonly, KindRef, ListFor, ObjectFor, ObjectKey, Stored, TypeRef, WithKind } from './kinds.js';
import { renderSelector, renderShard, shardOption, writeQuery } from './options.js';
import type { ApplyOptions, CallOptions, DeleteAllOfOptions, DeleteOptions, GetOptions, ListOptions, WatchOptions, WriteOptions } from './options.js';
import { patchContentType } from './patch.js';
import { matchesShard, renderShardSelector, toShardSelector } from './shard.js';
import type { Patch } from './patch.js';
import type { KubeConfigLike } from './kubeconfig.js';
import { createTransport, retryAfterSeconds } from './transport.js';
import type { Query, Transport, TransportOptions } from './transport.js';
import { DEFAULT_ERROR_BODY_TIMEOUT, readErrorBody, watchEvents } from './watch.js';
import { overlayList, peekUid, tracksResourceVersions, WriteTracker } from './read-your-writes.js';
import type { ReadYourWritesOptions } from './read-your-writes.js';
import { validateClientOptions } from './options-validation.js';
import type { WatchEvent } from './watch.js';

/** The per-call request options a call passes on to the transport. */
function call(options: CallOptions | undefined): { signal?: AbortSignal; timeoutMs?: number } {
  return {
    ...(options?.signal ? { signal: options.signal } : {}),
    ...(options?.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  };
}

const META_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
const META_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
/** deleteAllOf's one-by-one deletes of a shard (a server that ignored the selector): this many at once. */
const SHARD_DELETES_IN_FLIGHT = 8;
/** The note of a read no one traces. */
const ignore = (): void => undefined;

/** Reads: the interface a cache implements and the cached-read router routes. */
export interface Reader {
  /** Read one object. Rejects with NotFound when it does not exist. */
  get<K extends KindRef>(kind: K, key: ObjectKey, options?: GetOptions): Promise<ObjectFor<K>>;
  /** List objects (all pages, unless `limit` asks for one page). */
  list<K extends KindRef>(kind: K, options?: ListOptions): Promise<ListFor<K>>;
}

/**
 * Reads served from a shared cache: every object deeply read-only (see
 * `DeepReadonly`; take a `mutableCopy` to change one).
 */
export interface CachedReader {
  /** Read one object. Rejects with NotFound when it does not exist. */
  get<K extends KindRef>(kind: K, key: ObjectKey, options?: GetOptions): Promise<DeepReadonly<ObjectFor<K>>>;
  /** List objects (all pages, unless `limit` asks for one page). */
  list<K extends KindRef>(kind: K, options?: ListOptions): Promise<DeepReadonly<ListFor<K>>>;
}

/** Writes: always sent to the API server. They accept objects read from the cache as they are. */
export interface Writer {
  /** Create an object; returns it as stored. */
  create<T extends AnyKubeObject>(obj: WithKind<T>, options?: WriteOptions): Promise<Stored<T>>;
  /** Replace an object (optimistic concurrency through metadata.resourceVersion). */
  update<T extends AnyKubeObject>(obj: WithKind<T>, options?: WriteOptions): Promise<Stored<T>>;
  /** Patch the object `obj` names. */
  patch<T extends AnyKubeObject>(obj: WithKind<T>, patch: Patch, options?: WriteOptions): Promise<Stored<T>>;
  /** Patch by kind and key (also the metadata-only form). */
  patch<K extends KindRef>(kind: K, key: ObjectKey, patch: Patch, options?: WriteOptions): Promise<ObjectFor<K>>;
  /** Server-side apply `obj` (an apply configuration) as the field owner. */
  apply<T extends AnyKubeObject>(obj: WithKind<T>, options?: ApplyOptions): Promise<Stored<T>>;
  /** Delete the object `obj` names. */
  delete(obj: WithKind<AnyKubeObject>, options?: DeleteOptions): Promise<void>;
  /** Delete by kind and key. */
  delete(kind: KindRef, key: ObjectKey, options?: DeleteOptions): Promise<void>;
  /**
   * Delete every object of a kind matching the selectors in a namespace;
   * with `shardSelector`, only those of a shard (see
   * {@link DeleteAllOfOptions.shardSelector}).
   *
   * @example
   * ```ts
   * await client.deleteAllOf(ConfigMap, { namespace: 'default', labelSelector: { app: 'web' } });
   * // Only the ConfigMaps whose uid hashes into the lower half of the hash space:
   * await client.deleteAllOf(ConfigMap, { namespace: 'default', shardSelector: { field: 'object.metadata.uid', ranges: [{ start: 0n, end: 1n << 63n }] } });
   * ```
   */
  deleteAllOf(kind: KindRef, options?: DeleteAllOfOptions): Promise<void>;
}

/** A subresource (status, scale, eviction, ...) of objects. */
export interface SubResourceClient {
  /** GET the subresource (for `scale`, an autoscaling/v1 Scale). */
  get<R = unknown>(kind: KindRef, key: ObjectKey, options?: CallOptions): Promise<R>;
  /** POST a body to the subresource of `obj` (for `eviction`, a policy/v1 Eviction). */
  create<R = unknown>(obj: WithKind<AnyKubeObject>, body: object, options?: WriteOptions): Promise<R>;
  /** PUT: for `status`, the object itself; otherwise `body`. */
  update<T extends AnyKubeObject>(obj: WithKind<T>, options?: WriteOptions & { body?: object }): Promise<Stored<T>>;
  /** PATCH the subresource of `obj`. */
  patch<T extends AnyKubeObject>(obj: WithKind<T>, patch: Patch, options?: WriteOptions): Promise<Stored<T>>;
  /** Server-side apply to the subresource (status apply). */
  apply<T extends AnyKubeObject>(obj: WithKind<T>, options?: ApplyOptions): Promise<Stored<T>>;
}

/**
 * The client: reads (possibly cached), writes, watches, subresources.
 *
 * @example
 * ```ts
 * const client = createClient({ kubeConfig });
 * const cm = await client.get(ConfigMap, { namespace: 'default', name: 'settings' });
 * await client.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'default' }, data: { a: '1' } }, { fieldManager: 'my-operator' });
 * ```
 */
export interface Client extends Reader, Writer {
  readonly scheme: Scheme;
  readonly mapper: RESTMapper;
  readonly transport: Transport;
  /** Reads that always go to the API server, whatever the cache. */
  readonly apiReader: Reader;
  /** Every object of a kind across pages of `pageSize` (default 500), as one async stream. Always live. */
  listAll<K extends KindRef>(kind: K, options?: ListOptions & { pageSize?: number }): AsyncIterable<ObjectFor<K>>;
  /** Watch a kind from a resourceVersion. Always live. */
  watch<K extends KindRef>(kind: K, options?: WatchOptions): Promise<AsyncIterableIterator<WatchEvent<ObjectFor<K>>>>;
  /** The `status` subresource. */
  status(): SubResourceClient;
  /** Any named subresource: `scale`, `eviction`, `ephemeralcontainers`, ... */
  subResource(name: string): SubResourceClient;
}

/**
 * A client whose reads come from a cache (`createClient({ cache, ... })`,
 * the manager's `client`): reads are deeply read-only, writes and
 * `apiReader` as {@link Client}.
 *
 * @example
 * ```ts
 * const disk = await manager.client.get(HardDisk, key);
 * // disk.status = {}               // does not compile: cached objects are shared
 * await manager.client.status().patch(disk, mergePatch({ status: { phase: 'Bound' } }));
 * ```
 */
export interface CachedClient extends Omit<Client, 'get' | 'list'>, CachedReader {}

/** Either client: what helpers that read and write accept. */
export type AnyClient = Client | CachedClient;

/** Options for {@link createClient}. */
export interface ClientOptions {
  /** Where to connect: a RestConfig (`loadKubeConfig()`) or a `@kubernetes/client-node` KubeConfig. Required unless `transport` is given. */
  readonly kubeConfig?: KubeConfigLike;
  /** A transport to share (its KubeConfig wins). Default: one made from `kubeConfig` and `transportOptions`. */
  readonly transport?: Transport;
  /** Rate limits, timeouts, metrics hook of the transport made here. */
  readonly transportOptions?: TransportOptions;
  /** The kinds this client types. It is never changed. Default: `builtinScheme`. */
  readonly scheme?: Scheme;
  /** Maps kinds to resources. Default: a dynamic mapper over this client's transport. */
  readonly mapper?: RESTMapper;
  /** Default field manager for writes and the field owner of `apply` (required by apply when not given per call). */
  readonly fieldOwner?: string;
  /**
   * A cache to serve reads (the informer cache). Default: none, every read is live.
   */
  readonly cache?: Reader;
  /** Kinds never read from the cache (Secrets, say). Default: none. */
  readonly uncached?: readonly (ResourceDescriptor | TypeRef)[];
  /** Whether unstructured reads (kinds the scheme does not type) use the cache. Default: false. */
  readonly cacheUnstructured?: boolean;
  /**
   * Read-your-writes for cached reads, when the cache can tell how far it
   * has caught up (the informer cache can): once a write through this
   * client returns resourceVersion r, a cached get or list covering that
   * object waits until the cache has seen r, up to `timeoutMs` (default
   * 2000). Past it that stream of the cache counts as behind until it has
   * seen r: meanwhile a get of what it has not seen answers at once with the
   * object the write returned (NotFound after a delete), a list from the
   * cache with the written objects laid over it, and no read waits again.
   * `false` turns it off: cached reads may then return an object from
   * before this client's last write of it.
   * Default: on. The cost, measured: docs/benchmarks.md (operator).
   */
  readonly readYourWrites?: false | ReadYourWritesOptions;
  /**
   * Told of every write's answer (not dry runs): the kind, the object's
   * key and what the server returned (the object, or a delete's Status).
   * The manager uses it to tell an informer event that is only the echo of
   * a controller's own write. It must not throw or block (a throw is
   * ignored). Default: none.
   */
  readonly onWrite?: (kind: KindRef, key: ObjectKey, answer: unknown) => void;
}

interface Resolved {
  readonly mapping: RESTMapping;
  readonly metadataOnly: boolean;
  /** The kind is typed by the scheme. */
  readonly typed: boolean;
  readonly label: string;
}

/**
 * Create a client.
 *
 * @example
 * ```ts
 * import { createClient, loadKubeConfig } from '@kubeloop/client';
 * import { builtinScheme, createScheme, Pod } from '@kubeloop/scheme';
 *
 * const client = createClient({ kubeConfig: loadKubeConfig(), scheme: createScheme(builtinScheme, HardDisk), fieldOwner: 'harddisk-operator' });
 * const pod = await client.get(Pod, { namespace: 'default', name: 'web' }); // typed Pod
 * ```
 */
export function createClient(options: ClientOptions & { readonly cache: Reader }): CachedClient;
export function createClient(options: ClientOptions): Client;
export function createClient(options: ClientOptions): Client | CachedClient {
  validateClientOptions(options);
  const transport =
    options.transport ??
    (options.kubeConfig
      ? createTransport(options.kubeConfig, options.transportOptions)
      : (() => {
          throw new ClientError('InvalidConfig', 'createClient needs a kubeConfig or a transport');
        })());
  const mapper = options.mapper ?? createDynamicRESTMapper(transportDiscovery(transport));
  return new KubeClient(transport, options.scheme ?? builtinScheme, mapper, options);
}

function kindOf(ref: KindRef): ResourceDescriptor | TypeRef {
  return isMetadataRef(ref) ? ref.of : ref;
}

function sameKind(a: ResourceDescriptor | TypeRef, b: ResourceDescriptor | TypeRef): boolean {
  return a.apiVersion === b.apiVersion && a.kind === b.kind;
}

function segment(value: string, what: string): string {
  if (value === '' || value.includes('/') || value === '.' || value === '..') {
    throw new ClientError('InvalidRequest', `${what} ${JSON.stringify(value)} is not a valid path segment`);
  }
  return encodeURIComponent(value);
}

class KubeClient implements Client {
  readonly apiReader: Reader;
  private readonly cache: Reader | undefined;
  private readonly uncached: readonly (ResourceDescriptor | TypeRef)[];
  private readonly cacheUnstructured: boolean;
  private readonly fieldOwner: string | undefined;
  private readonly writes: WriteTracker | undefined;
  private readonly onWrite: ((kind: KindRef, key: ObjectKey, answer: unknown) => void) | undefined;

  constructor(
    readonly transport: Transport,
    readonly scheme: Scheme,
    readonly mapper: RESTMapper,
    options: ClientOptions,
  ) {
    this.cache = options.cache;
    this.uncached = options.uncached ?? [];
    this.cacheUnstructured = options.cacheUnstructured ?? false;
    this.fieldOwner = options.fieldOwner;
    this.onWrite = options.onWrite;
    this.apiReader = { get: (k, key, o) => this.liveGet(k, key, o), list: (k, o) => this.liveList(k, o) };
    const cache = this.cache;
    this.writes =
      cache && options.readYourWrites !== false && tracksResourceVersions(cache)
        ? new WriteTracker(cache, (kind, key) => peekUid(() => cache.get(kind, key)), options.readYourWrites ?? {})
        : undefined;
  }

  /**
   * Remember a write's answer for read-your-writes (dry runs change nothing;
   * uncached kinds are never read from the cache; a typed read may follow an
   * unstructured write, so the form does not matter).
   */
  private wrote<R>(kind: KindRef, key: ObjectKey | undefined, options: { dryRun?: boolean } | undefined, answer: R, deleted = false): R {
    if (options?.dryRun) return answer;
    const tracked = this.writes !== undefined && !this.uncached.some((u) => sameKind(u, kindOf(kind)));
    if (!tracked && !this.onWrite) return answer;
    const meta = (answer as { metadata?: { name?: unknown; namespace?: unknown } } | undefined)?.metadata;
    const k = key ?? (typeof meta?.name === 'string' ? { name: meta.name, ...(typeof meta.namespace === 'string' ? { namespace: meta.namespace } : {}) } : undefined);
    if (!k) return answer;
    if (tracked) this.writes.wrote(kind, k, answer, deleted);
    if (this.onWrite) {
      try {
        this.onWrite(kind, k, answer);
      } catch {
        /* a listener's throw must not fail a write that was done */
      }
    }
    return answer;
  }

  // --- resolution ----------------------------------------------------------

  private isTyped(kind: ResourceDescriptor | TypeRef): boolean {
    return 'group' in kind && typeof kind.group === 'string' && this.scheme.has(kind);
  }

  private async resolve(ref: KindRef, signal?: AbortSignal): Promise<Resolved> {
    signal?.throwIfAborted();
    const kind = kindOf(ref);
    if (!kind || typeof kind.apiVersion !== 'string' || typeof kind.kind !== 'string' || !kind.kind) {
      throw new ClientError('InvalidRequest', 'the kind needs an apiVersion and a kind');
    }
    let gv;
    try {
      gv = parseApiVersion(kind.apiVersion);
    } catch (cause) {
      throw new ClientError('InvalidRequest', `malformed apiVersion ${JSON.stringify(kind.apiVersion)}`, { cause });
    }
    let mapping: RESTMapping;
    try {
      mapping = await this.mapper.restMapping({ group: gv.group, kind: kind.kind }, gv.version);
    } catch (err) {
      // A discovery request that failed for a reason of its own (401, 403, a reset, a timeout) is that ClientError, so isUnauthorized() and friends see it.
      if (isMapperError(err) && err.reason === 'DiscoveryFailed' && isClientError(err.cause)) throw err.cause;
      throw err;
    }
    return { mapping, metadataOnly: isMetadataRef(ref), typed: this.isTyped(kind), label: `${kind.kind}.${kind.apiVersion}` };
  }

  private async resolveObject(obj: AnyKubeObject, signal?: AbortSignal): Promise<Resolved> {
    if (!obj || typeof obj !== 'object' || typeof obj.apiVersion !== 'string' || typeof obj.kind !== 'string') {
      throw new ClientError('InvalidRequest', 'the object needs apiVersion and kind');
    }
    return this.resolve({ apiVersion: obj.apiVersion, kind: obj.kind }, signal);
  }

  private path(r: Resolved, namespace: string | undefined, name?: string, subresource?: string, op = 'this call'): string {
    const { group, version, resource } = r.mapping.resource;
    const namespaced = r.mapping.scope === 'Namespaced';
    if (!namespaced && namespace) {
      throw new ClientError('InvalidRequest', `${r.label} is cluster-scoped: ${op} must not name a namespace (got ${JSON.stringify(namespace)})`);
    }
    if (namespaced && name !== undefined && !namespace) {
      throw new ClientError('InvalidRequest', `${r.label} is namespaced: ${op} needs a namespace`);
    }
    let path = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
    if (namespaced && namespace) path += `/namespaces/${segment(namespace, 'namespace')}`;
    path += `/${resource}`;
    if (name !== undefined) path += `/${segment(name, 'name')}`;
    if (subresource) path += `/${segment(subresource, 'subresource')}`;
    return path;
  }

  private async send<R>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, opts: { query?: Query; body?: unknown; contentType?: string; accept?: string; signal?: AbortSignal; timeoutMs?: number }): Promise<R> {
    const res = await this.transport.request({
      method,
      path,
      ...(opts.query ? { query: opts.query } : {}),
      ...(opts.accept ? { accept: opts.accept } : {}),
      ...(opts.contentType ? { contentType: opts.contentType } : {}),
      ...(opts.body === undefined ? {} : { body: typeof opts.body === 'string' ? opts.body : stringifyJson(opts.body) }),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
    });
    if (res.status < 200 || res.status >= 300) {
      throw ClientError.fromResponse(method, path, res.status, res.body, retryAfterSeconds(res.headers));
    }
    if (res.body === '') return undefined as R;
    try {
      return parseJson(res.body) as R;
    } catch (cause) {
      throw new ClientError('Decode', `${method} ${path}: the answer is not JSON: ${res.body.slice(0, 200)}`, { code: res.status, cause });
    }
  }

  // --- reads ---------------------------------------------------------------

  private routeToCache(ref: KindRef): boolean {
    if (!this.cache) return false;
    const kind = kindOf(ref);
    if (this.uncached.some((u) => sameKind(u, kind))) return false;
    if (!isMetadataRef(ref) && !this.isTyped(kind) && !this.cacheUnstructured) return false;
    return true;
  }

  get<K extends KindRef>(kind: K, key: ObjectKey, options?: GetOptions): Promise<ObjectFor<K>> {
    if (!this.routeToCache(kind)) return this.liveGet(kind, key, options);
    if (!this.writes || !key || typeof key.name !== 'string') return this.cache!.get(kind, key, options);
    const writes = this.writes;
    return this.tracedRead('get', kind, (note) =>
      writes
        .beforeGet(kind, key, options?.signal)
        .then((from) => (note(from), from === 'cache' ? this.cache!.get(kind, key, options) : from === 'live' ? this.liveGet(kind, key, options) : (from.written as ObjectFor<K>))),
    );
  }

  list<K extends KindRef>(kind: K, options?: ListOptions): Promise<ListFor<K>> {
    if (!this.routeToCache(kind)) return this.liveList(kind, options);
    if (!this.writes) return this.cache!.list(kind, options);
    const writes = this.writes;
    return this.tracedRead('list', kind, (note) =>
      writes
        .beforeList(kind, options, options?.signal)
        .then((from) => (note(from), from === 'cache' ? this.cache!.list(kind, options) : from === 'live' ? this.liveList(kind, options) : this.cache!.list(kind, options).then((list) => overlayList(list, from.overlay, options)))),
    );
  }

  /**
   * A cached read that follows this client's own write (read-your-writes):
   * with tracing on, a span over the wait for the cache and the read, saying
   * where the answer came from (`kubeloop.read.source`: `cache`, `live`
   * when the cache did not catch up in time, `written` for the write's own
   * answer). Off: `read` runs as it is.
   */
  private tracedRead<T>(verb: 'get' | 'list', ref: KindRef, read: (note: (from: 'cache' | 'live' | object) => void) => Promise<T>): Promise<T> {
    const tracer = currentTracer();
    if (!tracer) return read(ignore);
    const kind = kindOf(ref);
    return tracer.inSpan(`read-your-writes ${verb} ${kind.kind}`, { attributes: { 'kubeloop.kind': kind.kind, 'kubeloop.api_version': kind.apiVersion } }, (span) =>
      read((from) => span.setAttributes({ 'kubeloop.read.source': typeof from === 'string' ? from : 'written' })),
    );
  }

  private async liveGet<K extends KindRef>(kind: K, key: ObjectKey, options?: GetOptions): Promise<ObjectFor<K>> {
    if (!key || typeof key.name !== 'string' || key.name === '') throw new ClientError('InvalidRequest', 'get needs a name');
    const r = await this.resolve(kind, options?.signal);
    return this.send('GET', this.path(r, key.namespace, key.name, undefined, 'get'), {
      query: { resourceVersion: options?.resourceVersion },
      ...(r.metadataOnly ? { accept: META_ACCEPT } : {}),
      ...call(options),
    });
  }

  private listQuery(options: ListOptions | undefined, limit: number | undefined, cont: string | undefined): Query {
    return {
      labelSelector: renderSelector(options?.labelSelector),
      fieldSelector: renderSelector(options?.fieldSelector),
      shardSelector: renderShard(options?.shardSelector),
      limit,
      continue: cont,
      resourceVersion: options?.resourceVersion,
      resourceVersionMatch: options?.resourceVersionMatch,
      timeoutSeconds: options?.timeoutSeconds,
    };
  }

  private async liveList<K extends KindRef>(kind: K, options?: ListOptions): Promise<ListFor<K>> {
    const r = await this.resolve(kind, options?.signal);
    const path = this.path(r, options?.namespace, undefined, undefined, 'list');
    const accept = r.metadataOnly ? { accept: META_LIST_ACCEPT } : {};
    const fill = r.metadataOnly ? undefined : kindFiller(r.mapping);
    if (options?.limit !== undefined) {
      const one = await this.send<ListFor<K>>('GET', path, { query: this.listQuery(options, options.limit, options.continue), ...accept, ...call(options) });
      // An empty metadata-only list comes as `items: null` (Go's nil slice): the type promises an array.
      if (!Array.isArray(one.items)) return { ...one, items: [] };
      fill?.(one.items);
      return one;
    }
    // No limit: every page, joined (pages of 500 keep each answer small).
    let page = await this.send<ListFor<K>>('GET', path, { query: this.listQuery(options, 500, options?.continue), ...accept, ...call(options) });
    const items = page.items ?? [];
    fill?.(items);
    // Later pages name no resourceVersion: the continue token pins the snapshot.
    const { resourceVersion: _rv, resourceVersionMatch: _rvm, ...rest } = options ?? {};
    while (page.metadata?.continue) {
      page = await this.send('GET', path, { query: this.listQuery(rest, 500, page.metadata.continue), ...accept, ...call(options) });
      fill?.(page.items ?? []);
      items.push(...(page.items ?? []));
    }
    const meta = { ...page.metadata };
    delete meta.continue;
    return { ...page, metadata: meta, items };
  }

  async *listAll<K extends KindRef>(kind: K, options?: ListOptions & { pageSize?: number }): AsyncIterable<ObjectFor<K>> {
    let cont = options?.continue;
    do {
      const page = await this.liveList(kind, { ...options, limit: options?.pageSize ?? 500, ...(cont ? { continue: cont } : {}) });
      for (const item of page.items) yield item as unknown as ObjectFor<K>;
      cont = page.metadata?.continue || undefined;
    } while (cont);
  }

  async watch<K extends KindRef>(kind: K, options?: WatchOptions): Promise<AsyncIterableIterator<WatchEvent<ObjectFor<K>>>> {
    const r = await this.resolve(kind, options?.signal);
    const path = this.path(r, options?.namespace, undefined, undefined, 'watch');
    const res = await this.transport.stream({
      method: 'GET',
      path,
      query: {
        watch: 'true',
        labelSelector: renderSelector(options?.labelSelector),
        fieldSelector: renderSelector(options?.fieldSelector),
        shardSelector: renderShard(options?.shardSelector),
        resourceVersion: options?.resourceVersion,
        resourceVersionMatch: options?.resourceVersionMatch,
        allowWatchBookmarks: options?.allowWatchBookmarks ?? true,
        sendInitialEvents: options?.sendInitialEvents,
        timeoutSeconds: options?.timeoutSeconds,
      },
      ...(r.metadataOnly ? { accept: META_ACCEPT } : {}),
      ...(options?.signal ? { signal: options.signal } : {}),
      // A black-holed connection must not hang the opening either.
      ...(options?.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : options?.idleTimeoutMs ? { timeoutMs: options.idleTimeoutMs } : {}),
    });
    if (res.statusCode !== 200) {
      // An error answer is read whole, within a deadline and a size limit, and keeps its Retry-After (429 from APF).
      // The status code is known already: its body (a small Status) gets at most 30 s, and never more than
      // the watch's own deadline (a 500 whose body never comes must not hold a reflector for its idle timeout).
      const timeoutMs = Math.min(options?.timeoutMs ?? options?.idleTimeoutMs ?? (this.transport.options.timeoutMs || DEFAULT_ERROR_BODY_TIMEOUT), DEFAULT_ERROR_BODY_TIMEOUT);
      const body = await readErrorBody(res, { timeoutMs, ...(options?.signal ? { signal: options.signal } : {}) });
      throw ClientError.fromResponse('GET', path, res.statusCode ?? 0, body, retryAfterSeconds(res.headers));
    }
    return watchEvents<ObjectFor<K>>(res, {
      ...(options?.signal ? { signal: options.signal } : {}),
      ...(options?.idleTimeoutMs ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
      ...(options?.maxLineBytes !== undefined ? { maxLineBytes: options.maxLineBytes } : {}),
    });
  }

  // --- writes --------------------------------------------------------------

  async create<T extends AnyKubeObject>(obj: WithKind<T>, options?: WriteOptions): Promise<Stored<T>> {
    const r = await this.resolveObject(obj, options?.signal);
    const answer = await this.send<Stored<T>>('POST', this.path(r, obj.metadata?.namespace, undefined, undefined, 'create'), {
      query: writeQuery(options, this.fieldOwner),
      body: stamped(obj),
      ...call(options),
    });
    return this.wrote(obj, undefined, options, answer);
  }

  async update<T extends AnyKubeObject>(obj: WithKind<T>, options?: WriteOptions): Promise<Stored<T>> {
    const r = await this.resolveObject(obj, options?.signal);
    const answer = await this.send<Stored<T>>('PUT', this.path(r, obj.metadata?.namespace, this.nameOf(obj, 'update'), undefined, 'update'), {
      query: writeQuery(options, this.fieldOwner),
      body: stamped(obj),
      ...call(options),
    });
    return this.wrote(obj, undefined, options, answer);
  }

  patch<T extends AnyKubeObject>(obj: WithKind<T>, patch: Patch, options?: WriteOptions): Promise<Stored<T>>;
  patch<K extends KindRef>(kind: K, key: ObjectKey, patch: Patch, options?: WriteOptions): Promise<ObjectFor<K>>;
  async patch(a: KubeObject | KindRef, b: Patch | ObjectKey, c?: Patch | WriteOptions, d?: WriteOptions): Promise<unknown> {
    const byKey = isPatch(c);
    const options = (byKey ? d : c);
    const patch = (byKey ? c : b) as Patch;
    const r = byKey ? await this.resolve(a as KindRef, options?.signal) : await this.resolveObject(a as KubeObject, options?.signal);
    const key: ObjectKey = byKey ? (b as ObjectKey) : { name: this.nameOf(a as KubeObject, 'patch'), ...((a as KubeObject).metadata?.namespace ? { namespace: (a as KubeObject).metadata!.namespace! } : {}) };
    return this.wrote(byKey ? (a as KindRef) : (a as KubeObject & KindRef), key, options, await this.sendPatch(r, key, undefined, stampedPatch(patch), options));
  }

  private sendPatch(r: Resolved, key: ObjectKey, subresource: string | undefined, patch: Patch, options: ApplyOptions | undefined): Promise<unknown> {
    if (!isPatch(patch)) throw new ClientError('InvalidRequest', 'patch needs a Patch (mergePatch, jsonPatch, strategicMergePatch, mergeFrom)');
    const query: Query = { ...writeQuery(options, this.fieldOwner), ...(options?.force !== undefined ? { force: options.force } : {}) };
    return this.send('PATCH', this.path(r, key.namespace, key.name, subresource, 'patch'), {
      query,
      body: patch.data,
      contentType: patchContentType(patch.type),
      ...(r.metadataOnly ? { accept: META_ACCEPT } : {}),
      ...call(options),
    });
  }

  async apply<T extends AnyKubeObject>(obj: WithKind<T>, options?: ApplyOptions): Promise<Stored<T>> {
    return this.applyTo(obj, undefined, options) as Promise<Stored<T>>;
  }

  private async applyTo(obj: AnyKubeObject, subresource: string | undefined, options: ApplyOptions | undefined): Promise<unknown> {
    const fieldManager = options?.fieldManager ?? this.fieldOwner;
    if (!fieldManager) {
      throw new ClientError('InvalidRequest', 'server-side apply needs a field owner: set fieldOwner on the client or fieldManager on the call');
    }
    const r = await this.resolveObject(obj, options?.signal);
    const key: ObjectKey = { name: this.nameOf(obj, 'apply'), ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}) };
    const answer = await this.sendPatch(r, key, subresource, { type: 'apply', data: stringifyJson(obj) }, { ...options, fieldManager, force: options?.force ?? false });
    return this.wrote(obj as KubeObject & KindRef, key, options, answer);
  }

  delete(obj: WithKind<AnyKubeObject>, options?: DeleteOptions): Promise<void>;
  delete(kind: KindRef, key: ObjectKey, options?: DeleteOptions): Promise<void>;
  async delete(a: KubeObject | KindRef, b?: ObjectKey | DeleteOptions, c?: DeleteOptions): Promise<void> {
    const byKey = b !== undefined && typeof (b as Partial<ObjectKey>).name === 'string';
    const options = (byKey ? c : b) as DeleteOptions | undefined;
    const r = byKey ? await this.resolve(a as KindRef, options?.signal) : await this.resolveObject(a as KubeObject, options?.signal);
    const key: ObjectKey = byKey ? (b as ObjectKey) : { name: this.nameOf(a as KubeObject, 'delete'), ...((a as KubeObject).metadata?.namespace ? { namespace: (a as KubeObject).metadata!.namespace! } : {}) };
    const answer = await this.send('DELETE', this.path(r, key.namespace, key.name, undefined, 'delete'), {
      query: { dryRun: options?.dryRun ? 'All' : undefined },
      body: deleteBody(options),
      ...call(options),
    });
    this.wrote(byKey ? (a as KindRef) : (a as KubeObject & KindRef), key, options, answer, true);
  }

  async deleteAllOf(kind: KindRef, options?: DeleteAllOfOptions): Promise<void> {
    const r = await this.resolve(kind, options?.signal);
    if (r.mapping.scope === 'Namespaced' && !options?.namespace) {
      throw new ClientError('InvalidRequest', `deleteAllOf ${r.label} needs a namespace`);
    }
    const shard = toShardSelector(shardOption(options?.shardSelector));
    if (shard) {
      // A server without ShardedListAndWatch ignores the selector and would delete the whole
      // collection: a list with the same selectors first shows whether it filters.
      const { dryRun, gracePeriodSeconds, propagationPolicy, preconditions, ...selecting } = options ?? {};
      const listed = (await this.liveList(kind, { ...selecting, shardSelector: shard })).items as { metadata?: { name?: string; namespace?: string; uid?: string } }[];
      if (listed.some((item) => !matchesShard(item, shard))) {
        // Ignored: the objects of the shard, one by one, as the server's own delete-collection does.
        const single: DeleteOptions = { ...call(options), ...(dryRun === undefined ? {} : { dryRun }), ...(gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds }), ...(propagationPolicy ? { propagationPolicy } : {}) };
        // A few at a time (the server's delete-collection has its own workers); the first other error stops it.
        await forEachBounded(
          listed.filter((i) => matchesShard(i, shard)),
          SHARD_DELETES_IN_FLIGHT,
          async (item) => {
            const m = item.metadata!;
            const key = { name: m.name!, ...(m.namespace ? { namespace: m.namespace } : {}) };
            // The uid as precondition: an object replaced since the list (a new uid) is not the one listed.
            await this.delete(kind, key, { ...single, preconditions: { uid: m.uid!, ...preconditions } }).catch((err: unknown) => {
              if (!isNotFound(err) && !isConflict(err)) throw err;
            });
          },
        );
        return;
      }
    }
    const answer = await this.send<{ items?: unknown }>('DELETE', this.path(r, options?.namespace, undefined, undefined, 'deleteAllOf'), {
      query: {
        dryRun: options?.dryRun ? 'All' : undefined,
        labelSelector: renderSelector(options?.labelSelector),
        fieldSelector: renderSelector(options?.fieldSelector),
        shardSelector: shard ? renderShardSelector(shard) : undefined,
      },
      body: deleteBody(options),
      ...call(options),
    });
    // The server answers with the objects it deleted: each is a write to read after. One with
    // finalizers left is still there (deleting, at the answer's resourceVersion); the rest are gone.
    if (Array.isArray(answer?.items)) {
      for (const item of answer.items as { metadata?: { name?: unknown; namespace?: unknown; uid?: unknown; finalizers?: unknown } }[]) {
        const m = item?.metadata;
        if (typeof m?.name !== 'string') continue;
        const key = { name: m.name, ...(typeof m.namespace === 'string' && m.namespace ? { namespace: m.namespace } : {}) };
        const deleting = Array.isArray(m.finalizers) && m.finalizers.length > 0;
        this.wrote(kind, key, options, deleting ? item : { kind: 'Status', details: { uid: m.uid } });
      }
    }
  }

  private nameOf(obj: AnyKubeObject, op: string): string {
    const name = obj.metadata?.name;
    if (!name) throw new ClientError('InvalidRequest', `${op} needs metadata.name`);
    return name;
  }

  // --- subresources --------------------------------------------------------

  status(): SubResourceClient {
    return this.subResource('status');
  }

  subResource(name: string): SubResourceClient {
    segment(name, 'subresource');
    const keyOf = (obj: AnyKubeObject, op: string): ObjectKey => ({
      name: this.nameOf(obj, op),
      ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}),
    });
    return {
      get: async <R>(kind: KindRef, key: ObjectKey, options?: CallOptions): Promise<R> => {
        const r = await this.resolve(kind, options?.signal);
        return this.send<R>('GET', this.path(r, key.namespace, key.name, name, `get ${name}`), call(options));
      },
      create: async <R>(obj: AnyKubeObject, body: object, options?: WriteOptions): Promise<R> => {
        const r = await this.resolveObject(obj, options?.signal);
        const key = keyOf(obj, `create ${name}`);
        return this.send<R>('POST', this.path(r, key.namespace, key.name, name, `create ${name}`), { query: writeQuery(options, this.fieldOwner), body, ...call(options) });
      },
      update: async <T extends AnyKubeObject>(obj: WithKind<T>, options?: WriteOptions & { body?: object }): Promise<Stored<T>> => {
        const r = await this.resolveObject(obj, options?.signal);
        const key = keyOf(obj, `update ${name}`);
        const answer = await this.send<Stored<T>>('PUT', this.path(r, key.namespace, key.name, name, `update ${name}`), {
          query: writeQuery(options, this.fieldOwner),
          body: options?.body ?? obj,
          ...call(options),
        });
        return this.wrote(obj, key, options, answer);
      },
      patch: async <T extends AnyKubeObject>(obj: WithKind<T>, patch: Patch, options?: WriteOptions): Promise<Stored<T>> => {
        const r = await this.resolveObject(obj, options?.signal);
        const key = keyOf(obj, `patch ${name}`);
        return this.wrote(obj, key, options, (await this.sendPatch(r, key, name, patch, options)) as Stored<T>);
      },
      apply: <T extends AnyKubeObject>(obj: WithKind<T>, options?: ApplyOptions): Promise<Stored<T>> => this.applyTo(obj, name, options) as Promise<Stored<T>>,
    };
  }
}

/**
 * `obj` as a create or update sends it: with `tracing.linkWrites` on and
 * inside a reconcile, a copy recording the reconcile's trace context
 * (`kubeloop.dev/traceparent`); otherwise `obj` itself (tracing off: one
 * property read).
 */
function stamped<T>(obj: T): T {
  const traceparent = currentTracer()?.writeTraceparent?.();
  return traceparent === undefined ? obj : stampObject(obj, traceparent);
}

/**
 * `patch` as a patch of the object itself sends it: a merge or strategic
 * merge patch that changes something also records the reconcile's trace
 * context, as {@link stamped}. JSON patches (an `add` fails where the
 * annotations are missing) and server-side apply (an apply meant to change
 * nothing would change the annotation each time, and retrigger whoever
 * watches the object) record nothing.
 */
function stampedPatch(patch: Patch): Patch {
  if (!isPatch(patch) || (patch.type !== 'merge' && patch.type !== 'strategic')) return patch;
  const traceparent = currentTracer()?.writeTraceparent?.();
  if (traceparent === undefined) return patch;
  const data = stampPatchBody(patch.data, traceparent);
  return data === undefined ? patch : { type: patch.type, data };
}

/** Sets apiVersion and kind on list items that lack them (the API server omits them for built-in kinds). */
function kindFiller(mapping: RESTMapping): (items: KubeObject[]) => void {
  const { group, version, kind } = mapping.groupVersionKind;
  const apiVersion = group ? `${group}/${version}` : version;
  return (items) => {
    for (const item of items) {
      // An item that is not an object is left as sent, for the caller to refuse (the cache's reflector counts it).
      if (typeof item !== 'object' || item === null || Array.isArray(item)) continue;
      if (item.apiVersion === undefined) item.apiVersion = apiVersion;
      if (item.kind === undefined) item.kind = kind;
    }
  };
}

function isPatch(value: unknown): value is Patch {
  return typeof value === 'object' && value !== null && typeof (value as Patch).type === 'string' && typeof (value as Patch).data === 'string';
}

function deleteBody(options: DeleteOptions | undefined): object | undefined {
  if (!options) return undefined;
  const body: Record<string, unknown> = {};
  // With a body, kube-apiserver reads the delete options from it alone: a dryRun only in the query would be ignored.
  if (options.dryRun) body['dryRun'] = ['All'];
  if (options.gracePeriodSeconds !== undefined) body['gracePeriodSeconds'] = options.gracePeriodSeconds;
  if (options.propagationPolicy) body['propagationPolicy'] = options.propagationPolicy;
  if (options.preconditions) body['preconditions'] = options.preconditions;
  if (Object.keys(body).length === 0) return undefined;
  return { apiVersion: 'meta.k8s.io/v1', kind: 'DeleteOptions', ...body };
}
