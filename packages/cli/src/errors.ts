/**
 * The error family of `@kubeloop/cli`: one class, a discriminated `reason`,
 * the original `cause` kept, and a guard that works across two copies of the
 * package. `kubeloop` prints the message and exits with the reason's code.
 */

/** Why a command failed. */
export type CliErrorReason =
  /** The command line is wrong: an unknown command or flag, a missing value. Exit code 2. */
  | 'Usage'
  /** A module named to load kinds from could not be imported. */
  | 'ModuleLoadFailed'
  /** No schema-first kind was found where kinds were expected. */
  | 'NoKinds'
  /** A schema or CRD is one the API server would refuse (`cause` is the scheme's error, with the paths). */
  | 'InvalidSchema'
  /** An input file (CRD manifest, OpenAPI document, package.json) cannot be read or is not what it should be. */
  | 'InvalidInput'
  /** Reading from the cluster failed. */
  | 'ClusterReadFailed'
  /** A program the command runs (kubectl, tsc, the operator) could not be started or failed. */
  | 'CommandFailed'
  /** `--check`: the files on disk differ from what would be generated. Exit code 1, the diff printed. */
  | 'Stale';

const BRAND = Symbol.for('@kubeloop/cli/CliError');

/**
 * An error raised by `@kubeloop/cli`.
 *
 * @example
 * ```ts
 * import { isCliError, runCli } from '@kubeloop/cli';
 *
 * try {
 *   await runCli(['generate', 'crds', '--check']);
 * } catch (err) {
 *   if (isCliError(err) && err.reason === 'Stale') console.error(err.message);
 * }
 * ```
 */
export class CliError extends Error {
  override readonly name = 'CliError';
  readonly reason: CliErrorReason;
  readonly [BRAND] = true;

  constructor(reason: CliErrorReason, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
  }

  /** The process exit code for this error: 2 for usage errors, 1 otherwise. */
  get exitCode(): number {
    return this.reason === 'Usage' ? 2 : 1;
  }
}

/**
 * True for any {@link CliError}, even one from another copy of this package.
 *
 * @example
 * ```ts
 * if (isCliError(err)) process.exitCode = err.exitCode;
 * ```
 */
export function isCliError(value: unknown): value is CliError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}
