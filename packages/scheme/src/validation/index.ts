/**
 * `@kubeloop/scheme/validation`: validate custom resources locally against
 * their schema-first kind, the way kube-apiserver validates a create (unknown
 * fields pruned, nulls dropped, defaults applied, then the schema), with
 * errors in the server's words (`spec.size: Invalid value: ...`). For unit
 * tests, fake clients and admission webhooks. CEL rules are evaluated by the
 * server only; each result lists what it did not check. A separate entry
 * point, so only programs that validate load ajv.
 *
 * @example
 * ```ts
 * import { createValidator } from '@kubeloop/scheme/validation';
 * import { isSchemeError } from '@kubeloop/scheme';
 *
 * const disks = createValidator(HardDisk);
 * try {
 *   const stored = disks.assert({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'd' }, spec: {} });
 * } catch (err) {
 *   if (isSchemeError(err) && err.reason === 'Invalid') console.error(err.fieldErrors.map((e) => e.message)); // ['spec.size: Required value']
 * }
 * ```
 *
 * @packageDocumentation
 */
export { checkDefaults, createValidator } from './validator.js';
export type { ValidationResult, Validator, ValidatorOptions } from './validator.js';
export type { FieldError, FieldErrorType, SchemaProblem } from '../errors.js';
