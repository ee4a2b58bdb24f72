/**
 * Which share of a kind a cache keeps: the objects whose hash falls in the
 * ranges this replica holds. The API server filters where it can (sharded
 * list and watch, KEP-5866: uid or namespace, gate `ShardedListAndWatch`);
 * the reflector checks every object anyway, drops what is out of range
 * before the store, and stops asking the server once it has seen the
 * selector ignored (a server without the gate answers as if it was not
 * there).
 */
import { fnv1a64 } from '@kubeloop/client';
import { inShardRanges } from '@kubeloop/client/internal';
import type { ShardRange, ShardSelector } from '@kubeloop/client';
import type { KubeObject } from '@kubeloop/scheme';

/**
 * What an object is hashed by:
 * - `uid`: its own uid (the server can filter);
 * - `namespace`: its namespace (the server can filter; an object and
 *   everything it owns in its namespace land on one shard);
 * - `controller-owner`: the uid of its controller owner (the
 *   ownerReference with `controller: true`), its own uid when it has none.
 *   The server cannot filter by it, so the reflector does: owned objects
 *   land on the shard of the object that controls them, as uid-sharded
 *   primaries do.
 */
export type ShardBy = 'uid' | 'namespace' | 'controller-owner';

/**
 * The share of a kind to keep. A shard ring implements it (its ranges
 * change as members come and go); {@link staticShard} is a fixed one.
 *
 * @example
 * ```ts
 * const half = staticShard('uid', [{ start: 0n, end: 1n << 63n }]);
 * const cache = createInformerCache({ client, byKind: [{ kind: HardDisk, options: { shard: half } }] });
 * ```
 */
export interface ShardFilter {
  readonly by: ShardBy;
  /** The ranges held now; an empty list keeps nothing. */
  ranges(): readonly ShardRange[];
  /** Told whenever `ranges()` changes (informers relist with the new ranges); returns an unsubscribe. Default: the ranges never change. */
  subscribe?(listener: () => void): () => void;
  /** Ask the API server to filter (`uid` and `namespace` only). false: filter only here. Default: true. */
  readonly serverSide?: boolean;
}

/**
 * A shard filter whose ranges never change.
 *
 * @example
 * ```ts
 * const upperHalf = staticShard('namespace', [{ start: 1n << 63n, end: 1n << 64n }]);
 * ```
 */
export function staticShard(by: ShardBy, ranges: readonly ShardRange[], options: { serverSide?: boolean } = {}): ShardFilter {
  const fixed = [...ranges];
  return { by, ranges: () => fixed, ...(options.serverSide === undefined ? {} : { serverSide: options.serverSide }) };
}

/** The string an object is hashed by under `by`. */
export function shardValue(object: KubeObject, by: ShardBy): string {
  const m = object.metadata;
  if (by === 'namespace') return m?.namespace ?? '';
  if (by === 'controller-owner') {
    const owner = m?.ownerReferences?.find((r) => r.controller === true);
    if (owner?.uid) return owner.uid;
  }
  return m?.uid ?? '';
}

/** How many recent hashes {@link shardHash} keeps. */
const RECENT_HASHES = 1024;
/** Recent values and their hashes, oldest first. */
const recent = new Map<string, bigint>();

/**
 * The FNV-1a 64 hash of a shard value (a uid or a namespace), remembered
 * for the last 1,024 values hashed in this process. The cache's shard stage
 * hashes each object it admits, and a sharded controller asks for the same
 * uid's hash when the event reaches it (its bucket); this way a created
 * object's uid is hashed once, not once by each. With the shipped node
 * flags (V8's interpreter running bigint arithmetic per byte) a uid's hash
 * took 7–15 µs on a busy 2-core machine, a lookup a fraction of that; the
 * memory is bounded (at most 1,024 entries, about 120 KiB, only in a
 * process that shards).
 *
 * @example
 * ```ts
 * const lowerHalf = shardHash('0d1f2c3b-4a59-6877-8695-a4b3c2d1e0f9') < 1n << 63n;
 * ```
 */
export function shardHash(value: string): bigint {
  let hash = recent.get(value);
  if (hash === undefined) {
    hash = fnv1a64(value);
    if (recent.size >= RECENT_HASHES) recent.delete(recent.keys().next().value!);
    recent.set(value, hash);
  }
  return hash;
}

/** Whether an object falls in a filter's current ranges. */
export function inShard(object: KubeObject, filter: ShardFilter, ranges: readonly ShardRange[] = filter.ranges()): boolean {
  return inShardRanges(shardHash(shardValue(object, filter.by)), ranges);
}

/** The selector to send the server for a filter now, if it can filter by it and there is something to select. */
export function serverSelector(filter: ShardFilter, ranges: readonly ShardRange[]): ShardSelector | undefined {
  if (filter.serverSide === false || filter.by === 'controller-owner' || ranges.length === 0) return undefined;
  return { field: filter.by === 'uid' ? 'object.metadata.uid' : 'object.metadata.namespace', ranges };
}
