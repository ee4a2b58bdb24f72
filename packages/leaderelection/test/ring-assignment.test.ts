/** The ring's split of the hash space: even, deterministic, and a join or leave moves about 1/N of it. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HASH_SPACE_END, inShardRanges } from '@kubeloop/client/internal';
import { assignBuckets, bucketOf, bucketsToRanges } from '../src/ring-assignment.js';

const identity = fc.stringMatching(/^[a-z][a-z0-9-]{2,20}$/);
const members = fc.uniqueArray(identity, { minLength: 1, maxLength: 12 });
const buckets = fc.constantFrom(32, 64, 128, 256);

function moved(a: readonly (string | undefined)[], b: readonly (string | undefined)[]): number {
  return a.filter((owner, i) => owner !== b[i]).length / a.length;
}

describe('assignBuckets', () => {
  it('gives every bucket an owner, each member ⌊B/N⌋ or ⌈B/N⌉ of them, whatever order the members come in', () => {
    fc.assert(
      fc.property(members, buckets, (ms, b) => {
        const owners = assignBuckets(ms, b);
        expect(owners.every((o) => o !== undefined && ms.includes(o))).toBe(true);
        const counts = ms.map((m) => owners.filter((o) => o === m).length);
        for (const c of counts) expect(c === Math.floor(b / ms.length) || c === Math.ceil(b / ms.length)).toBe(true);
        expect(assignBuckets([...ms].reverse(), b)).toEqual(owners);
      }),
    );
  });

  it('a member joining or leaving moves about 1/N of the buckets: under 2.5/N each time, about 1.3/N on average', () => {
    let ratios = 0;
    let runs = 0;
    fc.assert(
      fc.property(members, identity, (ms, joiner) => {
        fc.pre(!ms.includes(joiner));
        const before = assignBuckets(ms, 128);
        const joined = assignBuckets([...ms, joiner], 128);
        const ideal = 1 / (ms.length + 1);
        expect(moved(before, joined)).toBeLessThan(2.5 * ideal);
        // Leaving is the same step backwards.
        expect(moved(joined, before)).toBeLessThan(2.5 * ideal);
        ratios += moved(before, joined) / ideal;
        runs++;
      }),
      { numRuns: 300 },
    );
    expect(ratios / runs).toBeLessThan(1.45);
  });

  it('no members own nothing', () => {
    expect(assignBuckets([], 64).every((o) => o === undefined)).toBe(true);
  });

  it('refuses a bucket count that is not a power of two', () => {
    expect(() => assignBuckets(['a'], 100)).toThrow(expect.objectContaining({ name: 'LeaderElectionError', reason: 'InvalidOptions' }));
  });
});

describe('buckets and hash ranges', () => {
  it('a hash is in the ranges of a bucket set exactly when its bucket is in the set', () => {
    fc.assert(
      fc.property(buckets, fc.uniqueArray(fc.nat(255)), fc.bigInt({ min: 0n, max: HASH_SPACE_END - 1n }), (b, set, hash) => {
        const mine = set.filter((x) => x < b);
        const ranges = bucketsToRanges(mine, b);
        expect(inShardRanges(hash, ranges)).toBe(mine.includes(bucketOf(hash, b)));
        // Neighbours are merged: no range ends where the next starts.
        for (let i = 1; i < ranges.length; i++) expect(ranges[i]!.start).toBeGreaterThan(ranges[i - 1]!.end);
      }),
    );
  });

  it('all buckets are the whole space in one range', () => {
    expect(bucketsToRanges([0, 1, 2, 3], 4)).toEqual([{ start: 0n, end: HASH_SPACE_END }]);
  });
});
