/**
 * Which members this replica reconciles: a fleet's coordinator, beside the
 * manager's leadership gate (multicluster-runtime's coordinators). Every
 * replica engages the members its provider names (their caches and queues
 * run: a warm standby for a member another replica reconciles); the
 * coordinator opens, per member, the terms in which this replica's workers
 * reconcile it, as a leadership gate opens the manager's terms. Two ship
 * here: `engageAll` (every member, while this replica leads: one replica
 * reconciles the whole fleet) and `ringCoordinator` (the members spread over
 * the replicas of a shard ring by the hash of their name, each handed on
 * fenced: drained on the old replica before the new one starts it).
 */
import { currentFence, fnv1a64 } from '@kubeloop/client';
import type { WriteFence } from '@kubeloop/client';
import { formatBuckets } from '@kubeloop/leaderelection';
import type { ShardRing } from '@kubeloop/leaderelection';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { registerShardRingMetrics } from '../metrics/shard-metrics.js';
import { shardRingPermission } from '../rbac/permissions.js';
import type { PermissionRequirement } from '../rbac/permissions.js';
import { untilAborted } from './provider.js';

/** What the fleet gives its coordinator. */
export interface CoordinatorContext {
  /** Aborts when the coordinator must stop: the manager stops, or (a coordinator that needs leadership) the leadership term ends. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  readonly registry: Registry;
  /** The members engaged on this replica now (caches running), reconciled here or not. */
  members(): readonly string[];
  /** Be told when a member engages or leaves. Returns the unsubscribe function. */
  onMembersChange(listener: () => void): () => void;
  /**
   * Reconcile `member` on this replica from now until `term` aborts (or the
   * member leaves), its writes under `fence` when given (refused once it is
   * revoked). A no-op for a member not engaged or reconciled here already.
   */
  lead(member: string, term: AbortSignal, fence?: WriteFence): void;
  /** Whether this replica reconciles `member` now. */
  reconciling(member: string): boolean;
  /** Call once a member's term has been aborted: resolves when its reconciles in flight have ended. Hand the member on only then. */
  stepDown(member: string): Promise<void>;
}

/**
 * Decides which engaged members this replica reconciles, and when.
 *
 * @example
 * ```ts
 * // Reconcile only the members whose name starts with this replica's region.
 * const byRegion: FleetCoordinator = {
 *   description: 'members of region eu',
 *   needLeaderElection: false,
 *   async run(ctx) {
 *     const open = (): void => { for (const m of ctx.members()) if (m.startsWith('eu-')) ctx.lead(m, ctx.signal); };
 *     const off = ctx.onMembersChange(open);
 *     open();
 *     await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
 *     off();
 *   },
 * };
 * ```
 */
export interface FleetCoordinator {
  /** For logs and readiness. */
  readonly description: string;
  /** Whether `run` runs only while this replica leads (its signal is then the leadership term, its fence the term's). */
  readonly needLeaderElection: boolean;
  /** Open and close members' terms until `context.signal` aborts; resolve once every term it opened has stepped down. */
  run(context: CoordinatorContext): Promise<void>;
  /** Why it cannot do its job now (its Lease cannot be renewed), for `/readyz`. Default: nothing wrong. */
  check?(): Error | undefined;
  /** One line on its state for `/readyz`. Default: nothing. */
  status?(): string | undefined;
  /** What it needs of the host's API server, for `manager.permissions()`. Default: nothing. */
  permissions?(): readonly PermissionRequirement[];
}

/**
 * Every engaged member, reconciled on the replica that leads (the
 * manager's leadership gate): the fleet's default. Standbys keep every
 * member's caches and queues warm, so a takeover reconciles at once.
 *
 * @example
 * ```ts
 * createFleet(manager, { provider: staticProvider({ 'eu-1': { kubeConfig: loadKubeConfig('./eu-1.kubeconfig') } }), coordinator: engageAll() });
 * ```
 */
export function engageAll(): FleetCoordinator {
  return {
    description: 'every member, on the leader',
    needLeaderElection: true,
    async run(ctx) {
      // The leadership term's fence (the coordinator runs as leader-only work): writes refused once it is revoked.
      const fence = currentFence();
      const open = (): void => {
        for (const m of ctx.members()) if (!ctx.reconciling(m)) ctx.lead(m, ctx.signal, fence);
      };
      const off = ctx.onMembersChange(open);
      open();
      await untilAborted(ctx.signal);
      off();
      await Promise.all(ctx.members().map((m) => ctx.stepDown(m)));
    },
  };
}

/**
 * Where a member's name falls in the ring's hash space: FNV-1a 64 (the
 * ring's hash) with MurmurHash3's 64-bit finalizer over it. FNV-1a alone
 * keeps the high bits of names that differ only in their last characters
 * (`eu-1`, `eu-2`; `m0` to `m5` all fall in bucket 4 of 128), and the
 * bucket is taken from the high bits; the finalizer spreads them. A pure
 * function of the name, so every replica agrees and a member never moves
 * unless its bucket does.
 */
export function memberHash(name: string): bigint {
  let h = fnv1a64(name);
  h ^= h >> 33n;
  h = (h * 0xff51afd7ed558ccdn) & MASK64;
  h ^= h >> 33n;
  h = (h * 0xc4ceb9fe1a85ec53n) & MASK64;
  h ^= h >> 33n;
  return h;
}

const MASK64 = (1n << 64n) - 1n;

/** Options of {@link ringCoordinator}. */
export interface RingCoordinatorOptions {
  /**
   * Run the ring (its membership Lease) as part of the fleet. `false` when
   * something else runs it already: the manager, whose leadership is
   * `ringLeadership(ring)` of the same ring. Default: true.
   */
  readonly runRing?: boolean;
}

/**
 * Members spread over the replicas of a shard ring: a member is reconciled
 * by the replica working on the ring's bucket of the hash of its name
 * ({@link memberHash}); the others keep its caches and queue warm. The
 * spread is the hash's: with few members per replica it is uneven (six
 * members over three replicas split 2/2/2 only for some names), as with
 * any assignment by hash that never moves a member on its own. A member whose bucket
 * moves is handed on fenced: its workers stop and their reconciles in
 * flight finish before the ring releases the bucket, and the new owner
 * starts only once no live replica holds it, so no member is reconciled by
 * two replicas at once; its writes run under the bucket's write fence
 * (refused from the handoff, or from this replica's renew deadline, on). A
 * replica that dies holds its members until its Lease expires (one lease
 * duration, as observed), then the survivors take them over.
 *
 * @example
 * ```ts
 * const ring = createShardRing({ client: manager.apiReader, namespace: 'fleet-system', name: 'fleet-operator', identity: process.env['POD_NAME']! });
 * createFleet(manager, { provider: kubeconfigSecretProvider({ namespace: 'fleet-system' }), coordinator: ringCoordinator(ring) });
 * ```
 */
export function ringCoordinator(ring: ShardRing, options: RingCoordinatorOptions = {}): FleetCoordinator {
  const runRing = options.runRing ?? true;
  const bucketOf = (member: string): number => ring.bucketOf(memberHash(member));
  let members: () => readonly string[] = () => [];
  let reconciling: (member: string) => boolean = () => false;
  return {
    description: `shard ring ${ring.namespace}/${ring.name}`,
    needLeaderElection: false,
    check: () => ring.check(),
    status: () => {
      if (!ring.isMember()) return `not a member of shard ring ${ring.name} yet`;
      const mine = members().filter((m) => reconciling(m));
      const live = ring.members().filter((m) => m.live).length;
      return `member ${ring.identity} of shard ring ${ring.name} (${live} live, buckets [${formatBuckets(ring.active())}]): reconciling ${mine.length} of ${members().length} members`;
    },
    permissions: () => [shardRingPermission(ring.namespace)],
    async run(ctx) {
      members = () => ctx.members();
      reconciling = (m) => ctx.reconciling(m);
      if (runRing) registerShardRingMetrics(ctx.registry, ring);
      const terms = new Map<string, AbortController>();
      const open = (): void => {
        if (ctx.signal.aborted) return;
        for (const m of ctx.members()) {
          if (ctx.reconciling(m)) continue;
          const bucket = bucketOf(m);
          const fence = ring.active().has(bucket) ? ring.fence(bucket) : undefined;
          if (!fence) continue;
          terms.get(m)?.abort(); // a term that ended without us (the member left and came back)
          const term = new AbortController();
          terms.set(m, term);
          ctx.logger.info({ cluster: m, ring: ring.name, bucket }, 'this replica works on the member\'s shard ring bucket; reconciling it');
          ctx.lead(m, term.signal, fence);
        }
      };
      // The ring hands a bucket on only after this drainer resolves: the members in it have stopped reconciling here by then.
      const close = async (buckets: ReadonlySet<number> | undefined): Promise<void> => {
        const leaving = [...terms].filter(([m]) => buckets === undefined || buckets.has(bucketOf(m)));
        for (const [m, term] of leaving) {
          terms.delete(m);
          term.abort();
          ctx.logger.info({ cluster: m, ring: ring.name }, 'the member\'s shard ring bucket leaves this replica; stopping its reconciles before handing it on');
        }
        await Promise.all(leaving.map(([m]) => ctx.stepDown(m)));
      };
      const offDrain = ring.addDrainer((buckets) => close(buckets));
      const offChange = ring.subscribe((change) => {
        if (change.lost) ctx.logger.warn({ ring: ring.name, identity: ring.identity }, change.lost);
        open();
      });
      const offMembers = ctx.onMembersChange(open);
      try {
        open();
        if (runRing) await ring.run(ctx.signal);
        else await untilAborted(ctx.signal);
      } finally {
        offDrain();
        offChange();
        offMembers();
        await close(undefined);
      }
    },
  };
}
