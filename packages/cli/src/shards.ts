/**
 * `kubeloop shards`: a person's view of a shard ring, read from its member
 * Leases: who is in it, whether each is live, what each holds and what the
 * split gives it, the hash ranges held, and buckets nobody holds (a handoff
 * in progress, or a dead member's share waiting for its Lease to expire).
 */
import { createClient, loadKubeConfig } from '@kubeloop/client';
import type { RestConfig } from '@kubeloop/client';
import { assignBuckets, bucketsToRanges, DEFAULT_RING_BUCKETS, formatBuckets, parseBuckets, SHARD_BUCKETS_ANNOTATION, SHARD_HELD_ANNOTATION, SHARD_RING_LABEL } from '@kubeloop/leaderelection';
import { builtinScheme, Lease } from '@kubeloop/scheme';
import { CliError } from './errors.js';

/** Options of {@link describeShards}. */
export interface ShardsOptions {
  /** The ring's name (its Leases' `kubeloop.dev/shard-ring` label). */
  readonly ring: string;
  /** Namespace of the ring's Leases. Default: the kubeconfig context's namespace, else `default`. */
  readonly namespace?: string;
  /** The kubeconfig file. Default: `KUBECONFIG`, in-cluster, else `~/.kube/config`. */
  readonly kubeconfigPath?: string;
  /** A loaded config (wins over `kubeconfigPath`). */
  readonly kubeConfig?: RestConfig;
  /** The clock Lease ages are measured against, in ms since the epoch. Default: `Date.now`. */
  readonly now?: () => number;
}

/** One member of a ring as its Lease shows it. */
export interface ShardMemberView {
  readonly identity: string;
  readonly lease: string;
  /** Renewed within its lease duration, by this machine's clock. */
  readonly live: boolean;
  /** Milliseconds since the Lease was last renewed (by this machine's clock). */
  readonly renewedAgoMs: number;
  readonly leaseDurationSeconds: number;
  /** Buckets its Lease says it holds (working on, draining, or just claimed). */
  readonly held: readonly number[];
  /** Buckets the split over the live members gives it. */
  readonly assigned: readonly number[];
  /** The hash ranges of `held`, `[start, end)` as 0x-prefixed 16-digit hex (the end of the space is `0x10000000000000000`). */
  readonly ranges: readonly string[];
}

/** A ring as read from its Leases. */
export interface ShardRingView {
  readonly ring: string;
  readonly namespace: string;
  readonly buckets: number;
  readonly members: readonly ShardMemberView[];
  /** Buckets no live member holds right now. */
  readonly unheld: readonly number[];
}

const hex = (n: bigint): string => `0x${n.toString(16).padStart(16, '0')}`;

/**
 * Read a shard ring's member Leases. Throws CliError `ClusterReadFailed`
 * when the kubeconfig cannot be loaded or the Leases cannot be listed, and
 * `Usage` for a ring name that is not a DNS label.
 *
 * @example
 * ```ts
 * const view = await describeShards({ ring: 'harddisk-operator', namespace: 'harddisk-system' });
 * for (const m of view.members) console.log(m.identity, m.live, m.held.length);
 * ```
 */
export async function describeShards(options: ShardsOptions): Promise<ShardRingView> {
  if (!/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(options.ring)) {
    throw new CliError('Usage', `shards: --ring ${JSON.stringify(options.ring)} must be a shard ring's name (a DNS label: lower case letters, digits and '-')`);
  }
  let kubeConfig = options.kubeConfig;
  if (!kubeConfig) {
    try {
      kubeConfig = loadKubeConfig(options.kubeconfigPath);
    } catch (cause) {
      throw new CliError('ClusterReadFailed', `cannot load the kubeconfig: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    }
  }
  const namespace = options.namespace ?? kubeConfig.namespace ?? 'default';
  const client = createClient({ kubeConfig, scheme: builtinScheme, fieldOwner: 'kubeloop-cli' });
  let leases: Lease[];
  try {
    leases = (await client.list(Lease, { namespace, labelSelector: { [SHARD_RING_LABEL]: options.ring }, timeoutMs: 30_000 })).items;
  } catch (cause) {
    throw new CliError('ClusterReadFailed', `cannot list the Leases of shard ring ${options.ring} in ${namespace}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
  const now = (options.now ?? Date.now)();
  const buckets = Number(leases.map((l) => l.metadata?.annotations?.[SHARD_BUCKETS_ANNOTATION]).find((b) => b !== undefined) ?? DEFAULT_RING_BUCKETS);
  const members = leases
    .filter((l) => (l.spec?.holderIdentity ?? '') !== '')
    .map((l) => {
      const renewed = Date.parse(l.spec?.renewTime ?? l.spec?.acquireTime ?? '');
      const renewedAgoMs = Number.isNaN(renewed) ? Infinity : Math.max(0, now - renewed);
      const leaseDurationSeconds = l.spec?.leaseDurationSeconds ?? 0;
      return { identity: l.spec!.holderIdentity!, lease: l.metadata?.name ?? '', live: renewedAgoMs < leaseDurationSeconds * 1000, renewedAgoMs, leaseDurationSeconds, held: parseBuckets(l.metadata?.annotations?.[SHARD_HELD_ANNOTATION], buckets) };
    })
    .sort((a, b) => (a.identity < b.identity ? -1 : 1));
  const owners = assignBuckets(members.filter((m) => m.live).map((m) => m.identity), buckets);
  const heldLive = new Set(members.filter((m) => m.live).flatMap((m) => m.held));
  return {
    ring: options.ring,
    namespace,
    buckets,
    members: members.map((m) => ({
      ...m,
      assigned: owners.flatMap((o, b) => (o === m.identity ? [b] : [])),
      ranges: bucketsToRanges(m.held, buckets).map((r) => `[${hex(r.start)}, ${hex(r.end)})`),
    })),
    unheld: Array.from({ length: buckets }, (_, b) => b).filter((b) => !heldLive.has(b)),
  };
}

/** The view as a table for a terminal. */
export function renderShards(view: ShardRingView): string {
  const live = view.members.filter((m) => m.live).length;
  const lines = [`shard ring ${view.ring} in ${view.namespace}: ${live} live of ${view.members.length} member(s), ${view.buckets} buckets`];
  if (view.members.length === 0) {
    lines.push(`no member Leases labelled ${SHARD_RING_LABEL}=${view.ring} in ${view.namespace}`);
    return lines.join('\n') + '\n';
  }
  const age = (ms: number): string => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(1)}s` : 'never');
  const rows = [['MEMBER', 'LIVE', 'RENEWED', 'HELD', 'ASSIGNED', 'BUCKETS HELD'], ...view.members.map((m) => [m.identity, m.live ? 'yes' : 'no', `${age(m.renewedAgoMs)} ago`, String(m.held.length), String(m.assigned.length), formatBuckets(m.held) || '-'])];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) lines.push(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  '));
  lines.push('', 'hash ranges held:');
  for (const m of view.members) lines.push(`  ${m.identity}: ${m.ranges.join(' ') || '-'}`);
  lines.push(view.unheld.length === 0 ? 'every bucket is held by a live member' : `held by no live member: ${formatBuckets(view.unheld)} (${view.unheld.length}; a handoff in progress, or a dead member's share until its Lease expires)`);
  return lines.join('\n') + '\n';
}
