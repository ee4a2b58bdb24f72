/**
 * The error family of `create-kubeloop`: one class, a discriminated
 * `reason`, the original `cause` kept, and a guard that works across two
 * copies of the package.
 */

/** Why a project could not be created. */
export type CreateKubeloopErrorReason =
  /** The command line is wrong (unknown flag, missing name). Exit code 2. */
  | 'Usage'
  /** The project name is not a DNS-1123 label. */
  | 'InvalidName'
  /** The target directory exists and is not empty. */
  | 'TargetExists'
  /** `--workspace`: no pnpm-workspace.yaml in this directory or above, or it cannot be read. */
  | 'NoWorkspace'
  /** Writing the project failed (`cause` is the file-system error). */
  | 'WriteFailed';

const BRAND = Symbol.for('create-kubeloop/CreateKubeloopError');

/**
 * An error raised by `create-kubeloop`.
 *
 * @example
 * ```ts
 * try {
 *   await createProject({ name: 'My_Operator', directory: '.' });
 * } catch (err) {
 *   if (isCreateKubeloopError(err) && err.reason === 'InvalidName') console.error(err.message);
 * }
 * ```
 */
export class CreateKubeloopError extends Error {
  override readonly name = 'CreateKubeloopError';
  readonly reason: CreateKubeloopErrorReason;
  readonly [BRAND] = true;

  constructor(reason: CreateKubeloopErrorReason, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
  }
}

/** Whether `err` is a {@link CreateKubeloopError} (from any copy of the package). */
export function isCreateKubeloopError(err: unknown): err is CreateKubeloopError {
  return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[BRAND] === true;
}
