/**
 * Rate limiters decide how long a key waits before it is retried: per-key
 * exponential backoff, an overall token bucket, and the maximum of several,
 * with client-go's `workqueue` semantics and controller-runtime's defaults.
 *
 * Every limiter takes its clock as an option (milliseconds, monotonic), so
 * tests can drive time by hand.
 */
import { monotonicNow, TokenBucket } from './token-bucket.js';
import type { Clock } from './token-bucket.js';

/**
 * Decides how long a key waits before it is added back to a work queue.
 *
 * @example
 * ```ts
 * const limiter = exponentialFailureRateLimiter(5, 1_000_000);
 * limiter.when('ns/a'); // 5
 * limiter.when('ns/a'); // 10
 * limiter.forget('ns/a'); // success: the next failure waits 5 ms again
 * ```
 */
export interface RateLimiter {
  /** Records one more failure of `key` and returns how long it should wait, in milliseconds (>= 0). */
  when(key: string): number;
  /** Stops tracking `key`: it succeeded (or will not be retried), so its failures are reset. */
  forget(key: string): void;
  /** How many times `when(key)` was called since the last `forget(key)`. */
  numRequeues(key: string): number;
}

function requireNonNegative(what: string, value: number): void {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new TypeError(`${what} must be a number >= 0, got ${String(value)}`);
  }
}

/**
 * Per-key exponential backoff: the n-th consecutive failure of a key waits
 * `baseMs * 2^(n-1)`, capped at `maxMs`; `forget(key)` starts the key over.
 * Keys do not affect each other. Like client-go's
 * `ItemExponentialFailureRateLimiter`.
 *
 * @param baseMs - delay after the first failure; default 5 ms.
 * @param maxMs - the cap; default 1 000 000 ms (1000 s).
 * @throws TypeError when a bound is negative or NaN, or `maxMs < baseMs`.
 *
 * @example
 * ```ts
 * const limiter = exponentialFailureRateLimiter();
 * [1, 2, 3].map(() => limiter.when('ns/a')); // [5, 10, 20]
 * ```
 */
export function exponentialFailureRateLimiter(baseMs = 5, maxMs = 1_000_000): RateLimiter {
  requireNonNegative('baseMs', baseMs);
  requireNonNegative('maxMs', maxMs);
  if (maxMs < baseMs) throw new TypeError(`maxMs (${maxMs}) must be >= baseMs (${baseMs})`);
  const failures = new Map<string, number>();
  return {
    when(key) {
      const exp = failures.get(key) ?? 0;
      failures.set(key, exp + 1);
      // 2 ** exp reaches Infinity past exp 1023; the cap still applies.
      return Math.min(baseMs * 2 ** exp, maxMs);
    },
    forget(key) {
      failures.delete(key);
    },
    numRequeues(key) {
      return failures.get(key) ?? 0;
    },
  };
}

/** Options of {@link bucketRateLimiter}. */
export interface BucketRateLimiterOptions {
  /** The clock, in milliseconds. Default: {@link monotonicNow}. */
  now?: Clock;
}

/**
 * An overall token bucket shared by every key: `burst` retries pass at once,
 * then `qps` per second. It never blocks: `when` reserves the next token and
 * returns how long until it is available (like client-go's
 * `BucketRateLimiter` over `rate.Limiter.Reserve().Delay()`). It keeps no
 * per-key state: `numRequeues` is always 0 and `forget` does nothing.
 *
 * @param qps - tokens added per second; default 10. `Infinity` never delays.
 * @param burst - bucket size, the bucket starts full; default 100.
 * @throws TypeError when `qps` is not > 0 or `burst` is not an integer >= 1.
 *
 * @example
 * ```ts
 * const limiter = bucketRateLimiter(10, 1);
 * limiter.when('a'); // 0
 * limiter.when('b'); // 100 (the next token, 1/10 s later)
 * ```
 */
export function bucketRateLimiter(qps = 10, burst = 100, options: BucketRateLimiterOptions = {}): RateLimiter {
  const bucket = new TokenBucket(qps, burst, options.now ?? monotonicNow);
  return {
    when: () => bucket.reserve(),
    forget() {},
    numRequeues() {
      return 0;
    },
  };
}

/**
 * Combines limiters: `when` asks every one (each records the failure) and
 * returns the longest delay; `numRequeues` is the largest count; `forget`
 * forgets in all. Like client-go's `MaxOfRateLimiter`.
 *
 * @throws TypeError when given no limiter.
 *
 * @example
 * ```ts
 * const limiter = maxOfRateLimiter(exponentialFailureRateLimiter(5, 60_000), bucketRateLimiter(50, 300));
 * ```
 */
export function maxOfRateLimiter(...limiters: RateLimiter[]): RateLimiter {
  if (limiters.length === 0) throw new TypeError('maxOfRateLimiter needs at least one limiter');
  return {
    when(key) {
      let longest = 0;
      for (const limiter of limiters) longest = Math.max(longest, limiter.when(key));
      return longest;
    },
    forget(key) {
      for (const limiter of limiters) limiter.forget(key);
    },
    numRequeues(key) {
      let most = 0;
      for (const limiter of limiters) most = Math.max(most, limiter.numRequeues(key));
      return most;
    },
  };
}

/** Options of {@link defaultControllerRateLimiter}. */
export interface DefaultControllerRateLimiterOptions {
  /** The clock of the token bucket, in milliseconds. Default: {@link monotonicNow}. */
  now?: Clock;
}

/**
 * client-go's `DefaultControllerRateLimiter`, controller-runtime's default
 * for its classic queue: the maximum of per-key exponential backoff
 * (5 ms doubling to 1000 s) and an overall bucket of 10 retries per second
 * with a burst of 100.
 *
 * @example
 * ```ts
 * const queue = createWorkQueue({ name: 'harddisk', rateLimiter: defaultControllerRateLimiter() });
 * ```
 */
export function defaultControllerRateLimiter(options: DefaultControllerRateLimiterOptions = {}): RateLimiter {
  return maxOfRateLimiter(exponentialFailureRateLimiter(5, 1_000_000), bucketRateLimiter(10, 100, options));
}
