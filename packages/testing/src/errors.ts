/**
 * The error family of `@kubeloop/testing`. Errors the fake API server
 * answers with are the API server's Status bodies (read them with the
 * client's guards); these are the kit's own failures.
 */

/** Why a test-kit call failed. */
export type TestingErrorReason =
  /** `eventually` ran out of time, or `consistently` saw the condition fail. */
  | 'ConditionNotMet'
  /** A bad argument: a negative duration, a descriptor without plural or scope, a malformed CRD. */
  | 'InvalidArgument'
  /** The fake (or its HTTP endpoint) was closed. */
  | 'Closed';

const BRAND = Symbol.for('@kubeloop/testing/TestingError');

/**
 * A failure of the test kit itself.
 *
 * @example
 * ```ts
 * try {
 *   await eventually(() => client.get(ConfigMap, key), { timeoutMs: 1000 });
 * } catch (err) {
 *   if (isTestingError(err) && err.reason === 'ConditionNotMet') console.log(err.lastValue);
 * }
 * ```
 */
export class TestingError extends Error {
  override readonly name = 'TestingError';
  readonly [BRAND] = true;

  constructor(
    readonly reason: TestingErrorReason,
    message: string,
    options: { cause?: unknown; lastValue?: unknown; attempts?: number } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.lastValue = options.lastValue;
    this.attempts = options.attempts;
  }

  /** For `ConditionNotMet`: the last value the condition returned (or the last error it threw). */
  readonly lastValue: unknown;
  /** For `ConditionNotMet`: how many times the condition ran. */
  readonly attempts: number | undefined;
}

/**
 * True for any {@link TestingError}, even one from another copy of this package.
 *
 * @example
 * ```ts
 * const err = await eventually(() => false, { timeoutMs: 100 }).catch((e: unknown) => e);
 * if (isTestingError(err) && err.reason === 'ConditionNotMet') console.log(err.message);
 * ```
 */
export function isTestingError(value: unknown): value is TestingError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}
