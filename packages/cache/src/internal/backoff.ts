/** Exponential backoff with jitter that resets after a healthy period (client-go's reflector defaults). */
export class Backoff {
  private current: number;
  private lastFailure = 0;

  constructor(
    private readonly initialMs = 800,
    private readonly maxMs = 30_000,
    private readonly resetAfterMs = 120_000,
    private readonly jitter = 1.0,
    private readonly now: () => number = Date.now,
  ) {
    this.current = initialMs;
  }

  /** The delay before the next attempt after a failure. */
  next(): number {
    const now = this.now();
    if (this.lastFailure !== 0 && now - this.lastFailure > this.resetAfterMs) this.current = this.initialMs;
    this.lastFailure = now;
    const base = this.current;
    this.current = Math.min(this.maxMs, this.current * 2);
    return Math.min(this.maxMs, base * (1 + Math.random() * this.jitter));
  }

  reset(): void {
    this.current = this.initialMs;
    this.lastFailure = 0;
  }
}
