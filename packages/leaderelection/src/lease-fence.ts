/**
 * A write fence tied to a Lease holder's renewals: what a shard ring gives
 * each bucket it works on and a leader election its term. Revoked by hand (a
 * bucket handed on, a term lost) or by the clock: once the holder has not
 * renewed within its renew deadline, every write is refused, checked against
 * the monotonic clock at each write (so a process resumed after a pause is
 * fenced before any timer of its runs), and a timer cuts the writes in
 * flight then.
 */
import { performance } from 'node:perf_hooks';
import type { WriteFence } from '@kubeloop/client';

/** Where a fence reads its holder's last renewal: `performance.now()` at the start of the last successful write of the Lease. */
export interface RenewClock {
  renewedAt(): number;
}

/**
 * One grant under a Lease (a bucket from its start to its handoff, a
 * leadership term): a {@link WriteFence} for `runFenced`.
 */
export class LeaseFence implements WriteFence {
  private readonly controller = new AbortController();
  private why: string | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly clock: RenewClock,
    private readonly renewDeadlineMs: number,
    /** Names the grant in messages: `bucket 7 of shard ring disks`. */
    private readonly what: string,
  ) {
    this.arm();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  revoked(): string | undefined {
    if (this.why === undefined && performance.now() - this.clock.renewedAt() >= this.renewDeadlineMs) {
      this.revoke(`${this.what}: its Lease was not renewed within the renew deadline (${this.renewDeadlineMs} ms)`);
    }
    return this.why;
  }

  /** Revoke now (idempotent): writes are refused from now on and those in flight are cut. */
  revoke(why: string): void {
    if (this.why !== undefined) return;
    this.why = why;
    clearTimeout(this.timer);
    this.controller.abort(new Error(why));
  }

  /** After a renewal: move the timer that cuts writes in flight to the new deadline. */
  arm(): void {
    if (this.why !== undefined) return;
    clearTimeout(this.timer);
    const left = this.clock.renewedAt() + this.renewDeadlineMs - performance.now();
    if (left <= 0) {
      this.revoked();
      return;
    }
    this.timer = setTimeout(() => this.revoked(), left);
    this.timer.unref();
  }
}
