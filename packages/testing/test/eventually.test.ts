/** eventually / consistently: pass, fail with the last value or error in the message, abort, bad input. */
import { describe, expect, it } from 'vitest';
import { consistently, eventually, isTestingError } from '../src/index.js';

describe('eventually', () => {
  it('returns the value once the condition passes', async () => {
    let n = 0;
    const value = await eventually(() => (++n >= 3 ? `done after ${n}` : false), { intervalMs: 1 });
    expect(value).toBe('done after 3');
  });

  it('treats a throw as "not yet", so assertions work inside', async () => {
    let n = 0;
    await eventually(() => {
      n++;
      expect(n).toBeGreaterThan(2);
    }, { intervalMs: 1 });
    expect(n).toBe(3);
  });

  it('fails with the last value seen, and keeps it', async () => {
    const err = await eventually(() => false, { timeoutMs: 50, intervalMs: 5, message: 'the disk to bind' }).catch((e: unknown) => e);
    expect(isTestingError(err) && err.reason).toBe('ConditionNotMet');
    expect((err as Error).message).toMatch(/^eventually \(the disk to bind\): the condition did not pass within 50 ms \(\d+ attempts\); last value: false$/);
    expect(isTestingError(err) && err.attempts).toBeGreaterThan(1);
  });

  it('fails with the last error thrown, as the cause', async () => {
    const err = await eventually(() => {
      throw new Error('phase is Pending, want Bound');
    }, { timeoutMs: 30, intervalMs: 5 }).catch((e: unknown) => e);
    expect((err as Error).message).toContain('last error: Error: phase is Pending, want Bound');
    expect((err as Error).cause).toBeInstanceOf(Error);
  });

  it('shows objects in the message', async () => {
    const err = await eventually(async () => {
      await Promise.resolve();
      return false as const;
    }, { timeoutMs: 10, intervalMs: 5 }).catch((e: unknown) => e);
    expect(isTestingError(err) && err.lastValue).toBe(false);
  });

  it('stops when the signal aborts', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('test over')), 20);
    await expect(eventually(() => false, { timeoutMs: 10_000, intervalMs: 5, signal: controller.signal })).rejects.toThrow('test over');
  });

  it('rejects negative durations', async () => {
    await expect(eventually(() => true, { timeoutMs: -1 })).rejects.toSatisfy(isTestingError);
  });
});

describe('consistently', () => {
  it('passes when the condition holds throughout, and returns the last value', async () => {
    let n = 0;
    const started = performance.now();
    const value = await consistently(() => ++n, { durationMs: 30, intervalMs: 5 });
    // it checked until the duration was over: at the start and at least once at or after its end (how many checks fit
    // between depends on the machine's timers, so only that lower bound is asserted)
    expect(performance.now() - started).toBeGreaterThanOrEqual(30);
    expect(value).toBe(n);
    expect(n).toBeGreaterThanOrEqual(2);
  });

  it('fails at the first check that fails, showing what it saw', async () => {
    let n = 0;
    const err = await consistently(() => {
      n++;
      if (n === 3) throw new Error('an update was sent');
      return { updates: 0 };
    }, { durationMs: 1000, intervalMs: 1, message: 'no writes' }).catch((e: unknown) => e);
    expect(isTestingError(err) && err.reason).toBe('ConditionNotMet');
    expect((err as Error).message).toBe('consistently (no writes): the condition failed at check 3; error: Error: an update was sent');
  });

  it('a false value fails it', async () => {
    const err = await consistently(() => false, { durationMs: 100 }).catch((e: unknown) => e);
    expect((err as Error).message).toContain('failed at check 1; value: false');
  });
});
