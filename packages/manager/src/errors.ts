/**
 * The error family of `@kubeloop/manager`: one class, a discriminated
 * `reason`, the cause kept, and a guard that works across two copies of the
 * package.
 */

/** Why a manager operation failed. */
export type ManagerErrorReason =
  /** Options that cannot work (leader-election timings, a missing client...). */
  | 'InvalidOptions'
  /** Two controllers with one name, a controller without a `for` kind, a second start. */
  | 'InvalidRegistration'
  /** A dependency the container cannot resolve. */
  | 'Resolution'
  /** Leadership was lost: leader-only work stopped, and the manager exits with this. */
  | 'LeaderElectionLost'
  /** Caches did not sync, or a kind is not served (CRD missing, RBAC). */
  | 'CacheSync'
  /** A runnable failed; the manager stops. */
  | 'RunnableFailed'
  /** Graceful shutdown did not finish within its timeout. */
  | 'ShutdownTimeout'
  /** A reconciler asked not to be retried (see `terminalError`). */
  | 'Terminal'
  /** A reconcile ran past its timeout. */
  | 'ReconcileTimeout';

const BRAND = Symbol.for('@kubeloop/manager/ManagerError');

/**
 * An error raised by the manager, its controllers or leader election.
 *
 * @example
 * ```ts
 * try {
 *   await manager.start();
 * } catch (err) {
 *   if (isManagerError(err) && err.reason === 'LeaderElectionLost') process.exit(1);
 *   throw err;
 * }
 * ```
 */
export class ManagerError extends Error {
  override readonly name = 'ManagerError';
  readonly reason: ManagerErrorReason;
  readonly [BRAND] = true;

  constructor(reason: ManagerErrorReason, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
  }
}

/** True for any {@link ManagerError}, even one from another copy of this package. */
export function isManagerError(value: unknown): value is ManagerError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

/** A one-line description of any thrown value. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err);
  } catch {
    return 'unknown error';
  }
}
