/**
 * A shard ring as the manager's leadership gate: every replica is a member
 * and runs its share of the sharded controllers; the member working on the
 * ring's leader bucket also runs the leader-only runnables. The leader
 * bucket is handed on like any other, fenced through the Leases: its old
 * owner aborts its leader-only work and waits for it to stop before the
 * ring releases the bucket, so leader-only work never runs on two replicas
 * at once.
 */
import { formatBuckets } from '@kubeloop/leaderelection';
import type { ShardRing } from '@kubeloop/leaderelection';
import type { LeadershipGate } from './leadership.js';
import { registerShardRingMetrics } from './metrics/shard-metrics.js';
import { shardRingPermission } from './rbac/permissions.js';

/** The bucket whose owner leads: 0. */
export const LEADER_BUCKET = 0;

/**
 * Leadership by a shard ring: the manager runs the ring (do not run it
 * yourself as well) and leads while this replica works on the ring's
 * leader bucket (bucket 0). Sharded controllers (`shard: { ring }`) run on
 * every replica; leader-only runnables and unsharded controllers that need
 * leadership run on exactly one. When bucket 0 moves, its old owner stops
 * its leader-only work and waits for it (up to the manager's graceful
 * shutdown timeout) before the bucket is handed on; a member that cannot
 * renew its Lease stops leading before the others may take bucket 0 over
 * (leader-only work runs under bucket 0's write fence: its writes are
 * refused from the handoff, or from this member's renew deadline, on). A
 * member cut off logs it at warn.
 * Leadership is never lost for good: a member cut off leads again when the
 * split gives it bucket 0. `/readyz` names the buckets held here, and the
 * ring's metrics (`kubeloop_shard_ring_*`) are registered in the
 * manager's registry.
 *
 * @example
 * ```ts
 * const ring = createShardRing({ client, namespace: 'harddisk-system', name: 'harddisk-operator', identity: process.env['POD_NAME'] ?? 'harddisk-operator-0' });
 * const manager = createManager({
 *   leadership: ringLeadership(ring),
 *   cache: { byKind: [{ kind: HardDisk, options: { shard: ringShardFilter(ring) } }] },
 * });
 * manager.controller().for(HardDisk).withOptions({ shard: { ring } }).complete(reconciler); // every replica, its share
 * manager.add(async (signal) => { await fetch('https://reports.example/nightly', { signal }); }); // one replica at a time
 * ```
 */
export function ringLeadership(ring: ShardRing): LeadershipGate {
  return {
    description: `shard ring ${ring.namespace}/${ring.name}`,
    check: () => ring.check(),
    leader: () => (ring.active().has(LEADER_BUCKET) ? ring.identity : ring.members().find((m) => m.live && m.held.includes(LEADER_BUCKET))?.identity),
    status: () => {
      if (!ring.isMember()) return `not a member of shard ring ${ring.name} yet`;
      const live = ring.members().filter((m) => m.live).length;
      const active = ring.active();
      const draining = ring.draining();
      return `member ${ring.identity} of shard ring ${ring.name} (${live} live): ${active.size}/${ring.buckets} buckets active [${formatBuckets(active)}]${draining.size > 0 ? `, ${draining.size} draining` : ''}`;
    },
    permissions: () => [shardRingPermission(ring.namespace)],
    async run(context) {
      registerShardRingMetrics(context.registry, ring);
      let term: AbortController | undefined;
      const open = (): void => {
        const fence = ring.fence(LEADER_BUCKET);
        if (term || context.signal.aborted || !ring.active().has(LEADER_BUCKET) || !fence) return;
        term = new AbortController();
        context.logger.info({ ring: ring.name, identity: ring.identity }, 'this replica works on the shard ring leader bucket; leading');
        // Leader-only work writes under bucket 0's fence: refused from its handoff or this member's renew deadline on.
        context.lead(term.signal, fence);
      };
      const close = async (): Promise<void> => {
        if (!term) return;
        term.abort();
        term = undefined;
        context.logger.info({ ring: ring.name, identity: ring.identity }, 'the shard ring leader bucket leaves this replica; stopping leader-only work before handing it on');
        await context.stepDown();
      };
      // The ring hands bucket 0 on only after this drainer resolves: leader-only work has stopped by then.
      const offDrain = ring.addDrainer((buckets) => (buckets.has(LEADER_BUCKET) ? close() : Promise.resolve()));
      const offChange = ring.subscribe((change) => {
        if (change.lost) context.logger.warn({ ring: ring.name, identity: ring.identity, stopped: change.stopped.length }, change.lost);
        open();
      });
      try {
        await ring.run(context.signal);
      } finally {
        offDrain();
        offChange();
        await close();
      }
      return 'stopped';
    },
  };
}
