/**
 * A shared informer: one set of reflectors (one per namespace, or one for
 * all) feeding one indexed store, and any number of handlers. Each handler
 * has its own queue, so it sees events in order and a slow handler never
 * stalls another; a delete and re-create of a name is told apart by UID.
 */
import { Observable } from 'rxjs';
import type { KubeObject } from '@kubeloop/scheme';
import type { ListWatcher } from './list-watch.js';
import { Reflector } from './reflector.js';
import type { ReflectorOptions, ReflectorStats } from './reflector.js';
import { Store, objectKey } from './store.js';
import type { IndexFunc } from './store.js';

/** One change seen by an informer. */
export type InformerEvent<T> =
  | {
      readonly type: 'add';
      readonly object: T;
      /** True for objects of the informer's first list (client-go's `isInInitialList`). */
      readonly isInInitialList?: boolean;
    }
  | { readonly type: 'update'; readonly object: T; readonly old: T }
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
  onUpdate?(old: T, object: T): void | Promise<void>;
  onDelete?(object: T, finalStateUnknown: boolean): void | Promise<void>;
}

/** A handler's registration. */
export interface HandlerRegistration {
  /** True once the handler has been given every object the informer had when it was added. */
  hasSynced(): boolean;
  /** Stop delivering events to this handler. */
  remove(): void;
}

/** A transform applied to each object before it is stored (and handed to handlers). */
export type Transform<T> = (obj: T) => T;

/** Options of an informer. */
export interface InformerOptions<T extends KubeObject> {
  /** Applied to every object before storing. Default: {@link stripManagedFields}. */
  readonly transform?: Transform<T>;
  /**
   * Hand out the stored objects without deep-freezing them. Faster (see the
   * cache benchmark), but a caller that mutates a cached object corrupts the
   * cache for everyone. Default: false (objects are deep-frozen).
   */
  readonly unsafeDisableDeepFreeze?: boolean;
  /** Extra indexes. Default: only the namespace index. */
  readonly indexers?: Readonly<Record<string, IndexFunc<T>>>;
  readonly reflector?: ReflectorOptions;
  /** Told of a handler that threw. Default: none (the error is dropped after counting). */
  readonly onHandlerError?: (err: unknown) => void;
  /** Told of every error a reflector retries. */
  readonly onError?: (err: unknown, phase: 'list' | 'watch') => void;
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

function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  Object.freeze(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) deepFreeze(value[i]);
  } else {
    for (const key in value) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/** A source of objects: a ListWatcher and the namespace it covers ('' for all). */
export interface InformerSource<T extends KubeObject> {
  readonly lw: ListWatcher<T>;
  readonly namespace: string;
}

class HandlerQueue<T> implements HandlerRegistration {
  private readonly queue: InformerEvent<T>[] = [];
  private draining = false;
  private removed = false;
  private syncedAfter: number;
  private delivered = 0;

  constructor(
    private readonly handler: ResourceEventHandler<T>,
    initial: readonly T[],
    private readonly onError: (err: unknown) => void,
    private readonly onRemove: () => void,
  ) {
    for (const object of initial) this.queue.push({ type: 'add', object });
    this.syncedAfter = initial.length;
    this.drain();
  }

  hasSynced(): boolean {
    return this.delivered >= this.syncedAfter;
  }

  remove(): void {
    this.removed = true;
    this.queue.length = 0;
    this.onRemove();
  }

  push(event: InformerEvent<T>): void {
    if (this.removed) return;
    this.queue.push(event);
    this.drain();
  }

  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    void (async () => {
      while (this.queue.length > 0 && !this.removed) {
        const event = this.queue.shift()!;
        try {
          const r =
            event.type === 'add'
              ? this.handler.onAdd?.(event.object, event.isInInitialList === true || this.delivered < this.syncedAfter)
              : event.type === 'update'
                ? this.handler.onUpdate?.(event.old, event.object)
                : this.handler.onDelete?.(event.object, event.finalStateUnknown);
          if (r && typeof (r).then === 'function') await r;
        } catch (err) {
          this.onError(err);
        }
        this.delivered++;
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
  private readonly reflectors: Reflector<T>[];
  private readonly transform: Transform<T>;
  private readonly freeze: boolean;
  private syncedSources = 0;
  private readonly syncWaiters: (() => void)[] = [];
  private started = false;
  /** Sources (by namespace, '' for all) whose first list has been stored. */
  private readonly listedOnce = new Set<string>();
  /** Handler exceptions caught so far. */
  handlerErrors = 0;

  constructor(
    sources: readonly InformerSource<T>[],
    private readonly options: InformerOptions<T> = {},
  ) {
    this.store = new Store<T>(options.indexers);
    this.transform = options.transform ?? stripManagedFields;
    this.freeze = !options.unsafeDisableDeepFreeze;
    this.reflectors = sources.map(
      (source) =>
        new Reflector<T>(
          source.lw,
          {
            replace: (objects) => this.replace(source.namespace, objects),
            apply: (type, obj) => this.apply(type, obj),
            prepare: (obj) => this.prepare(obj),
          },
          {
            ...options.reflector,
            ...(options.onError ? { onError: options.onError } : {}),
            onSynced: () => {
              this.syncedSources++;
              if (this.hasSynced()) for (const w of this.syncWaiters.splice(0)) w();
            },
          },
        ),
    );
  }

  /** Start the reflectors (idempotent). */
  start(): void {
    if (this.started) return;
    this.started = true;
    for (const r of this.reflectors) void r.run();
  }

  /** Stop every reflector. */
  async stop(): Promise<void> {
    await Promise.all(this.reflectors.map((r) => r.stop()));
    for (const w of this.syncWaiters.splice(0)) w();
  }

  get isStopped(): boolean {
    return this.reflectors.every((r) => r.stopped);
  }

  /** True once every source has delivered its initial state. */
  hasSynced(): boolean {
    return this.syncedSources >= this.reflectors.length;
  }

  /** Resolves when synced; rejects with the signal's reason if it aborts first, or if the informer is stopped. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.hasSynced()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = (): void => reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted while waiting for the cache to sync'));
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      this.syncWaiters.push(() => {
        signal?.removeEventListener('abort', onAbort);
        if (this.hasSynced()) resolve();
        else reject(new Error('the informer was stopped before it synced'));
      });
    });
  }

  /** Per-source reflector statistics. */
  stats(): readonly ReflectorStats[] {
    return this.reflectors.map((r) => r.stats);
  }

  /** Add a handler; it first gets an add for every object already stored. */
  addEventHandler(handler: ResourceEventHandler<T>): HandlerRegistration {
    const queue: HandlerQueue<T> = new HandlerQueue<T>(
      handler,
      [...this.store.values()],
      (err) => {
        this.handlerErrors++;
        this.options.onHandlerError?.(err);
      },
      () => this.handlers.delete(queue),
    );
    this.handlers.add(queue);
    return queue;
  }

  /**
   * The informer's events as an Observable (each subscriber is a handler of
   * its own). rxjs reports an error thrown inside a subscriber's `next` as an
   * unhandled error, which ends a Node process: catch inside `next`, or use
   * {@link Informer.addEventHandler}, whose handler errors are counted and
   * passed to `onHandlerError`.
   */
  events(): Observable<InformerEvent<T>> {
    return new Observable<InformerEvent<T>>((subscriber) => {
      const reg = this.addEventHandler({
        onAdd: (object) => subscriber.next({ type: 'add', object }),
        onUpdate: (old, object) => subscriber.next({ type: 'update', object, old }),
        onDelete: (object, finalStateUnknown) => subscriber.next({ type: 'delete', object, finalStateUnknown }),
      });
      return () => reg.remove();
    });
  }

  private prepare(obj: T): T {
    const out = this.transform(obj);
    return this.freeze ? deepFreeze(out) : out;
  }

  private emit(event: InformerEvent<T>): void {
    for (const h of this.handlers) h.push(event);
  }

  private get listening(): boolean {
    return this.handlers.size > 0;
  }

  private replace(namespace: string, objects: T[]): void {
    const initial = !this.listedOnce.has(namespace);
    this.listedOnce.add(namespace);
    const seen = new Set<string>();
    // Objects arrive prepared (transformed and frozen page by page by the reflector).
    for (const obj of objects) {
      const key = objectKey(obj);
      seen.add(key);
      const old = this.store.upsert(obj);
      this.emitChange(old, obj, initial);
    }
    // Whatever this source covered and did not list is gone.
    const stale: string[] = [];
    const candidates = namespace ? this.store.byIndex('namespace', namespace).map((o) => objectKey(o)) : [...this.store.keys()];
    for (const key of candidates) if (!seen.has(key)) stale.push(key);
    for (const key of stale) {
      const old = this.store.remove(key);
      if (old) this.emit({ type: 'delete', object: old, finalStateUnknown: true });
    }
  }

  private apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', raw: T): void {
    const obj = this.prepare(raw);
    if (type === 'DELETED') {
      const old = this.store.remove(objectKey(obj));
      if (old) this.emit({ type: 'delete', object: obj, finalStateUnknown: false });
      return;
    }
    const old = this.store.upsert(obj);
    this.emitChange(old, obj);
  }

  private emitChange(old: T | undefined, obj: T, initial = false): void {
    if (!this.listening) return;
    if (!old) {
      this.emit(initial ? { type: 'add', object: obj, isInInitialList: true } : { type: 'add', object: obj });
    } else if (old.metadata?.uid !== obj.metadata?.uid) {
      // Deleted and re-created under the same name while we were not looking.
      this.emit({ type: 'delete', object: old, finalStateUnknown: true });
      this.emit({ type: 'add', object: obj });
    } else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) {
      this.emit({ type: 'update', object: obj, old });
    }
  }
}
