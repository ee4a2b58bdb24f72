/**
 * A clock tests control. The fake API server stamps creation and deletion
 * times, managed-field times and event times from it; tests advance it to
 * make time pass for anything that reads it (lease expiry, requeue-after,
 * backoff) without waiting.
 */
import { TestingError } from './errors.js';

/** The smallest clock: what code that wants to be testable should take. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

/**
 * A clock a test drives. It starts at the real time (or `start`) and follows
 * real time until {@link TestClock.freeze}; `advance` and `set` move it at
 * once and fire the sleeps and timers that became due.
 *
 * @example
 * ```ts
 * const clock = createTestClock({ start: '2030-01-01T00:00:00Z', frozen: true });
 * const slept = clock.sleep(15_000);
 * clock.advance(15_000); // slept resolves now
 * await slept;
 * ```
 */
export interface TestClock extends Clock {
  /** The time as a Date. */
  date(): Date;
  /** The time as a Kubernetes timestamp (RFC 3339, whole seconds: `2030-01-01T00:00:00Z`). */
  timestamp(): string;
  /** The time as a Kubernetes MicroTime (`2030-01-01T00:00:00.000000Z`). */
  microTimestamp(): string;
  /** Whether the clock stands still between `advance` calls. */
  readonly frozen: boolean;
  /** Stop following real time. */
  freeze(): void;
  /** Follow real time again, from the clock's current reading. */
  unfreeze(): void;
  /** Move the clock forward; sleeps and timers that became due fire. Throws TestingError `InvalidArgument` for a negative or non-finite amount. */
  advance(ms: number): void;
  /** Jump to a time (forward or back). Timers due by then fire. */
  set(time: Date | number | string): void;
  /** Resolve once the clock has moved `ms` forward (by real time when not frozen, or by `advance`). Rejects with the signal's reason on abort. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Run `fn` once the clock has moved `ms` forward. Returns a function that cancels it. */
  setTimer(fn: () => void, ms: number): () => void;
}

/** Options for {@link createTestClock}. */
export interface TestClockOptions {
  /** Where the clock starts. Default: the real time now. */
  readonly start?: Date | number | string;
  /** Start frozen (only `advance`/`set` move it). Default: false (follows real time). */
  readonly frozen?: boolean;
}

interface Timer {
  due: number;
  fn: () => void;
  real: NodeJS.Timeout | undefined;
}

function toMs(time: Date | number | string, what: string): number {
  const ms = time instanceof Date ? time.getTime() : typeof time === 'number' ? time : Date.parse(time);
  if (!Number.isFinite(ms)) throw new TestingError('InvalidArgument', `${what}: ${JSON.stringify(String(time))} is not a time`);
  return ms;
}

/**
 * Create a {@link TestClock}.
 *
 * @example
 * ```ts
 * const fake = createFakeApiServer({ clock: createTestClock({ frozen: true }) });
 * fake.clock.advance(60_000); // a minute passes for every timestamp the fake writes
 * ```
 */
export function createTestClock(options: TestClockOptions = {}): TestClock {
  return new ControlledClock(options.start === undefined ? Date.now() : toMs(options.start, 'createTestClock start'), options.frozen ?? false);
}

class ControlledClock implements TestClock {
  /** When frozen: the reading. Otherwise: the offset from real time. */
  private value: number;
  private isFrozen: boolean;
  private readonly timers = new Set<Timer>();

  constructor(start: number, frozen: boolean) {
    this.isFrozen = frozen;
    this.value = frozen ? start : start - Date.now();
  }

  now(): number {
    return this.isFrozen ? this.value : Date.now() + this.value;
  }

  date(): Date {
    return new Date(this.now());
  }

  timestamp(): string {
    return new Date(Math.floor(this.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  }

  microTimestamp(): string {
    return this.date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
  }

  get frozen(): boolean {
    return this.isFrozen;
  }

  freeze(): void {
    if (this.isFrozen) return;
    this.value = this.now();
    this.isFrozen = true;
    for (const t of this.timers) this.unschedule(t);
  }

  unfreeze(): void {
    if (!this.isFrozen) return;
    this.value = this.value - Date.now();
    this.isFrozen = false;
    for (const t of this.timers) this.schedule(t);
  }

  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new TestingError('InvalidArgument', `clock.advance: ${ms} is not a non-negative number of milliseconds`);
    this.value += ms;
    this.fireDue();
  }

  set(time: Date | number | string): void {
    const target = toMs(time, 'clock.set');
    this.value = this.isFrozen ? target : target - Date.now();
    this.fireDue();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason as Error);
        return;
      }
      const onAbort = (): void => {
        cancel();
        reject(signal!.reason as Error);
      };
      const cancel = this.setTimer(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  setTimer(fn: () => void, ms: number): () => void {
    const timer: Timer = { due: this.now() + Math.max(0, ms), fn, real: undefined };
    this.timers.add(timer);
    if (timer.due <= this.now()) {
      queueMicrotask(() => this.fire(timer));
    } else if (!this.isFrozen) this.schedule(timer);
    return () => {
      this.unschedule(timer);
      this.timers.delete(timer);
    };
  }

  private schedule(timer: Timer): void {
    this.unschedule(timer);
    timer.real = setTimeout(() => this.fire(timer), Math.max(0, timer.due - this.now()));
  }

  private unschedule(timer: Timer): void {
    if (timer.real) clearTimeout(timer.real);
    timer.real = undefined;
  }

  private fire(timer: Timer): void {
    if (!this.timers.delete(timer)) return;
    this.unschedule(timer);
    timer.fn();
  }

  private fireDue(): void {
    const now = this.now();
    const due = [...this.timers].filter((t) => t.due <= now).sort((a, b) => a.due - b.due);
    for (const t of due) this.fire(t);
    if (!this.isFrozen) for (const t of this.timers) this.schedule(t);
  }
}
