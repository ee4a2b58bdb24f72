/**
 * `@kubeloop/leaderelection` elects one leader among replicas on a
 * coordination.k8s.io/v1 Lease with client-go's algorithm, usable with or
 * without a manager: observed-time expiry (clock skew between candidates
 * does not matter), optimistic concurrency on the Lease, a renew deadline
 * after which the leader steps down at once, a per-attempt timeout of
 * max(renewDeadline / 2, 1 s), and an optional release on cancel.
 *
 * @example
 * ```ts
 * import { createClient, loadKubeConfig } from '@kubeloop/client';
 * import { createLeaderElector } from '@kubeloop/leaderelection';
 *
 * const elector = createLeaderElector({
 *   client: createClient({ kubeConfig: loadKubeConfig() }),
 *   namespace: 'ops',
 *   name: 'nightly-report',
 *   onStartedLeading: (signal) => runReport(signal),
 * });
 * const end = await elector.run(shutdownSignal); // 'lost' or 'cancelled'
 * ```
 *
 * @packageDocumentation
 */
export { createLeaderElector, formatMicroTime, LEADER_ELECTION_DEFAULTS, LEADER_ELECTION_JITTER_FACTOR } from './leader-elector.js';
export type { LeaderElectionEnd, LeaderElectionMetrics, LeaderElector, LeaderElectorOptions } from './leader-elector.js';
export { assignBuckets, bucketOf, bucketRange, bucketsToRanges, DEFAULT_RING_BUCKETS } from './ring-assignment.js';
export { createShardRing, formatBuckets, memberLeaseName, parseBuckets, SHARD_BUCKETS_ANNOTATION, SHARD_HELD_ANNOTATION, SHARD_RING_LABEL } from './shard-ring.js';
export type { RingChange, RingMember, RingStats, ShardRing, ShardRingOptions } from './shard-ring.js';
export { isLeaderElectionError, LeaderElectionError } from './errors.js';
export type { LeaderElectionErrorReason } from './errors.js';
