/**
 * A per-source spam filter for events, as client-go's
 * `EventSourceObjectSpamFilter`: a token bucket per key (the object an event
 * is about plus who reports it), `burst` events at once, then one every
 * `1/qps` seconds; a denied event costs nothing. Buckets live in an LRU map
 * of bounded size, so a controller touching millions of objects keeps only
 * the most recent ones.
 */
import { monotonicNow, TokenBucket } from '@kubeloop/workqueue';
import type { Clock } from '@kubeloop/workqueue';

interface Source {
  readonly bucket: TokenBucket;
  /**
   * When the bucket was overdrawn by a denied event, the time the token it
   * reserved becomes available: the first event from then on takes it.
   * `TokenBucket.reserve()` always takes a token, possibly a future one;
   * remembering that one reservation (instead of reserving on every denied
   * event) keeps a denied event from pushing the next allowed one further out.
   */
  reservedAt: number | undefined;
}

/** A passive token bucket per key: `allow(key)` says yes while the key's bucket has a token now. */
export class SpamFilter {
  readonly #sources = new Map<string, Source>();
  /** Milliseconds for one token. */
  readonly #interval: number;

  /**
   * @param qps - tokens a second per key (client-go: 1/300, one every 5 minutes).
   * @param burst - tokens a key starts with and saves up to (client-go: 25).
   * @param maxKeys - keys remembered; the least recently used is forgotten first (client-go: 4096).
   * @param now - the clock. Default: monotonic.
   */
  constructor(
    readonly qps: number,
    readonly burst: number,
    readonly maxKeys: number,
    private readonly now: Clock = monotonicNow,
  ) {
    this.#interval = 1000 / qps;
  }

  /** Number of keys remembered. */
  get size(): number {
    return this.#sources.size;
  }

  /** Whether an event from `key` may pass now; takes a token when it may. */
  allow(key: string): boolean {
    let source = this.#sources.get(key);
    if (source) {
      // most recently used goes last
      this.#sources.delete(key);
      this.#sources.set(key, source);
    } else {
      source = { bucket: new TokenBucket(this.qps, this.burst, this.now), reservedAt: undefined };
      this.#sources.set(key, source);
      if (this.#sources.size > this.maxKeys) this.#sources.delete(this.#sources.keys().next().value!);
    }
    const t = this.now();
    if (source.reservedAt !== undefined) {
      if (t < source.reservedAt) return false;
      const late = t - source.reservedAt;
      source.reservedAt = undefined;
      // The bucket refilled meanwhile. Once it has been full for a while
      // (`burst` intervals past the reservation) the reservation would be one
      // token more than the bucket holds: forget it and take from the bucket.
      if (late < this.burst * this.#interval) return true;
    }
    const wait = source.bucket.reserve();
    if (wait === 0) return true;
    source.reservedAt = t + wait;
    return false;
  }
}
