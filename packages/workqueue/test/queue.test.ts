/**
 * The work queue: each rule of client-go's rate-limiting, delaying queue as a
 * unit test, then property-based tests (fast-check) that run random
 * interleavings of add / addAfter / addRateLimited / forget / get / done /
 * abort from several simulated workers against a reference model, on fake
 * time.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createPriorityQueue, createWorkQueue, DEFAULT_MAX_WAIT_MS, LOW_PRIORITY } from '../src/queue.js';
import type { WorkQueue, WorkQueueOptions } from '../src/queue.js';
import { exponentialFailureRateLimiter } from '../src/rate-limiter.js';
import type { RateLimiter } from '../src/rate-limiter.js';
import type { WorkQueueMetrics, WorkQueueProbe } from '../src/metrics.js';

/** Lets settled promises run their callbacks. */
async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

/** The state of a promise, without waiting for it. */
async function peek<T>(promise: Promise<T>): Promise<{ settled: true; value: T } | { settled: false }> {
  let result: { settled: true; value: T } | { settled: false } = { settled: false };
  void promise.then((value) => (result = { settled: true, value }));
  await flush();
  return result;
}

/** Takes every waiting key, one worker, calling done on each. */
async function drainAll(queue: WorkQueue): Promise<string[]> {
  const keys: string[] = [];
  while (queue.len() > 0) {
    const key = await queue.get();
    if (key === undefined) break;
    keys.push(key);
    queue.done(key);
  }
  return keys;
}

function fakeTime(): () => number {
  vi.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
  return () => Date.now();
}

afterEach(() => {
  vi.useRealTimers();
});

describe('add, get, done', () => {
  it('hands keys out first in, first out', async () => {
    const queue = createWorkQueue();
    for (const key of ['c', 'a', 'b']) queue.add(key);
    expect(queue.len()).toBe(3);
    expect(await drainAll(queue)).toEqual(['c', 'a', 'b']);
    expect(queue.len()).toBe(0);
  });

  it('collapses a key added again while it waits, keeping its place', async () => {
    const queue = createWorkQueue();
    queue.add('a');
    queue.add('b');
    queue.add('a');
    queue.add('a');
    expect(queue.len()).toBe(2);
    expect(await drainAll(queue)).toEqual(['a', 'b']);
  });

  it('never hands a held key to a second worker; re-adds while held run once after done', async () => {
    const queue = createWorkQueue();
    queue.add('a');
    const first = await queue.get();
    expect(first).toBe('a');
    queue.add('a');
    queue.add('a');
    queue.add('b');
    expect(queue.len()).toBe(1); // only b waits; a waits for done
    const second = queue.get();
    expect(await second).toBe('b');
    const third = queue.get();
    expect((await peek(third)).settled).toBe(false);
    queue.done('a');
    expect(await third).toBe('a');
    queue.done('a');
    queue.done('b');
    expect(queue.len()).toBe(0);
  });

  it('puts a key re-added while held at the end of the line', async () => {
    const queue = createWorkQueue();
    queue.add('a');
    await queue.get();
    queue.add('a');
    queue.add('b');
    queue.done('a');
    queue.add('c');
    expect(await drainAll(queue)).toEqual(['b', 'a', 'c']);
  });

  it('does not re-queue a key on done when nobody added it meanwhile', async () => {
    const queue = createWorkQueue();
    queue.add('a');
    expect(await queue.get()).toBe('a');
    queue.done('a');
    expect(queue.len()).toBe(0);
  });

  it('ignores done for a key that is not held (even one that is waiting)', async () => {
    const queue = createWorkQueue();
    queue.done('ghost');
    queue.add('a');
    queue.done('a');
    expect(queue.len()).toBe(1);
    expect(await drainAll(queue)).toEqual(['a']);
  });

  it('makes get wait for an add, serving waiting workers in the order they asked', async () => {
    const queue = createWorkQueue();
    const w1 = queue.get();
    const w2 = queue.get();
    expect((await peek(w1)).settled).toBe(false);
    queue.add('a');
    queue.add('b');
    expect(await w1).toBe('a');
    expect(await w2).toBe('b');
    expect(queue.len()).toBe(0);
  });

  it('resolves a get undefined when its signal aborts, and the next add goes to a live worker', async () => {
    const queue = createWorkQueue();
    const controller = new AbortController();
    const aborted = queue.get(controller.signal);
    const live = queue.get();
    controller.abort();
    expect(await aborted).toBeUndefined();
    queue.add('a');
    expect(await live).toBe('a');
    expect(await queue.get(AbortSignal.abort())).toBeUndefined();
  });

  it('still hands out a waiting key to a get with an already aborted signal (no wait is needed)', async () => {
    const queue = createWorkQueue();
    queue.add('a');
    expect(await queue.get(AbortSignal.abort())).toBe('a');
  });

  it('rejects a key that is not a string with a TypeError', () => {
    const queue = createWorkQueue();
    expect(() => queue.add(42 as unknown as string)).toThrow(TypeError);
    expect(() => queue.addAfter(undefined as unknown as string, 5)).toThrow(TypeError);
    expect(() => queue.addRateLimited({} as unknown as string)).toThrow(TypeError);
  });

  it('has a name', () => {
    expect(createWorkQueue({ name: 'harddisk' }).name).toBe('harddisk');
    expect(createWorkQueue().name).toBe('');
  });
});

describe('addAfter', () => {
  beforeEach(() => {
    vi.useRealTimers();
  });

  it('adds the key once the delay has passed', async () => {
    const now = fakeTime();
    const queue = createWorkQueue({ now });
    queue.addAfter('a', 100);
    expect(queue.len()).toBe(0);
    vi.advanceTimersByTime(99);
    expect(queue.len()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(queue.len()).toBe(1);
    expect(await queue.get()).toBe('a');
  });

  it('wakes a waiting worker when the delay ends', async () => {
    const now = fakeTime();
    const queue = createWorkQueue({ now });
    const waiting = queue.get();
    queue.addAfter('a', 50);
    vi.advanceTimersByTime(50);
    expect(await waiting).toBe('a');
  });

  it('adds at once when the delay is zero or negative', () => {
    const queue = createWorkQueue();
    queue.addAfter('a', 0);
    queue.addAfter('b', -10);
    expect(queue.len()).toBe(2);
  });

  it('keeps the earlier deadline of two delayed adds of one key', async () => {
    const now = fakeTime();
    const queue = createWorkQueue({ now });
    queue.addAfter('a', 100);
    queue.addAfter('a', 30); // earlier: wins
    queue.addAfter('a', 200); // later: ignored
    vi.advanceTimersByTime(30);
    expect(queue.len()).toBe(1);
    expect(await queue.get()).toBe('a');
    queue.done('a');
    vi.advanceTimersByTime(500);
    expect(queue.len()).toBe(0);
  });

  it('adds delayed keys in deadline order, equal deadlines in call order', async () => {
    const now = fakeTime();
    const queue = createWorkQueue({ now });
    queue.addAfter('late', 30);
    queue.addAfter('x', 10);
    queue.addAfter('y', 10);
    queue.addAfter('early', 5);
    vi.advanceTimersByTime(30);
    expect(await drainAll(queue)).toEqual(['early', 'x', 'y', 'late']);
  });

  it('collapses with a key already waiting when its delay ends', async () => {
    const now = fakeTime();
    const queue = createWorkQueue({ now });
    queue.add('a');
    queue.addAfter('a', 10);
    vi.advanceTimersByTime(10);
    expect(queue.len()).toBe(1);
    expect(await drainAll(queue)).toEqual(['a']);
  });

  it('runs a key delayed while held once more after done (requeueAfter from a reconcile)', async () => {
    const now = fakeTime();
    const queue = createWorkQueue({ now });
    queue.add('a');
    expect(await queue.get()).toBe('a');
    queue.addAfter('a', 10);
    queue.done('a');
    expect(queue.len()).toBe(0);
    vi.advanceTimersByTime(10);
    expect(await drainAll(queue)).toEqual(['a']);
  });

  it('leaves a pending delayed add in place when the key is added now', async () => {
    const now = fakeTime();
    const queue = createWorkQueue({ now });
    queue.addAfter('a', 10);
    queue.add('a');
    expect(await drainAll(queue)).toEqual(['a']);
    vi.advanceTimersByTime(10);
    expect(await drainAll(queue)).toEqual(['a']);
  });

  it('waits delays longer than the longest Node timer', async () => {
    const now = fakeTime();
    const queue = createWorkQueue({ now });
    const day = 24 * 3600_000;
    queue.addAfter('a', 30 * day);
    vi.advanceTimersByTime(25 * day);
    expect(queue.len()).toBe(0);
    vi.advanceTimersByTime(5 * day);
    expect(await drainAll(queue)).toEqual(['a']);
  });

  it('re-arms when a timer fires before the clock reaches the deadline', () => {
    vi.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout'] });
    let t = 0;
    const queue = createWorkQueue({ now: () => t });
    queue.addAfter('a', 100);
    vi.advanceTimersByTime(100); // the timer fires, but the clock still reads 0
    expect(queue.len()).toBe(0);
    t = 60;
    vi.advanceTimersByTime(100); // fires again; the clock is 40 ms short: re-armed for 40 ms
    expect(queue.len()).toBe(0);
    t = 100;
    vi.advanceTimersByTime(100);
    expect(queue.len()).toBe(1);
  });

  it('rejects a delay that is not a finite number', () => {
    const queue = createWorkQueue();
    expect(() => queue.addAfter('a', Number.NaN)).toThrow(TypeError);
    expect(() => queue.addAfter('a', Infinity)).toThrow(TypeError);
    expect(() => queue.addAfter('a', '5' as unknown as number)).toThrow(TypeError);
  });
});

describe('rate limiting', () => {
  it('delays addRateLimited by the rate limiter, forget resets it, numRequeues reads it', async () => {
    const now = fakeTime();
    const queue = createWorkQueue({ now, rateLimiter: exponentialFailureRateLimiter(5, 1_000) });
    queue.addRateLimited('a');
    vi.advanceTimersByTime(4);
    expect(queue.len()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(await drainAll(queue)).toEqual(['a']);
    queue.addRateLimited('a');
    expect(queue.numRequeues('a')).toBe(2);
    vi.advanceTimersByTime(9);
    expect(queue.len()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(await drainAll(queue)).toEqual(['a']);
    queue.forget('a');
    expect(queue.numRequeues('a')).toBe(0);
    queue.addRateLimited('a');
    vi.advanceTimersByTime(5);
    expect(queue.len()).toBe(1);
  });

  it('uses controller-runtime default limiter when none is given (5 ms, doubling)', () => {
    const now = fakeTime();
    const queue = createWorkQueue({ now });
    queue.addRateLimited('a');
    queue.addRateLimited('a');
    expect(queue.numRequeues('a')).toBe(2);
    vi.advanceTimersByTime(5); // the first (5 ms) deadline wins over the second (10 ms)
    expect(queue.len()).toBe(1);
  });

  it('asks the rate limiter exactly once per addRateLimited', () => {
    const keys: string[] = [];
    const limiter: RateLimiter = { when: (key) => (keys.push(key), 0), forget() {}, numRequeues: () => 0 };
    const queue = createWorkQueue({ rateLimiter: limiter });
    queue.addRateLimited('a');
    queue.addRateLimited('b');
    expect(keys).toEqual(['a', 'b']);
    expect(queue.len()).toBe(2);
  });
});

describe('shutDown', () => {
  it('resolves waiting gets undefined, ignores adds and hands nothing out', async () => {
    const queue = createWorkQueue();
    const waiting = queue.get();
    queue.shutDown();
    expect(queue.shuttingDown).toBe(true);
    expect(await waiting).toBeUndefined();
    queue.add('a');
    queue.addAfter('b', 0);
    queue.addRateLimited('c');
    expect(queue.len()).toBe(0);
    expect(await queue.get()).toBeUndefined();
  });

  it('drops waiting keys; held keys may still be done, and are not re-queued', async () => {
    const queue = createWorkQueue();
    queue.add('a');
    queue.add('b');
    expect(await queue.get()).toBe('a');
    queue.add('a');
    queue.shutDown();
    expect(queue.len()).toBe(0);
    queue.done('a');
    expect(queue.len()).toBe(0);
    expect(await queue.get()).toBeUndefined();
  });

  it('clears its timers, so a stopped queue keeps nothing alive', () => {
    fakeTime();
    const queue = createWorkQueue({ now: () => Date.now() });
    queue.addAfter('a', 1_000_000);
    queue.addAfter('b', 10);
    expect(vi.getTimerCount()).toBe(1);
    queue.shutDown();
    expect(vi.getTimerCount()).toBe(0);
    queue.addAfter('c', 10);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('holds no timer once the last delayed key is added (real timers)', async () => {
    const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    const queue = createWorkQueue();
    queue.addAfter('a', 1);
    expect(timers()).toBe(before + 1);
    expect(await queue.get()).toBe('a');
    expect(timers()).toBe(before);
    queue.addAfter('b', 3_600_000);
    expect(timers()).toBe(before + 1);
    queue.shutDown();
    expect(timers()).toBe(before);
  });
});

describe('shutDownWithDrain', () => {
  it('waits for held keys to be done, still handing out waiting and re-added keys', async () => {
    const queue = createWorkQueue();
    queue.add('a');
    queue.add('b');
    expect(await queue.get()).toBe('a');
    queue.add('a'); // re-added while held: must still run
    const drained = queue.shutDownWithDrain();
    let finished = false;
    void drained.then(() => (finished = true));
    queue.add('c'); // ignored
    expect(queue.shuttingDown).toBe(true);
    expect(await queue.get()).toBe('b');
    const waiting = queue.get();
    queue.done('b');
    await flush();
    expect(finished).toBe(false);
    queue.done('a');
    expect(await waiting).toBe('a');
    await flush();
    expect(finished).toBe(false);
    const last = queue.get();
    queue.done('a');
    expect(await last).toBeUndefined();
    await drained;
    expect(finished).toBe(true);
    expect(await queue.get()).toBeUndefined();
  });

  it('resolves at once when nothing is waiting or held', async () => {
    const queue = createWorkQueue();
    const waiting = queue.get();
    await queue.shutDownWithDrain();
    expect(await waiting).toBeUndefined();
  });

  it('drops delayed keys and clears their timer', async () => {
    fakeTime();
    const queue = createWorkQueue({ now: () => Date.now() });
    queue.addAfter('a', 10);
    await queue.shutDownWithDrain();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(10);
    expect(queue.len()).toBe(0);
  });

  it('is cut short by shutDown', async () => {
    const queue = createWorkQueue();
    queue.add('a');
    queue.add('b');
    expect(await queue.get()).toBe('a');
    const drained = queue.shutDownWithDrain();
    queue.shutDown();
    await drained;
    expect(await queue.get()).toBeUndefined(); // b was dropped
  });

  it('after shutDown, waits only for held keys', async () => {
    const queue = createWorkQueue();
    queue.add('a');
    expect(await queue.get()).toBe('a');
    queue.shutDown();
    const drained = queue.shutDownWithDrain();
    expect((await peek(drained)).settled).toBe(false);
    queue.done('a');
    await drained;
  });
});

describe('metrics hooks', () => {
  it('reports adds, depth, gets, dones and delayed retries', async () => {
    const now = fakeTime();
    const calls: string[] = [];
    const metrics: WorkQueueMetrics = {
      add: (key) => calls.push(`add ${key}`),
      depth: (n) => calls.push(`depth ${n}`),
      get: (key) => calls.push(`get ${key}`),
      done: (key) => calls.push(`done ${key}`),
      retry: (key) => calls.push(`retry ${key}`),
    };
    const queue = createWorkQueue({ now, metrics });
    queue.add('a');
    queue.add('a'); // collapsed: not an add
    expect(await queue.get()).toBe('a');
    queue.add('a'); // held: counted, waits for done
    queue.addAfter('b', 0); // no delay: an add, not a retry
    queue.addAfter('c', 5);
    queue.done('a');
    vi.advanceTimersByTime(5);
    expect(calls).toEqual([
      'add a', 'depth 1',
      'get a', 'depth 0',
      'add a', 'depth 1',
      'add b', 'depth 2',
      'retry c',
      'done a',
      'add c', 'depth 3',
    ]);
    calls.length = 0;
    queue.shutDown();
    expect(calls).toEqual(['depth 0']);
  });
});

// ---------------------------------------------------------------------------
// Property-based tests
// ---------------------------------------------------------------------------

const KEYS = ['a', 'b', 'c', 'd', 'e'] as const;
const WORKERS = 3;
const MAX_BACKOFF = 40;

/**
 * The reference: client-go's queue written as plainly as possible, with
 * workers by number and time as a number.
 */
class Model {
  /** Waiting keys with their priority, the sequence number of the add that placed them, and the time it did. */
  readonly queue = new Map<string, { p: number; seq: number; since: number }>();
  readonly dirty = new Set<string>();
  readonly processing = new Set<string>();
  /** Priorities of held keys added again, for when they are done. */
  readonly heldPriority = new Map<string, number>();
  readonly waiters: number[] = [];
  readonly held = new Map<number, string>();
  /** The priority each worker's key was handed out at. */
  readonly heldAt = new Map<number, number>();
  readonly delayed = new Map<string, { at: number; seq: number; p: number }>();
  readonly limiter = exponentialFailureRateLimiter(5, MAX_BACKOFF);
  time = 0;
  seq = 0;
  /** Aging: whether the next hand-out goes to the longest-waiting key, if it has waited maxWaitMs. */
  agedTurn = true;

  /**
   * `priorities`: a priority queue (highest first); otherwise FIFO and
   * priorities ignored. `maxWaitMs`: while a key has waited this long,
   * every other hand-out is the longest-waiting key.
   */
  constructor(
    readonly priorities: boolean,
    readonly maxWaitMs = Infinity,
  ) {}

  add(key: string, p = 0): void {
    if (!this.priorities) p = 0;
    if (this.dirty.has(key)) {
      if (this.processing.has(key)) this.heldPriority.set(key, Math.max(p, this.heldPriority.get(key) ?? p));
      else if (p > this.queue.get(key)!.p) this.queue.set(key, { p, seq: this.seq++, since: this.time });
      return;
    }
    this.dirty.add(key);
    if (this.processing.has(key)) {
      this.heldPriority.set(key, p);
      return;
    }
    this.queue.set(key, { p, seq: this.seq++, since: this.time });
    this.dispatch();
  }

  addAfter(key: string, ms: number, p = 0): void {
    if (!this.priorities) p = 0;
    if (ms <= 0) return this.add(key, p);
    let at = this.time + ms;
    const existing = this.delayed.get(key);
    if (existing !== undefined) {
      if (existing.at <= at && existing.p >= p) return;
      at = Math.min(at, existing.at);
      p = Math.max(p, existing.p);
    }
    this.delayed.set(key, { at, seq: this.seq++, p });
  }

  get(worker: number): void {
    this.waiters.push(worker);
    this.dispatch();
  }

  abort(worker: number): void {
    this.waiters.splice(this.waiters.indexOf(worker), 1);
  }

  done(worker: number): void {
    const key = this.held.get(worker)!;
    this.held.delete(worker);
    this.processing.delete(key);
    if (this.dirty.has(key)) {
      this.queue.set(key, { p: this.heldPriority.get(key) ?? 0, seq: this.seq++, since: this.time });
      this.heldPriority.delete(key);
      this.dispatch();
    }
  }

  advance(ms: number): void {
    const target = this.time + ms;
    for (;;) {
      let next: [string, { at: number; seq: number; p: number }] | undefined;
      for (const entry of this.delayed) {
        if (entry[1].at > target) continue;
        if (next === undefined || entry[1].at < next[1].at || (entry[1].at === next[1].at && entry[1].seq < next[1].seq)) next = entry;
      }
      if (next === undefined) break;
      this.time = next[1].at;
      this.delayed.delete(next[0]);
      this.add(next[0], next[1].p);
    }
    this.time = target;
  }

  /** Keys that need processing by priority: waiting ones at theirs, held and re-added ones at the priority they will wait at. */
  depthByPriority(): Map<number, number> {
    const depth = new Map<number, number>();
    for (const { p } of this.queue.values()) depth.set(p, (depth.get(p) ?? 0) + 1);
    for (const p of this.heldPriority.values()) depth.set(p, (depth.get(p) ?? 0) + 1);
    return depth;
  }

  /**
   * The next key to hand out: highest priority, then earliest add; but on
   * the aged turn, the longest-waiting key if it has waited maxWaitMs (ties:
   * higher priority, then earlier add). The turns alternate.
   */
  private next(): string | undefined {
    if (this.priorities && this.agedTurn) {
      let oldest: [string, { p: number; seq: number; since: number }] | undefined;
      for (const entry of this.queue) {
        const [, e] = entry;
        if (oldest === undefined || e.since < oldest[1].since || (e.since === oldest[1].since && (e.p > oldest[1].p || (e.p === oldest[1].p && e.seq < oldest[1].seq)))) oldest = entry;
      }
      if (oldest !== undefined && this.time - oldest[1].since >= this.maxWaitMs) {
        this.agedTurn = false;
        return oldest[0];
      }
    }
    let best: [string, { p: number; seq: number }] | undefined;
    for (const entry of this.queue) {
      if (best === undefined || entry[1].p > best[1].p || (entry[1].p === best[1].p && entry[1].seq < best[1].seq)) best = entry;
    }
    if (best !== undefined) this.agedTurn = true;
    return best?.[0];
  }

  private dispatch(): void {
    while (this.waiters.length > 0 && this.queue.size > 0) {
      const worker = this.waiters.shift()!;
      const key = this.next()!;
      this.heldAt.set(worker, this.queue.get(key)!.p);
      this.queue.delete(key);
      this.processing.add(key);
      this.dirty.delete(key);
      this.held.set(worker, key);
    }
  }
}

type Command =
  | { op: 'add'; key: string; priority: number }
  | { op: 'addAfter'; key: string; ms: number; priority: number }
  | { op: 'addRateLimited'; key: string; priority: number }
  | { op: 'forget'; key: string }
  | { op: 'get'; worker: number }
  | { op: 'done'; worker: number }
  | { op: 'abort'; worker: number }
  | { op: 'strayDone'; key: string }
  | { op: 'advance'; ms: number };

const keyArb = fc.constantFrom(...KEYS);
const priorityArb = fc.constantFrom(0, 0, LOW_PRIORITY, 10);
const workerArb = fc.integer({ min: 0, max: WORKERS - 1 });
const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('add' as const), key: keyArb, priority: priorityArb }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant('addAfter' as const), key: keyArb, ms: fc.integer({ min: -5, max: 50 }), priority: priorityArb }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('addRateLimited' as const), key: keyArb, priority: priorityArb }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('forget' as const), key: keyArb }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('get' as const), worker: workerArb }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant('done' as const), worker: workerArb }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant('abort' as const), worker: workerArb }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('strayDone' as const), key: keyArb }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 40 }) }), weight: 2 },
);

type WorkerState = { state: 'idle' } | { state: 'waiting'; abort: AbortController } | { state: 'holding'; key: string; priority: number };

/** Drives a real queue and the model side by side and records what happened. */
class Harness {
  readonly model: Model;
  readonly queue: WorkQueue;
  readonly workers: WorkerState[] = Array.from({ length: WORKERS }, () => ({ state: 'idle' }));
  /** Every add-like call and every hand-out, in order: [sequence, key]. */
  readonly adds: [number, string][] = [];
  readonly gets: [number, string][] = [];
  readonly violations: string[] = [];
  private clock = 0;
  /** What the queue last reported through its metrics: the depth, and the depth per priority (priority queues). */
  reportedDepth = 0;
  reportedByPriority: ReadonlyMap<number, number> | undefined;

  constructor(priorities: boolean, maxWaitMs?: number) {
    this.model = new Model(priorities, maxWaitMs);
    const create = priorities ? createPriorityQueue : createWorkQueue;
    const metrics = {
      add() {},
      get() {},
      done() {},
      retry() {},
      depth: (n: number, byPriority?: ReadonlyMap<number, number>) => {
        this.reportedDepth = n;
        this.reportedByPriority = byPriority === undefined ? undefined : new Map(byPriority);
      },
    };
    this.queue = create({ now: () => Date.now(), rateLimiter: exponentialFailureRateLimiter(5, MAX_BACKOFF), metrics, ...(maxWaitMs === undefined ? {} : { maxWaitMs }) });
  }

  held(): string[] {
    return this.workers.flatMap((w) => (w.state === 'holding' ? [w.key] : []));
  }

  async run(command: Command): Promise<void> {
    const { queue, model } = this;
    switch (command.op) {
      case 'add':
        this.adds.push([this.clock++, command.key]);
        if (command.priority === 0) queue.add(command.key);
        else queue.addWithOptions(command.key, { priority: command.priority });
        model.add(command.key, command.priority);
        break;
      case 'addAfter':
        this.adds.push([this.clock++, command.key]);
        if (command.priority === 0) queue.addAfter(command.key, command.ms);
        else queue.addWithOptions(command.key, { afterMs: command.ms, priority: command.priority });
        model.addAfter(command.key, command.ms, command.priority);
        break;
      case 'addRateLimited':
        this.adds.push([this.clock++, command.key]);
        if (command.priority === 0) queue.addRateLimited(command.key);
        else queue.addWithOptions(command.key, { rateLimited: true, priority: command.priority });
        model.addAfter(command.key, model.limiter.when(command.key), command.priority);
        break;
      case 'forget':
        queue.forget(command.key);
        model.limiter.forget(command.key);
        break;
      case 'get':
        this.get(command.worker);
        break;
      case 'done': {
        const worker = this.workers[command.worker]!;
        if (worker.state !== 'holding') return;
        this.workers[command.worker] = { state: 'idle' };
        queue.done(worker.key);
        model.done(command.worker);
        break;
      }
      case 'abort': {
        const worker = this.workers[command.worker]!;
        if (worker.state !== 'waiting') return;
        worker.abort.abort();
        model.abort(command.worker);
        break;
      }
      case 'strayDone':
        if (this.held().includes(command.key)) return;
        queue.done(command.key);
        break;
      case 'advance':
        vi.advanceTimersByTime(command.ms);
        model.advance(command.ms);
        break;
    }
    await flush();
    this.compare();
  }

  get(index: number): void {
    if (this.workers[index]!.state !== 'idle') return;
    const abort = new AbortController();
    this.workers[index] = { state: 'waiting', abort };
    this.model.get(index);
    void this.queue.getWithPriority(abort.signal).then((got) => {
      if (got === undefined) {
        this.workers[index] = { state: 'idle' };
        return;
      }
      const { key, priority } = got;
      if (this.held().includes(key)) this.violations.push(`${key} handed to worker ${index} while another worker holds it`);
      this.workers[index] = { state: 'holding', key, priority };
      this.gets.push([this.clock++, key]);
    });
  }

  /** The real queue must agree with the model on every worker and every count. */
  compare(): void {
    const { model, queue } = this;
    const real = this.workers.map((w) => (w.state === 'holding' ? `holds ${w.key} at ${w.priority}` : w.state));
    const expected = this.workers.map((_, i) => (model.held.has(i) ? `holds ${model.held.get(i)!} at ${model.heldAt.get(i)!}` : model.waiters.includes(i) ? 'waiting' : 'idle'));
    expect(real).toEqual(expected);
    expect(queue.len()).toBe(model.queue.size);
    // The depth reported to metrics, in all and (priority queue) per priority: priorities seen stay, at 0.
    expect(this.reportedDepth).toBe(model.dirty.size);
    if (model.priorities) {
      const reported = [...(this.reportedByPriority ?? new Map<number, number>())].filter(([, n]) => n > 0).sort((a, b) => a[0] - b[0]);
      expect(reported).toEqual([...model.depthByPriority()].sort((a, b) => a[0] - b[0]));
    } else expect(this.reportedByPriority).toBeUndefined();
    expect(Date.now()).toBe(model.time);
    for (const key of KEYS) expect(queue.numRequeues(key)).toBe(model.limiter.numRequeues(key));
    const held = this.held();
    expect(new Set(held).size).toBe(held.length);
    expect(this.violations).toEqual([]);
  }

  /** Workers keep taking and finishing keys until nothing waits, is delayed or is held. */
  async drain(): Promise<void> {
    vi.advanceTimersByTime(10_000);
    this.model.advance(10_000);
    await flush();
    for (let round = 0; round < 1_000; round++) {
      for (let i = 0; i < WORKERS; i++) {
        const worker = this.workers[i]!;
        if (worker.state === 'holding') await this.run({ op: 'done', worker: i });
        else if (worker.state === 'idle') await this.run({ op: 'get', worker: i });
      }
      if (this.workers.every((w) => w.state === 'waiting') && this.queue.len() === 0 && this.model.delayed.size === 0) return;
    }
    throw new Error('the queue did not drain');
  }
}

describe.each([
  { queue: 'FIFO queue', priorities: false, create: createWorkQueue, maxWaitMs: undefined },
  { queue: 'priority queue', priorities: true, create: createPriorityQueue, maxWaitMs: undefined },
  // Aging on at every step: keys wait 0-40 ms between commands, so they are often overdue.
  { queue: 'priority queue aging at 20 ms', priorities: true, create: (o?: WorkQueueOptions) => createPriorityQueue({ ...o, maxWaitMs: 20 }), maxWaitMs: 20 },
])('properties of the $queue', ({ priorities, create, maxWaitMs }: { priorities: boolean; create: (o?: WorkQueueOptions) => WorkQueue; maxWaitMs: number | undefined }) => {
  const createWorkQueue = create;
  beforeEach(() => {
    vi.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  });

  it('random interleavings from several workers with random priorities: exclusive, nothing lost, as the reference model', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(commandArb, { maxLength: 120 }), async (commands) => {
        vi.setSystemTime(0);
        const harness = new Harness(priorities, maxWaitMs);
        for (const command of commands) await harness.run(command);
        await harness.drain();

        // Nothing lost: every key added is handed out after its last add.
        const lastAdd = new Map<string, number>();
        for (const [seq, key] of harness.adds) lastAdd.set(key, seq);
        for (const [key, seq] of lastAdd) {
          expect(harness.gets.some(([at, k]) => k === key && at > seq), `${key} processed after its last add`).toBe(true);
        }

        // After shut down every waiting worker is released and no timer is left.
        harness.queue.shutDown();
        await flush();
        expect(harness.workers.every((w) => w.state === 'idle')).toBe(true);
        expect(vi.getTimerCount()).toBe(0);
      }),
      { numRuns: 300 },
    );
  });

  it('keys added without delay come out first in, first out, each once however often it was added', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...'abcdefghij'), { minLength: 1, maxLength: 60 }), fc.integer({ min: 1, max: 4 }), async (keys, workers) => {
        const queue = createWorkQueue();
        for (const key of keys) queue.add(key);
        const handedOut: string[] = [];
        const held = new Set<string>();
        await Promise.all(
          Array.from({ length: workers }, async () => {
            while (queue.len() > 0) {
              const key = await queue.get();
              if (key === undefined) return;
              expect(held.has(key)).toBe(false);
              held.add(key);
              handedOut.push(key);
              await Promise.resolve();
              held.delete(key);
              queue.done(key);
            }
          }),
        );
        expect(handedOut).toEqual([...new Set(keys)]);
      }),
      { numRuns: 200 },
    );
  });

  it('a key re-added any number of times while held runs exactly once more after done, never concurrently', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(...'abcdef'), { minLength: 1, maxLength: 20 }),
        fc.array(fc.constantFrom(...'abcdef'), { maxLength: 20 }),
        fc.integer({ min: 1, max: 5 }),
        async (initial, during, times) => {
          const queue = createWorkQueue();
          for (const key of initial) queue.add(key);
          const first = (await queue.get())!;
          // While `first` is held: re-add it `times` times among other adds, and let a second worker take the rest.
          const readds = [...during, ...Array.from({ length: times }, () => first)];
          for (const key of readds) queue.add(key);
          const others: string[] = [];
          while (queue.len() > 0) {
            const key = (await queue.get())!;
            expect(key).not.toBe(first);
            others.push(key);
            queue.done(key);
          }
          queue.done(first);
          const after = await drainAll(queue);
          expect(after).toEqual([first]);
          expect(others).toEqual([...new Set([...initial, ...during])].filter((k) => k !== first));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('delayed keys come out at their earliest deadline, in deadline order, once per pending delay', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom(...'abcdef'), fc.integer({ min: -3, max: 30 })), { minLength: 1, maxLength: 30 }), async (calls) => {
        vi.setSystemTime(0);
        const queue = createWorkQueue({ now: () => Date.now() });
        // Immediate adds (ms <= 0) and delayed adds are separate: a key may be in both.
        const immediate = new Set<string>();
        const delayed = new Map<string, { at: number; order: number }>();
        calls.forEach(([key, ms], order) => {
          queue.addAfter(key, ms);
          if (ms <= 0) {
            immediate.add(key);
            return;
          }
          const existing = delayed.get(key);
          if (existing === undefined || ms < existing.at) delayed.set(key, { at: ms, order });
        });
        const seen: [string, number][] = [];
        for (let t = 0; t <= 31; t++) {
          for (const key of await drainAll(queue)) seen.push([key, Date.now()]);
          vi.advanceTimersByTime(1);
        }
        const expected = [
          ...[...immediate].map((key): [string, number] => [key, 0]),
          ...[...delayed.entries()].sort(([, x], [, y]) => x.at - y.at || x.order - y.order).map(([key, { at }]): [string, number] => [key, at]),
        ];
        expect(seen).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });
});

describe('priority queue', () => {
  it('hands out the highest priority first, first in first out within one priority', async () => {
    const queue = createPriorityQueue();
    queue.addWithOptions('low-1', { priority: LOW_PRIORITY });
    queue.add('mid-1');
    queue.addWithOptions('high', { priority: 10 });
    queue.addWithOptions('low-2', { priority: LOW_PRIORITY });
    queue.add('mid-2');
    expect(await drainAll(queue)).toEqual(['high', 'mid-1', 'mid-2', 'low-1', 'low-2']);
  });

  it('moves a waiting key up when it is added again with a higher priority, never down', async () => {
    const queue = createPriorityQueue();
    queue.addWithOptions('a', { priority: LOW_PRIORITY });
    queue.addWithOptions('b', { priority: LOW_PRIORITY });
    queue.add('c');
    queue.add('b'); // raised to 0, behind c
    queue.addWithOptions('c', { priority: LOW_PRIORITY }); // not lowered
    expect(queue.len()).toBe(3);
    expect(await drainAll(queue)).toEqual(['c', 'b', 'a']);
  });

  it('a key re-added while held returns at the highest priority it was re-added with', async () => {
    const queue = createPriorityQueue();
    queue.add('a');
    const held = await queue.get();
    queue.addWithOptions('a', { priority: LOW_PRIORITY });
    queue.addWithOptions('a', { priority: 5 });
    queue.add('b');
    queue.done(held!);
    expect(await drainAll(queue)).toEqual(['a', 'b']);
  });

  it('a delayed add keeps the higher priority and the earlier deadline of two', async () => {
    const now = fakeTime();
    const queue = createPriorityQueue({ now });
    queue.addWithOptions('a', { afterMs: 10, priority: LOW_PRIORITY });
    queue.addWithOptions('a', { afterMs: 50, priority: 5 }); // later deadline, higher priority
    queue.add('b');
    vi.advanceTimersByTime(10);
    expect(await drainAll(queue)).toEqual(['a', 'b']);
    vi.advanceTimersByTime(100);
    expect(queue.len()).toBe(0);
  });

  it('a user edit during a 50,000-object initial list is handed out next', async () => {
    const queue = createPriorityQueue();
    for (let i = 0; i < 50_000; i++) queue.addWithOptions(`ns/listed-${i}`, { priority: LOW_PRIORITY });
    const first = await queue.get();
    queue.done(first!);
    queue.add('ns/edited-by-user');
    expect(await queue.get()).toBe('ns/edited-by-user');
    expect(queue.len()).toBe(49_999);
  });

  it('the FIFO queue ignores priorities', async () => {
    const queue = createWorkQueue();
    queue.addWithOptions('a', { priority: LOW_PRIORITY });
    queue.addWithOptions('b', { priority: 10 });
    queue.addWithOptions('a', { priority: 20 });
    expect(await drainAll(queue)).toEqual(['a', 'b']);
  });

  it('rejects a priority that is not a finite number', () => {
    const queue = createPriorityQueue();
    expect(() => queue.addWithOptions('a', { priority: Number.NaN })).toThrow(TypeError);
  });
});

describe('priority queue: a key moved up, taken, then added again low', () => {
  it('waits at the end of the low line, not at the place its old low entry had', async () => {
    const queue = createPriorityQueue();
    queue.addWithOptions('a', { priority: LOW_PRIORITY });
    queue.addWithOptions('b', { priority: LOW_PRIORITY });
    queue.add('a'); // a moves up; its low entry stays behind, dead
    const first = await queue.get();
    expect(first).toBe('a');
    queue.done('a');
    queue.addWithOptions('a', { priority: LOW_PRIORITY }); // a comes back low: after b
    expect(await drainAll(queue)).toEqual(['b', 'a']);
  });
});

describe('priority queue: aging (maxWaitMs)', () => {
  /**
   * A steady stream: every `stepMs` one priority-0 key is added and one key
   * is handed out and done, `steps` times. Returns when (fake ms) each key
   * was handed out.
   */
  async function steadyStream(queue: WorkQueue, steps: number, stepMs: number, perStep = 1): Promise<Map<string, number>> {
    const handedOut = new Map<string, number>();
    for (let i = 0; i < steps; i++) {
      vi.advanceTimersByTime(stepMs);
      for (let j = 0; j < perStep; j++) queue.add(`ns/edit-${i}-${j}`);
      const key = (await queue.get())!;
      handedOut.set(key, Date.now());
      queue.done(key);
    }
    return handedOut;
  }

  it('a steady stream of priority-0 adds does not keep an initial-list key waiting past the bound', async () => {
    const now = fakeTime();
    const queue = createPriorityQueue({ now, maxWaitMs: 1_000 });
    queue.addWithOptions('ns/listed', { priority: LOW_PRIORITY });
    // Two edits arrive per hand-out: the priority-0 line never empties.
    const handedOut = await steadyStream(queue, 100, 50, 2);
    // Waiting 1,000 ms or longer at t = 1,000; the next hand-out (at 1,000) is it.
    expect(handedOut.get('ns/listed')).toBe(1_000);
    expect(queue.len()).toBeGreaterThan(90);
  });

  it('without aging (maxWaitMs: Infinity, controller-runtime\'s order) the same stream starves it', async () => {
    const now = fakeTime();
    const queue = createPriorityQueue({ now, maxWaitMs: Infinity });
    queue.addWithOptions('ns/listed', { priority: LOW_PRIORITY });
    const handedOut = await steadyStream(queue, 100, 50, 2);
    expect(handedOut.has('ns/listed')).toBe(false);
    expect(queue.oldestWaitMs().get(LOW_PRIORITY)).toBe(5_000);
  });

  it('overdue keys get every other hand-out, oldest first; higher priorities keep the rest', async () => {
    const now = fakeTime();
    const queue = createPriorityQueue({ now, maxWaitMs: 100 });
    for (let i = 0; i < 5; i++) queue.addWithOptions(`ns/listed-${i}`, { priority: LOW_PRIORITY });
    vi.advanceTimersByTime(100); // all five overdue
    for (let i = 0; i < 5; i++) queue.add(`ns/edit-${i}`);
    vi.advanceTimersByTime(10);
    queue.addWithOptions('ns/urgent', { priority: 10 });
    expect(await drainAll(queue)).toEqual([
      'ns/listed-0', 'ns/urgent', 'ns/listed-1', 'ns/edit-0', 'ns/listed-2', 'ns/edit-1', 'ns/listed-3', 'ns/edit-2', 'ns/listed-4', 'ns/edit-3', 'ns/edit-4',
    ]);
  });

  it('a key that has not waited maxWaitMs keeps the strict priority order', async () => {
    const now = fakeTime();
    const queue = createPriorityQueue({ now, maxWaitMs: 1_000 });
    queue.addWithOptions('ns/listed', { priority: LOW_PRIORITY });
    vi.advanceTimersByTime(999);
    queue.add('ns/edit-1');
    queue.add('ns/edit-2');
    expect(await drainAll(queue)).toEqual(['ns/edit-1', 'ns/edit-2', 'ns/listed']);
  });

  it('a key moved up starts its wait anew at the higher priority', async () => {
    const now = fakeTime();
    const queue = createPriorityQueue({ now, maxWaitMs: 100 });
    queue.addWithOptions('a', { priority: LOW_PRIORITY });
    queue.addWithOptions('b', { priority: LOW_PRIORITY });
    vi.advanceTimersByTime(60);
    queue.add('a'); // a at 0 since 60: its low entry is dead
    vi.advanceTimersByTime(40); // b overdue (100), a not (40)
    queue.addWithOptions('c', { priority: 5 });
    expect(queue.oldestWaitMs()).toEqual(new Map([[5, 0], [0, 40], [LOW_PRIORITY, 100]]));
    expect(await drainAll(queue)).toEqual(['b', 'c', 'a']);
  });

  it('oldestWaitMs reports each priority\'s longest wait, skipping keys moved up or taken; the FIFO queue its one line', async () => {
    const now = fakeTime();
    const queue = createPriorityQueue({ now });
    expect(queue.oldestWaitMs()).toEqual(new Map());
    queue.addWithOptions('a', { priority: LOW_PRIORITY });
    vi.advanceTimersByTime(30);
    queue.addWithOptions('b', { priority: LOW_PRIORITY });
    queue.add('c');
    vi.advanceTimersByTime(20);
    expect(queue.oldestWaitMs()).toEqual(new Map([[0, 20], [LOW_PRIORITY, 50]]));
    queue.add('a'); // moved up: the low line's oldest is now b
    expect(queue.oldestWaitMs()).toEqual(new Map([[0, 20], [LOW_PRIORITY, 20]]));
    await drainAll(queue);
    expect(queue.oldestWaitMs()).toEqual(new Map());

    const fifo = createWorkQueue({ now });
    fifo.addWithOptions('x', { priority: LOW_PRIORITY });
    vi.advanceTimersByTime(7);
    fifo.add('y');
    expect(fifo.oldestWaitMs()).toEqual(new Map([[0, 7]]));
  });

  it('hands its metrics a probe to read the waits from when scraped', () => {
    const now = fakeTime();
    let probe: WorkQueueProbe | undefined;
    const metrics: WorkQueueMetrics = { add() {}, depth() {}, get() {}, done() {}, retry() {}, attach: (p) => (probe = p) };
    const queue = createPriorityQueue({ now, metrics });
    expect(probe?.priorities).toBe(true);
    queue.addWithOptions('a', { priority: LOW_PRIORITY });
    vi.advanceTimersByTime(5);
    expect(probe?.oldestWaitMs()).toEqual(new Map([[LOW_PRIORITY, 5]]));
    createWorkQueue({ metrics });
    expect(probe?.priorities).toBe(false);
  });

  it('rejects a maxWaitMs that is not a number > 0 with a TypeError that says what to pass', () => {
    for (const maxWaitMs of [0, -1, Number.NaN, '60000' as unknown as number]) {
      expect(() => createPriorityQueue({ maxWaitMs })).toThrow(/maxWaitMs must be a number of milliseconds > 0 \(Infinity: no aging\)/);
      expect(() => createPriorityQueue({ maxWaitMs })).toThrow(TypeError);
    }
    expect(DEFAULT_MAX_WAIT_MS).toBe(60_000);
  });
});
