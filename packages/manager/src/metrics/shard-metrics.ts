/**
 * Shard metrics: what a shard ring member holds and hands on (read from the
 * ring at scrape time), and the keys a sharded controller took in or
 * passed over. Objects held are `kubeloop_informer_store_objects{kind}`:
 * a sharded cache holds only its share.
 */
import { Counter, Gauge } from './prom.js';
import type { Registry } from 'prom-client';
import type { RingStats, ShardRing } from '@kubeloop/leaderelection';
import { once } from './register.js';

/**
 * `kubeloop_shard_ring_buckets{ring,state}` (`active`, `draining`,
 * `assigned`), `kubeloop_shard_ring_members{ring}` (live members seen),
 * `kubeloop_shard_ring_member{ring}` (1 while this replica's Lease is
 * renewed) and the handoff counters `kubeloop_shard_ring_acquired_total`,
 * `_released_total`, `_conflicts_total`, `_errors_total`, all read from
 * the ring at scrape time.
 */
export function registerShardRingMetrics(registry: Registry, ring: ShardRing): void {
  const rings = ringsOf(registry);
  rings.set(ring.name, ring);
  once(registry, 'kubeloop_shard_ring_buckets', () => new Gauge({
    name: 'kubeloop_shard_ring_buckets',
    help: 'Buckets of the shard ring this replica works on (active), is handing on (draining), or is given by the split (assigned)',
    labelNames: ['ring', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of rings.values()) {
        this.set({ ring: r.name, state: 'active' }, r.active().size);
        this.set({ ring: r.name, state: 'draining' }, r.draining().size);
        this.set({ ring: r.name, state: 'assigned' }, r.assigned().size);
      }
    },
  }));
  once(registry, 'kubeloop_shard_ring_members', () => new Gauge({
    name: 'kubeloop_shard_ring_members',
    help: 'Live members of the shard ring, as this replica last saw them',
    labelNames: ['ring'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of rings.values()) this.set({ ring: r.name }, r.members().filter((m) => m.live).length);
    },
  }));
  once(registry, 'kubeloop_shard_ring_member', () => new Gauge({
    name: 'kubeloop_shard_ring_member',
    help: '1 while this replica has renewed its member Lease within the renew deadline',
    labelNames: ['ring'],
    registers: [registry],
    collect() {
      this.reset();
      for (const r of rings.values()) this.set({ ring: r.name }, r.isMember() ? 1 : 0);
    },
  }));
  const counters: [string, string, keyof RingStats][] = [
    ['kubeloop_shard_ring_acquired_total', 'Buckets started here after the first round (taken over from another member or a new split)', 'acquired'],
    ['kubeloop_shard_ring_released_total', 'Buckets drained here and handed on', 'released'],
    ['kubeloop_shard_ring_conflicts_total', 'Claims withdrawn because another member held or claimed the bucket', 'conflicts'],
    ['kubeloop_shard_ring_errors_total', 'Ring rounds that failed to read or renew the Leases (each retried)', 'errors'],
  ];
  for (const [name, help, field] of counters) {
    once(registry, name, () => new Counter({
      name,
      help,
      labelNames: ['ring'],
      registers: [registry],
      collect() {
        this.reset();
        for (const r of rings.values()) this.inc({ ring: r.name }, r.stats[field]);
      },
    }));
  }
}

const RINGS = new WeakMap<Registry, Map<string, ShardRing>>();
function ringsOf(registry: Registry): Map<string, ShardRing> {
  let rings = RINGS.get(registry);
  if (!rings) RINGS.set(registry, (rings = new Map<string, ShardRing>()));
  return rings;
}

/** Keys a sharded controller took in when their bucket started here, and keys it passed over (not its shard now). */
export interface ShardKeyMetrics {
  readonly moved: Counter<'controller'>;
  readonly skipped: Counter<'controller'>;
}

/** `kubeloop_shard_keys_moved_total{controller}` and `kubeloop_shard_keys_skipped_total{controller}`. */
export function shardKeyMetrics(registry: Registry): ShardKeyMetrics {
  return {
    moved: once(registry, 'kubeloop_shard_keys_moved_total', () => new Counter({ name: 'kubeloop_shard_keys_moved_total', help: 'Keys enqueued because their shard bucket started on this replica (keys moved here)', labelNames: ['controller'], registers: [registry] })),
    skipped: once(registry, 'kubeloop_shard_keys_skipped_total', () => new Counter({ name: 'kubeloop_shard_keys_skipped_total', help: 'Keys dropped because their object is not in a bucket active on this replica (another replica reconciles them)', labelNames: ['controller'], registers: [registry] })),
  };
}
