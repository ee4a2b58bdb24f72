/**
 * The informer cache: a client `Reader` served from informers. The first
 * read of a kind starts its informer and waits until it has synced (bounded
 * by the caller's AbortSignal); later reads cost no request.
 */
import { ClientError, fieldValue, isMetadataRef, matchesLabels, parseFieldSelector, parseLabelSelector } from '@kubeloop/client';
import type { Client, GetOptions, KindRef, ListFor, ListOptions, ObjectFor, ObjectKey, Reader, Selector, TypeRef } from '@kubeloop/client';
import type { KubeObject, ResourceDescriptor } from '@kubeloop/scheme';
import { Informer } from './informer.js';
import type { InformerOptions, Transform } from './informer.js';
import { clientListWatcher } from './list-watch.js';
import type { ReflectorOptions, ReflectorStats } from './reflector.js';
import { keyOf, NAMESPACE_INDEX } from './store.js';

/** What to cache of one kind. */
export interface ByKindOptions {
  /** Namespaces to cache. Default: the cache's `namespaces`, else all. */
  readonly namespaces?: readonly string[];
  readonly labelSelector?: Selector;
  readonly fieldSelector?: Selector;
  /** Default: the cache's `transform`. */
  readonly transform?: Transform<KubeObject>;
}

/** Options for {@link createInformerCache}. */
export interface InformerCacheOptions {
  /** Lists and watches go through this client's live calls. */
  readonly client: Client;
  /** Per-kind options, by descriptor or apiVersion/kind. Default: none. */
  readonly byKind?: readonly { readonly kind: ResourceDescriptor | TypeRef; readonly options: ByKindOptions }[];
  /** Namespaces every kind is limited to. Default: all namespaces. */
  readonly namespaces?: readonly string[];
  /** Applied to every object before it is cached. Default: strip `metadata.managedFields`. */
  readonly transform?: Transform<KubeObject>;
  /** Hand out cached objects unfrozen (mutating them corrupts the cache). Default: false. */
  readonly unsafeDisableDeepFreeze?: boolean;
  /** Reflector tuning (page size, watch timeouts, backoff, WatchList). */
  readonly reflector?: ReflectorOptions;
  /** Told of every list/watch error (each is retried). */
  readonly onError?: (kind: string, err: unknown, phase: 'list' | 'watch') => void;
  /** Told of every handler that threw. */
  readonly onHandlerError?: (kind: string, err: unknown) => void;
}

/** Health and metrics of one informer. */
export interface InformerInfo {
  /** `Kind.version.group` plus the form (`metadata` for metadata-only). */
  readonly kind: string;
  readonly synced: boolean;
  readonly storeSize: number;
  readonly stats: readonly ReflectorStats[];
  readonly handlerErrors: number;
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
  /** Stop and forget a kind's informer. */
  removeInformer(kind: KindRef): Promise<void>;
  /** Every informer's health and counters. */
  informers(): readonly InformerInfo[];
  /** Stop every informer. */
  stop(): Promise<void>;
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

interface Entry {
  readonly informer: Informer<KubeObject>;
  readonly namespaces: readonly string[] | undefined;
  readonly label: string;
  readonly listKind: string;
  readonly apiVersion: string;
}

function info(e: Entry): InformerInfo {
  return {
    kind: e.label,
    synced: e.informer.hasSynced(),
    storeSize: e.informer.store.size,
    stats: e.informer.stats(),
    handlerErrors: e.informer.handlerErrors,
  };
}

class Cache implements InformerCache {
  private readonly entries = new Map<string, Entry>();
  private stopped = false;

  constructor(private readonly options: InformerCacheOptions) {}

  private kindOptions(ref: ResourceDescriptor | TypeRef): ByKindOptions {
    return this.options.byKind?.find((b) => b.kind.apiVersion === ref.apiVersion && b.kind.kind === ref.kind)?.options ?? {};
  }

  private entry(kind: KindRef): Entry {
    if (this.stopped) throw new ClientError('InvalidRequest', 'the informer cache is stopped');
    const { id, ref, label } = describe(kind);
    let entry = this.entries.get(id);
    if (entry) return entry;
    const per = this.kindOptions(ref);
    const namespaces = per.namespaces ?? this.options.namespaces;
    const scopes = namespaces && namespaces.length > 0 ? namespaces : [''];
    const informerOptions: InformerOptions<KubeObject> = {
      ...((per.transform ?? this.options.transform) ? { transform: per.transform ?? this.options.transform! } : {}),
      ...(this.options.unsafeDisableDeepFreeze ? { unsafeDisableDeepFreeze: true } : {}),
      ...(this.options.reflector ? { reflector: this.options.reflector } : {}),
      ...(this.options.onError ? { onError: (err: unknown, phase: 'list' | 'watch') => this.options.onError!(label, err, phase) } : {}),
      ...(this.options.onHandlerError ? { onHandlerError: (err: unknown) => this.options.onHandlerError!(label, err) } : {}),
    };
    const informer = new Informer<KubeObject>(
      scopes.map((namespace) => ({
        namespace,
        lw: clientListWatcher(this.options.client, kind, {
          ...(namespace ? { namespace } : {}),
          ...(per.labelSelector ? { labelSelector: per.labelSelector } : {}),
          ...(per.fieldSelector ? { fieldSelector: per.fieldSelector } : {}),
        }),
      })),
      informerOptions,
    );
    entry = {
      informer,
      namespaces: namespaces && namespaces.length > 0 ? namespaces : undefined,
      label,
      listKind: isMetadataRef(kind) ? 'PartialObjectMetadataList' : `${ref.kind}List`,
      apiVersion: isMetadataRef(kind) ? 'meta.k8s.io/v1' : ref.apiVersion,
    };
    this.entries.set(id, entry);
    informer.start();
    return entry;
  }

  async getInformer<K extends KindRef>(kind: K, options?: { signal?: AbortSignal; blockUntilSynced?: boolean }): Promise<Informer<ObjectFor<K> & KubeObject>> {
    const entry = this.entry(kind);
    if (options?.blockUntilSynced !== false) await this.synced(entry, options?.signal);
    return entry.informer as unknown as Informer<ObjectFor<K> & KubeObject>;
  }

  private async synced(entry: Entry, signal: AbortSignal | undefined): Promise<void> {
    try {
      await entry.informer.waitForSync(signal);
    } catch (cause) {
      throw new ClientError('Aborted', `the cache of ${entry.label} did not sync: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    }
  }

  async get<K extends KindRef>(kind: K, key: ObjectKey, options?: GetOptions): Promise<ObjectFor<K>> {
    const entry = this.entry(kind);
    if (entry.namespaces && key.namespace && !entry.namespaces.includes(key.namespace)) {
      throw new ClientError('InvalidRequest', `the cache of ${entry.label} covers namespaces ${entry.namespaces.join(', ')}, not ${key.namespace}`);
    }
    await this.synced(entry, options?.signal);
    const obj = entry.informer.store.get(keyOf(key.namespace, key.name));
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
    const entry = this.entry(kind);
    if (entry.namespaces && options?.namespace && !entry.namespaces.includes(options.namespace)) {
      throw new ClientError('InvalidRequest', `the cache of ${entry.label} covers namespaces ${entry.namespaces.join(', ')}, not ${options.namespace}`);
    }
    const labels = parseLabelSelector(options?.labelSelector);
    const fields = parseFieldSelector(options?.fieldSelector);
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

  async removeInformer(kind: KindRef): Promise<void> {
    const { id } = describe(kind);
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    await entry.informer.stop();
  }

  informers(): readonly InformerInfo[] {
    return [...this.entries.values()].map(info);
  }

  informerInfo(kind: KindRef): InformerInfo | undefined {
    const entry = this.entries.get(describe(kind).id);
    return entry && info(entry);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.entries.values()].map((e) => e.informer.stop()));
  }
}
