/**
 * The error family of `@kubeloop/webhook`: one class, a discriminated
 * `reason`, the original `cause` kept, and a guard that works across two
 * copies of the package.
 */
import type { FieldError } from './field-errors.js';

/** Why a webhook operation failed. */
export type WebhookErrorReason =
  /** Options or a registration that cannot work (a duplicate path, a conversion with two hubs, a bad port). */
  | 'InvalidOptions'
  /** No usable serving certificate: files missing or unreadable, a key that does not match its certificate. */
  | 'CertificateUnavailable'
  /** The HTTPS server could not listen (address in use, permission denied). */
  | 'ListenFailed'
  /** A call made in the wrong state (started twice, ready check before start). */
  | 'InvalidState'
  /** A call to the API server failed (TokenReview, SubjectAccessReview, the certificate Secret, caBundle injection). */
  | 'ApiFailed'
  /** The operation was cancelled by its AbortSignal. */
  | 'Aborted'
  /** A conversion refused an object it cannot convert without inventing or losing a value; `fieldErrors` names the fields. */
  | 'ConversionRefused';

const BRAND = Symbol.for('@kubeloop/webhook/WebhookError');

/**
 * An error raised by `@kubeloop/webhook`.
 *
 * @example
 * ```ts
 * try {
 *   await server.start(signal);
 * } catch (err) {
 *   if (isWebhookError(err) && err.reason === 'CertificateUnavailable') console.error(err.message);
 *   throw err;
 * }
 * ```
 */
export class WebhookError extends Error {
  override readonly name = 'WebhookError';
  readonly reason: WebhookErrorReason;
  /** For `ConversionRefused`: the fields that could not be converted. Empty otherwise. */
  readonly fieldErrors: readonly FieldError[];
  readonly [BRAND] = true;

  constructor(reason: WebhookErrorReason, message: string, options: { cause?: unknown; fieldErrors?: readonly FieldError[] } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.fieldErrors = Object.freeze([...(options.fieldErrors ?? [])]);
  }
}

/**
 * True for any {@link WebhookError}, even one from another copy of this package.
 *
 * @example
 * ```ts
 * if (isWebhookError(err) && err.reason === 'ListenFailed') process.exitCode = 1;
 * ```
 */
export function isWebhookError(value: unknown): value is WebhookError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

/** A one-line description of anything thrown. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  try {
    return typeof err === 'string' ? err : (JSON.stringify(err) ?? String(err));
  } catch {
    return Object.prototype.toString.call(err);
  }
}
