/**
 * A validator from a schema-first kind's own schema: the checks the API
 * server's CRD validation makes (types, required fields, enums, patterns,
 * bounds, formats), answered by the webhook with the same field paths, plus
 * whatever the kind's own validator adds. Loaded on first use, so operators
 * that never call it do not load the JSON Schema compiler.
 */
import type { KubeObject, ResourceDescriptor } from '@kubeloop/scheme';
import type { FieldError as SchemaFieldError } from '@kubeloop/scheme/validation';
import type { AdmissionContext, ValidationResult, Validator } from './admission.js';
import { WebhookError } from './errors.js';
import type { FieldError } from './field-errors.js';

type Check = (obj: unknown) => readonly SchemaFieldError[];

function toFieldError(e: SchemaFieldError): FieldError {
  switch (e.type) {
    case 'FieldValueRequired':
    case 'FieldValueForbidden':
    case 'FieldValueTooLong':
      return { type: e.type, field: e.field, detail: e.detail };
    case 'FieldValueNotSupported':
    case 'FieldValueDuplicate':
    case 'FieldValueTooMany':
    case 'FieldValueInvalid':
      return { type: e.type, field: e.field, badValue: e.badValue, detail: e.detail };
    default:
      // TypeInvalid and Unknown have no admission counterpart: an invalid value that says what it should be.
      return { type: 'FieldValueInvalid', field: e.field, badValue: e.badValue, detail: e.detail };
  }
}

async function combine(schemaErrors: readonly FieldError[], more: ValidationResult | Promise<ValidationResult>): Promise<ValidationResult> {
  const result = await more;
  if (result === undefined || (Array.isArray(result) && result.length === 0)) return schemaErrors.length > 0 ? schemaErrors : undefined;
  if (Array.isArray(result)) return [...schemaErrors, ...(result as readonly FieldError[])];
  // A verdict of its own (a denial with a message, warnings) stands when the schema has nothing to say.
  return schemaErrors.length > 0 ? schemaErrors : result;
}

/**
 * Validates creates and updates of a schema-first kind against its schema,
 * as the API server would, and then with `also` (your own checks: what no
 * schema can say). Field errors of both are answered together. Deletes go
 * to `also` alone.
 *
 * @throws {@link WebhookError} `InvalidOptions` when the kind has no schema (a kind defined with `defineKind<T>()`).
 * @example
 * ```ts
 * manager.webhook(HardDisk).withValidator(schemaValidator(HardDisk, { validateCreate: (d) => storageClassErrors(d) })).complete();
 * ```
 */
export function schemaValidator<T extends KubeObject>(kind: ResourceDescriptor<T>, also: Validator<T> = {}): Validator<T> {
  if (!kind?.schema) throw new WebhookError('InvalidOptions', `schemaValidator(${kind?.kind}): the kind has no schema; define it with defineKind({ ..., schema })`);
  let check: Promise<Check> | undefined;
  const load = (): Promise<Check> =>
    (check ??= import('@kubeloop/scheme/validation').then(({ createValidator }) => {
      const validator = createValidator(kind);
      return (obj: unknown) => validator.validate(obj).errors;
    }));
  const schemaErrors = async (obj: T): Promise<FieldError[]> => (await load())(obj).map(toFieldError);
  return {
    validateCreate: async (obj: T, context: AdmissionContext<T>) => combine(await schemaErrors(obj), also.validateCreate?.(obj, context)),
    validateUpdate: async (obj: T, oldObj: T, context: AdmissionContext<T>) => combine(await schemaErrors(obj), also.validateUpdate?.(obj, oldObj, context)),
    ...(also.validateDelete ? { validateDelete: also.validateDelete.bind(also) } : {}),
  };
}
