/**
 * A shared informer: one set of reflectors (one per namespace, or one for
 * all) feeding one indexed store, and any number of handlers. Each handler
 * has its own queue, so it sees events in order and a slow handler never
 * stalls another; a delete and re-create of a name is told apart by UID.
 *
 * No object can break it: freezing is iterative (any depth the API server
 * accepts), and an object the transform or an index function chokes on is
 * reported (`onError` with phase `prepare`, `prepareErrors`,
 * `unpreparedKeys()` for readiness) while the rest of the cache syncs and
 * runs on.
 */
// The Observable class alone (rxjs 7 exports its internals by path): the same
// class as `import { Observable } from 'rxjs'`, without loading all of rxjs
// (about 10 MiB of RSS an operator would never use; `pnpm bench:import-cost`).
// eslint-disable-next-line no-restricted-imports -- rxjs 7 exports ./internal/* on purpose; see above
import { Observable } from 'rxjs/internal/Observable';
import { compareResourceVersions, untraced } from '@kubeloop/client/internal';
import type { KubeObject } from '@kubeloop/scheme';
import { CacheError, isCacheError } from './errors.js';
import { sleep as delay } from '@kubeloop/workqueue';
import { Backoff } from './internal/backoff.js';
import { internMetadata } from './internal/intern.js';
import type { ListWatcher } from './list-watch.js';
import { Reflector, checkReflectorOptions, initialReflectorStats, isNotServed } from './reflector.js';
import type { ReflectorOptions, ReflectorStats } from './reflector.js';
import { Store, objectKey } from './store.js';
import type { IndexFunc } from './store.js';

/**
 * One change seen by an informer, built once and handed as it is to every
 * handler, Observable subscriber and controller source. A resync is an
 * `update` whose `old` is `object` (and `resync` is true).
 */
export type InformerEvent<T> =
  | {
      readonly type: 'add';
      readonly object: T;
      /** True when the object was in the store when the handler was added, or in the informer's first list (client-go's `isInInitialList`). */
      readonly initial?: boolean;
    }
  | {
      readonly type: 'update';
      readonly object: T;
      readonly old: T;
      /** True for a resync (see `resyncPeriodMs`): nothing changed, `old` is `object`. */
      readonly resync?: boolean;
    }
  | {
      readonly type: 'delete';
      readonly object: T;
      /** True when the delete was inferred from a relist: the object's last state is the cached one. */
      readonly finalStateUnknown: boolean;
    };

/**
 * Callbacks for informer events (client-go's `ResourceEventHandler`); each
 * may be async, and is awaited before its next event.
 */
export interface ResourceEventHandler<T> {
  /** `isInInitialList`: the object was in the store when the handler was added, or in the informer's first list (as client-go's `OnAdd(obj, isInInitialList)`). */
  onAdd?(object: T, isInInitialList: boolean): void | Promise<void>;
  /** A change; on a resync (see `resyncPeriodMs`) `old` and `object` are the same object. */
  onUpdate?(old: T, object: T): void | Promise<void>;
  onDelete?(object: T, finalStateUnknown: boolean): void | Promise<void>;
}

/** Options of one handler. */
export interface HandlerOptions {
  /**
   * Every this many ms (plus up to 10 % jitter), the handler is given an
   * `onUpdate(obj, obj)` for every object in the store, as client-go's
   * resync does: level-triggered code gets to look at everything again. A
   * round is skipped while the handler has not yet taken the previous one.
   * 0 turns it off. Default: the informer's `resyncPeriodMs`.
   */
  readonly resyncPeriodMs?: number;
}

/**
 * A handler that takes each event as built (the form controller sources and
 * `events()` use): no unpacking into callback arguments. Awaited before its
 * next event, as {@link ResourceEventHandler}'s callbacks are.
 *
 * @example
 * ```ts
 * const informer = new Informer([{ lw: clientListWatcher(client, ConfigMap), namespace: '' }]);
 * informer.addEventHandler((event) => {
 *   if (event.type === 'add' && !event.initial) console.log('new', event.object.metadata?.name);
 * });
 * ```
 */
export type InformerEventListener<T> = (event: InformerEvent<T>) => void | Promise<void>;

/** A handler's registration. */
export interface HandlerRegistration {
  /**
   * True once the informer has synced and the handler has been given every
   * object of its initial state: the informer's first list, or, for a
   * handler added later, every object stored when it was added.
   */
  hasSynced(): boolean;
  /** Stop delivering events to this handler. */
  remove(): void;
}

/** A transform applied to each object before it is stored (and handed to handlers). */
export type Transform<T> = (obj: T) => T;

/** What an informer reports through `onError`: a reflector's list or watch, or an object it could not prepare. */
export type InformerErrorPhase = 'list' | 'watch' | 'prepare';

/** Options of an informer. */
export interface InformerOptions<T extends KubeObject> {
  /**
   * Applied to every object before storing. An object it throws on is left
   * out of the cache (an older copy stays) and reported. Default:
   * {@link stripManagedFields}.
   */
  readonly transform?: Transform<T>;
  /**
   * Hand out the stored objects without deep-freezing them. Faster (see the
   * cache benchmark), but a caller that mutates a cached object corrupts the
   * cache for everyone. Default: false (objects are deep-frozen).
   */
  readonly unsafeDisableDeepFreeze?: boolean;
  /**
   * Share one copy of the metadata strings cached objects repeat (namespace,
   * label values, owner references' apiVersion and kind, finalizers,
   * creationTimestamp) instead of one per object, after the transform:
   * about a fifth less heap per cached ConfigMap, content unchanged.
   * Default: true.
   */
  readonly internStrings?: boolean;
  /** Extra indexes. An index function that throws leaves that object out of that index, reported. Default: only the namespace index. */
  readonly indexers?: Readonly<Record<string, IndexFunc<T>>>;
  /** Reflector tuning (page size, deadlines, backoff, WatchList). Default: the reflector's defaults. */
  readonly reflector?: ReflectorOptions;
  /** Default resync period of handlers, ms (see {@link HandlerOptions}). Default: 0, no resync. */
  readonly resyncPeriodMs?: number;
  /** Told of a handler that threw. Default: none (the error is dropped after counting). */
  readonly onHandlerError?: (err: unknown) => void;
  /**
   * Told of every error: a reflector's list or watch (each is retried), or
   * an object that could not be prepared (a `CacheError` `Prepare`, the
   * transform's or index function's error as its cause). Default: none.
   */
  readonly onError?: (err: unknown, phase: InformerErrorPhase) => void;
}

/** Drops `metadata.managedFields`: the default transform (they are large and controllers rarely read them). */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  const metadata = obj.metadata;
  if (!metadata || metadata.managedFields === undefined) return obj;
  // Rebuild rather than `delete`: a delete turns the object into V8's slower,
  // larger dictionary mode (measured by the cache benchmark).
  const { managedFields: _dropped, ...rest } = metadata;
  obj.metadata = rest;
  return obj;
}

function freezable(value: unknown): value is object {
  return value !== null && typeof value === 'object' && !Object.isFrozen(value);
}

/** Freeze a value and everything it holds, iteratively: no depth overflows the stack. */
function deepFreeze<T>(root: T): T {
  if (!freezable(root)) return root;
  Object.freeze(root);
  const pending: object[] = [root];
  while (pending.length > 0) {
    const value = pending.pop()!;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const child: unknown = value[i];
        if (freezable(child)) {
          Object.freeze(child);
          pending.push(child);
        }
      }
    } else {
      for (const key in value) {
        const child: unknown = (value as Record<string, unknown>)[key];
        if (freezable(child)) {
          Object.freeze(child);
          pending.push(child);
        }
      }
    }
  }
  return root;
}

/** A source of objects: a ListWatcher and the namespace it covers ('' for all). */
export interface InformerSource<T extends KubeObject> {
  readonly lw: ListWatcher<T>;
  readonly namespace: string;
  /** Applied to this source's objects instead of the informer's `transform` (a namespace's own). Default: the informer's. */
  readonly transform?: Transform<T>;
}

/** One running source: its reflector, and whether it has delivered its initial state. */
interface SourceRecord<T extends KubeObject> {
  readonly namespace: string;
  readonly transform: Transform<T>;
  readonly reflector: Reflector<T>;
  synced: boolean;
  /** Taken out by `updateSources`: whatever its reflector still delivers is ignored. */
  removed: boolean;
}

/**
 * The sources of an informer: given, or worked out when it starts (after a
 * discovery lookup, say). A resolver that rejects is retried with backoff
 * (its error shows in `stats()` and `onError`), except a `CacheError`
 * `InvalidOptions`, which fails the informer: `waitForSync` rejects with it.
 */
export type InformerSources<T extends KubeObject> = readonly InformerSource<T>[] | ((signal: AbortSignal) => Promise<readonly InformerSource<T>[]>);

/** An event as queued: its `initial` and `resync` flags count towards the handler's sync and resync rounds. */
type Queued<T> = InformerEvent<T>;

interface QueueHost<T> {
  synced(): boolean;
  objects(): Iterable<T>;
  handlerError(err: unknown): void;
  removed(queue: HandlerQueue<T>): void;
}

class HandlerQueue<T> implements HandlerRegistration {
  private queue: (Queued<T> | undefined)[] = [];
  private head = 0;
  private draining = false;
  private removed = false;
  private pendingInitial = 0;
  private pendingResync = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly handler: ResourceEventHandler<T> | InformerEventListener<T>,
    private readonly host: QueueHost<T>,
    private readonly resyncPeriodMs: number,
  ) {}

  hasSynced(): boolean {
    return this.host.synced() && this.pendingInitial === 0;
  }

  remove(): void {
    if (this.removed) return;
    this.removed = true;
    this.queue = [];
    this.head = 0;
    this.stopResync();
    this.host.removed(this);
  }

  push(event: Queued<T>): void {
    if (this.removed) return;
    if (event.type === 'add' && event.initial) this.pendingInitial++;
    else if (event.type === 'update' && event.resync) this.pendingResync++;
    this.queue.push(event);
    this.drain();
  }

  /** Arm the resync timer (no-op without a period). */
  scheduleResync(): void {
    if (this.resyncPeriodMs <= 0 || this.removed) return;
    const wait = this.resyncPeriodMs * (1 + Math.random() * 0.1);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.removed) return;
      // A handler still busy with the last round is not given another.
      if (this.host.synced() && this.pendingResync === 0) {
        for (const object of this.host.objects()) this.push({ type: 'update', object, old: object, resync: true });
      }
      this.scheduleResync();
    }, wait);
    this.timer.unref();
  }

  stopResync(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    const handler = this.handler;
    void (async () => {
      while (this.head < this.queue.length && !this.removed) {
        const event = this.queue[this.head]!;
        this.queue[this.head++] = undefined;
        try {
          const r =
            typeof handler === 'function'
              ? handler(event)
              : event.type === 'add'
                ? handler.onAdd?.(event.object, event.initial === true)
                : event.type === 'update'
                  ? handler.onUpdate?.(event.old, event.object)
                  : handler.onDelete?.(event.object, event.finalStateUnknown);
          if (r && typeof r.then === 'function') await r;
        } catch (err) {
          this.host.handlerError(err);
        }
        if (event.type === 'add' && event.initial) this.pendingInitial--;
        else if (event.type === 'update' && event.resync) this.pendingResync--;
      }
      if (this.head >= this.queue.length) {
        this.queue = [];
        this.head = 0;
      }
      this.draining = false;
    })();
  }
}

/**
 * A shared informer over one kind.
 *
 * @example
 * ```ts
 * const informer = new Informer([{ lw: clientListWatcher(client, ConfigMap), namespace: '' }]);
 * informer.addEventHandler({ onAdd: (cm) => console.log('added', cm.metadata?.name) });
 * informer.start();
 * await informer.waitForSync();
 * ```
 */
export class Informer<T extends KubeObject> {
  readonly store: Store<T>;
  private readonly handlers = new Set<HandlerQueue<T>>();
  /** The running sources (one per namespace, or one for all). */
  private records: SourceRecord<T>[] = [];
  /** Sources given to `updateSources` before the first ones were worked out: used instead of the resolver's. */
  private latestSources: readonly InformerSource<T>[] | undefined;
  /** Synced once: a namespace added later does not make the informer unsynced again. */
  private everSynced = false;
  /** Told of the next change to the store (read-your-writes waits on it). */
  private readonly changeWaiters = new Set<() => void>();
  private readonly resolveSources: ((signal: AbortSignal) => Promise<readonly InformerSource<T>[]>) | undefined;
  /** Stats shown while the sources are being worked out. */
  private readonly pendingStats = initialReflectorStats();
  private resolved = false;
  private failure: CacheError | undefined;
  private readonly transform: Transform<T>;
  private readonly freeze: boolean;
  private readonly intern: boolean;
  private readonly resyncPeriodMs: number;
  private readonly syncWaiters: (() => void)[] = [];
  private started = false;
  private stopped = false;
  private readonly stopping = new AbortController();
  /** Keys of objects the watch or list sent that could not be prepared, and why. */
  private readonly unprepared = new Map<string, unknown>();
  /** Raw objects whose preparation failed (the reflector hands them back to replace()). */
  private readonly failed = new WeakSet<object>();
  /** Told when the kind stops (or starts again) being served. */
  private readonly servedListeners = new Set<(served: boolean) => void>();
  private lastServed = true;
  /** Handler exceptions caught so far. */
  handlerErrors = 0;
  /** Objects that could not be prepared (transform or freeze failed), or an index function threw on, so far. */
  prepareErrors = 0;
  /** The last such error (a `CacheError` `Prepare`). */
  lastPrepareError: unknown;

  /** Throws CacheError `InvalidOptions` for bad reflector options or a negative resync period. */
  constructor(
    sources: InformerSources<T>,
    private readonly options: InformerOptions<T> = {},
  ) {
    this.store = new Store<T>(options.indexers, (err, index, key) =>
      this.reportPrepare(new CacheError('Prepare', `${key}: index ${JSON.stringify(index)} threw; the object is cached but missing from that index: ${message(err)}`, { cause: err })),
    );
    this.transform = options.transform ?? stripManagedFields;
    this.freeze = !options.unsafeDisableDeepFreeze;
    this.intern = options.internStrings ?? true;
    this.resyncPeriodMs = period(options.resyncPeriodMs);
    if (typeof sources === 'function') {
      this.resolveSources = sources;
      checkReflectorOptions(options.reflector); // now, not when the sources arrive
    } else {
      this.resolveSources = undefined;
      this.useSources(sources);
    }
  }

  private useSources(sources: readonly InformerSource<T>[]): void {
    this.records = sources.map((source) => this.record(source));
    this.resolved = true;
  }

  private record(source: InformerSource<T>): SourceRecord<T> {
    const transform = source.transform ?? this.transform;
    const record: SourceRecord<T> = {
      namespace: source.namespace,
      transform,
      synced: false,
      removed: false,
      reflector: new Reflector<T>(
        source.lw,
        {
          replace: (objects) => {
            if (!record.removed) this.replace(record, objects);
          },
          apply: (type, obj) => {
            if (!record.removed) this.apply(type, obj, transform);
          },
          prepare: (obj) => this.prepare(obj, transform),
        },
        {
          ...this.options.reflector,
          ...(this.options.onError ? { onError: this.options.onError } : {}),
          onServedChange: () => this.servedChanged(),
          onSynced: () => {
            record.synced = true;
            this.flushIfSynced();
          },
        },
      ),
    };
    return record;
  }

  /**
   * Change the sources while the informer runs, matched by namespace (a
   * cache following namespaces chosen by label calls it): a source for a
   * namespace not yet covered starts at once, its objects arriving as adds;
   * a covered namespace missing from `sources` is dropped, its reflector
   * stopped and its objects taken out of the store, each handler getting a
   * delete (`finalStateUnknown`: the object left the cache's scope, it was
   * not necessarily deleted). Before the first sources are worked out, the
   * latest call's sources are used instead of the resolver's.
   */
  updateSources(sources: readonly InformerSource<T>[]): void {
    if (this.stopped) return;
    if (!this.resolved) {
      this.latestSources = sources;
      return;
    }
    const wanted = new Set(sources.map((s) => s.namespace));
    const kept: SourceRecord<T>[] = [];
    for (const record of this.records) {
      if (wanted.has(record.namespace)) kept.push(record);
      else {
        record.removed = true;
        void record.reflector.stop();
        this.evict(record.namespace);
      }
    }
    const covered = new Set(kept.map((r) => r.namespace));
    for (const source of sources) {
      if (covered.has(source.namespace)) continue;
      covered.add(source.namespace);
      const record = this.record(source);
      kept.push(record);
      if (this.started) untraced(() => void record.reflector.run());
    }
    this.records = kept;
    this.flushIfSynced();
    this.servedChanged();
  }

  /** Take a namespace's objects out of the store (it left the scope): handlers get deletes. */
  private evict(namespace: string): void {
    for (const key of [...this.unprepared.keys()]) if (key.startsWith(`${namespace}/`)) this.unprepared.delete(key);
    for (const obj of this.store.byIndex('namespace', namespace)) {
      const old = this.store.remove(objectKey(obj));
      if (old && this.listening) this.emit({ type: 'delete', object: old, finalStateUnknown: true });
    }
    this.changed();
  }

  private flushIfSynced(): void {
    if (this.hasSynced()) for (const w of this.syncWaiters.splice(0)) w();
  }

  /** Start the reflectors (idempotent). */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    // The lists and watches run for good: they join no trace of whatever read first (a reconcile).
    untraced(() => {
      if (this.resolveSources) void this.resolve(this.resolveSources);
      else this.runReflectors();
    });
    for (const h of this.handlers) h.scheduleResync();
  }

  private runReflectors(): void {
    for (const r of this.records) void r.reflector.run();
    this.flushIfSynced(); // no sources at all: synced at once
  }

  private async resolve(resolveSources: (signal: AbortSignal) => Promise<readonly InformerSource<T>[]>): Promise<void> {
    const signal = this.stopping.signal;
    const r = this.options.reflector;
    const backoff = new Backoff(r?.backoffInitialMs ?? 800, r?.backoffMaxMs ?? 30_000);
    const stats = this.pendingStats;
    stats.state = 'listing';
    while (!signal.aborted) {
      let sources: readonly InformerSource<T>[];
      try {
        sources = await resolveSources(signal);
      } catch (err) {
        if (signal.aborted) return;
        const now = Date.now();
        stats.errors++;
        stats.lastError = err;
        stats.lastErrorAt = now;
        if (stats.disconnectedSince === 0) stats.disconnectedSince = now;
        if (isNotServed(err)) {
          // Told once per outage, as the reflectors do.
          if (!stats.notServed) {
            stats.notServed = true;
            this.report(err, 'list');
            this.servedChanged();
          }
        } else this.report(err, 'list');
        if (isCacheError(err) && err.reason === 'InvalidOptions') {
          this.failure = err;
          stats.state = 'stopped';
          for (const w of this.syncWaiters.splice(0)) w();
          return;
        }
        stats.state = 'backoff';
        await delay(backoff.next(), signal);
        stats.state = 'listing';
        continue;
      }
      if (signal.aborted) return;
      stats.notServed = false;
      this.useSources(this.latestSources ?? sources);
      this.latestSources = undefined;
      this.runReflectors();
      this.servedChanged();
      return;
    }
  }

  /** Stop every reflector and resync timer; waiters for sync are rejected with CacheError `Stopped`. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    for (const h of this.handlers) h.stopResync();
    await Promise.all(this.records.map((r) => r.reflector.stop()));
    if (!this.resolved) this.pendingStats.state = 'stopped';
    this.changed();
    for (const w of this.syncWaiters.splice(0)) w();
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** True once every source has delivered its initial state (and from then on: a source added later does not unsync it). */
  hasSynced(): boolean {
    if (this.everSynced) return true;
    if (!this.resolved || !this.records.every((r) => r.synced)) return false;
    this.everSynced = true;
    return true;
  }

  /**
   * Resolves when synced. Rejects with CacheError `Aborted` if `signal`
   * aborts first, `Stopped` if the informer is stopped first, or the
   * `InvalidOptions` error its sources failed with.
   */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.hasSynced()) return Promise.resolve();
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.stopped) return Promise.reject(new CacheError('Stopped', 'the informer was stopped before it synced'));
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.syncWaiters.indexOf(waiter);
        if (i >= 0) this.syncWaiters.splice(i, 1);
        reject(new CacheError('Aborted', 'aborted while waiting for the informer to sync', { cause: signal?.reason }));
      };
      const waiter = (): void => {
        signal?.removeEventListener('abort', onAbort);
        if (this.hasSynced()) resolve();
        else if (this.failure !== undefined) reject(this.failure);
        else reject(new CacheError('Stopped', 'the informer was stopped before it synced'));
      };
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      this.syncWaiters.push(waiter);
    });
  }

  /**
   * The newest resourceVersion the list+watch covering `namespace` has seen
   * (events, lists and bookmarks; its store holds every change up to it).
   * Without a namespace, or when one list+watch covers all namespaces: the
   * oldest over its list+watches. `''` before any has listed.
   */
  observedResourceVersion(namespace?: string): string {
    if (!this.resolved) return '';
    const rvs: string[] = [];
    for (const r of this.records) {
      if (namespace === undefined || r.namespace === '' || r.namespace === namespace) rvs.push(r.reflector.stats.resourceVersion);
    }
    if (rvs.length === 0) return '';
    if (rvs.length === 1) return rvs[0]!;
    return rvs.reduce((a, b) => (compareResourceVersions(a, b) <= 0 ? a : b));
  }

  /** Resolves at the store's next change (an event applied, a list replaced) or when `signal` aborts. */
  nextChange(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted || this.stopped) {
        resolve();
        return;
      }
      const done = (): void => {
        this.changeWaiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.changeWaiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  private changed(): void {
    if (this.changeWaiters.size === 0) return;
    for (const w of [...this.changeWaiters]) w();
  }

  /**
   * Whether the API server does not serve the informer's kind (its CRD is
   * not installed, or was deleted): the last list or watch of one of its
   * sources said so (see `ReflectorStats.notServed`).
   */
  get notServed(): boolean {
    return this.stats().some((s) => s.notServed);
  }

  /**
   * Call `listener` each time the kind stops being served and each time it
   * is served again (`notServed` changes). Returns the unsubscribe.
   *
   * @example
   * ```ts
   * const informer = await cache.getInformer({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' }, { blockUntilSynced: false });
 * const off = informer.onServedChange((served) => console.log(served ? 'CRD back' : 'CRD gone'));
 * off();
   * ```
   */
  onServedChange(listener: (served: boolean) => void): () => void {
    const entry = (served: boolean): void => listener(served);
    this.servedListeners.add(entry);
    return () => void this.servedListeners.delete(entry);
  }

  private servedChanged(): void {
    const served = !this.notServed;
    if (served === this.lastServed) return;
    this.lastServed = served;
    for (const l of [...this.servedListeners]) {
      try {
        l(served);
      } catch {
        /* a listener that throws must not stop the informer */
      }
    }
  }

  /** Per-source reflector statistics (one entry while the sources are still being worked out). */
  stats(): readonly ReflectorStats[] {
    return this.resolved ? this.records.map((r) => r.reflector.stats) : [this.pendingStats];
  }

  /**
   * The last error met while finding what to list (the kind's mapping: a
   * CRD not installed yet is a NoKindMatch here), kept after the informer
   * has resolved its sources; undefined when none was met. Controllers use
   * it to report a first list that came once the kind appeared.
   */
  resolveError(): unknown {
    return this.pendingStats.lastError;
  }

  /** How many objects the API server has that the cache lacks, because they could not be prepared. */
  get unpreparedCount(): number {
    return this.unprepared.size;
  }

  /** Keys (`namespace/name`) of objects the API server has that the cache lacks, because they could not be prepared. */
  unpreparedKeys(): readonly string[] {
    return [...this.unprepared.keys()];
  }

  /**
   * Add a handler (callbacks, or one function that takes each event as
   * built); it first gets an add for every object already stored.
   * Its registration's `hasSynced()` turns true once the informer has
   * synced and those adds (or, if it was added before the first list, the
   * first list's) have been handled.
   */
  addEventHandler(handler: ResourceEventHandler<T> | InformerEventListener<T>, options: HandlerOptions = {}): HandlerRegistration {
    const queue: HandlerQueue<T> = new HandlerQueue<T>(
      handler,
      {
        synced: () => this.hasSynced(),
        objects: () => this.store.values(),
        handlerError: (err) => {
          this.handlerErrors++;
          try {
            this.options.onHandlerError?.(err);
          } catch {
            /* an observer that throws must not stop delivery */
          }
        },
        removed: (q) => this.handlers.delete(q),
      },
      options.resyncPeriodMs === undefined ? this.resyncPeriodMs : period(options.resyncPeriodMs),
    );
    this.handlers.add(queue);
    for (const object of this.store.values()) queue.push({ type: 'add', object, initial: true });
    if (this.started && !this.stopped) queue.scheduleResync();
    return queue;
  }

  /**
   * The informer's events as an Observable: a view on the same events the
   * handlers get, the same objects (each subscriber is a handler of its
   * own, with `options`).
   */
  events(options: HandlerOptions = {}): Observable<InformerEvent<T>> {
    return new Observable<InformerEvent<T>>((subscriber) => {
      const reg = this.addEventHandler((event) => subscriber.next(event), options);
      return () => reg.remove();
    });
  }

  private report(err: unknown, phase: 'list' | 'watch' | 'prepare'): void {
    try {
      this.options.onError?.(err, phase);
    } catch {
      /* an observer that throws must not stop the informer */
    }
  }

  private reportPrepare(err: CacheError): void {
    this.prepareErrors++;
    this.lastPrepareError = err;
    this.report(err, 'prepare');
  }

  /**
   * A copy of `obj` prepared as the store's objects are (transformed and,
   * unless turned off, frozen), `obj` itself untouched; undefined when the
   * transform fails (nothing is reported: the object is not the store's).
   */
  preparedCopy(obj: T): T | undefined {
    const namespace = obj.metadata?.namespace;
    const transform = (namespace ? this.records.find((r) => r.namespace === namespace)?.transform : undefined) ?? this.transform;
    try {
      const out = transform(structuredClone(obj));
      if (out === null || typeof out !== 'object') return undefined;
      return this.freeze ? deepFreeze(out) : out;
    } catch {
      return undefined;
    }
  }

  /** Transform and freeze; on failure, report, remember the key, and hand back the raw object marked as failed. */
  private prepare(obj: T, transform: Transform<T>): T {
    try {
      const out = transform(obj);
      if (out === null || typeof out !== 'object') throw new TypeError(`the transform returned ${out === null ? 'null' : typeof out}, not an object`);
      if (this.intern) internMetadata(out);
      return this.freeze ? deepFreeze(out) : out;
    } catch (err) {
      let key: string;
      try {
        key = objectKey(obj);
      } catch {
        key = '(unreadable metadata)';
      }
      this.unprepared.set(key, err);
      this.failed.add(obj);
      this.reportPrepare(new CacheError('Prepare', `${key}: could not be prepared for the cache, so the cache does not hold it: ${message(err)}`, { cause: err }));
      return obj;
    }
  }

  private emit(event: Queued<T>): void {
    for (const h of this.handlers) h.push(event);
  }

  private get listening(): boolean {
    return this.handlers.size > 0;
  }

  private replace(record: SourceRecord<T>, objects: T[]): void {
    const namespace = record.namespace;
    const initial = !record.synced;
    const seen = new Set<string>();
    // Objects arrive prepared (transformed and frozen page by page by the reflector).
    for (const obj of objects) {
      const key = objectKey(obj);
      seen.add(key);
      if (this.failed.has(obj)) continue; // reported; an older copy, if any, stays
      this.unprepared.delete(key);
      const old = this.store.upsert(obj);
      this.emitChange(old, obj, initial);
    }
    // Whatever this source covered and did not list is gone.
    const covers = (key: string): boolean => namespace === '' || key.startsWith(`${namespace}/`);
    for (const key of [...this.unprepared.keys()]) if (covers(key) && !seen.has(key)) this.unprepared.delete(key);
    const stale: string[] = [];
    const candidates = namespace ? this.store.byIndex('namespace', namespace).map((o) => objectKey(o)) : [...this.store.keys()];
    for (const key of candidates) if (!seen.has(key)) stale.push(key);
    for (const key of stale) {
      const old = this.store.remove(key);
      if (old && this.listening) this.emit({ type: 'delete', object: old, finalStateUnknown: true });
    }
    this.changed();
  }

  private apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', raw: T, transform: Transform<T>): void {
    try {
      this.applyOne(type, raw, transform);
    } finally {
      this.changed();
    }
  }

  private applyOne(type: 'ADDED' | 'MODIFIED' | 'DELETED', raw: T, transform: Transform<T>): void {
    const key = objectKey(raw);
    if (type === 'DELETED') {
      this.unprepared.delete(key);
      const old = this.store.remove(key);
      if (!old) return;
      const obj = this.prepare(raw, transform);
      if (this.listening) this.emit({ type: 'delete', object: this.failed.has(obj) ? old : obj, finalStateUnknown: false });
      this.unprepared.delete(key);
      return;
    }
    const obj = this.prepare(raw, transform);
    if (this.failed.has(obj)) return; // reported; an older copy, if any, stays
    this.unprepared.delete(key);
    const old = this.store.upsert(obj);
    this.emitChange(old, obj, false);
  }

  private emitChange(old: T | undefined, obj: T, initial: boolean): void {
    if (!this.listening) return;
    if (!old) {
      this.emit(initial ? { type: 'add', object: obj, initial } : { type: 'add', object: obj });
    } else if (old.metadata?.uid !== obj.metadata?.uid) {
      // Deleted and re-created under the same name while we were not looking.
      this.emit({ type: 'delete', object: old, finalStateUnknown: true });
      this.emit(initial ? { type: 'add', object: obj, initial } : { type: 'add', object: obj });
    } else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) {
      this.emit({ type: 'update', object: obj, old });
    }
  }
}

function period(value: number | undefined): number {
  if (value === undefined) return 0;
  if (!Number.isFinite(value) || value < 0) throw new CacheError('InvalidOptions', `resyncPeriodMs must be 0 or a positive number of ms (got ${String(value)})`);
  return value;
}

function message(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  try {
    return String(err);
  } catch {
    return 'an unprintable value was thrown';
  }
}

