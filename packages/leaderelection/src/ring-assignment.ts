/**
 * How a ring splits the 64-bit hash space over its members: a pure function
 * of the member set, so every replica that sees the same Leases computes the
 * same split without talking to the others.
 *
 * The space is cut into `buckets` equal slices (a power of two; bucket `b`
 * is `[b·2^64/B, (b+1)·2^64/B)`). Each (member, bucket) pair gets a score,
 * a hash of both (rendezvous hashing); pairs are taken best score first, and
 * a bucket goes to the first member that still has room under
 * `⌊B/N⌋` (`B mod N` of them may hold one more). Rendezvous alone moves exactly the keys a joining member
 * wins, but leaves shares uneven (±1/√(B/N)); the cap makes them even (a
 * member holds ⌊B/N⌋ or ⌈B/N⌉ buckets) at the price of a few extra moves
 * among the others: on a join or leave about 1.3/N of the buckets move on
 * average (1/N is the least possible), under 2.5/N at worst (property-tested).
 */
import { fnv1a64 } from '@kubeloop/client';
import { HASH_SPACE_END } from '@kubeloop/client/internal';
import type { ShardRange } from '@kubeloop/client';
import { LeaderElectionError } from './errors.js';

/** Buckets a ring cuts the hash space into unless told otherwise: even shares (±1 bucket in 128) and short selectors. */
export const DEFAULT_RING_BUCKETS = 128;

/** Throws LeaderElectionError `InvalidOptions` unless `buckets` is a power of two from 1 to 65 536. */
export function checkBuckets(buckets: number): void {
  if (!Number.isInteger(buckets) || buckets < 1 || buckets > 65_536 || (buckets & (buckets - 1)) !== 0) {
    throw new LeaderElectionError('InvalidOptions', `ring buckets must be a power of two from 1 to 65536 (got ${String(buckets)})`);
  }
}

/** A 64-bit finaliser over FNV-1a, so that scores of names differing in one character are unrelated. */
function score(member: string, bucket: number): bigint {
  let h = fnv1a64(`${member}/${bucket}`);
  h = BigInt.asUintN(64, (h ^ (h >> 30n)) * 0xbf58476d1ce4e5b9n);
  h = BigInt.asUintN(64, (h ^ (h >> 27n)) * 0x94d049bb133111ebn);
  return h ^ (h >> 31n);
}

/**
 * Which member owns each bucket: `result[b]` is the owner of bucket `b`
 * (`undefined` for every bucket when there are no members). Members are
 * identities; duplicates count once; the order they come in does not matter.
 *
 * @example
 * ```ts
 * const owners = assignBuckets(['replica-a', 'replica-b', 'replica-c'], 128);
 * owners.filter((o) => o === 'replica-a').length; // 42 or 43
 * ```
 */
export function assignBuckets(members: readonly string[], buckets: number = DEFAULT_RING_BUCKETS): (string | undefined)[] {
  checkBuckets(buckets);
  const unique = [...new Set(members)].sort();
  const owners = new Array<string | undefined>(buckets).fill(undefined);
  if (unique.length === 0) return owners;
  // Exactly B mod N members may hold one bucket over ⌊B/N⌋: whichever get there first.
  const floor = Math.floor(buckets / unique.length);
  let extras = buckets % unique.length;
  const pairs: { s: bigint; m: string; b: number }[] = [];
  for (const m of unique) for (let b = 0; b < buckets; b++) pairs.push({ s: score(m, b), m, b });
  pairs.sort((x, y) => (x.s < y.s ? 1 : x.s > y.s ? -1 : x.m < y.m ? -1 : x.m > y.m ? 1 : x.b - y.b));
  const load = new Map(unique.map((m) => [m, 0]));
  let left = buckets;
  for (const { m, b } of pairs) {
    if (owners[b] !== undefined) continue;
    const l = load.get(m)!;
    if (l > floor || (l === floor && extras === 0)) continue;
    if (l === floor) extras--;
    owners[b] = m;
    load.set(m, l + 1);
    if (--left === 0) break;
  }
  return owners;
}

/** The bucket a hash falls in. */
export function bucketOf(hash: bigint, buckets: number): number {
  return Number((hash * BigInt(buckets)) >> 64n);
}

/** The hash range of one bucket. */
export function bucketRange(bucket: number, buckets: number): ShardRange {
  const width = HASH_SPACE_END / BigInt(buckets);
  return { start: BigInt(bucket) * width, end: BigInt(bucket + 1) * width };
}

/**
 * The hash ranges a set of buckets covers, neighbours merged, in order.
 *
 * @example
 * ```ts
 * bucketsToRanges([0, 1, 3], 4); // [{ start: 0n, end: 2n ** 63n }, { start: 3n * 2n ** 62n, end: 2n ** 64n }]
 * ```
 */
export function bucketsToRanges(set: Iterable<number>, buckets: number): ShardRange[] {
  const sorted = [...new Set(set)].sort((a, b) => a - b);
  const ranges: ShardRange[] = [];
  let runStart = -1;
  let prev = -2;
  for (const b of sorted) {
    if (b !== prev + 1) {
      if (runStart >= 0) ranges.push({ start: bucketRange(runStart, buckets).start, end: bucketRange(prev, buckets).end });
      runStart = b;
    }
    prev = b;
  }
  if (runStart >= 0) ranges.push({ start: bucketRange(runStart, buckets).start, end: bucketRange(prev, buckets).end });
  return ranges;
}
