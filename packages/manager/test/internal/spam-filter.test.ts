/**
 * The spam filter: per key, `burst` events at once, then one per interval;
 * a denied event costs nothing; keys are forgotten least recently used first.
 * Five minutes a token cannot be waited for in a test, so the clock is ours.
 */
import { describe, expect, it } from 'vitest';
import { SpamFilter } from '../../src/internal/spam-filter.js';

const FIVE_MINUTES = 300_000;

function filter(burst = 25, maxKeys = 4096): { f: SpamFilter; advance(ms: number): void } {
  let now = 1_000;
  return { f: new SpamFilter(1 / 300, burst, maxKeys, () => now), advance: (ms) => (now += ms) };
}

function passing(f: SpamFilter, key: string, tries: number): number {
  let n = 0;
  for (let i = 0; i < tries; i++) if (f.allow(key)) n++;
  return n;
}

describe('SpamFilter', () => {
  it('lets a burst of 25 through, then one every five minutes', () => {
    const { f, advance } = filter();
    expect(passing(f, 'a', 30)).toBe(25);
    advance(FIVE_MINUTES - 1);
    expect(f.allow('a')).toBe(false);
    advance(1);
    expect(f.allow('a')).toBe(true);
    expect(f.allow('a')).toBe(false);
    advance(FIVE_MINUTES);
    expect(passing(f, 'a', 5)).toBe(1);
  });

  it('denied events do not push the next allowed one further out (a hot loop still gets one through every five minutes)', () => {
    const { f, advance } = filter();
    expect(passing(f, 'a', 25)).toBe(25);
    // one try a second for 31 minutes: the tokens of minutes 5, 10, ..., 30 get through, nothing else
    let allowed = 0;
    for (let s = 0; s < 31 * 60; s++) {
      if (f.allow('a')) allowed++;
      advance(1_000);
    }
    expect(allowed).toBe(6);
  });

  it('refills to the burst and no further after a long quiet spell', () => {
    const { f, advance } = filter();
    expect(passing(f, 'a', 26)).toBe(25); // the 26th reserves the next token
    advance(10 * 3_600_000);
    expect(passing(f, 'a', 40)).toBe(25);
    const { f: g, advance: advanceG } = filter();
    expect(passing(g, 'a', 26)).toBe(25);
    advanceG(10 * FIVE_MINUTES); // ten tokens, the reserved one among them
    expect(passing(g, 'a', 40)).toBe(10);
  });

  it('keys are independent', () => {
    const { f } = filter();
    expect(passing(f, 'a', 30)).toBe(25);
    expect(passing(f, 'b', 30)).toBe(25);
    expect(f.allow('a')).toBe(false);
  });

  it('remembers at most maxKeys keys, forgetting the least recently used (a forgotten key starts with a full burst)', () => {
    const { f } = filter(2, 2);
    expect(passing(f, 'a', 3)).toBe(2);
    passing(f, 'b', 1);
    expect(f.allow('a')).toBe(false); // a is the most recent again
    passing(f, 'c', 1); // forgets b
    expect(f.size).toBe(2);
    expect(f.allow('a')).toBe(false);
    passing(f, 'b', 1); // b comes back new; forgets c
    passing(f, 'c', 1); // c comes back new; forgets a
    expect(f.size).toBe(2);
    expect(passing(f, 'a', 3)).toBe(2);
  });
});
