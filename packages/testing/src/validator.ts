/**
 * The validation seam of the fake API server: a per-kind hook that sees
 * each object before it is stored and answers with field problems, which
 * the fake turns into the API server's 422 Invalid. Schema-first kinds plug
 * their schema validation in here; the fake itself does not evaluate CRD
 * schemas or CEL rules.
 */
import type { KubeObject } from '@kubeloop/scheme';

/**
 * One problem a validator found.
 *
 * @example
 * ```ts
 * const problem: ValidationProblem = { field: 'spec.sizeGiB', value: -1, message: 'must be greater than 0' };
 * ```
 */
export interface ValidationProblem {
  /** Dotted path of the field, e.g. `spec.sizeGiB`. */
  readonly field: string;
  /** What is wrong with it. */
  readonly message: string;
  /** The value found, shown in the message. Default: not shown. */
  readonly value?: unknown;
  /** The cause type in the Status. Default: `FieldValueInvalid`. */
  readonly type?: 'FieldValueInvalid' | 'FieldValueRequired' | 'FieldValueForbidden' | 'FieldValueNotSupported';
}

/**
 * Validates an object about to be stored (`old` is the stored one on
 * updates, undefined on creates). Return no problems to accept it.
 *
 * @example
 * ```ts
 * const sizeInGi: ObjectValidator = (obj) => {
 *   const size = (obj as HardDisk).spec?.size;
 *   return size?.endsWith('Gi') ? [] : [{ field: 'spec.size', value: size, message: 'must be in Gi' }];
 * };
 * fake.validate(HardDisk, sizeInGi);
 * ```
 */
export type ObjectValidator = (obj: KubeObject, old: KubeObject | undefined) => readonly ValidationProblem[];
