/**
 * The one token bucket of kubeloop: `qps` tokens a second, at most `burst`
 * saved up, the bucket starting full. Rate limiters reserve a token and get
 * the delay until it is theirs (as Go's `rate.Limiter.Reserve().Delay()`);
 * the client's opt-in request limit awaits it.
 */
import { sleep } from './sleep.js';

/** A clock in milliseconds; only differences between readings matter. */
export type Clock = () => number;

/** The default clock: `performance.now()`, monotonic (wall-clock jumps do not move it). */
export const monotonicNow: Clock = () => performance.now();

/**
 * A token bucket.
 *
 * @example
 * ```ts
 * const bucket = new TokenBucket(10, 1);
 * bucket.reserve(); // 0: the first token is there
 * bucket.reserve(); // 100: the next one comes 1/10 s later
 * await bucket.take(signal); // waits for its token, in order
 * ```
 */
export class TokenBucket {
  #tokens: number;
  #last: number;

  /**
   * @param qps - tokens added per second, > 0; `Infinity` never delays.
   * @param burst - bucket size, an integer >= 1.
   * @param now - the clock. Default: {@link monotonicNow}.
   * @throws TypeError for a `qps` that is not > 0 or a `burst` that is not an integer >= 1.
   */
  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly now: Clock = monotonicNow,
  ) {
    if (typeof qps !== 'number' || Number.isNaN(qps) || qps <= 0) throw new TypeError(`qps must be a number > 0, got ${String(qps)}`);
    if (!Number.isInteger(burst) || burst < 1) throw new TypeError(`burst must be an integer >= 1, got ${String(burst)}`);
    this.#tokens = burst;
    this.#last = now();
  }

  /** Takes the next token now or in the future and returns how many milliseconds until it is available (0: now). Never blocks. */
  reserve(): number {
    if (this.qps === Infinity) return 0;
    const t = this.now();
    // A clock reading earlier than the last one adds nothing (as x/time/rate).
    const elapsed = Math.max(0, t - this.#last);
    this.#last = Math.max(t, this.#last);
    this.#tokens = Math.min(this.burst, this.#tokens + (elapsed * this.qps) / 1000) - 1;
    return this.#tokens >= 0 ? 0 : (-this.#tokens * 1000) / this.qps;
  }

  /**
   * Waits for a token; waiters are served in the order they called.
   * Rejects with the signal's reason when `signal` aborts first (the token
   * reserved for it is given back).
   */
  async take(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const wait = this.reserve();
    if (wait === 0) return;
    if (!(await sleep(wait, signal))) {
      this.#tokens = Math.min(this.burst, this.#tokens + 1);
      signal?.throwIfAborted();
    }
  }
}
