/**
 * shardHash: the hash the cache's shard stage and a sharded controller
 * share. It equals FNV-1a 64 of the value, hashes a value seen recently
 * only once, and keeps at most 1,024 values (the 1,025th pushes out the
 * oldest), so a process that shards a million objects holds no more.
 */
import { describe, expect, it, vi } from 'vitest';
import type * as clientModule from '@kubeloop/client';
import { shardHash } from '../src/index.js';

const calls = vi.hoisted(() => ({ n: 0 }));
vi.mock('@kubeloop/client', async (importOriginal) => {
  const real = await importOriginal<typeof clientModule>();
  return { ...real, fnv1a64: (text: string): bigint => (calls.n++, real.fnv1a64(text)) };
});
const { fnv1a64 } = await vi.importActual<typeof clientModule>('@kubeloop/client');

describe('shardHash', () => {
  it('is FNV-1a 64 of the value, hashed once while remembered, and remembers at most 1,024 values', () => {
    const values = Array.from({ length: 1025 }, (_, i) => `uid-${i}-${crypto.randomUUID()}`);
    const before = calls.n;
    expect(shardHash(values[0]!)).toBe(fnv1a64(values[0]!));
    expect(shardHash(values[0]!)).toBe(fnv1a64(values[0]!));
    expect(calls.n - before).toBe(1);
    for (const v of values.slice(1, 1024)) shardHash(v);
    expect(calls.n - before).toBe(1024);
    shardHash(values[0]!); // the 1,024 remembered: values[0] still among them
    expect(calls.n - before).toBe(1024);
    shardHash(values[1024]!); // the 1,025th pushes out the oldest, values[0]
    shardHash(values[1]!);
    expect(calls.n - before).toBe(1025);
    expect(shardHash(values[0]!)).toBe(fnv1a64(values[0]!));
    expect(calls.n - before).toBe(1026);
  });
});
