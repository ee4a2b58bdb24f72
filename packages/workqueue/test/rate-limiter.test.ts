/**
 * Rate limiters: per-key exponential backoff, the overall token bucket, their
 * maximum, and controller-runtime's default, each on a hand-driven clock.
 */
import { describe, expect, it } from 'vitest';
import {
  bucketRateLimiter,
  defaultControllerRateLimiter,
  exponentialFailureRateLimiter,
  maxOfRateLimiter,
} from '../src/rate-limiter.js';
import type { RateLimiter } from '../src/rate-limiter.js';

function manualClock(start = 1_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe('exponentialFailureRateLimiter', () => {
  it('doubles from 5 ms per failure of a key by default', () => {
    const limiter = exponentialFailureRateLimiter();
    expect([1, 2, 3, 4, 5].map(() => limiter.when('ns/a'))).toEqual([5, 10, 20, 40, 80]);
    expect(limiter.numRequeues('ns/a')).toBe(5);
  });

  it('caps at 1000 s by default, and stays finite after very many failures', () => {
    const limiter = exponentialFailureRateLimiter();
    const delays = Array.from({ length: 2_000 }, () => limiter.when('ns/a'));
    // 5 * 2^17 = 655 360 ms is the last value under the cap.
    expect(delays[17]).toBe(655_360);
    expect(delays[18]).toBe(1_000_000);
    expect(delays.at(-1)).toBe(1_000_000);
    expect(delays.every((d) => Number.isFinite(d))).toBe(true);
  });

  it('keeps keys apart', () => {
    const limiter = exponentialFailureRateLimiter(1, 100);
    limiter.when('a');
    limiter.when('a');
    expect(limiter.when('b')).toBe(1);
    expect(limiter.when('a')).toBe(4);
    expect(limiter.numRequeues('a')).toBe(3);
    expect(limiter.numRequeues('b')).toBe(1);
    expect(limiter.numRequeues('c')).toBe(0);
  });

  it('starts a key over after forget', () => {
    const limiter = exponentialFailureRateLimiter(5, 1_000);
    limiter.when('a');
    limiter.when('a');
    limiter.forget('a');
    expect(limiter.numRequeues('a')).toBe(0);
    expect(limiter.when('a')).toBe(5);
  });

  it('rejects negative, NaN and inverted bounds with a TypeError', () => {
    expect(() => exponentialFailureRateLimiter(-1, 10)).toThrow(TypeError);
    expect(() => exponentialFailureRateLimiter(Number.NaN, 10)).toThrow(TypeError);
    expect(() => exponentialFailureRateLimiter(10, 5)).toThrow(TypeError);
    expect(() => exponentialFailureRateLimiter(0, 0)).not.toThrow();
  });
});

describe('bucketRateLimiter', () => {
  it('lets a burst through, then spaces retries at 1/qps', () => {
    const clock = manualClock();
    const limiter = bucketRateLimiter(10, 3, { now: clock.now });
    expect([1, 2, 3].map((i) => limiter.when(`k${i}`))).toEqual([0, 0, 0]);
    expect(limiter.when('k4')).toBeCloseTo(100);
    expect(limiter.when('k5')).toBeCloseTo(200);
  });

  it('refills with time, never beyond the burst', () => {
    const clock = manualClock();
    const limiter = bucketRateLimiter(10, 2, { now: clock.now });
    limiter.when('a');
    limiter.when('a');
    expect(limiter.when('a')).toBeCloseTo(100);
    clock.advance(100); // the reserved token arrives; nothing else
    expect(limiter.when('a')).toBeCloseTo(100);
    clock.advance(60_000); // long idle: back to a full bucket of 2, not 600
    expect(limiter.when('a')).toBe(0);
    expect(limiter.when('a')).toBe(0);
    expect(limiter.when('a')).toBeCloseTo(100);
  });

  it('has defaults of 10 qps and a burst of 100', () => {
    const clock = manualClock();
    const limiter = bucketRateLimiter(undefined, undefined, { now: clock.now });
    const delays = Array.from({ length: 102 }, (_, i) => limiter.when(`k${i}`));
    expect(delays.slice(0, 100).every((d) => d === 0)).toBe(true);
    expect(delays[100]).toBeCloseTo(100);
    expect(delays[101]).toBeCloseTo(200);
  });

  it('keeps no per-key state', () => {
    const limiter = bucketRateLimiter(1, 1, { now: manualClock().now });
    limiter.when('a');
    limiter.when('a');
    expect(limiter.numRequeues('a')).toBe(0);
    limiter.forget('a');
    expect(limiter.when('a')).toBeCloseTo(2_000); // forget does not give tokens back
  });

  it('ignores a clock that goes backwards', () => {
    const clock = manualClock();
    const limiter = bucketRateLimiter(10, 1, { now: clock.now });
    limiter.when('a');
    clock.advance(-5_000);
    expect(limiter.when('a')).toBeCloseTo(100);
  });

  it('never delays at an infinite rate', () => {
    const limiter = bucketRateLimiter(Infinity, 1);
    expect([1, 2, 3].map(() => limiter.when('a'))).toEqual([0, 0, 0]);
  });

  it('rejects a rate that is not > 0 and a burst that is not an integer >= 1', () => {
    expect(() => bucketRateLimiter(0, 1)).toThrow(TypeError);
    expect(() => bucketRateLimiter(-1, 1)).toThrow(TypeError);
    expect(() => bucketRateLimiter(Number.NaN, 1)).toThrow(TypeError);
    expect(() => bucketRateLimiter(10, 0)).toThrow(TypeError);
    expect(() => bucketRateLimiter(10, 1.5)).toThrow(TypeError);
  });
});

describe('maxOfRateLimiter', () => {
  function fixed(delay: number, requeues: number): RateLimiter & { whens: string[]; forgotten: string[] } {
    const whens: string[] = [];
    const forgotten: string[] = [];
    return {
      whens,
      forgotten,
      when: (key) => (whens.push(key), delay),
      forget: (key) => void forgotten.push(key),
      numRequeues: () => requeues,
    };
  }

  it('asks every limiter and returns the longest delay and the largest count', () => {
    const a = fixed(5, 1);
    const b = fixed(50, 3);
    const c = fixed(7, 2);
    const limiter = maxOfRateLimiter(a, b, c);
    expect(limiter.when('k')).toBe(50);
    expect([a.whens, b.whens, c.whens]).toEqual([['k'], ['k'], ['k']]);
    expect(limiter.numRequeues('k')).toBe(3);
  });

  it('forgets in every limiter', () => {
    const a = fixed(5, 1);
    const b = fixed(50, 3);
    maxOfRateLimiter(a, b).forget('k');
    expect([a.forgotten, b.forgotten]).toEqual([['k'], ['k']]);
  });

  it('needs at least one limiter', () => {
    expect(() => maxOfRateLimiter()).toThrow(TypeError);
  });
});

describe('defaultControllerRateLimiter', () => {
  it('is per-key 5 ms doubling to 1000 s, reset by forget', () => {
    const limiter = defaultControllerRateLimiter({ now: manualClock().now });
    expect([1, 2, 3].map(() => limiter.when('ns/a'))).toEqual([5, 10, 20]);
    expect(limiter.numRequeues('ns/a')).toBe(3);
    limiter.forget('ns/a');
    expect(limiter.numRequeues('ns/a')).toBe(0);
    expect(limiter.when('ns/a')).toBe(5);
    for (let i = 0; i < 40; i++) limiter.when('ns/b');
    expect(limiter.when('ns/b')).toBe(1_000_000);
  });

  it('also spaces all retries past a burst of 100 at 10 per second', () => {
    const limiter = defaultControllerRateLimiter({ now: manualClock().now });
    const first = Array.from({ length: 100 }, (_, i) => limiter.when(`ns/k${i}`));
    expect(first.every((d) => d === 5)).toBe(true);
    expect(limiter.when('ns/other')).toBeCloseTo(100);
    expect(limiter.when('ns/another')).toBeCloseTo(200);
  });
});
