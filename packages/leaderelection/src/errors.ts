/**
 * The error family of `@kubeloop/leaderelection`: one class, a
 * discriminated `reason`, the cause kept, and a guard that works across two
 * copies of the package.
 */

/** Why leader election failed or ended. */
export type LeaderElectionErrorReason =
  /** Options that cannot work (timings out of order, a missing client, an empty name). */
  | 'InvalidOptions'
  /** `run` was called while a run of the same elector was in progress. */
  | 'AlreadyRunning'
  /** Leadership was lost: the renew deadline passed, another holder was observed, or renewal is stuck. */
  | 'Lost'
  /** While not leading, the Lease could not be read or written for longer than the lease duration (refused, forbidden, timed out): see `check()`. */
  | 'Unavailable';

const BRAND = Symbol.for('@kubeloop/leaderelection/LeaderElectionError');

/**
 * An error of leader election.
 *
 * @example
 * ```ts
 * const stuck = elector.check();
 * if (isLeaderElectionError(stuck) && stuck.reason === 'Lost') process.exit(1);
 * ```
 */
export class LeaderElectionError extends Error {
  override readonly name = 'LeaderElectionError';
  readonly reason: LeaderElectionErrorReason;
  readonly [BRAND] = true;

  constructor(reason: LeaderElectionErrorReason, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
  }
}

/** True for any {@link LeaderElectionError}, even one from another copy of this package. */
export function isLeaderElectionError(value: unknown): value is LeaderElectionError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}
