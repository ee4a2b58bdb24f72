/**
 * The controller work queue: client-go's rate-limiting, delaying queue of
 * keys, as controller-runtime drives it. A key is never held by two workers
 * at once, duplicates collapse, a key re-added while in flight runs once more
 * after `done`, delayed and rate-limited adds wait on one timer.
 */
import type { WorkQueueMetrics } from './metrics.js';
import { defaultControllerRateLimiter } from './rate-limiter.js';
import type { RateLimiter } from './rate-limiter.js';
import { monotonicNow } from './token-bucket.js';
import type { Clock } from './token-bucket.js';

/**
 * A queue of keys (a controller's `namespace/name`) for workers.
 *
 * The rules, from client-go's `workqueue`:
 * - a key is waiting at most once: adding a waiting key again does nothing;
 * - a key taken by `get` is held until `done`; adding it meanwhile marks it,
 *   and `done` puts it back once, at the end of the line;
 * - otherwise keys come out in the order they were added (a priority queue:
 *   highest priority first, with aging, see {@link WorkQueueOptions.maxWaitMs});
 * - a delayed add (`addAfter`, `addRateLimited`) adds the key when its delay
 *   ends; of several delayed adds of one key the earliest wins; a delayed add
 *   does not replace an immediate one, nor the reverse (the key may then run
 *   twice, which a level-triggered reconciler tolerates).
 *
 * @example
 * ```ts
 * const queue = createWorkQueue({ name: 'harddisk' });
 * queue.add('default/disk-1');
 * for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
 *   try {
 *     await reconcile(key);
 *     queue.forget(key);
 *   } catch {
 *     queue.addRateLimited(key);
 *   } finally {
 *     queue.done(key);
 *   }
 * }
 * ```
 */
export interface WorkQueue {
  /** The queue's name (for logs and metrics); `''` when none was given. */
  readonly name: string;
  /** Whether `shutDown` or `shutDownWithDrain` was called. Adds are then ignored. */
  readonly shuttingDown: boolean;
  /**
   * Marks `key` for processing. Does nothing when it is already waiting or
   * when the queue is shutting down.
   * @throws TypeError when `key` is not a string.
   */
  add(key: string): void;
  /**
   * Adds `key` after `ms` milliseconds (at once when `ms <= 0`). When `key`
   * already has a delayed add pending, the earlier of the two deadlines stays.
   * Ignored when shutting down.
   * @throws TypeError when `key` is not a string or `ms` is not a finite number.
   */
  addAfter(key: string, ms: number): void;
  /** `addAfter(key, rateLimiter.when(key))`: records a failure of `key` and retries it after its backoff. */
  addRateLimited(key: string): void;
  /**
   * `add`, `addAfter` or `addRateLimited` with a priority. A priority queue
   * ({@link createPriorityQueue}) hands out waiting keys highest priority
   * first and raises the priority of a key already waiting (or held and
   * re-added) when the new add's is higher; the FIFO queue
   * ({@link createWorkQueue}) ignores priorities.
   * @throws TypeError as `add` / `addAfter`, or when `priority` is not a finite number.
   */
  addWithOptions(key: string, options: AddOptions): void;
  /** Resets the failures of `key` in the rate limiter (call it when `key` succeeded). Pending delayed adds stay. */
  forget(key: string): void;
  /** How many failures of `key` the rate limiter has recorded since it was last forgotten. */
  numRequeues(key: string): number;
  /**
   * The next key, once one is waiting; the caller holds it until `done(key)`.
   * Resolves `undefined` when the queue is shut down (with drain: once
   * nothing is waiting and nothing is held) or when `signal` aborts; never
   * rejects. A waiting `get` that resolves `undefined` took no key.
   */
  get(signal?: AbortSignal): Promise<string | undefined>;
  /**
   * As `get`, with the priority the key was waiting at (0 on the FIFO
   * queue): a controller re-adds a failed or requeued key at that priority,
   * as controller-runtime does, so a low-priority resync stays low and a
   * user's edit stays high across retries.
   */
  getWithPriority(signal?: AbortSignal): Promise<{ readonly key: string; readonly priority: number } | undefined>;
  /**
   * Gives `key` back after processing; if it was added meanwhile it waits
   * again, at the end of the line. Does nothing for a key that is not held.
   */
  done(key: string): void;
  /** How many keys are waiting to be taken (not counting held or delayed keys). */
  len(): number;
  /**
   * For each priority some key is waiting at, how many milliseconds the
   * longest-waiting of them has waited at that priority (since its add, its
   * move to a higher priority, or the `done` that put it back); the FIFO
   * queue reports its one line at priority 0. Empty when nothing waits.
   * Metrics read it when scraped.
   */
  oldestWaitMs(): ReadonlyMap<number, number>;
  /**
   * How many keys need processing per priority (waiting, or held and added
   * again), as `workqueue_depth` counts them; the FIFO queue reports them
   * all at priority 0. Optional for other implementations (the inspect
   * endpoint then shows only the total).
   */
  depthByPriority?(): ReadonlyMap<number, number>;
  /**
   * Stops the queue at once: waiting and delayed keys are dropped, pending
   * and later `get`s resolve `undefined`, adds are ignored, pending
   * `shutDownWithDrain` promises resolve. Held keys may still be `done`.
   */
  shutDown(): void;
  /**
   * Stops taking adds (delayed keys are dropped) but keeps handing out the
   * keys already waiting, including keys re-added while held; resolves once
   * nothing is waiting or held. Workers must keep calling `get` and `done`
   * until then; call `shutDown()` to stop waiting.
   */
  shutDownWithDrain(): Promise<void>;
}

/** How {@link WorkQueue.addWithOptions} adds a key. */
export interface AddOptions {
  /** Higher first (priority queues only). Default: 0. Events of an informer's initial list and resyncs use {@link LOW_PRIORITY}. */
  readonly priority?: number;
  /** Add after this many milliseconds. Default: 0 (at once). Ignored when `rateLimited`. */
  readonly afterMs?: number;
  /** Add after the rate limiter's delay for this key (a failure is recorded). Default: false. */
  readonly rateLimited?: boolean;
}

/** The priority controllers give to events of an informer's initial list and to resyncs by default, as controller-runtime's `handler.LowPriority`. */
export const LOW_PRIORITY = -100;

/**
 * The default `maxWaitMs` of a priority queue: one minute. Long enough that
 * an edit made while a few thousand listed objects are worked off still
 * goes first; short enough that no key waits for an hour behind a steady
 * stream of higher priorities.
 */
export const DEFAULT_MAX_WAIT_MS = 60_000;

/** Options of {@link createWorkQueue} and {@link createPriorityQueue}. */
export interface WorkQueueOptions {
  /** The queue's name, for logs and metrics. Default: `''`. */
  name?: string;
  /**
   * Decides the delay of `addRateLimited`. Default:
   * `defaultControllerRateLimiter({ now })`, per-key 5 ms doubling to 1000 s
   * and overall 10 per second with a burst of 100.
   */
  rateLimiter?: RateLimiter;
  /** Receives adds, depth, gets, dones and retries. Default: none. */
  metrics?: WorkQueueMetrics;
  /**
   * Priority queues only: aging. While some key has waited this long or
   * longer at its priority, every other key handed out is the one that has
   * waited longest, whatever its priority; the others go highest priority
   * first as usual. So a key at {@link LOW_PRIORITY} is never starved by a
   * steady stream of priority-0 adds, and those still get at least half of
   * the hand-outs. Costs one clock reading per add and one look at each
   * priority's oldest key per hand-out; no timer. `Infinity`: no aging (the
   * strict priority order of controller-runtime's priority queue).
   * Default: {@link DEFAULT_MAX_WAIT_MS} (60 s).
   * @throws TypeError (from the factory) when not a number > 0.
   */
  maxWaitMs?: number;
  /**
   * The clock for delayed adds, in milliseconds; only differences matter.
   * Timers are Node's `setTimeout` (so fake timers drive them), and a timer
   * that fires before the clock reaches a deadline is set again.
   * Default: `performance.now()`.
   */
  now?: Clock;
}

/** Node's longest timer; a longer delay is waited in several steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Delayed {
  readonly key: string;
  readonly readyAt: number;
  /** The priority the key is added with when its delay ends. */
  readonly priority: number;
  /** Breaks ties between equal deadlines: earlier addAfter first. */
  readonly seq: number;
}

function before(a: Delayed, b: Delayed): boolean {
  return a.readyAt < b.readyAt || (a.readyAt === b.readyAt && a.seq < b.seq);
}

/** A binary min-heap of delayed adds by deadline. */
class DelayedHeap {
  readonly #items: Delayed[] = [];

  get size(): number {
    return this.#items.length;
  }

  peek(): Delayed | undefined {
    return this.#items[0];
  }

  push(item: Delayed): void {
    const items = this.#items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  pop(): Delayed | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    items[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let least = i;
      if (l < items.length && before(items[l]!, items[least]!)) least = l;
      if (r < items.length && before(items[r]!, items[least]!)) least = r;
      if (least === i) break;
      [items[i], items[least]] = [items[least]!, items[i]!];
      i = least;
    }
    return top;
  }

  clear(): void {
    this.#items.length = 0;
  }
}

/** A FIFO of keys with O(1) amortised removal at the head. */
class Fifo<T = string> {
  #items: T[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(key: T): void {
    this.#items.push(key);
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const key = this.#items[this.#head++];
    if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return key;
  }

  /** The head, without removing it. */
  peek(): T | undefined {
    return this.#head < this.#items.length ? this.#items[this.#head] : undefined;
  }

  clear(): void {
    this.#items = [];
    this.#head = 0;
  }
}

/** A key handed out, with the priority it was waiting at. */
interface Entry {
  readonly key: string;
  readonly priority: number;
}

/** A key's place in one priority line. */
interface Waiting extends Entry {
  /** When it was placed in this line (the queue's clock): how long it has waited at its priority. */
  readonly since: number;
}

/** Keys waiting to be taken. Each key is in it at most once (the queue's #dirty guarantees it). */
interface ReadyKeys {
  readonly length: number;
  /** Adds a key that is not waiting, or raises the priority of one that is (a no-op for a lower or equal one). */
  push(key: string, priority: number): void;
  /** The priority a waiting key has, or undefined. */
  priorityOf(key: string): number | undefined;
  /** The next key to hand out, with the priority it was waiting at. */
  shift(): Entry | undefined;
  /** Per priority with waiting keys, how long the longest-waiting of them has waited at it, in ms. */
  oldestWaitMs(): Map<number, number>;
  clear(): void;
}

/** The classic queue: one line, priorities ignored. */
class FifoKeys implements ReadyKeys {
  readonly #fifo = new Fifo();
  /** When each key in #fifo was added, in the same order. */
  readonly #since = new Fifo<number>();
  constructor(private readonly now: Clock) {}
  get length(): number {
    return this.#fifo.length;
  }
  push(key: string): void {
    this.#fifo.push(key);
    this.#since.push(this.now());
  }
  priorityOf(): number | undefined {
    return undefined;
  }
  shift(): Entry | undefined {
    const key = this.#fifo.shift();
    this.#since.shift();
    return key === undefined ? undefined : { key, priority: 0 };
  }
  oldestWaitMs(): Map<number, number> {
    const since = this.#since.peek();
    return new Map<number, number>(since === undefined ? [] : [[0, Math.max(0, this.now() - since)]]);
  }
  clear(): void {
    this.#fifo.clear();
    this.#since.clear();
  }
}

/**
 * The priority queue's waiting keys: one FIFO line per priority, the highest
 * priority served first, except that while some key has waited `maxWaitMs`
 * or longer at its priority, every other key handed out is the one that has
 * waited longest (aging: no key starves behind a steady stream of higher
 * priorities, and those keep at least half the hand-outs). Raising a waiting
 * key's priority appends it to the higher line (its wait there starts anew)
 * and leaves a dead entry in the lower one, skipped when reached. Each line
 * is in the order of `since`, so the longest-waiting key is the oldest of the
 * lines' heads: a hand-out looks at one head per priority, no timer runs.
 */
class PriorityKeys implements ReadyKeys {
  /** Per priority, entries in the order they were pushed; an entry is live only while #live holds it. */
  readonly #lines = new Map<number, Fifo<Waiting>>();
  /** Priorities with a line, highest first. */
  #order: number[] = [];
  /** Waiting key -> its live entry (a key taken and added again gets a new one, so an old entry never comes back to life). */
  readonly #live = new Map<string, Waiting>();
  /** Whether the next hand-out goes to the longest-waiting key if it is overdue (the turns alternate while keys are overdue). */
  #agedTurn = true;
  /**
   * No key is overdue before this time: the oldest `since` of waiting keys
   * never decreases (a new entry's is the clock's now), so once a look found
   * the oldest key due at T, hand-outs before T skip the look.
   */
  #noneOverdueUntil = -Infinity;

  constructor(
    private readonly now: Clock,
    private readonly maxWaitMs: number,
  ) {}

  get length(): number {
    return this.#live.size;
  }

  push(key: string, priority: number): void {
    const current = this.#live.get(key);
    if (current !== undefined && current.priority >= priority) return;
    const entry: Waiting = { key, priority, since: this.now() };
    this.#live.set(key, entry);
    let line = this.#lines.get(priority);
    if (line === undefined) {
      line = new Fifo<Waiting>();
      this.#lines.set(priority, line);
      this.#order = [...this.#order, priority].sort((a, b) => b - a);
    }
    line.push(entry);
  }

  priorityOf(key: string): number | undefined {
    return this.#live.get(key)?.priority;
  }

  shift(): Entry | undefined {
    if (this.#live.size === 0) return undefined;
    if (this.#agedTurn && this.maxWaitMs !== Infinity) {
      const t = this.now();
      if (t >= this.#noneOverdueUntil) {
        const oldest = this.#oldestLine();
        const since = oldest?.peek()!.since ?? t;
        if (oldest !== undefined && t - since >= this.maxWaitMs) {
          this.#agedTurn = false;
          return this.#take(oldest.shift()!);
        }
        this.#noneOverdueUntil = since + this.maxWaitMs;
      }
    }
    for (const priority of this.#order) {
      const entry = this.#liveHead(this.#lines.get(priority)!);
      if (entry === undefined) continue;
      this.#agedTurn = true;
      return this.#take(this.#lines.get(priority)!.shift()!);
    }
    return undefined;
  }

  oldestWaitMs(): Map<number, number> {
    const t = this.now();
    const ages = new Map<number, number>();
    for (const priority of this.#order) {
      const head = this.#liveHead(this.#lines.get(priority)!);
      if (head !== undefined) ages.set(priority, Math.max(0, t - head.since));
    }
    return ages;
  }

  clear(): void {
    this.#lines.clear();
    this.#order = [];
    this.#live.clear();
    this.#agedTurn = true;
    this.#noneOverdueUntil = -Infinity;
  }

  #take(entry: Waiting): Entry {
    this.#live.delete(entry.key);
    return entry;
  }

  /** The line whose first live entry has waited longest (on a tie, the higher priority's); undefined when none waits. */
  #oldestLine(): Fifo<Waiting> | undefined {
    let best: Fifo<Waiting> | undefined;
    let bestSince = Infinity;
    for (const priority of this.#order) {
      const line = this.#lines.get(priority)!;
      const head = this.#liveHead(line);
      if (head !== undefined && head.since < bestSince) {
        best = line;
        bestSince = head.since;
      }
    }
    return best;
  }

  /** The line's first live entry, dropping dead ones (moved up, or taken and added again since) ahead of it. */
  #liveHead(line: Fifo<Waiting>): Waiting | undefined {
    for (let entry = line.peek(); entry !== undefined; entry = line.peek()) {
      if (this.#live.get(entry.key) === entry) return entry;
      line.shift();
    }
    return undefined;
  }
}

interface Waiter {
  readonly resolve: (entry: Entry | undefined) => void;
  readonly detach: () => void;
}

function requireKey(key: unknown): asserts key is string {
  if (typeof key !== 'string') throw new TypeError(`a work queue key must be a string, got ${typeof key}`);
}

const noMetrics: WorkQueueMetrics = { add() {}, depth() {}, get() {}, done() {}, retry() {} };

class RateLimitingQueue implements WorkQueue {
  readonly name: string;
  readonly #rateLimiter: RateLimiter;
  readonly #metrics: WorkQueueMetrics;
  readonly #now: Clock;

  /** Keys waiting to be taken, in order. Each is in #dirty and not in #processing. */
  readonly #queue: ReadyKeys;
  /** False for the FIFO queue: every priority counts as 0. */
  readonly #priorities: boolean;
  /** Priorities of held keys that were re-added, for when they are done. */
  readonly #heldPriority = new Map<string, number>();
  /** Keys that need processing: waiting in #queue, or held and re-added. */
  readonly #dirty = new Set<string>();
  /** Priority queues only: each dirty key's priority, and how many dirty keys each priority has (the depth per priority). */
  readonly #dirtyPriority = new Map<string, number>();
  readonly #depthByPriority = new Map<number, number>();
  /** Keys held by a worker, between get and done. */
  readonly #processing = new Set<string>();
  /** Pending gets, oldest first. Non-empty only while #queue is empty. */
  readonly #waiters: Waiter[] = [];
  /** Resolvers of pending shutDownWithDrain calls. */
  readonly #drainers: (() => void)[] = [];

  /** Delayed adds; an entry is live only while #delayedByKey maps its key to it. */
  readonly #delayed = new DelayedHeap();
  readonly #delayedByKey = new Map<string, Delayed>();
  #seq = 0;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Infinity;

  #shuttingDown = false;
  #drain = false;

  constructor(options: WorkQueueOptions, priorities: boolean) {
    const maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
    if (typeof maxWaitMs !== 'number' || !(maxWaitMs > 0)) throw new TypeError(`maxWaitMs must be a number of milliseconds > 0 (Infinity: no aging), got ${String(maxWaitMs)}`);
    this.name = options.name ?? '';
    this.#now = options.now ?? monotonicNow;
    this.#queue = priorities ? new PriorityKeys(this.#now, maxWaitMs) : new FifoKeys(this.#now);
    this.#priorities = priorities;
    this.#rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter({ now: this.#now });
    this.#metrics = options.metrics ?? noMetrics;
    this.#metrics.attach?.({ priorities, oldestWaitMs: () => this.oldestWaitMs() });
  }

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  add(key: string): void {
    requireKey(key);
    this.#add(key, 0);
  }

  #add(key: string, priority: number): void {
    if (this.#shuttingDown) return;
    if (this.#dirty.has(key)) {
      // Already waiting (or held and re-added): a higher priority moves it up.
      if (this.#processing.has(key)) this.#heldPriority.set(key, Math.max(priority, this.#heldPriority.get(key) ?? priority));
      else if (this.#queue.priorityOf(key) !== undefined) this.#queue.push(key, priority); // FIFO keys have no priority to raise
      if (this.#priorities && priority > this.#dirtyPriority.get(key)!) {
        this.#countDirty(key, priority);
        this.#reportDepth();
      }
      return;
    }
    this.#dirty.add(key);
    if (this.#priorities) this.#countDirty(key, priority);
    this.#metrics.add(key);
    this.#reportDepth();
    if (this.#processing.has(key)) {
      this.#heldPriority.set(key, priority);
      return;
    }
    this.#queue.push(key, priority);
    this.#dispatch();
  }

  addAfter(key: string, ms: number): void {
    this.#addAfter(key, ms, 0);
  }

  addWithOptions(key: string, options: AddOptions): void {
    requireKey(key);
    const priority = options.priority ?? 0;
    if (typeof priority !== 'number' || !Number.isFinite(priority)) throw new TypeError(`a priority must be a finite number, got ${String(priority)}`);
    if (options.rateLimited === true) {
      if (this.#shuttingDown) return;
      this.#addAfter(key, this.#rateLimiter.when(key), priority);
    } else this.#addAfter(key, options.afterMs ?? 0, priority);
  }

  #addAfter(key: string, ms: number, priority: number): void {
    requireKey(key);
    if (!this.#priorities) priority = 0;
    if (typeof ms !== 'number' || !Number.isFinite(ms)) throw new TypeError(`a delay must be a finite number of milliseconds, got ${String(ms)}`);
    if (this.#shuttingDown) return;
    if (ms <= 0) {
      this.#add(key, priority);
      return;
    }
    this.#metrics.retry(key);
    let readyAt = this.#now() + ms;
    const existing = this.#delayedByKey.get(key);
    if (existing !== undefined) {
      // The earlier deadline and the higher priority of the two win.
      if (existing.readyAt <= readyAt && existing.priority >= priority) return;
      readyAt = Math.min(readyAt, existing.readyAt);
      priority = Math.max(priority, existing.priority);
    }
    const entry: Delayed = { key, readyAt, priority, seq: this.#seq++ };
    // A replaced entry stays in the heap, dead, until it reaches the top.
    this.#delayedByKey.set(key, entry);
    this.#delayed.push(entry);
    this.#schedule();
  }

  addRateLimited(key: string): void {
    requireKey(key);
    if (this.#shuttingDown) return;
    this.#addAfter(key, this.#rateLimiter.when(key), 0);
  }

  forget(key: string): void {
    this.#rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.#rateLimiter.numRequeues(key);
  }

  get(signal?: AbortSignal): Promise<string | undefined> {
    return this.#next(signal, (entry) => entry?.key);
  }

  getWithPriority(signal?: AbortSignal): Promise<Entry | undefined> {
    return this.#next(signal, (entry) => entry);
  }

  /** The next waiting entry, as `get` describes, handed out as `as` makes it. */
  #next<T>(signal: AbortSignal | undefined, as: (entry: Entry | undefined) => T): Promise<T> {
    if (this.#shuttingDown && !this.#drain) return Promise.resolve(as(undefined));
    const entry = this.#take();
    if (entry !== undefined) return Promise.resolve(as(entry));
    if (this.#drained() || signal?.aborted === true) return Promise.resolve(as(undefined));
    return new Promise((resolve) => {
      const onAbort = (): void => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        resolve(as(undefined));
      };
      const waiter: Waiter = { resolve: (e) => resolve(as(e)), detach: () => signal?.removeEventListener('abort', onAbort) };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  done(key: string): void {
    if (!this.#processing.delete(key)) return;
    this.#metrics.done(key);
    if (this.#dirty.has(key)) {
      this.#queue.push(key, this.#heldPriority.get(key) ?? 0);
      this.#heldPriority.delete(key);
      this.#dispatch();
    }
    this.#settleIfDrained();
  }

  len(): number {
    return this.#queue.length;
  }

  oldestWaitMs(): Map<number, number> {
    return this.#queue.oldestWaitMs();
  }

  depthByPriority(): Map<number, number> {
    if (!this.#priorities) return new Map(this.#dirty.size > 0 ? [[0, this.#dirty.size]] : []);
    return new Map([...this.#depthByPriority].filter(([, n]) => n > 0));
  }

  shutDown(): void {
    this.#shuttingDown = true;
    this.#drain = false;
    this.#clearDelayed();
    this.#queue.clear();
    this.#heldPriority.clear();
    if (this.#dirty.size > 0) {
      this.#dirty.clear();
      this.#dirtyPriority.clear();
      for (const p of this.#depthByPriority.keys()) this.#depthByPriority.set(p, 0);
      this.#reportDepth();
    }
    this.#releaseWaiters();
    for (const resolve of this.#drainers.splice(0)) resolve();
  }

  shutDownWithDrain(): Promise<void> {
    if (!this.#shuttingDown) {
      this.#shuttingDown = true;
      this.#drain = true;
      this.#clearDelayed();
    }
    return new Promise((resolve) => {
      this.#drainers.push(resolve);
      this.#settleIfDrained();
    });
  }

  /** Hands the next waiting key to the caller: it is now held. */
  #take(): Entry | undefined {
    const entry = this.#queue.shift();
    if (entry === undefined) return undefined;
    const { key } = entry;
    this.#processing.add(key);
    this.#dirty.delete(key);
    if (this.#priorities) this.#countDirty(key, undefined);
    this.#metrics.get(key);
    this.#reportDepth();
    return entry;
  }

  /** Moves `key` to `priority` in the per-priority depth (undefined: no longer dirty). */
  #countDirty(key: string, priority: number | undefined): void {
    const old = this.#dirtyPriority.get(key);
    if (old !== undefined) this.#depthByPriority.set(old, this.#depthByPriority.get(old)! - 1);
    if (priority === undefined) this.#dirtyPriority.delete(key);
    else {
      this.#dirtyPriority.set(key, priority);
      this.#depthByPriority.set(priority, (this.#depthByPriority.get(priority) ?? 0) + 1);
    }
  }

  #reportDepth(): void {
    this.#metrics.depth(this.#dirty.size, this.#priorities ? this.#depthByPriority : undefined);
  }

  /** Serves pending gets from waiting keys, oldest get first. */
  #dispatch(): void {
    while (this.#waiters.length > 0 && this.#queue.length > 0) {
      const waiter = this.#waiters.shift()!;
      waiter.detach();
      waiter.resolve(this.#take());
    }
  }

  /** Shut down, and nothing more will be handed out. */
  #drained(): boolean {
    return this.#shuttingDown && this.#queue.length === 0 && this.#processing.size === 0;
  }

  #settleIfDrained(): void {
    if (!this.#drained()) return;
    this.#releaseWaiters();
    for (const resolve of this.#drainers.splice(0)) resolve();
  }

  #releaseWaiters(): void {
    for (const waiter of this.#waiters.splice(0)) {
      waiter.detach();
      waiter.resolve(undefined);
    }
  }

  /** Arms the timer for the earliest live delayed add (or disarms it when none). */
  #schedule(): void {
    let top = this.#delayed.peek();
    while (top !== undefined && this.#delayedByKey.get(top.key) !== top) {
      this.#delayed.pop();
      top = this.#delayed.peek();
    }
    if (top === undefined) {
      this.#clearTimer();
      return;
    }
    if (this.#timer !== undefined && this.#timerAt <= top.readyAt) return;
    this.#clearTimer();
    this.#timerAt = top.readyAt;
    const wait = Math.min(MAX_TIMER_MS, Math.max(0, top.readyAt - this.#now()));
    this.#timer = setTimeout(this.#fire, wait);
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const t = this.#now();
    for (let top = this.#delayed.peek(); top !== undefined && top.readyAt <= t; top = this.#delayed.peek()) {
      this.#delayed.pop();
      if (this.#delayedByKey.get(top.key) !== top) continue;
      this.#delayedByKey.delete(top.key);
      this.#add(top.key, top.priority);
    }
    this.#schedule();
  };

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  #clearDelayed(): void {
    this.#clearTimer();
    this.#delayed.clear();
    this.#delayedByKey.clear();
  }
}

/**
 * Creates a work queue: client-go's rate-limiting, delaying queue of string
 * keys. Timers are cleared at shut down, so a stopped queue never keeps the
 * process alive. Throws only a `TypeError`, for an argument of the wrong
 * kind (a key that is not a string, a delay that is not a finite number).
 *
 * @example
 * ```ts
 * const registry = manager.registry; // prom-client's
 * const queue = createWorkQueue({
 *   name: 'harddisk',
 *   rateLimiter: exponentialFailureRateLimiter(5, 60_000),
 *   metrics: createWorkQueueMetrics(registry, 'harddisk'),
 * });
 * queue.addAfter('default/disk-1', 30_000); // requeue after 30 s
 * ```
 */
export function createWorkQueue(options: WorkQueueOptions = {}): WorkQueue {
  return new RateLimitingQueue(options, false);
}

/**
 * Creates a priority work queue, as controller-runtime's priority queue
 * (the default of its controllers since v0.23): every rule of
 * {@link createWorkQueue} holds, and waiting keys come out highest priority
 * first, in the order they were added within one priority. Adding a key that
 * is already waiting with a higher priority moves it up; delayed adds keep
 * the earlier deadline and the higher priority. Controllers add the events
 * of an informer's initial list and resyncs at {@link LOW_PRIORITY}, so a
 * user's edit made while 50,000 objects are being listed is reconciled
 * before them. Unlike controller-runtime's, it never starves a key: once a
 * key has waited `maxWaitMs` (60 s), every other hand-out goes to the
 * longest-waiting key (see {@link WorkQueueOptions.maxWaitMs}).
 *
 * @example
 * ```ts
 * const queue = createPriorityQueue({ name: 'harddisk', maxWaitMs: 30_000 });
 * queue.addWithOptions('default/seen-at-start', { priority: LOW_PRIORITY });
 * queue.add('default/just-edited'); // priority 0: handed out first
 * await queue.get(); // 'default/just-edited'
 * // had 'default/seen-at-start' waited 30 s, it would be handed out next, edits or not
 * ```
 */
export function createPriorityQueue(options: WorkQueueOptions = {}): WorkQueue {
  return new RateLimitingQueue(options, true);
}
