/**
 * Where a reflector lists and watches from: any kind in any form, through
 * the client ({@link clientListWatcher}), and the seam where stages wrap it
 * ({@link ListWatchStage}, {@link withStages}): a stage decides what is asked
 * of the server and what of the answer reaches the reflector, so the
 * reflector itself knows only lists, watches, deadlines and retries.
 */
import type { Client, KindRef, ShardSelector } from '@kubeloop/client';
import type { ObjectFor, Selector } from '@kubeloop/client/internal';
import type { KubeObject, ObjectList } from '@kubeloop/scheme';
import type { WatchEvent } from '@kubeloop/client';
import type { ReflectorStats } from './reflector.js';

export interface ListPageOptions {
  readonly limit: number;
  readonly continue?: string;
  readonly resourceVersion?: string;
  /** Ask the server for one shard only (set by the shard stage, which checks what comes back). */
  readonly shardSelector?: ShardSelector;
  readonly signal: AbortSignal;
}

export interface WatchFromOptions {
  readonly resourceVersion: string;
  /** Server-side timeout of the watch. */
  readonly timeoutSeconds: number;
  /** Client-side deadline for the answer's headers and between two events (the reflector enforces it too, a moment later). */
  readonly idleTimeoutMs: number;
  readonly sendInitialEvents?: boolean;
  /** Ask the server for one shard only (set by the shard stage, which checks what comes back). */
  readonly shardSelector?: ShardSelector;
  readonly signal: AbortSignal;
}

/**
 * Lists and watches one set of objects. The reflector relies on two
 * promises: `list` rejects soon after its `signal` aborts (whatever stage
 * the request is at, body included), and the iterator `watch` resolves to
 * throws or ends soon after its `signal` aborts. That is how its deadlines
 * end a stalled request; {@link clientListWatcher} keeps both, and so must
 * a stage.
 *
 * The optional members let a stage change what the list-watch covers while
 * it runs: the reflector subscribes, relists when told, and holds an empty
 * store while it covers nothing.
 *
 * @example
 * ```ts
 * const lw = clientListWatcher(client, ConfigMap, { namespace: 'default' });
 * const page = await lw.list({ limit: 500, signal });
 * ```
 */
export interface ListWatcher<T extends KubeObject> {
  list(options: ListPageOptions): Promise<ObjectList<T>>;
  watch(options: WatchFromOptions): Promise<AsyncIterableIterator<WatchEvent<T>>>;
  /**
   * Told whenever what this list-watch covers changes (a shard's ranges):
   * the reflector abandons the request in flight (not counted as an error)
   * and lists again. Returns the unsubscribe. Default: it never changes.
   */
  subscribe?(listener: () => void): () => void;
  /**
   * True while it covers nothing (a shard that holds no range): the reflector
   * keeps an empty, synced store and asks the server nothing until
   * `subscribe` tells of a change. Default: false.
   */
  coversNothing?(): boolean;
  /**
   * Given the reflector's stats once, when the reflector is built, so a stage
   * can count there what it does (`shardDropped`, `shardServer`). A stage
   * passes it on to the list-watch it wraps. Default: none.
   */
  attach?(stats: ReflectorStats): void;
}

/**
 * A stage: wraps a {@link ListWatcher} in another that changes what is asked
 * of the server (a selector) or what of the answer goes on (drops objects,
 * turns a MODIFIED that left the scope into a DELETED), as kube-rs composes
 * watch streams. A stage must keep the signal contract of `ListWatcher`,
 * and pass on the optional members it does not handle itself
 * ({@link passThrough} does). Stages run only on the informers they are
 * given to: a kind without stages pays nothing for them.
 *
 * @example
 * ```ts
 * // Count the pages listed, and pass everything on.
 * let pages = 0;
 * const counting: ListWatchStage<ConfigMap> = (inner) => ({
 *   ...passThrough(inner),
 *   list: (o) => { pages++; return inner.list(o); },
 *   watch: (o) => inner.watch(o),
 * });
 * const lw = withStages(clientListWatcher(client, ConfigMap), [counting]);
 * ```
 */
export type ListWatchStage<T extends KubeObject> = (inner: ListWatcher<T>) => ListWatcher<T>;

/**
 * The optional members of `inner` (`subscribe`, `coversNothing`, `attach`),
 * bound to it, for a stage to spread into the list-watch it returns.
 *
 * @example
 * ```ts
 * const logging: ListWatchStage<ConfigMap> = (inner) => ({ ...passThrough(inner), list: (o) => inner.list(o), watch: (o) => inner.watch(o) });
 * ```
 */
export function passThrough<T extends KubeObject>(inner: ListWatcher<T>): Pick<ListWatcher<T>, 'subscribe' | 'coversNothing' | 'attach'> {
  return {
    ...(inner.subscribe ? { subscribe: (listener: () => void) => inner.subscribe!(listener) } : {}),
    ...(inner.coversNothing ? { coversNothing: () => inner.coversNothing!() } : {}),
    ...(inner.attach ? { attach: (stats: ReflectorStats) => inner.attach!(stats) } : {}),
  };
}

/**
 * `lw` wrapped in `stages`, the first innermost (closest to the server).
 *
 * @example
 * ```ts
 * const lowerHalf = staticShard('uid', [{ start: 0n, end: 1n << 63n }]);
 * const lw = withStages(clientListWatcher(client, HardDisk), [shardStage(lowerHalf)]);
 * ```
 */
export function withStages<T extends KubeObject>(lw: ListWatcher<T>, stages: readonly ListWatchStage<T>[]): ListWatcher<T> {
  let out = lw;
  for (const stage of stages) out = stage(out);
  return out;
}

/** What a list-watch covers. */
export interface ListWatchScope {
  readonly namespace?: string;
  readonly labelSelector?: Selector;
  readonly fieldSelector?: Selector;
}

/**
 * A ListWatcher over the client (its live calls: lists and watches always go to the API server).
 *
 * @example
 * ```ts
 * const lw = clientListWatcher(client, metadataOnly(Secret), { namespace: 'prod' });
 * ```
 */
export function clientListWatcher<K extends KindRef>(client: Client, kind: K, scope: ListWatchScope = {}): ListWatcher<ObjectFor<K> & KubeObject> {
  const base = {
    ...(scope.namespace ? { namespace: scope.namespace } : {}),
    ...(scope.labelSelector ? { labelSelector: scope.labelSelector } : {}),
    ...(scope.fieldSelector ? { fieldSelector: scope.fieldSelector } : {}),
  };
  return {
    list: (o) =>
      client.apiReader.list(kind, {
        ...base,
        limit: o.limit,
        ...(o.continue ? { continue: o.continue } : {}),
        ...(o.resourceVersion !== undefined && !o.continue ? { resourceVersion: o.resourceVersion } : {}),
        ...(o.shardSelector ? { shardSelector: o.shardSelector } : {}),
        signal: o.signal,
      }) as unknown as Promise<ObjectList<ObjectFor<K> & KubeObject>>,
    watch: (o) =>
      client.watch(kind, {
        ...base,
        resourceVersion: o.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: o.timeoutSeconds,
        idleTimeoutMs: o.idleTimeoutMs,
        ...(o.sendInitialEvents ? { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' as const } : {}),
        ...(o.shardSelector ? { shardSelector: o.shardSelector } : {}),
        signal: o.signal,
      }),
  };
}
