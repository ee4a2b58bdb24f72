/**
 * The error family of `@kubeloop/pki`: one class, a discriminated `reason`,
 * the original `cause` kept, and a guard that works across two copies of the
 * package.
 */

/** Why a pki operation failed. */
export type PkiErrorReason =
  /** A request that cannot be honoured (an intermediate CA, a non-positive validity, an empty common name). */
  | 'InvalidRequest'
  /** PEM text that holds no certificate, or a certificate that cannot be parsed. */
  | 'InvalidCertificate'
  /** A private key that cannot be parsed, or one that does not match its certificate. */
  | 'InvalidKey'
  /** A key type this package does not sign with (only ECDSA P-256 is supported). */
  | 'UnsupportedKey';

const BRAND = Symbol.for('@kubeloop/pki/PkiError');

/**
 * An error raised by `@kubeloop/pki`.
 *
 * @example
 * ```ts
 * try {
 *   loadCertificateAuthority({ certPem, keyPem });
 * } catch (err) {
 *   if (isPkiError(err) && err.reason === 'InvalidKey') console.error('the CA key does not match its certificate');
 *   throw err;
 * }
 * ```
 */
export class PkiError extends Error {
  override readonly name = 'PkiError';
  readonly reason: PkiErrorReason;
  readonly [BRAND] = true;

  constructor(reason: PkiErrorReason, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
  }
}

/**
 * True for any {@link PkiError}, even one from another copy of this package.
 *
 * @example
 * ```ts
 * if (isPkiError(err)) console.error(err.reason, err.message);
 * ```
 */
export function isPkiError(value: unknown): value is PkiError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}
