/**
 * The error family of `@kubeloop/envtest`: one class, a discriminated
 * `reason`, the original `cause` kept, and a guard that works across two
 * copies of the package.
 */

/** Why an envtest operation failed. */
export type EnvtestErrorReason =
  /** No binaries in KUBEBUILDER_ASSETS, none cached, and no Go to build them. */
  | 'BinariesNotFound'
  /** Downloading the prebuilt binaries failed: unreachable, not listed, or not what the index's digest says. */
  | 'DownloadFailed'
  /** Building kube-apiserver or etcd from Go modules failed. */
  | 'BuildFailed'
  /** etcd or kube-apiserver exited or never became ready. */
  | 'StartFailed'
  /** A wait ran past its deadline. */
  | 'Timeout'
  /** Options that cannot work together, or a malformed value. */
  | 'InvalidOptions'
  /** A CRD could not be created, updated, or did not become established. */
  | 'CRDInstallFailed'
  /**
   * A CRD to install is being deleted (Terminating) and objects of its kind
   * hold it with their finalizers: the message names them and what to do.
   */
  | 'CRDTerminating'
  /** The environment is in the wrong state for the call (for example, not started). */
  | 'InvalidState';

const BRAND = Symbol.for('@kubeloop/envtest/EnvtestError');

/**
 * An error raised by envtest.
 *
 * @example
 * ```ts
 * try {
 *   await env.start();
 * } catch (err) {
 *   if (isEnvtestError(err) && err.reason === 'BinariesNotFound') console.error(err.message);
 *   throw err;
 * }
 * ```
 */
export class EnvtestError extends Error {
  override readonly name = 'EnvtestError';
  readonly reason: EnvtestErrorReason;
  /** The last lines of the failing component's log, when there is one. */
  readonly logTail: string | undefined;
  readonly [BRAND] = true;

  constructor(reason: EnvtestErrorReason, message: string, options: { cause?: unknown; logTail?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.logTail = options.logTail;
  }
}

/** True for any {@link EnvtestError}, even one from another copy of this package. */
export function isEnvtestError(value: unknown): value is EnvtestError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}
