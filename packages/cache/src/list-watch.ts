/** Where a reflector lists and watches from: any kind in any form, through the client. */
import type { Client, KindRef, ShardSelector } from '@kubeloop/client';
import type { ObjectFor, Selector } from '@kubeloop/client/internal';
import type { KubeObject, ObjectList } from '@kubeloop/scheme';
import type { WatchEvent } from '@kubeloop/client';

export interface ListPageOptions {
  readonly limit: number;
  readonly continue?: string;
  readonly resourceVersion?: string;
  /** Ask the server for one shard only (the reflector checks what comes back). */
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
  /** Ask the server for one shard only (the reflector checks what comes back). */
  readonly shardSelector?: ShardSelector;
  readonly signal: AbortSignal;
}

/**
 * Lists and watches one set of objects. The reflector relies on two
 * promises: `list` rejects soon after its `signal` aborts (whatever stage
 * the request is at, body included), and the iterator `watch` resolves to
 * throws or ends soon after its `signal` aborts. That is how its deadlines
 * end a stalled request; {@link clientListWatcher} keeps both.
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
