/**
 * The informer cache: a client `Reader` served from informers. The first
 * read of a kind starts its informer and waits until it has synced (bounded
 * by the caller's AbortSignal); later reads cost no request.
 *
 * Restricted to namespaces, it still serves cluster-scoped kinds (Namespace,
 * Node, StorageClass, cluster-scoped custom resources) from one cluster-wide
 * informer, as controller-runtime does: the scope comes from the client's
 * mapper when the informer starts.
 */
import { ClientError, matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from '@kubeloop/client';
import { checkOptions, fieldValue, hasMethods, isKindRef, isMetadataRef, isMs, isNonEmptyString, isObject } from '@kubeloop/client/internal';
import type { Client, GetOptions, KindRef, ListOptions, ObjectKey, Reader, TypeRef } from '@kubeloop/client';
import type { ListFor, ObjectFor, OptionCheck, Selector } from '@kubeloop/client/internal';
import type { KubeObject, ResourceDescriptor } from '@kubeloop/scheme';
import { Informer } from './informer.js';
import type { InformerErrorPhase, InformerOptions, InformerSource, InformerSources, Transform } from './informer.js';
import { CacheError, isCacheError } from './errors.js';
import { checkScope, namespacePlan, settingsFor } from './cache-scope.js';
import type { NamespacePlan, Namespaces, ScopeOptions } from './cache-scope.js';
import { SelectedNamespaces } from './selected-namespaces.js';
import { clientListWatcher, withStages } from './list-watch.js';
import type { ListWatchStage, ListWatcher } from './list-watch.js';
import { shardStage } from './stages/shard.js';
import type { ReflectorOptions, ReflectorStats } from './reflector.js';
import { inShard } from './shard-filter.js';
import type { ShardFilter } from './shard-filter.js';
import { keyOf, NAMESPACE_INDEX } from './store.js';

/** What to cache of one kind. */
export interface ByKindOptions {
  /**
   * Namespaces to cache: names, or names with settings of their own (see
   * {@link NamespaceOptions}). Default: the cache's `namespaces` or
   * `namespaceSelector`, else all. Naming namespaces for a cluster-scoped
   * kind is an error (its reads reject with it); the cache-wide
   * `namespaces` simply do not apply to such kinds.
   *
   * @example
   * ```ts
   * const cache = createInformerCache({
   *   client,
   *   byKind: [{ kind: Secret, options: { namespaces: { prod: { labelSelector: 'app=web' }, ops: {} } } }],
   * });
   * ```
   */
  readonly namespaces?: Namespaces;
  /**
   * Cache the kind in the namespaces whose labels match this selector,
   * followed while running (see `InformerCacheOptions.namespaceSelector`),
   * instead of the cache's namespaces. Not with `namespaces`. Default: the
   * cache's choice.
   *
   * @example
   * ```ts
   * const cache = createInformerCache({ client, byKind: [{ kind: ConfigMap, options: { namespaceSelector: { 'tenant.example.com/managed': 'true' } } }] });
   * ```
   */
  readonly namespaceSelector?: Selector;
  /** Only objects matching it are cached. Default: the cache's `defaultLabelSelector`, else all. */
  readonly labelSelector?: Selector;
  /** Only objects matching it are cached. Default: the cache's `defaultFieldSelector`, else all. */
  readonly fieldSelector?: Selector;
  /** Default: the cache's `transform`. */
  readonly transform?: Transform<KubeObject>;
  /**
   * Keep one shard of the kind: the objects whose uid, namespace or
   * controller owner's uid hashes into the filter's ranges (a shard ring's,
   * or `staticShard`). The server filters where it can; what it lets through
   * out of range is dropped before the store (the shard stage,
   * `stages/shard.ts`). Default: the whole kind.
   */
  readonly shard?: ShardFilter;
  /**
   * Stages around each list-watch of the kind, innermost first, after the
   * shard's: each may narrow what is asked of the server and what of the
   * answer reaches the store (see {@link ListWatchStage}). What they drop,
   * the cache does not hold; `admits()` (read-your-writes) does not know of
   * them. Default: none.
   *
   * @example
   * ```ts
   * const noScratch = filterStage<KubeObject>((o) => o.metadata?.labels?.['scratch'] !== 'true');
   * const cache = createInformerCache({ client, byKind: [{ kind: ConfigMap, options: { stages: [noScratch] } }] });
   * ```
   */
  readonly stages?: readonly ListWatchStage<KubeObject>[];
}

/** Options for {@link createInformerCache}. */
export interface InformerCacheOptions {
  /** Lists and watches go through this client's live calls. */
  readonly client: Client;
  /** Per-kind options, by descriptor or apiVersion/kind. Default: none. */
  readonly byKind?: readonly { readonly kind: ResourceDescriptor | TypeRef; readonly options: ByKindOptions }[];
  /**
   * The label selector of every kind whose `byKind` options name none
   * (controller-runtime's `DefaultLabelSelector`): the cache then holds only
   * the objects it matches, and so does every cached read. Checked here with
   * the API server's grammar. Default: none (every object).
   */
  readonly defaultLabelSelector?: Selector;
  /** The field selector of every kind whose `byKind` options name none (`DefaultFieldSelector`). Default: none. */
  readonly defaultFieldSelector?: Selector;
  /**
   * Whether a cached read (`get`, `list`) of a kind the cache has no
   * informer for starts one. An informer lists and watches its kind in
   * every namespace the cache covers, so one stray read of Pods or Secrets
   * in a big cluster can hold them all in memory. `false` makes such a read
   * reject with a `ClientError` `NotCached` naming the kind and the ways to
   * cache it (a controller watching it, `byKind`, `getInformer`) or to read
   * it live (`uncached`, `apiReader`), as controller-runtime's
   * `ReaderFailOnMissingInformer`. Kinds named in `byKind`, and informers
   * started by `getInformer` (controllers' sources), are always served.
   * Default: true, as controller-runtime.
   */
  readonly startInformersOnRead?: boolean;
  /**
   * Namespaces every namespaced kind is limited to (one list+watch per
   * namespace): names, or names with settings of their own (selectors,
   * transform: controller-runtime's `DefaultNamespaces`). A kind's `byKind`
   * namespaces replace these. Cluster-scoped kinds are cached cluster-wide
   * whatever this says. Default: all namespaces.
   *
   * @example
   * ```ts
   * const cache = createInformerCache({ client, namespaces: { 'team-a': {}, 'team-b': { labelSelector: 'app=web' } } });
   * ```
   */
  readonly namespaces?: Namespaces;
  /**
   * Cache namespaced kinds in the namespaces whose labels match this
   * selector, followed while running: the cache lists and watches
   * Namespaces with it (the role needs `list` and `watch` on namespaces;
   * `kubeloop generate rbac --namespace-selector` adds them), starts a
   * list+watch for a namespace when it comes to match, and when it stops
   * matching (or is deleted) drops that namespace's objects, handlers
   * getting a delete for each. A read in a namespace not selected finds
   * nothing (`NotFound`, an empty list). Cluster-scoped kinds are cached
   * cluster-wide. Not with `namespaces`. Default: none (see `namespaces`).
   *
   * @example
   * ```ts
   * const cache = createInformerCache({ client, namespaceSelector: 'team=payments' });
   * ```
   */
  readonly namespaceSelector?: Selector;
  /** Applied to every object before it is cached. Default: strip `metadata.managedFields`. */
  readonly transform?: Transform<KubeObject>;
  /** Hand out cached objects unfrozen (mutating them corrupts the cache). Default: false. */
  readonly unsafeDisableDeepFreeze?: boolean;
  /**
   * Share one copy of the metadata strings cached objects repeat (namespace,
   * label values, owner references' apiVersion and kind, finalizers,
   * creationTimestamp) instead of one per object: about a fifth less heap
   * per cached ConfigMap, content unchanged. Default: true.
   */
  readonly internStrings?: boolean;
  /** Reflector tuning (page size, deadlines, backoff, WatchList). Default: the reflector's defaults. */
  readonly reflector?: ReflectorOptions;
  /**
   * Default resync period of every informer's handlers, ms: each handler is
   * given `onUpdate(obj, obj)` for every cached object this often (plus up
   * to 10 % jitter), as client-go's resync. 0: none. Default: 0.
   */
  readonly resyncPeriodMs?: number;
  /**
   * Told of every list/watch error (each is retried) and of every object
   * that could not be prepared for the cache (phase `prepare`; the object is
   * left out of the cache and counted in `InformerInfo.unprepared`).
   */
  readonly onError?: (kind: string, err: unknown, phase: InformerErrorPhase) => void;
  /** Told of every handler that threw. */
  readonly onHandlerError?: (kind: string, err: unknown) => void;
}

/** Health and metrics of one informer. */
export interface InformerInfo {
  /** `Kind.apiVersion` plus the form (` (metadata)` for metadata-only). */
  readonly kind: string;
  readonly synced: boolean;
  readonly storeSize: number;
  /** One entry per list+watch (per namespace, or one for all). */
  readonly stats: readonly ReflectorStats[];
  readonly handlerErrors: number;
  /** The most recent error of any of its reflectors (or of working out its scope), if any. */
  readonly lastError: unknown;
  /**
   * Ms since the stalest of its reflectors last heard from the API server
   * (an event, a bookmark or a list); undefined before every one has. With
   * bookmarks a healthy watch hears something about once a minute.
   */
  readonly lastEventAgeMs: number | undefined;
  /** Objects that could not be prepared for the cache, so far. */
  readonly prepareErrors: number;
  /** Objects the API server holds that the cache lacks right now, because they could not be prepared: a readiness check should fail while it is not 0. */
  readonly unprepared: number;
  /**
   * The API server does not serve the kind (its CRD is not installed, or was
   * deleted): the informer waits for it, retrying with backoff, and says so
   * once in `onError`. The cache's mapper has been told to forget the kind.
   */
  readonly notServed: boolean;
}

/**
 * A Reader served from informers.
 *
 * @example
 * ```ts
 * const cache = createInformerCache({ client, byKind: [{ kind: Secret, options: { namespaces: ['prod'] } }] });
 * const routed = createClient({ kubeConfig, cache, uncached: [Secret] });
 * const cm = await routed.get(ConfigMap, { namespace: 'default', name: 'settings' }); // from the cache
 * ```
 */
export interface InformerCache extends Reader {
  /** The informer of a kind, started (and synced) on first use. */
  /**
   * The informer of a kind, started on first use. Resolves once it has
   * synced, unless `blockUntilSynced` is false (as controller-runtime's
   * `BlockUntilSynced(false)`): then at once, for callers that register
   * handlers and wait for their own sync.
   */
  getInformer<K extends KindRef>(kind: K, options?: { signal?: AbortSignal; blockUntilSynced?: boolean }): Promise<Informer<ObjectFor<K> & KubeObject>>;
  /** The health and counters of a kind's informer, if it was started. */
  informerInfo(kind: KindRef): InformerInfo | undefined;
  /** Wait until every started informer has synced. False if `signal` aborted first. */
  waitForCacheSync(signal?: AbortSignal): Promise<boolean>;
  /** Index a kind by a field; `list` with a field selector `name=value` then uses it. */
  indexField<K extends KindRef>(kind: K, name: string, extract: (obj: ObjectFor<K>) => readonly string[]): Promise<void>;
  /**
   * Stop and forget a kind's informer (its store's memory goes with it). With
   * `ifNotServed`, only while the API server does not serve the kind (see
   * `InformerInfo.notServed`): an informer started afresh after its CRD came
   * back is kept.
   */
  removeInformer(kind: KindRef, options?: { ifNotServed?: boolean }): Promise<void>;
  /** Every informer's health and counters. */
  informers(): readonly InformerInfo[];
  /** Stop every informer. */
  stop(): Promise<void>;
  /**
   * The newest resourceVersion the informer of `kind` has seen in
   * `namespace` (all its namespaces when undefined), or undefined when it
   * has no informer for the kind, or does not cover the namespace. The
   * client's read-your-writes waits on it.
   */
  observedResourceVersion(kind: KindRef, namespace: string | undefined): string | undefined;
  /** Resolves at the next change to the informer of `kind` (at once when it has none), or when `signal` aborts. */
  nextChange(kind: KindRef, signal: AbortSignal): Promise<void>;
  /**
   * Whether the informer of `kind` would hold `object` as it is: its
   * namespaces, label and field selectors and shard admit it. Undefined when
   * there is no informer for the kind. The client's read-your-writes does not
   * wait for a written object the cache would never hold.
   */
  admits(kind: KindRef, object: KubeObject): boolean | undefined;
  /**
   * A copy of `object` (a write's answer; left untouched) as the informer of
   * `kind` would hand it out: transformed, frozen, and for a metadata-only
   * kind its metadata as a PartialObjectMetadata. Undefined when there is no
   * informer for the kind, the object is metadata-only and `kind` is not,
   * or the transform fails. The client's read-your-writes answers a get
   * with it while the informer is behind the client's own write.
   */
  asCached(kind: KindRef, object: unknown): unknown;
}

/** Tell the client's mapper to forget a kind, when it can (a `DynamicRESTMapper`'s `forget`). */
function forgetKind(client: Client, ref: ResourceDescriptor | TypeRef): void {
  const mapper = client.mapper as { forget?: (gk: { group: string; kind: string }) => void };
  if (typeof mapper.forget !== 'function') return;
  const slash = ref.apiVersion.indexOf('/');
  mapper.forget({ group: slash === -1 ? '' : ref.apiVersion.slice(0, slash), kind: ref.kind });
}

function describe(kind: KindRef): { id: string; ref: ResourceDescriptor | TypeRef; label: string } {
  const ref = isMetadataRef(kind) ? kind.of : kind;
  const form = isMetadataRef(kind) ? 'metadata' : 'object';
  return { id: `${form}\u0000${ref.apiVersion}\u0000${ref.kind}`, ref, label: `${ref.kind}.${ref.apiVersion}${form === 'metadata' ? ' (metadata)' : ''}` };
}

/**
 * Create an informer cache over a client.
 *
 * @example
 * ```ts
 * const cache = createInformerCache({ client });
 * const pods = await cache.list(Pod, { namespace: 'default', labelSelector: { app: 'web' } });
 * ```
 */
export function createInformerCache(options: InformerCacheOptions): InformerCache {
  return new Cache(options);
}

const isFn = (v: unknown): boolean => typeof v === 'function';
const isSelector = (v: unknown): boolean => typeof v === 'string' || (isObject(v) && Object.values(v as object).every((x) => typeof x === 'string'));

/** Each option: the test of a value and what it expects, said to the user. An absent option is never checked. */
const CACHE_CHECKS: readonly OptionCheck[] = [
  ['client', (v) => hasMethods('list', 'watch')(v) && isObject((v as { mapper?: unknown }).mapper), 'a Client (createClient(...) of @kubeloop/client)'],
  [
    'byKind',
    (v) => Array.isArray(v) && v.every((b) => isObject(b) && isKindRef((b as { kind?: unknown }).kind) && isObject((b as { options?: unknown }).options)),
    'an array of { kind, options } (kind: a descriptor such as Pod, or { apiVersion, kind })',
  ],
  [
    'namespaces',
    (v) => (Array.isArray(v) && v.every(isNonEmptyString)) || (isObject(v) && !Array.isArray(v)),
    "an array of namespace names (['team-a']) or a map of names to settings ({ 'team-a': { labelSelector: 'app=web' } })",
  ],
  ['namespaceSelector', isSelector, "a label selector string ('team=payments') or a map of labels"],
  ['defaultLabelSelector', isSelector, "a selector string ('app=web') or a map of labels"],
  ['defaultFieldSelector', isSelector, "a selector string ('metadata.name=x') or a map of fields"],
  ['startInformersOnRead', (v) => typeof v === 'boolean', 'true or false'],
  ['transform', isFn, 'a function (object) => object'],
  ['unsafeDisableDeepFreeze', (v) => typeof v === 'boolean', 'true or false'],
  ['internStrings', (v) => typeof v === 'boolean', 'true or false'],
  ['reflector', isObject, 'an object of reflector tuning ({ pageSize, useWatchList, ... })'],
  ['resyncPeriodMs', isMs, 'a number of ms >= 0'],
  ['onError', isFn, 'a function (kind, err, phase) => void'],
  ['onHandlerError', isFn, 'a function (kind, err) => void'],
];

/** Throws CacheError `InvalidOptions` naming the first option of the wrong shape and what it expects. */
function checkCacheOptions(options: InformerCacheOptions): void {
  const fail = (message: string): CacheError => new CacheError('InvalidOptions', message);
  checkOptions('createInformerCache', options, CACHE_CHECKS, fail);
  if ((options as { client?: unknown }).client === undefined) throw fail('createInformerCache: client is required: the Client whose live calls list and watch');
  // The default selectors are checked by the constructor, under their own names.
  checkScope('createInformerCache', {
    ...(options.namespaces !== undefined ? { namespaces: options.namespaces } : {}),
    ...(options.namespaceSelector !== undefined ? { namespaceSelector: options.namespaceSelector } : {}),
  });
  options.byKind?.forEach((b, i) => {
    if (b.options.stages !== undefined && !(Array.isArray(b.options.stages) && b.options.stages.every((st) => typeof st === 'function'))) {
      throw fail(`createInformerCache: byKind[${i}] (${b.kind.kind}): stages must be an array of functions (inner) => ListWatcher`);
    }
    checkScope(`createInformerCache: byKind[${i}] (${b.kind.kind})`, b.options);
  });
}

/** The cache-wide options that scope works out from. */
function cacheScope(options: InformerCacheOptions): ScopeOptions {
  return {
    ...(options.namespaces !== undefined ? { namespaces: options.namespaces } : {}),
    ...(options.namespaceSelector !== undefined ? { namespaceSelector: options.namespaceSelector } : {}),
    ...(options.defaultLabelSelector !== undefined ? { labelSelector: options.defaultLabelSelector } : {}),
    ...(options.defaultFieldSelector !== undefined ? { fieldSelector: options.defaultFieldSelector } : {}),
    ...(options.transform !== undefined ? { transform: options.transform } : {}),
  };
}

interface Entry {
  readonly informer: Informer<KubeObject>;
  /** Whether the informer covers a namespace (its list, or its selector's namespaces now). */
  readonly covers: (namespace: string) => boolean;
  /** The namespaces follow a selector: a read outside them finds nothing rather than being refused. */
  readonly followed: boolean;
  /** The namespaces, for messages. */
  readonly describeNamespaces: () => string;
  /** Stop following the namespace selector. */
  readonly release: () => void;
  /** Whether the informer's namespaces, selectors and shard admit an object. */
  readonly admits: (object: KubeObject) => boolean;
  readonly label: string;
  /** The kind (of the object form, for a metadata-only informer too). */
  readonly ref: ResourceDescriptor | TypeRef;
  readonly listKind: string;
  readonly apiVersion: string;
}

class Cache implements InformerCache {
  private readonly entries = new Map<string, Entry>();
  /** Followers of namespace selectors, by selector. */
  private readonly selections = new Map<string, SelectedNamespaces>();
  private stopped = false;

  constructor(private readonly options: InformerCacheOptions) {
    checkCacheOptions(options);
    for (const [name, parse] of [
      ['defaultLabelSelector', () => parseLabelSelector(options.defaultLabelSelector)],
      ['defaultFieldSelector', () => parseFieldSelector(options.defaultFieldSelector)],
    ] as const) {
      try {
        parse();
      } catch (cause) {
        throw new CacheError('InvalidOptions', `${name}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
      }
    }
  }

  /** For a read: the kind's entry, unless reads may not start informers and none runs for it. */
  private readEntry(kind: KindRef): Entry {
    if (this.options.startInformersOnRead === false && !this.entries.has(describe(kind).id)) {
      const { ref, label } = describe(kind);
      if (!this.options.byKind?.some((b) => b.kind.apiVersion === ref.apiVersion && b.kind.kind === ref.kind)) {
        throw new ClientError(
          'NotCached',
          `${label} is not cached, and this cache starts no informer on a read (startInformersOnRead: false): watch it from a controller, name it in the cache's byKind options, or call cache.getInformer() for it first; or read it live (the client's uncached kinds, or apiReader)`,
        );
      }
    }
    return this.entry(kind);
  }

  private kindOptions(ref: ResourceDescriptor | TypeRef): ByKindOptions {
    return this.options.byKind?.find((b) => b.kind.apiVersion === ref.apiVersion && b.kind.kind === ref.kind)?.options ?? {};
  }

  /** The follower of a namespace selector, shared by the kinds that use the same one; started on first use. */
  private selected(selector: Selector): SelectedNamespaces {
    const id = typeof selector === 'string' ? selector : JSON.stringify(Object.entries(selector).sort());
    let set = this.selections.get(id);
    if (!set) {
      const onError = this.options.onError;
      set = new SelectedNamespaces(this.options.client, selector, {
        ...(this.options.reflector ? { reflector: this.options.reflector } : {}),
        ...(onError ? { onError: (err: unknown, phase: InformerErrorPhase) => onError(`Namespace.v1 (namespaceSelector ${set!.describe()})`, err, phase) } : {}),
      });
      this.selections.set(id, set);
      set.start();
    }
    return set;
  }

  private entry(kind: KindRef): Entry {
    if (this.stopped) throw new ClientError('InvalidRequest', 'the informer cache is stopped');
    const { id, ref, label } = describe(kind);
    let entry = this.entries.get(id);
    if (entry) return entry;
    const per = this.kindOptions(ref);
    const cacheScopeOptions = cacheScope(this.options);
    const plan: NamespacePlan = namespacePlan(cacheScopeOptions, per);
    const settings = (namespace: string): ReturnType<typeof settingsFor> => settingsFor(cacheScopeOptions, per, namespace);
    const informerOptions: InformerOptions<KubeObject> = {
      ...((per.transform ?? this.options.transform) ? { transform: per.transform ?? this.options.transform! } : {}),
      ...(this.options.unsafeDisableDeepFreeze ? { unsafeDisableDeepFreeze: true } : {}),
      ...(this.options.internStrings !== undefined ? { internStrings: this.options.internStrings } : {}),
      ...(this.options.reflector ? { reflector: this.options.reflector } : {}),
      ...(this.options.resyncPeriodMs !== undefined ? { resyncPeriodMs: this.options.resyncPeriodMs } : {}),
      ...(this.options.onError ? { onError: (err: unknown, phase: InformerErrorPhase) => this.options.onError!(label, err, phase) } : {}),
      ...(this.options.onHandlerError ? { onHandlerError: (err: unknown) => this.options.onHandlerError!(label, err) } : {}),
    };
    // The stages of each list-watch, innermost first: the shard's, then the kind's own.
    const stages: ListWatchStage<KubeObject>[] = [...(per.shard ? [shardStage<KubeObject>(per.shard)] : []), ...(per.stages ?? [])];
    const source = (namespace: string): InformerSource<KubeObject> => {
      const { labelSelector, fieldSelector, transform } = settings(namespace);
      return {
        namespace,
        ...(transform && namespace ? { transform } : {}),
        lw: withStages(
          clientListWatcher(this.options.client, kind, {
            ...(namespace ? { namespace } : {}),
            ...(labelSelector ? { labelSelector } : {}),
            ...(fieldSelector ? { fieldSelector } : {}),
          }) as ListWatcher<KubeObject>,
          stages,
        ),
      };
    };
    const clusterScoped = (names: string): CacheError =>
      new CacheError('InvalidOptions', `${label} is cluster-scoped, but its byKind options name ${names}: leave them out (a cluster-scoped kind is cached cluster-wide)`);
    // Unrestricted: one cluster-wide list+watch serves either scope. Restricted:
    // the mapper says whether the kind has namespaces at all, when the informer starts.
    let sources: InformerSources<KubeObject>;
    let covers: (namespace: string) => boolean = () => true;
    let describeNamespaces = (): string => 'all namespaces';
    let release = (): void => undefined;
    /** Set once the kind is known to be namespaced: the selector's changes reach the informer from then on. */
    let following = false;
    if (plan.mode === 'listed') {
      const names = plan.names;
      covers = (ns) => names.includes(ns);
      describeNamespaces = () => `namespaces ${names.join(', ')}`;
      sources = async () => {
        if (await this.namespaced(ref)) return names.map(source);
        if (plan.byKind) throw clusterScoped(`namespaces (${names.join(', ')})`);
        return [source('')];
      };
    } else if (plan.mode === 'selected') {
      const set = this.selected(plan.selector);
      covers = (ns) => set.has(ns);
      describeNamespaces = () => `the namespaces selected by ${set.describe()} (now: ${set.names().join(', ') || 'none'})`;
      sources = async (signal) => {
        if (!(await this.namespaced(ref))) {
          if (plan.byKind) throw clusterScoped(`a namespaceSelector (${set.describe()})`);
          covers = () => true;
          return [source('')];
        }
        await set.synced(signal);
        following = true;
        return set.names().map(source);
      };
    } else {
      sources = [source('')];
    }
    const informer = new Informer<KubeObject>(sources, informerOptions);
    if (plan.mode === 'selected') {
      const set = this.selected(plan.selector);
      release = set.subscribe(() => {
        if (following) informer.updateSources(set.names().map(source));
      });
    }
    // A kind that went away: the mapper forgets its mapping, so no request is sent to its old path.
    informer.onServedChange((served) => {
      if (!served) forgetKind(this.options.client, ref);
    });
    // Parsed once per namespace (the constructor checked every selector).
    const parsed = new Map<string, { labels: ReturnType<typeof parseLabelSelector>; fields: ReturnType<typeof parseFieldSelector> }>();
    const selectorsFor = (namespace: string) => {
      let p = parsed.get(namespace);
      if (!p) {
        const own = settings(namespace);
        p = { labels: parseLabelSelector(own.labelSelector), fields: parseFieldSelector(own.fieldSelector) };
        parsed.set(namespace, p);
      }
      return p;
    };
    const shard = per.shard;
    const admits = (o: KubeObject): boolean => {
      const ns = o.metadata?.namespace;
      if (ns && !covers(ns)) return false;
      const selectors = selectorsFor(ns && plan.mode !== 'all' ? ns : '');
      return matchesLabels(selectors.labels, o.metadata?.labels) && matchesFields(selectors.fields, o) && (!shard || inShard(o, shard));
    };
    entry = {
      informer,
      covers: (ns) => covers(ns),
      followed: plan.mode === 'selected',
      describeNamespaces: () => describeNamespaces(),
      release: () => release(),
      admits,
      label,
      ref,
      listKind: isMetadataRef(kind) ? 'PartialObjectMetadataList' : `${ref.kind}List`,
      apiVersion: isMetadataRef(kind) ? 'meta.k8s.io/v1' : ref.apiVersion,
    };
    this.entries.set(id, entry);
    informer.start();
    return entry;
  }

  /** Whether a kind is namespaced, from the client's mapper (discovery, cached there). */
  private async namespaced(ref: ResourceDescriptor | TypeRef): Promise<boolean> {
    const slash = ref.apiVersion.indexOf('/');
    const group = slash === -1 ? '' : ref.apiVersion.slice(0, slash);
    const version = slash === -1 ? ref.apiVersion : ref.apiVersion.slice(slash + 1);
    const mapping = await this.options.client.mapper.restMapping({ group, kind: ref.kind }, version);
    return mapping.scope === 'Namespaced';
  }

  async getInformer<K extends KindRef>(kind: K, options?: { signal?: AbortSignal; blockUntilSynced?: boolean }): Promise<Informer<ObjectFor<K> & KubeObject>> {
    const entry = this.entry(kind);
    if (options?.blockUntilSynced !== false) await this.synced(entry, options?.signal);
    return entry.informer as unknown as Informer<ObjectFor<K> & KubeObject>;
  }

  /**
   * Wait until the entry's informer has synced. A kind the API server does
   * not serve (its CRD not installed, or deleted) is not waited for: the
   * read rejects with the mapper's `NoKindMatch`, as the live client's and
   * controller-runtime's cache do, rather than hanging until its signal.
   */
  private async synced(entry: Entry, signal: AbortSignal | undefined): Promise<void> {
    const informer = entry.informer;
    const failed = (cause: unknown): ClientError => {
      const reason = isCacheError(cause) && cause.reason === 'InvalidOptions' ? 'InvalidRequest' : 'Aborted';
      return new ClientError(reason, `the cache of ${entry.label} did not sync: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    };
    if (informer.hasSynced()) return;
    const gone = new AbortController();
    const off = informer.onServedChange((served) => {
      if (!served) gone.abort();
    });
    if (informer.notServed) gone.abort();
    try {
      await informer.waitForSync(signal ? AbortSignal.any([signal, gone.signal]) : gone.signal);
      return;
    } catch (cause) {
      if (!gone.signal.aborted || signal?.aborted) throw failed(cause);
    } finally {
      off();
    }
    // Not served: the mapper, told to forget the kind, answers NoKindMatch. Found again: wait for the informer's next list.
    const slash = entry.ref.apiVersion.indexOf('/');
    await this.options.client.mapper.restMapping(
      { group: slash === -1 ? '' : entry.ref.apiVersion.slice(0, slash), kind: entry.ref.kind },
      slash === -1 ? entry.ref.apiVersion : entry.ref.apiVersion.slice(slash + 1),
    );
    try {
      await informer.waitForSync(signal);
    } catch (cause) {
      throw failed(cause);
    }
  }

  async get<K extends KindRef>(kind: K, key: ObjectKey, options?: GetOptions): Promise<ObjectFor<K>> {
    const entry = this.readEntry(kind);
    if (key.namespace && !entry.followed && !entry.covers(key.namespace)) {
      throw new ClientError('InvalidRequest', `the cache of ${entry.label} covers ${entry.describeNamespaces()}, not ${key.namespace}`);
    }
    await this.synced(entry, options?.signal);
    // A namespace the selector does not choose (now): nothing there is cached.
    const obj = !key.namespace || entry.covers(key.namespace) ? entry.informer.store.get(keyOf(key.namespace, key.name)) : undefined;
    if (!obj) {
      throw new ClientError('NotFound', `${entry.label} ${key.namespace ? `${key.namespace}/` : ''}${key.name} not found in the cache`, {
        code: 404,
        status: { kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404, details: { name: key.name, kind: describe(kind).ref.kind } },
      });
    }
    return obj as ObjectFor<K>;
  }

  async list<K extends KindRef>(kind: K, options?: ListOptions): Promise<ListFor<K>> {
    if (options?.continue) throw new ClientError('InvalidRequest', 'the cache serves whole lists: continue tokens are not supported');
    const entry = this.readEntry(kind);
    if (options?.namespace && !entry.followed && !entry.covers(options.namespace)) {
      throw new ClientError('InvalidRequest', `the cache of ${entry.label} covers ${entry.describeNamespaces()}, not ${options.namespace}`);
    }
    let labels;
    let fields;
    try {
      labels = parseLabelSelector(options?.labelSelector);
      fields = parseFieldSelector(options?.fieldSelector);
    } catch (cause) {
      throw new ClientError('InvalidRequest', cause instanceof Error ? cause.message : String(cause), { cause });
    }
    await this.synced(entry, options?.signal);
    const store = entry.informer.store;
    // Start from the narrowest index: an indexed field equality, else the namespace.
    const indexed = fields.find((f) => f.equal && store.hasIndex(`field:${f.path}`));
    let candidates: KubeObject[] = indexed
      ? store.byIndex(`field:${indexed.path}`, indexed.value)
      : options?.namespace
        ? store.byIndex(NAMESPACE_INDEX, options.namespace)
        : [...store.values()];
    if (options?.namespace && indexed) candidates = candidates.filter((o) => o.metadata?.namespace === options.namespace);
    const items = candidates.filter(
      (o) =>
        matchesLabels(labels, o.metadata?.labels) &&
        // the indexed requirement is already met by the candidates
        fields.every((f) => f === indexed || (fieldValue(o, f.path) === f.value) === f.equal),
    );
    const limited = options?.limit !== undefined && options.limit > 0 ? items.slice(0, options.limit) : items;
    const rv = entry.informer.stats()[0]?.resourceVersion ?? '';
    return { apiVersion: entry.apiVersion, kind: entry.listKind, metadata: { resourceVersion: rv }, items: limited } as unknown as ListFor<K>;
  }

  async waitForCacheSync(signal?: AbortSignal): Promise<boolean> {
    try {
      await Promise.all([...this.entries.values()].map((e) => e.informer.waitForSync(signal)));
      return true;
    } catch {
      return false;
    }
  }

  async indexField<K extends KindRef>(kind: K, name: string, extract: (obj: ObjectFor<K>) => readonly string[]): Promise<void> {
    const entry = this.entry(kind);
    const index = `field:${name}`;
    if (entry.informer.store.hasIndex(index)) throw new ClientError('InvalidRequest', `${entry.label} already has a field index ${name}`);
    entry.informer.store.addIndex(index, (o) => extract(o as ObjectFor<K>));
    await Promise.resolve();
  }

  async removeInformer(kind: KindRef, options?: { ifNotServed?: boolean }): Promise<void> {
    const { id } = describe(kind);
    const entry = this.entries.get(id);
    if (!entry) return;
    if (options?.ifNotServed && !entry.informer.notServed) return;
    this.entries.delete(id);
    entry.release();
    await entry.informer.stop();
  }

  observedResourceVersion(kind: KindRef, namespace: string | undefined): string | undefined {
    const entry = this.entries.get(describe(kind).id);
    if (!entry) return undefined;
    if (namespace && !entry.covers(namespace)) return undefined;
    return entry.informer.observedResourceVersion(namespace);
  }

  admits(kind: KindRef, object: KubeObject): boolean | undefined {
    return this.entries.get(describe(kind).id)?.admits(object);
  }

  asCached(kind: KindRef, object: unknown): unknown {
    const entry = this.entries.get(describe(kind).id);
    if (!entry || !isObject(object)) return undefined;
    const o = object as KubeObject;
    const partial = o.kind === 'PartialObjectMetadata';
    if (isMetadataRef(kind)) {
      return entry.informer.preparedCopy(partial ? o : ({ apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata', metadata: o.metadata ?? {} }));
    }
    return partial ? undefined : entry.informer.preparedCopy(o);
  }

  nextChange(kind: KindRef, signal: AbortSignal): Promise<void> {
    const entry = this.entries.get(describe(kind).id);
    return entry ? entry.informer.nextChange(signal) : Promise.resolve();
  }

  informers(): readonly InformerInfo[] {
    return [...this.entries.values()].map((e) => this.info(e));
  }

  informerInfo(kind: KindRef): InformerInfo | undefined {
    const entry = this.entries.get(describe(kind).id);
    return entry && this.info(entry);
  }

  private info(e: Entry): InformerInfo {
    const now = Date.now();
    {
      const stats = e.informer.stats();
      let lastError: unknown;
      let lastErrorAt = -1;
      for (const s of stats) {
        if (s.lastError !== undefined && s.lastErrorAt > lastErrorAt) {
          lastError = s.lastError;
          lastErrorAt = s.lastErrorAt;
        }
      }
      const heard = stats.map((s) => s.lastEventAt);
      return {
        kind: e.label,
        synced: e.informer.hasSynced(),
        storeSize: e.informer.store.size,
        stats,
        handlerErrors: e.informer.handlerErrors,
        lastError,
        lastEventAgeMs: heard.length > 0 && heard.every((t) => t > 0) ? now - Math.min(...heard) : undefined,
        prepareErrors: e.informer.prepareErrors,
        unprepared: e.informer.unpreparedCount,
        notServed: e.informer.notServed,
      };
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const e of this.entries.values()) e.release();
    await Promise.all([...this.entries.values()].map((e) => e.informer.stop()));
    await Promise.all([...this.selections.values()].map((s) => s.stop()));
  }
}
