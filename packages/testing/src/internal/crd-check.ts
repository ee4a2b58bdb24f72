/**
 * What kube-apiserver checks in a CustomResourceDefinition's schemas before
 * it takes the CRD: each version's `openAPIV3Schema` must be structural
 * (`checkStructural` of `@kubeloop/scheme/schema`), and when it is, every
 * `default` in it must validate against the schema it sits in (without the
 * defaults below it applied) and hold no field that schema prunes. Found
 * missing by the schema-change fuzzer (packages/testing/test/fuzz/
 * schema-changes.test.ts): the fake took every CRD, the server refuses
 * these with 422.
 */
import type { ResourceDescriptor } from '@kubeloop/scheme';
import { checkStructural } from '@kubeloop/scheme/schema';
import { createValidator } from '@kubeloop/scheme/validation';
import type { SchemaProblem } from '@kubeloop/scheme/validation';
import { isObject, sameJson } from './json.js';
import type { FieldError } from './status.js';

type Json = Record<string, unknown>;

const PROBLEM_TYPES: Readonly<Record<SchemaProblem['type'], { readonly type: string; readonly text: string }>> = {
  Required: { type: 'FieldValueRequired', text: 'Required value' },
  Forbidden: { type: 'FieldValueForbidden', text: 'Forbidden' },
  Invalid: { type: 'FieldValueInvalid', text: 'Invalid value' },
  Unsupported: { type: 'FieldValueNotSupported', text: 'Unsupported value' },
};

/** A schema without its `default`s (the server validates a default as given, not with the defaults below it applied). */
function withoutDefaults(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutDefaults);
  if (!isObject(schema)) return schema;
  return Object.fromEntries(Object.entries(schema).filter(([k]) => k !== 'default').map(([k, v]) => [k, k === 'enum' || k === 'example' ? v : withoutDefaults(v)]));
}

/** The errors of one `default`, at `path` (the schema node's path), as the server reports them: under `<path>.default`, names relative to the default. */
function defaultErrors(schema: Json, path: string): FieldError[] {
  const value = schema['default'];
  const descriptor = {
    group: 'validation',
    version: 'v1',
    kind: 'Validation',
    plural: 'validations',
    namespaced: false,
    apiVersion: 'validation/v1',
    schema: { openAPIV3Schema: { type: 'object', properties: { v: withoutDefaults(schema) } }, crd: {} },
  } as unknown as ResourceDescriptor;
  let result;
  try {
    result = createValidator(descriptor, { checkMetadata: false }).validate({ v: structuredClone(value) });
  } catch {
    return [];
  }
  const errors: FieldError[] = [];
  const kept = (result.object as unknown as Json)['v'];
  if (value !== null && !sameJson(kept, value)) errors.push({ type: 'FieldValueInvalid', field: `${path}.default`, value, detail: 'must not have unknown fields' });
  for (const e of result.errors) {
    if (e.field !== 'v' && !e.field.startsWith('v.') && !e.field.startsWith('v[')) continue;
    const relative = e.field.slice(1).replace(/^\./, '');
    const text = (e.message.startsWith(`${e.field}: `) ? e.message.slice(e.field.length + 2) : e.message).replaceAll(`${e.field} in body`, `${relative} in body`);
    errors.push({ type: e.type, field: `${path}.default${relative ? `.${relative}` : ''}`, detail: e.detail, text });
  }
  return errors;
}

/** Every default in `schema`: the node's own, then its items', then its properties' (in key order: the server's is Go's map order). */
function allDefaultErrors(schema: unknown, path: string, out: FieldError[]): void {
  if (!isObject(schema)) return;
  if (schema['default'] !== undefined) out.push(...defaultErrors(schema, path));
  if (isObject(schema['items'])) allDefaultErrors(schema['items'], `${path}.items`, out);
  const props = schema['properties'];
  if (isObject(props)) for (const name of Object.keys(props).sort()) allDefaultErrors(props[name], `${path}.properties[${name}]`, out);
}

/**
 * The schemas the server keeps for a CRD, each with its path in the server's
 * errors: one at `spec.validation.openAPIV3Schema` when every version has the
 * same (the internal form hoists it), else each version's at
 * `spec.versions[i].schema.openAPIV3Schema`.
 */
function keptSchemas(crd: Json | undefined): { readonly schema: Json; readonly base: string }[] {
  const spec = isObject(crd?.['spec']) ? crd['spec'] : {};
  const versions = Array.isArray(spec['versions']) ? (spec['versions'] as unknown[]).filter(isObject) : [];
  const schemas = versions.map((v) => (isObject(v['schema']) && isObject(v['schema']['openAPIV3Schema']) ? v['schema']['openAPIV3Schema'] : undefined));
  const first = schemas[0];
  if (first !== undefined && schemas.every((s) => s !== undefined && sameJson(s, first))) return [{ schema: first, base: 'spec.validation.openAPIV3Schema' }];
  return schemas.flatMap((schema, i) => (schema === undefined ? [] : [{ schema, base: `spec.versions[${i}].schema.openAPIV3Schema` }]));
}

/**
 * The field errors kube-apiserver gives for the schemas of a CRD's body, in
 * its paths: `spec.validation.openAPIV3Schema...` when every version has the
 * same schema (the internal form hoists it), else
 * `spec.versions[i].schema.openAPIV3Schema...`. Empty when it would take them.
 */
export function crdSchemaErrors(crd: Json): FieldError[] {
  const errors: FieldError[] = [];
  for (const { schema, base } of keptSchemas(crd)) {
    const problems = checkStructural(schema, { basePath: base });
    for (const p of problems) errors.push({ type: PROBLEM_TYPES[p.type].type, field: p.path, detail: p.detail, text: `${PROBLEM_TYPES[p.type].text}: ${p.detail}` });
    // defaults are validated against a structural schema only: not when a type is missing or wrong
    if (problems.some((p) => p.path.endsWith('.type'))) continue;
    allDefaultErrors(schema, base, errors);
  }
  return errors;
}

/** The string formats kube-apiserver v1.37 recognises (go-openapi's names, `-` taken out); others are stripped from the schema, with a warning. */
const STRING_FORMATS = new Set([
  'bsonobjectid', 'uri', 'email', 'hostname', 'ipv4', 'ipv6', 'cidr', 'mac', 'uuid', 'uuid3', 'uuid4', 'uuid5', 'isbn', 'isbn10', 'isbn13',
  'creditcard', 'ssn', 'hexcolor', 'rgbcolor', 'byte', 'password', 'date', 'duration', 'datetime', 'k8s-short-name', 'k8s-long-name',
]);

/** Whether the server recognises `format` on a schema of `type` (apiextensions' GetUnrecognizedFormats). */
function recognised(format: string, type: unknown): boolean {
  if (type === undefined || type === '' || type === 'string') return STRING_FORMATS.has(format) || STRING_FORMATS.has(format.replaceAll('-', ''));
  if (type === 'integer') return format === 'int32' || format === 'int64';
  if (type === 'number') return format === 'float' || format === 'double';
  return false;
}

/** Every schema node below `schema` (itself, properties, items, additionalProperties, junctor branches, not). */
function nodes(schema: unknown, out: Json[] = []): Json[] {
  if (!isObject(schema)) return out;
  out.push(schema);
  if (isObject(schema['properties'])) for (const name of Object.keys(schema['properties']).sort()) nodes(schema['properties'][name], out);
  for (const k of ['items', 'additionalProperties', 'not']) nodes(schema[k], out);
  for (const k of ['allOf', 'anyOf', 'oneOf']) if (Array.isArray(schema[k])) for (const b of schema[k] as unknown[]) nodes(b, out);
  return out;
}


function unrecognisedFormats(crd: Json | undefined): string[] {
  return keptSchemas(crd).flatMap(({ schema }) => nodes(schema)).flatMap((n) => (typeof n['format'] === 'string' && n['format'] !== '' && !recognised(n['format'], n['type']) ? [n['format']] : []));
}

function setListWarnings(crd: Json | undefined): string[] {
  const seen = new Set<string>();
  for (const n of keptSchemas(crd).flatMap(({ schema }) => nodes(schema))) {
    const items = n['items'];
    if (n['x-kubernetes-list-type'] === 'set' && isObject(items) && (items['type'] === 'object' || items['type'] === 'array')) {
      seen.add(`x-kubernetes-list-type: set for items of type ${JSON.stringify(items['type'])} is not supported by server-side apply or CEL validation rules`);
    }
  }
  return [...seen].sort();
}

/**
 * The warnings kube-apiserver gives for a CRD written (`old` for an update):
 * each unrecognised format (on an update, those the old CRD did not have),
 * then set lists of objects or lists (on an update, new ones only).
 */
export function crdWarnings(crd: Json, old: Json | undefined): string[] {
  const before = new Set(old ? unrecognisedFormats(old) : []);
  const oldSets = new Set(old ? setListWarnings(old) : []);
  const formats = unrecognisedFormats(crd).filter((f) => !before.has(f));
  return [...new Set([...formats.map((f) => `unrecognized format ${JSON.stringify(f)}`), ...setListWarnings(crd).filter((w) => !oldSets.has(w))])];
}

/** A value as Go's `%v` prints it (strings bare, lists in brackets, maps with sorted keys). */
function goValue(value: unknown): string {
  if (value === null || value === undefined) return '<nil>';
  if (Array.isArray(value)) return `[${value.map(goValue).join(' ')}]`;
  if (isObject(value)) return `map[${Object.keys(value).sort().map((k) => `${k}:${goValue(value[k])}`).join(' ')}]`;
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint' ? String(value) : '';
}

/**
 * The first value of a stored custom resource its (possibly changed) schema
 * cannot type, as server-side apply's converter words it (`.spec.b: expected
 * map, got &{abcdef}`): a list, map or scalar where the schema has another.
 * The server then answers an apply with 500, and creates an object holding
 * such a value without managed fields (found by the schema-change fuzzer;
 * the map case measured, the others in the same words; what an update of
 * one records is a documented difference).
 */
export function liveProblem(obj: Json, schema: Json | undefined): string | undefined {
  const walk = (value: unknown, node: unknown, path: string, root: boolean): string | undefined => {
    if (!isObject(node) || value === null || value === undefined) return undefined;
    if (node['x-kubernetes-int-or-string'] === true) return Array.isArray(value) || isObject(value) ? `${path}: expected scalar, got &{${goValue(value)}}` : undefined;
    // a node keeping unknown fields is not walked, but an object one still wants a map (found by the schema-change fuzzer)
    if (node['x-kubernetes-preserve-unknown-fields'] === true && !isObject(node['properties'])) return node['type'] === 'object' && !isObject(value) ? `${path}: expected map, got &{${goValue(value)}}` : undefined;
    const type = node['type'];
    if (type === 'object') {
      if (!isObject(value)) return `${path}: expected map, got &{${goValue(value)}}`;
      const props = isObject(node['properties']) ? node['properties'] : {};
      for (const k of Object.keys(value).sort()) {
        if (root && (k === 'apiVersion' || k === 'kind' || k === 'metadata')) continue;
        const p = walk(value[k], props[k] ?? node['additionalProperties'], `${path}.${k}`, false);
        if (p) return p;
      }
      return undefined;
    }
    if (type === 'array') {
      if (!Array.isArray(value)) return `${path}: expected list, got &{${goValue(value)}}`;
      for (const item of value) {
        const p = walk(item, node['items'], path, false);
        if (p) return p;
      }
      return undefined;
    }
    if (type === 'string' || type === 'integer' || type === 'number' || type === 'boolean') return Array.isArray(value) || isObject(value) ? `${path}: expected scalar, got &{${goValue(value)}}` : undefined;
    return undefined;
  };
  return schema ? walk(obj, schema, '', true) : undefined;
}

/** JSONSchemaProps' booleans Go leaves out when false (`omitempty`); `x-kubernetes-preserve-unknown-fields` is a pointer and stays. */
const OMITTED_WHEN_FALSE = ['nullable', 'exclusiveMinimum', 'exclusiveMaximum', 'uniqueItems', 'x-kubernetes-embedded-resource', 'x-kubernetes-int-or-string'];

function withoutFalseFlags(schema: unknown): void {
  for (const n of nodes(schema)) for (const k of OMITTED_WHEN_FALSE) if (n[k] === false) delete n[k];
}

/**
 * A CRD as the server stores what it is given: `spec.conversion` defaulted to
 * `{strategy: None}`, and its schemas' false booleans left out (found by the
 * schema-change fuzzer).
 */
export function crdDefaults(crd: Json): void {
  const spec = isObject(crd['spec']) ? crd['spec'] : undefined;
  if (!spec) return;
  if (spec['conversion'] === undefined) spec['conversion'] = { strategy: 'None' };
  for (const v of Array.isArray(spec['versions']) ? (spec['versions'] as unknown[]).filter(isObject) : []) {
    if (isObject(v['schema'])) withoutFalseFlags(v['schema']['openAPIV3Schema']);
  }
}
