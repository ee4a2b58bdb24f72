/** The test clock: frozen and following time, advance/set firing timers, sleep with abort, bad input. */
import { describe, expect, it } from 'vitest';
import { createTestClock, isTestingError } from '../src/index.js';

describe('createTestClock', () => {
  it('starts where asked and formats Kubernetes timestamps', () => {
    const clock = createTestClock({ start: '2030-05-06T07:08:09.123Z', frozen: true });
    expect(clock.now()).toBe(Date.parse('2030-05-06T07:08:09.123Z'));
    expect(clock.timestamp()).toBe('2030-05-06T07:08:09Z');
    expect(clock.microTimestamp()).toBe('2030-05-06T07:08:09.123000Z');
    expect(clock.date().toISOString()).toBe('2030-05-06T07:08:09.123Z');
  });

  it('a frozen clock stands still until advanced', async () => {
    const clock = createTestClock({ frozen: true });
    const t0 = clock.now();
    await new Promise((r) => setTimeout(r, 20));
    expect(clock.now()).toBe(t0);
    clock.advance(1500);
    expect(clock.now()).toBe(t0 + 1500);
  });

  it('an unfrozen clock follows real time, shifted by advance', async () => {
    const clock = createTestClock();
    expect(clock.frozen).toBe(false);
    const t0 = clock.now();
    clock.advance(60_000);
    expect(clock.now() - t0).toBeGreaterThanOrEqual(60_000);
    await new Promise((r) => setTimeout(r, 20));
    expect(clock.now() - t0).toBeGreaterThanOrEqual(60_015);
  });

  it('advance fires the sleeps and timers that became due, in order, and only those', async () => {
    const clock = createTestClock({ frozen: true });
    const fired: string[] = [];
    clock.setTimer(() => fired.push('b'), 2000);
    clock.setTimer(() => fired.push('a'), 1000);
    const cancel = clock.setTimer(() => fired.push('cancelled'), 1500);
    cancel();
    const slept = clock.sleep(3000).then(() => fired.push('slept'));
    clock.advance(2000);
    expect(fired).toEqual(['a', 'b']);
    clock.advance(1000);
    await slept;
    expect(fired).toEqual(['a', 'b', 'slept']);
  });

  it('set jumps and fires what is due', () => {
    const clock = createTestClock({ start: 0, frozen: true });
    let fired = false;
    clock.setTimer(() => (fired = true), 10_000);
    clock.set(new Date(20_000));
    expect(fired).toBe(true);
    expect(clock.now()).toBe(20_000);
  });

  it('a sleep on an unfrozen clock ends by real time', async () => {
    const clock = createTestClock();
    const started = performance.now();
    await clock.sleep(30);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
  });

  it('freeze and unfreeze keep the reading', async () => {
    const clock = createTestClock();
    clock.freeze();
    const t = clock.now();
    await new Promise((r) => setTimeout(r, 15));
    expect(clock.now()).toBe(t);
    clock.unfreeze();
    await new Promise((r) => setTimeout(r, 15));
    expect(clock.now()).toBeGreaterThan(t);
  });

  it('an aborted sleep rejects with the reason and never fires', async () => {
    const clock = createTestClock({ frozen: true });
    const controller = new AbortController();
    const slept = clock.sleep(1000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(slept).rejects.toThrow('stop');
    clock.advance(5000);
  });

  it('bad input is a TestingError', () => {
    const clock = createTestClock({ frozen: true });
    for (const f of [() => clock.advance(-1), () => clock.advance(Number.NaN), () => clock.set('not a time'), () => createTestClock({ start: 'nope' })]) {
      let err: unknown;
      try {
        f();
      } catch (e) {
        err = e;
      }
      expect(isTestingError(err) && err.reason).toBe('InvalidArgument');
    }
  });
});
