/** The token bucket and `sleep`: reservation delays on a hand-driven clock, abortable waits. */
import { describe, expect, it } from 'vitest';
import { sleep, TokenBucket } from '../src/index.js';

describe('TokenBucket', () => {
  it('starts full, then spaces reservations 1/qps apart, refilling with time', () => {
    let t = 0;
    const bucket = new TokenBucket(10, 2, () => t);
    expect([bucket.reserve(), bucket.reserve(), bucket.reserve(), bucket.reserve()]).toEqual([0, 0, 100, 200]);
    t = 1_000; // 10 tokens came in, 2 were owed, the bucket holds at most 2
    expect([bucket.reserve(), bucket.reserve(), bucket.reserve()]).toEqual([0, 0, 100]);
  });

  it('never delays at an infinite rate and rejects nonsense', () => {
    const bucket = new TokenBucket(Infinity, 1);
    for (let i = 0; i < 5; i++) expect(bucket.reserve()).toBe(0);
    expect(() => new TokenBucket(0, 1)).toThrow(TypeError);
    expect(() => new TokenBucket(1, 0.5)).toThrow(TypeError);
  });

  it('take waits for its token, and an abort rejects with the reason and gives the token back', async () => {
    const bucket = new TokenBucket(20, 1);
    await bucket.take();
    const ac = new AbortController();
    const waiting = bucket.take(ac.signal);
    ac.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    // The aborted reservation was returned: the next one waits one interval, not two.
    expect(bucket.reserve()).toBeLessThanOrEqual(50);
  });
});

describe('sleep', () => {
  it('resolves true when the time passed and false at once when aborted', async () => {
    expect(await sleep(1)).toBe(true);
    const ac = new AbortController();
    const pending = sleep(60_000, ac.signal);
    ac.abort();
    expect(await pending).toBe(false);
    expect(await sleep(60_000, AbortSignal.abort())).toBe(false);
  });
});
