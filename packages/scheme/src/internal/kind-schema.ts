/**
 * Turns a schema-first kind's root properties (TypeBox values) into the
 * plain, frozen {@link KindSchema} its descriptor carries, checks values
 * claiming to be one, and compares two. Pure JSON work: no TypeBox at run time.
 */
import { SchemeError } from '../errors.js';
import type { CustomResourceOptions, KindSchema } from '../kind-schema.js';
import { show } from './names.js';

const RESERVED = new Set(['apiVersion', 'kind', 'metadata']);

/** The object-level properties every kind has; the API server fills and checks them. */
const ROOT_PROPERTIES = {
  apiVersion: { type: 'string', description: 'The group/version of this object.' },
  kind: { type: 'string', description: 'The kind of this object.' },
  metadata: { type: 'object' },
};

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Plain JSON (no functions, no undefined, no non-enumerable TypeBox markers), deeply frozen. */
function frozenJson<T>(value: T, what: string, label: string): T {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    throw new SchemeError('InvalidDescriptor', `invalid resource descriptor ${label}: ${what} is not JSON (${String(cause)})`, { input: label, cause });
  }
  if (text === undefined) throw new SchemeError('InvalidDescriptor', `invalid resource descriptor ${label}: ${what} is not JSON`, { input: label });
  return deepFreeze(JSON.parse(text) as T);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/**
 * The {@link KindSchema} of a schema-first kind: the root object schema with
 * `apiVersion`, `kind` and `metadata` added, `required` computed from the
 * properties (TypeBox's `Type.Optional` marks optional ones; `status` is
 * always optional) and root CEL rules from `crd.validations`.
 */
export function buildKindSchema(properties: unknown, crd: unknown, label: string): KindSchema {
  const fail = (problem: string): SchemeError => new SchemeError('InvalidDescriptor', `invalid resource descriptor ${label}: ${problem}`, { input: label });
  if (!isPlainObject(properties)) throw fail(`schema must be an object of property schemas ({ spec, status }), got ${show(properties)}`);
  if (crd !== undefined && !isPlainObject(crd)) throw fail(`crd must be an object, got ${show(crd)}`);
  const required: string[] = [];
  for (const [name, schema] of Object.entries(properties)) {
    if (RESERVED.has(name)) throw fail(`schema must not define "${name}": every kind has it`);
    if (!isPlainObject(schema)) throw fail(`schema.${name} must be a schema object, got ${show(schema)}`);
    const optional = Object.getOwnPropertyDescriptor(schema, '~optional')?.value === true;
    if (name !== 'status' && !optional) required.push(name);
  }
  const { validations, ...options } = (crd ?? {}) as CustomResourceOptions;
  const root: Record<string, unknown> = { type: 'object', properties: { ...ROOT_PROPERTIES, ...properties } };
  if (required.length > 0) root['required'] = required;
  if (validations !== undefined && validations.length > 0) root['x-kubernetes-validations'] = validations;
  return frozenJson({ openAPIV3Schema: root, crd: options }, 'the schema', label);
}

/** A value claiming to be a {@link KindSchema}: the frozen schema itself, a frozen copy, or a problem to report. */
export function checkKindSchema(value: unknown): KindSchema | string {
  if (!isPlainObject(value)) return `must be an object with openAPIV3Schema and crd, got ${show(value)}`;
  if (!isPlainObject(value['openAPIV3Schema'])) return `openAPIV3Schema must be an object, got ${show(value['openAPIV3Schema'])}`;
  if (!isPlainObject(value['crd'])) return `crd must be an object, got ${show(value['crd'])}`;
  const keys = Object.keys(value);
  if (keys.some((k) => k !== 'openAPIV3Schema' && k !== 'crd')) return `unknown field(s) ${keys.filter((k) => k !== 'openAPIV3Schema' && k !== 'crd').join(', ')}`;
  if (Object.isFrozen(value) && Object.isFrozen(value['openAPIV3Schema']) && Object.isFrozen(value['crd'])) return value as unknown as KindSchema;
  try {
    return frozenJson(value as unknown as KindSchema, 'the schema', '');
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** A canonical JSON text: object keys sorted, so equal values give equal texts. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    isPlainObject(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
  );
}

/** True when both are absent, or both describe the same schema and options. */
export function sameKindSchema(a: KindSchema | undefined, b: KindSchema | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  return canonicalJson(a) === canonicalJson(b);
}
