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
import { applyProblem } from './openapi/decode.js';
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

/** The schema node and the value at a path below a default (`a[0].b`, relative to it). */
function below(schema: unknown, value: unknown, relative: string): { readonly node: Json | undefined; readonly value: unknown } {
  let node = schema;
  let v = value;
  for (const m of relative.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) {
    if (m[2] !== undefined) {
      node = isObject(node) ? node['items'] : undefined;
      v = Array.isArray(v) ? (v as unknown[])[Number(m[2])] : undefined;
    } else {
      const name = m[1]!;
      const props = isObject(node) && isObject(node['properties']) ? node['properties'] : undefined;
      node = props?.[name] ?? (isObject(node) ? node['additionalProperties'] : undefined);
      v = isObject(v) ? v[name] : undefined;
    }
  }
  return { node: isObject(node) ? node : undefined, value: v };
}

/**
 * A path below a default as kube-openapi names it in its messages: a
 * property's name as it is (`a`), a map's key after a dot (`.k`: the
 * validator joins an additional property to the empty path of the default).
 */
function inBody(schema: Json, relative: string): string {
  const first = /^[^.[\]]+/.exec(relative)?.[0];
  if (first === undefined) return relative;
  const declared = isObject(schema['properties']) && Object.hasOwn(schema['properties'], first);
  return !declared && isObject(schema['additionalProperties']) ? `.${relative}` : relative;
}

/**
 * kube-openapi's type check of a default's value, as the CRD's default
 * validator makes it: that validator is built from the schema as written,
 * so an unknown format is kept and checked as a type, and a value's Go type
 * names it (`int64`, `float64`). Undefined when the value passes; else the
 * type it must be of and the name given to the value: a value other than a
 * string or list where a format is set is named by its Go format (`must be
 * of type date: "int64"`); a string or list passes a string with a format;
 * otherwise the JSON type (`must be of type string: "integer"`).
 */
function defaultTypeError(node: Json, value: unknown): readonly [string, string] | undefined {
  const type = typeof node['type'] === 'string' ? node['type'] : '';
  const format = typeof node['format'] === 'string' ? node['format'] : '';
  const [valueType, valueFormat] = Array.isArray(value)
    ? ['array', '']
    : isObject(value)
      ? ['object', '']
      : typeof value === 'string'
        ? ['string', '']
        : typeof value === 'boolean'
          ? ['boolean', '']
          : typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value))
            ? ['integer', 'int64']
            : ['number', 'float64'];
  const fits = type === valueType || (valueType === 'integer' && type === 'number');
  const stringOrList = valueType === 'string' || valueType === 'array';
  if (!stringOrList && format !== '' && !(fits || valueFormat === format)) return [format, valueFormat];
  if (type !== 'number' && type !== 'integer' && format !== '' && stringOrList) return undefined;
  return fits ? undefined : [type, valueType];
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
    // a fraction in an integer field: kube-openapi's conversion error, under the default itself, naming the value's path
    const checked = e.field === '<nil>' ? /: (Checked value must be of type integer .*) in v(?:\.)?(.*)$/.exec(e.message) : null;
    if (checked) {
      errors.push({ type: e.type, field: `${path}.default`, detail: e.detail, text: `Invalid value: "": ${checked[1]!} in ${inBody(schema, checked[2]!)}` });
      continue;
    }
    if (e.field !== 'v' && !e.field.startsWith('v.') && !e.field.startsWith('v[')) continue;
    // a default is checked by the schema validator, not by the custom resource strategy's list-type check: a set
    // or map list's default may repeat an item (found by the schema-change fuzzer, seed 908583713)
    if (e.type === 'FieldValueDuplicate') continue;
    const relative = e.field.slice(1).replace(/^\./, '');
    const field = `${path}.default${relative ? `.${relative}` : ''}`;
    const at = below(schema, value, relative);
    // (a string in a string node is the format's error, not the type's)
    const typeError = e.type === 'FieldValueTypeInvalid' && !(typeof at.value === 'string' && at.node?.['type'] === 'string');
    if (typeError && at.node !== undefined && at.value !== null && at.value !== undefined) {
      // the wrong type in the words of the default's own validator (found by the schema-change fuzzer); a node
      // without a type (int-or-string: the default's validator has no anyOf for it) is not type-checked
      const wrong = typeof at.node['type'] === 'string' ? defaultTypeError(at.node, at.value) : undefined;
      if (wrong) errors.push({ type: e.type, field, detail: e.detail, text: `Invalid value: ${JSON.stringify(wrong[1])}: ${inBody(schema, relative)} in body must be of type ${wrong[0]}: ${JSON.stringify(wrong[1])}` });
      continue;
    }
    const name = inBody(schema, relative);
    const text = (e.message.startsWith(`${e.field}: `) ? e.message.slice(e.field.length + 2) : e.message).replaceAll(`${e.field} in body`, `${name} in body`).replaceAll(`declared for ${e.field} must`, `declared for ${name} must`);
    errors.push({ type: e.type, field, detail: e.detail, text });
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

/**
 * What server-side apply's typed converter finds wrong in a custom resource
 * under its (possibly changed) schema, in its words (`.spec.b: expected map,
 * got &{abcdef}`; `applyProblem`'s rules for a stored object: its unknown
 * fields were pruned or are kept). Undefined when it can be typed. The
 * server answers an apply over such an object with 500 `failed to create
 * typed live object`, records no managed fields on a create of one, and
 * keeps the live managed fields on an update or patch of one (its field
 * manager fails and restores them). Found by the schema-change fuzzer
 * (seeds 1681235162, 908583713 and 965371385).
 */
export function liveProblem(obj: Json, schema: Json | undefined): string | undefined {
  return schema ? applyProblem(obj, '', '', schema, { live: true }) : undefined;
}

/**
 * JSONSchemaProps' fields Go leaves out when empty (`omitempty` on a value,
 * not a pointer): strings when "", booleans when false, lists and maps when
 * they hold nothing. `x-kubernetes-preserve-unknown-fields`, `default` and
 * the bounds are pointers and stay.
 */
const OMITTED_WHEN_EMPTY: Readonly<Record<string, 'string' | 'boolean' | 'list' | 'map'>> = {
  id: 'string',
  $schema: 'string',
  description: 'string',
  type: 'string',
  format: 'string',
  title: 'string',
  pattern: 'string',
  nullable: 'boolean',
  exclusiveMinimum: 'boolean',
  exclusiveMaximum: 'boolean',
  uniqueItems: 'boolean',
  'x-kubernetes-embedded-resource': 'boolean',
  'x-kubernetes-int-or-string': 'boolean',
  enum: 'list',
  required: 'list',
  allOf: 'list',
  oneOf: 'list',
  anyOf: 'list',
  'x-kubernetes-list-map-keys': 'list',
  'x-kubernetes-validations': 'list',
  properties: 'map',
  patternProperties: 'map',
  dependencies: 'map',
  definitions: 'map',
};

function isGoEmpty(value: unknown, kind: 'string' | 'boolean' | 'list' | 'map'): boolean {
  switch (kind) {
    case 'string':
      return value === '';
    case 'boolean':
      return value === false;
    case 'list':
      return Array.isArray(value) && value.length === 0;
    case 'map':
      return isObject(value) && Object.keys(value).length === 0;
  }
}

function withoutEmptyFields(schema: unknown): void {
  for (const n of nodes(schema)) for (const [k, kind] of Object.entries(OMITTED_WHEN_EMPTY)) if (isGoEmpty(n[k], kind)) delete n[k];
}

/**
 * A CRD as the server stores what it is given: `spec.conversion` defaulted to
 * `{strategy: None}`, and its schemas' empty fields left out (false booleans,
 * `properties: {}`...; found by the schema-change fuzzer).
 */
export function crdDefaults(crd: Json): void {
  const spec = isObject(crd['spec']) ? crd['spec'] : undefined;
  if (!spec) return;
  if (spec['conversion'] === undefined) spec['conversion'] = { strategy: 'None' };
  for (const v of Array.isArray(spec['versions']) ? (spec['versions'] as unknown[]).filter(isObject) : []) {
    if (isObject(v['schema'])) withoutEmptyFields(v['schema']['openAPIV3Schema']);
  }
}
