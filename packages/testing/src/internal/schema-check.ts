/**
 * Structural-schema validation of custom resources, as the API server does
 * on every create and update: the object checked against its version's
 * OpenAPI schema (types, required fields, enums, patterns, bounds, formats,
 * list and map rules), unknown fields pruned, defaults applied. The checks
 * are `@kubeloop/scheme`'s validator, measured against the real API server
 * (docs/schema.md); CEL rules are not evaluated (server-only).
 */
import type { FieldError as SchemeFieldError, KubeObject, ResourceDescriptor } from '@kubeloop/scheme';
import { createValidator } from '@kubeloop/scheme/validation';
import type { Validator } from '@kubeloop/scheme/validation';
import type { FieldError } from './status.js';

type Json = Record<string, unknown>;

/** Checks objects of one version of a kind; `check` returns the errors, or the object as it would be stored. */
export interface SchemaCheck {
  check(obj: Json): { readonly errors: readonly FieldError[] } | { readonly errors?: undefined; readonly stored: Json };
  /** The object pruned and defaulted by the schema, valid or not: how the server reads a stored object back after its schema changed. */
  normalise(obj: Json): Json;
}

/** A field error of the scheme's validator, in the fake's Status terms (its text kept as the server writes it). */
function toFieldError(e: SchemeFieldError): FieldError {
  const prefix = `${e.field}: `;
  const text = e.field !== '' && e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message;
  return { type: e.type, field: e.field, detail: e.detail, text };
}

function fromValidator(validator: Validator<KubeObject>): SchemaCheck {
  return {
    check(obj) {
      const result = validator.validate(obj);
      if (!result.valid) return { errors: result.errors.map(toFieldError) };
      return { stored: result.object as unknown as Json };
    },
    normalise(obj) {
      return validator.validate(obj).object as unknown as Json;
    },
  };
}

/** The check for a schema-first kind's descriptor; undefined when it has no schema. */
export function descriptorCheck(kind: ResourceDescriptor): SchemaCheck | undefined {
  if (kind.schema === undefined) return undefined;
  // metadata is checked by the fake itself, as the server checks ObjectMeta apart from the schema
  return fromValidator(createValidator(kind, { checkMetadata: false }));
}

/**
 * The check for one version of a CRD, from its `openAPIV3Schema`; undefined
 * when the version has none, or a schema the validator cannot take (the fake
 * then stores objects unchecked, as before).
 */
export function crdCheck(group: string, version: string, kind: string, plural: string, namespaced: boolean, openAPIV3Schema: Json | undefined): SchemaCheck | undefined {
  if (openAPIV3Schema === undefined) return undefined;
  const descriptor = {
    group,
    version,
    kind,
    plural,
    namespaced,
    apiVersion: group === '' ? version : `${group}/${version}`,
    schema: { openAPIV3Schema, crd: {} },
  } as unknown as ResourceDescriptor;
  try {
    return descriptorCheck(descriptor);
  } catch {
    return undefined;
  }
}
