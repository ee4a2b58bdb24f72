/**
 * Field errors as the API server reports them: a field path
 * (`spec.containers[0].image`), a type (`FieldValueInvalid`), the bad value
 * and a detail, written as apimachinery writes them (`spec.size: Invalid
 * value: -1: must be positive`), so a webhook's denial reads like the API
 * server's own validation.
 */

/** The error types of apimachinery's `field.Error`, as they appear in a Status cause's `reason`. */
export type FieldErrorType =
  | 'FieldValueRequired'
  | 'FieldValueInvalid'
  | 'FieldValueForbidden'
  | 'FieldValueNotSupported'
  | 'FieldValueDuplicate'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany';

/** One field error. Build it with {@link fieldError}. */
export interface FieldError {
  readonly type: FieldErrorType;
  /** The field path, as `fieldPath` writes it. */
  readonly field: string;
  /** The offending value; absent when the message leaves it out (required, forbidden, too long). */
  readonly badValue?: unknown;
  /** What is wrong, for a person. */
  readonly detail: string;
}

/** A map key in a field path: `fieldPath('metadata', 'labels', { key: 'app' })` is `metadata.labels[app]`. */
export interface FieldPathKey {
  readonly key: string;
}

/**
 * A field path as the API server writes it: names joined by dots, list
 * indexes and map keys in brackets.
 *
 * @example
 * ```ts
 * fieldPath('spec', 'containers', 0, 'image');               // 'spec.containers[0].image'
 * fieldPath('metadata', 'labels', { key: 'app.kubernetes.io/name' }); // 'metadata.labels[app.kubernetes.io/name]'
 * ```
 */
export function fieldPath(...segments: readonly (string | number | FieldPathKey)[]): string {
  let out = '';
  for (const segment of segments) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'object') out += `[${segment.key}]`;
    else out += out === '' ? segment : `.${segment}`;
  }
  return out;
}

const LABELS: Readonly<Record<FieldErrorType, string>> = {
  FieldValueRequired: 'Required value',
  FieldValueInvalid: 'Invalid value',
  FieldValueForbidden: 'Forbidden',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
};

function showValue(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  try {
    return JSON.stringify(value) ?? typeof value;
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/**
 * The text after the field path: `Invalid value: -1: must be positive`
 * (apimachinery's `ErrorBody`). It is the cause's `message` in a Status.
 *
 * @example
 * ```ts
 * formatFieldErrorBody(fieldError.required('spec.size', 'the disk needs a size')); // 'Required value: the disk needs a size'
 * ```
 */
export function formatFieldErrorBody(error: FieldError): string {
  let body = LABELS[error.type] ?? error.type;
  if ('badValue' in error) body += `: ${showValue(error.badValue)}`;
  if (error.detail) body += `: ${error.detail}`;
  return body;
}

/**
 * The whole line: `spec.size: Invalid value: -1: must be positive`.
 *
 * @example
 * ```ts
 * formatFieldError(fieldError.invalid('spec.size', -1, 'must be positive')); // 'spec.size: Invalid value: -1: must be positive'
 * ```
 */
export function formatFieldError(error: FieldError): string {
  return `${error.field}: ${formatFieldErrorBody(error)}`;
}

function make(type: FieldErrorType, field: string, detail: string, badValue?: { value: unknown }): FieldError {
  return Object.freeze(badValue ? { type, field, badValue: badValue.value, detail } : { type, field, detail });
}

/**
 * Named constructors for field errors, one per apimachinery error type.
 * Return an array of them from a validator to deny the request as
 * `Invalid` (HTTP 422) with each field in the Status causes.
 *
 * @example
 * ```ts
 * const validator: Validator<HardDisk> = {
 *   validateCreate(disk) {
 *     const errors: FieldError[] = [];
 *     if (!disk.spec?.size) errors.push(fieldError.required('spec.size'));
 *     else if (!/^\d+(Mi|Gi|Ti)$/.test(disk.spec.size)) errors.push(fieldError.invalid('spec.size', disk.spec.size, 'must be a quantity in Mi, Gi or Ti'));
 *     const storageClass = disk.spec?.storageClass;
 *     if (storageClass && !['standard', 'fast'].includes(storageClass)) errors.push(fieldError.notSupported('spec.storageClass', storageClass, ['standard', 'fast']));
 *     return errors;
 *   },
 * };
 * ```
 */
export const fieldError = Object.freeze({
  /** A required field is missing: `spec.size: Required value: <detail>`. */
  required: (field: string, detail = ''): FieldError => make('FieldValueRequired', field, detail),
  /** A value is malformed or out of range: `spec.size: Invalid value: -1: must be positive`. */
  invalid: (field: string, value: unknown, detail = ''): FieldError => make('FieldValueInvalid', field, detail, { value }),
  /** A field may not be set (here, now, or by this user): `spec.node: Forbidden: <detail>`. */
  forbidden: (field: string, detail = ''): FieldError => make('FieldValueForbidden', field, detail),
  /** A value outside a fixed set: `spec.media: Unsupported value: "tape": supported values: "ssd", "hdd"`. */
  notSupported: (field: string, value: unknown, supported: readonly string[] = []): FieldError =>
    make('FieldValueNotSupported', field, supported.length ? `supported values: ${supported.map((v) => JSON.stringify(v)).join(', ')}` : '', { value }),
  /** A value that must be unique is repeated: `spec.ports[1].name: Duplicate value: "http"`. */
  duplicate: (field: string, value: unknown): FieldError => make('FieldValueDuplicate', field, '', { value }),
  /** A value is too long: `metadata.name: Too long: may not be more than 63 bytes`. */
  tooLong: (field: string, maxLength: number): FieldError => make('FieldValueTooLong', field, `may not be more than ${maxLength} bytes`),
  /** A list has too many items: `spec.disks: Too many: 9: must have at most 8 items`. */
  tooMany: (field: string, actual: number, max: number): FieldError => make('FieldValueTooMany', field, `must have at most ${max} items`, { value: actual }),
});
