/**
 * The error family of `@kubeloop/scheme`: one class, a discriminated
 * `reason`, the original `cause` kept, and a guard that works across two
 * copies of the package.
 */

/** Why a scheme operation failed. */
export type SchemeErrorReason =
  /** A group, version or group/version (`apiVersion`) string is malformed. */
  | 'InvalidGroupVersion'
  /** A kind, group/kind or group/version/kind string is malformed. */
  | 'InvalidKind'
  /** A resource (plural), group/resource or group/version/resource string is malformed. */
  | 'InvalidResource'
  /** A value is not a Kubernetes object: not an object, or no string `apiVersion` / `kind`. */
  | 'InvalidObject'
  /** A resource descriptor is malformed (for example `namespaced` is not a boolean, or its list kind equals its kind). */
  | 'InvalidDescriptor'
  /** A registration clashes with one already made; the message names both. */
  | 'Conflict'
  /** Registration into a builder that was frozen because it is shared. */
  | 'Frozen'
  /**
   * A kind's schema is one the API server would refuse in a CRD (not
   * structural, or a keyword CRDs do not support); `problems` names each
   * offending path.
   */
  | 'NonStructural'
  /** The versions of one kind disagree (names, scope, storage version) so no single CRD can serve them. */
  | 'InvalidCRD'
  /** An object does not validate against its kind's schema; `fieldErrors` says where and why, as the API server would. */
  | 'Invalid';

/** The field error types of the API server (`FieldValueRequired`, ...), plus `FieldValueUnknown` for a field the schema does not declare. */
export type FieldErrorType =
  | 'FieldValueRequired'
  | 'FieldValueInvalid'
  | 'FieldValueTypeInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'FieldValueDuplicate'
  | 'FieldValueForbidden'
  | 'FieldValueUnknown';

/** One reason an object is invalid, in the API server's terms: `spec.size: Invalid value: "x": ...`. */
export interface FieldError {
  /** What kind of error, as the server's Status causes name it. */
  readonly type: FieldErrorType;
  /** The field's path: `spec.size`, `spec.ports[1]`, `metadata.name`. */
  readonly field: string;
  /** The offending value, when there is one. */
  readonly badValue?: unknown;
  /** The explanation after the error type (`spec.size in body should match '^[0-9]+Gi$'`). */
  readonly detail: string;
  /** The whole line as the API server writes it: `spec.size: Invalid value: "x": spec.size in body should match ...`. */
  readonly message: string;
}

/** One thing wrong with a schema, at a path in the API server's style (`spec.versions[0].schema.openAPIV3Schema.properties[spec].type`). */
export interface SchemaProblem {
  /** The path of the offending keyword or field. */
  readonly path: string;
  /** The kind of problem, as the API server names field errors. */
  readonly type: 'Required' | 'Forbidden' | 'Invalid' | 'Unsupported';
  /** What is wrong, and where useful how to fix it. */
  readonly detail: string;
}

const BRAND = Symbol.for('@kubeloop/scheme/SchemeError');

/**
 * An error raised by `@kubeloop/scheme`.
 *
 * @example
 * ```ts
 * import { isSchemeError, parseGroupVersion } from '@kubeloop/scheme';
 *
 * try {
 *   parseGroupVersion('Apps/v1');
 * } catch (err) {
 *   if (isSchemeError(err) && err.reason === 'InvalidGroupVersion') console.error(err.message, err.input);
 *   else throw err;
 * }
 * ```
 */
export class SchemeError extends Error {
  override readonly name = 'SchemeError';
  readonly reason: SchemeErrorReason;
  /** The offending input as text (the string parsed, or the registration attempted), when there is one. */
  readonly input: string | undefined;
  /** For `NonStructural` and `InvalidCRD`: every problem found, each with its path. Empty otherwise. */
  readonly problems: readonly SchemaProblem[];
  /** For `Invalid`: every field error, as the API server would report them. Empty otherwise. */
  readonly fieldErrors: readonly FieldError[];
  readonly [BRAND] = true;

  constructor(
    reason: SchemeErrorReason,
    message: string,
    options: { cause?: unknown; input?: string; problems?: readonly SchemaProblem[]; fieldErrors?: readonly FieldError[] } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.input = options.input;
    this.problems = Object.freeze([...(options.problems ?? [])]);
    this.fieldErrors = Object.freeze([...(options.fieldErrors ?? [])]);
  }
}

/**
 * True for any {@link SchemeError}, even one from another copy of this package.
 *
 * @example
 * ```ts
 * if (isSchemeError(err) && err.reason === 'Conflict') process.exitCode = 2;
 * ```
 */
export function isSchemeError(value: unknown): value is SchemeError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}
