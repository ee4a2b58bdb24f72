/** A shard ring as a cache's shard filter: the cache holds the share a replica works on, drains, or is about to start. */
import type { ShardBy, ShardFilter } from '@kubeloop/cache';
import type { ShardRing } from '@kubeloop/leaderelection';

/**
 * The cache side of a sharded controller: give it to the cache for the
 * controller's kinds (`cache.byKind`), so each replica lists, watches and
 * holds only its share. `by` must match the controller's `shard.by`; owned
 * kinds take `controller-owner`, so they land with their owner.
 *
 * @example
 * ```ts
 * const ring = createShardRing({ client, namespace: 'ops', name: 'disks', identity: process.env['POD_NAME'] ?? 'harddisk-operator-0' });
 * const manager = createManager({ cache: { byKind: [{ kind: HardDisk, options: { shard: ringShardFilter(ring) } }] } });
 * ```
 */
export function ringShardFilter(ring: ShardRing, by: ShardBy = 'uid'): ShardFilter {
  return { by, ranges: () => ring.cacheRanges(), subscribe: (listener) => ring.subscribe(() => listener()) };
}
