/**
 * The rules the API server applies to a CRD's `openAPIV3Schema` before it
 * accepts the CRD: the schema must be structural (every field has a type,
 * logical junctors only constrain values, metadata is left alone), use only
 * keywords CRDs support, and use Kubernetes' extensions consistently. Each
 * problem carries the path the API server would report.
 */
import type { SchemaProblem } from '../errors.js';
import type { JsonSchema } from '../kind-schema.js';

type Json = Record<string, unknown>;
type Level = 'root' | 'item' | 'field';

/** Options for {@link checkStructural}. */
export interface StructuralCheckOptions {
  /** Prefix of every reported path. Default: `openAPIV3Schema`. */
  readonly basePath?: string;
}

/** Keywords a CRD schema may hold (apiextensions.k8s.io/v1 JSONSchemaProps). */
const KNOWN = new Set([
  'description', 'type', 'format', 'title', 'default', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum',
  'maxLength', 'minLength', 'pattern', 'maxItems', 'minItems', 'uniqueItems', 'multipleOf', 'enum', 'maxProperties',
  'minProperties', 'required', 'items', 'allOf', 'oneOf', 'anyOf', 'not', 'properties', 'additionalProperties',
  'externalDocs', 'example', 'nullable',
  'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-embedded-resource', 'x-kubernetes-int-or-string',
  'x-kubernetes-list-map-keys', 'x-kubernetes-list-type', 'x-kubernetes-map-type', 'x-kubernetes-validations',
  // present in JSONSchemaProps but refused in CRDs (reported below with a reason)
  'id', '$schema', '$ref', 'patternProperties', 'dependencies', 'additionalItems', 'definitions',
]);

const TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);
const SCALARS = new Set(['string', 'integer', 'number', 'boolean']);
const JUNCTORS = ['allOf', 'anyOf', 'oneOf'] as const;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `properties[spec]`, as the API server writes map keys in paths. */
function key(path: string, name: string): string {
  return `${path}.properties[${name}]`;
}

/**
 * Problems the API server would report for this `openAPIV3Schema`; empty
 * when it would accept it. Does not compile CEL rules (the server does) and
 * does not check `default` values against the schema (the validator of
 * `@kubeloop/scheme/validation` does; the CLI runs both).
 *
 * @example
 * ```ts
 * checkStructural({ type: 'object', properties: { spec: { properties: { size: { type: 'string' } } } } });
 * // [{ path: 'openAPIV3Schema.properties[spec].type', type: 'Required', detail: 'must not be empty for specified object fields' }]
 * ```
 */
export function checkStructural(schema: JsonSchema, options: StructuralCheckOptions = {}): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  const base = options.basePath ?? 'openAPIV3Schema';
  walk(schema, 'root', base, problems, false);
  return problems.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

function add(problems: SchemaProblem[], path: string, type: SchemaProblem['type'], detail: string): void {
  problems.push({ path, type, detail });
}

function walk(s: unknown, level: Level, path: string, problems: SchemaProblem[], embedded: boolean): void {
  if (!isObject(s)) {
    add(problems, path, 'Invalid', `must be a schema object, got ${Array.isArray(s) ? 'an array' : JSON.stringify(s)}`);
    return;
  }
  keywords(s, path, problems);

  const type = s['type'];
  const intOrString = s['x-kubernetes-int-or-string'] === true;
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
  const isEmbedded = s['x-kubernetes-embedded-resource'] === true;

  if (type !== undefined && (typeof type !== 'string' || !TYPES.has(type))) {
    add(problems, `${path}.type`, 'Unsupported', `${JSON.stringify(type)}: supported values: "array", "boolean", "integer", "number", "object", "string" (for null use nullable: true)`);
  }
  if (isEmbedded && type !== 'object') {
    add(problems, `${path}.type`, type === undefined ? 'Required' : 'Invalid', 'must be object if x-kubernetes-embedded-resource is true');
  } else if (type === undefined && !intOrString && !preserve && !('$ref' in s)) {
    const detail = level === 'root' ? 'must not be empty at the root' : level === 'item' ? 'must not be empty for specified array items' : 'must not be empty for specified object fields';
    add(problems, `${path}.type`, 'Required', detail);
  }
  if (level === 'root' && type !== undefined && type !== 'object') add(problems, `${path}.type`, 'Invalid', 'must be object at the root');
  if (intOrString && preserve) add(problems, `${path}.x-kubernetes-preserve-unknown-fields`, 'Invalid', 'must be false if x-kubernetes-int-or-string is true');
  if (intOrString && isEmbedded) add(problems, `${path}.x-kubernetes-embedded-resource`, 'Invalid', 'must be false if x-kubernetes-int-or-string is true');
  if ('x-kubernetes-preserve-unknown-fields' in s && s['x-kubernetes-preserve-unknown-fields'] !== true) {
    add(problems, `${path}.x-kubernetes-preserve-unknown-fields`, 'Invalid', 'must be true or undefined');
  }

  // items
  if (type === 'array' && s['items'] === undefined) add(problems, `${path}.items`, 'Required', 'must be specified');
  if (s['items'] !== undefined) {
    if (Array.isArray(s['items'])) add(problems, `${path}.items`, 'Forbidden', 'items must be a schema object and not an array (tuples are not supported)');
    else walk(s['items'], 'item', `${path}.items`, problems, false);
  }

  // properties / additionalProperties
  const props = s['properties'];
  if (props !== undefined) {
    if (!isObject(props)) add(problems, `${path}.properties`, 'Invalid', 'must be an object of schemas');
    else for (const [name, p] of Object.entries(props)) walk(p, 'field', key(path, name), problems, false);
  }
  const additional = s['additionalProperties'];
  if (additional !== undefined) {
    if (level === 'root') add(problems, `${path}.additionalProperties`, 'Forbidden', 'must not be used at the root');
    if (props !== undefined) add(problems, `${path}.additionalProperties`, 'Forbidden', 'additionalProperties and properties are mutually exclusive');
    if (isEmbedded) add(problems, `${path}.additionalProperties`, 'Forbidden', 'must not be used if x-kubernetes-embedded-resource is set');
    if (isObject(additional)) walk(additional, 'field', `${path}.additionalProperties`, problems, false);
    else if (typeof additional !== 'boolean') add(problems, `${path}.additionalProperties`, 'Invalid', 'must be a schema object or a boolean');
  }
  if (isEmbedded && !preserve && !(isObject(props) && Object.keys(props).length > 0)) {
    add(problems, `${path}.properties`, 'Required', 'must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields');
  }

  // apiVersion / kind / metadata of an object (the root, or an embedded one)
  const checkMetadata = level === 'root' || isEmbedded;
  if (isObject(props) && checkMetadata) {
    for (const name of ['apiVersion', 'kind']) {
      const p = props[name];
      if (isObject(p) && p['type'] !== 'string') add(problems, `${key(path, name)}.type`, 'Invalid', 'must be string');
    }
  }
  if (isObject(props) && isObject(props['metadata'])) metadata(props['metadata'], checkMetadata, level, key(path, 'metadata'), problems);

  // value validations: logical junctors
  junctors(s, path, problems, embedded);

  extensions(s, type, path, problems);

  if (typeof s['pattern'] === 'string') {
    const problem = patternProblem(s['pattern']);
    if (problem) add(problems, `${path}.pattern`, 'Invalid', `must be a valid regular expression, but isn't: ${problem}`);
  }
  if (s['uniqueItems'] === true) add(problems, `${path}.uniqueItems`, 'Forbidden', 'uniqueItems cannot be set to true since the runtime complexity becomes quadratic; use x-kubernetes-list-type: set or map');
}

function keywords(s: Json, path: string, problems: SchemaProblem[]): void {
  for (const k of Object.keys(s)) {
    if (!KNOWN.has(k)) add(problems, `${path}.${k}`, 'Forbidden', `${k} is not a keyword CRD schemas support`);
  }
  if ('$ref' in s) add(problems, `${path}.$ref`, 'Forbidden', '$ref is not supported');
  if ('$schema' in s) add(problems, `${path}.$schema`, 'Forbidden', '$schema is not supported');
  if ('id' in s) add(problems, `${path}.id`, 'Forbidden', 'id is not supported');
  if ('definitions' in s) add(problems, `${path}.definitions`, 'Forbidden', 'definitions are not supported');
  if ('dependencies' in s) add(problems, `${path}.dependencies`, 'Forbidden', 'dependencies are not supported');
  if ('additionalItems' in s) add(problems, `${path}.additionalItems`, 'Forbidden', 'additionalItems is not supported');
  if ('patternProperties' in s) add(problems, `${path}.patternProperties`, 'Forbidden', 'patternProperties is not supported; use additionalProperties (k8s.Map)');
}

/** Metadata may only restrict name and generateName (at the root), and must be an object. */
function metadata(m: Json, checkMetadata: boolean, level: Level, path: string, problems: SchemaProblem[]): void {
  if (checkMetadata && m['type'] !== 'object') add(problems, `${path}.type`, 'Invalid', 'must be object');
  if (level !== 'root') return;
  const allowed = new Set(['type', 'properties']);
  const props = isObject(m['properties']) ? Object.keys(m['properties']) : [];
  const onlyNames = props.every((p) => p === 'name' || p === 'generateName');
  if (!Object.keys(m).every((k) => allowed.has(k)) || !onlyNames) {
    add(problems, path, 'Forbidden', 'must not specify anything other than name and generateName, but metadata is implicitly specified');
  }
}

function isIntOrStringPair(branches: unknown): boolean {
  return (
    Array.isArray(branches) &&
    branches.length === 2 &&
    isObject(branches[0]) && Object.keys(branches[0]).length === 1 && branches[0]['type'] === 'integer' &&
    isObject(branches[1]) && Object.keys(branches[1]).length === 1 && branches[1]['type'] === 'string'
  );
}

function junctors(s: Json, path: string, problems: SchemaProblem[], _embedded: boolean): void {
  const skipAnyOf = isIntOrStringPair(s['anyOf']);
  const allOf = s['allOf'];
  const skipFirstAllOfAnyOf = Array.isArray(allOf) && isObject(allOf[0]) && isIntOrStringPair(allOf[0]['anyOf']);
  for (const j of JUNCTORS) {
    const branches = s[j];
    if (branches === undefined) continue;
    if (!Array.isArray(branches)) {
      add(problems, `${path}.${j}`, 'Invalid', 'must be an array of schemas');
      continue;
    }
    if (j === 'anyOf' && skipAnyOf) continue;
    branches.forEach((b, i) => nested(b, s, `${path}.${j}[${i}]`, problems, j === 'allOf' && i === 0 && skipFirstAllOfAnyOf, j !== 'allOf'));
  }
  if (s['not'] !== undefined) nested(s['not'], s, `${path}.not`, problems, false, true);
}

/**
 * A schema under allOf/anyOf/oneOf/not: it may only constrain values of
 * fields the surrounding structural schema already specifies.
 */
function nested(v: unknown, outer: Json | undefined, path: string, problems: SchemaProblem[], skipAnyOf: boolean, celForbidden: boolean): void {
  if (!isObject(v)) {
    add(problems, path, 'Invalid', 'must be a schema object');
    return;
  }
  for (const k of Object.keys(v)) if (!KNOWN.has(k)) add(problems, `${path}.${k}`, 'Forbidden', `${k} is not a keyword CRD schemas support`);
  const forbidden: [string, string][] = [
    ['type', 'must be empty to be structural'],
    ['default', 'must be undefined to be structural'],
    ['title', 'must be empty to be structural'],
    ['description', 'must be empty to be structural'],
    ['externalDocs', 'must be undefined to be structural'],
    ['additionalProperties', 'must be undefined to be structural'],
    ['x-kubernetes-embedded-resource', 'must be false to be structural'],
    ['x-kubernetes-int-or-string', 'must be false to be structural'],
    ['x-kubernetes-preserve-unknown-fields', 'must be false to be structural'],
    ['x-kubernetes-list-map-keys', 'must be empty to be structural'],
    ['x-kubernetes-list-type', 'must be undefined to be structural'],
    ['x-kubernetes-map-type', 'must be undefined to be structural'],
  ];
  for (const [k, detail] of forbidden) {
    if (!(k in v)) continue;
    if (k === 'nullable' && v[k] !== true) continue;
    add(problems, `${path}.${k}`, 'Forbidden', detail);
  }
  if (v['nullable'] === true) add(problems, `${path}.nullable`, 'Forbidden', 'must be false to be structural');
  if (Array.isArray(v['x-kubernetes-validations']) && v['x-kubernetes-validations'].length > 0) {
    add(problems, `${path}.x-kubernetes-validations`, 'Forbidden', 'must be empty to be structural');
  }
  const props = v['properties'];
  if (isObject(props)) {
    if ('metadata' in props) add(problems, `${path}.properties[metadata]`, 'Forbidden', 'must not be specified in a nested context');
    const outerProps = outer !== undefined && isObject(outer['properties']) ? outer['properties'] : undefined;
    for (const [name, p] of Object.entries(props)) {
      const outerProp = outerProps?.[name];
      nested(p, isObject(outerProp) ? outerProp : undefined, key(path, name), problems, false, celForbidden);
    }
  }
  if (v['items'] !== undefined) {
    const outerItems = outer !== undefined && isObject(outer['items']) ? outer['items'] : undefined;
    if (outerItems === undefined && outer?.['x-kubernetes-preserve-unknown-fields'] !== true) {
      add(problems, `${path}.items`, 'Required', 'must be specified outside of the value validation');
    }
    nested(v['items'], outerItems, `${path}.items`, problems, false, celForbidden);
  }
  for (const j of JUNCTORS) {
    const branches = v[j];
    if (!Array.isArray(branches)) continue;
    if (j === 'anyOf' && (skipAnyOf || isIntOrStringPair(branches))) continue;
    branches.forEach((b, i) => nested(b, outer, `${path}.${j}[${i}]`, problems, false, celForbidden || j !== 'allOf'));
  }
  if (v['not'] !== undefined) nested(v['not'], outer, `${path}.not`, problems, false, true);
}

function extensions(s: Json, type: unknown, path: string, problems: SchemaProblem[]): void {
  const listType = s['x-kubernetes-list-type'];
  const mapKeys = s['x-kubernetes-list-map-keys'];
  if (listType !== undefined) {
    if (type !== 'array') add(problems, `${path}.type`, 'Invalid', `${JSON.stringify(type ?? '')}: must be array if x-kubernetes-list-type is specified`);
    if (listType !== 'atomic' && listType !== 'set' && listType !== 'map') {
      add(problems, `${path}.x-kubernetes-list-type`, 'Unsupported', `${JSON.stringify(listType)}: supported values: "atomic", "map", "set"`);
    }
  }
  const items = isObject(s['items']) ? s['items'] : undefined;
  // the items of a set or a map list are never null (found by the schema-change fuzzer against kube-apiserver)
  if ((listType === 'set' || listType === 'map') && items !== undefined && items['nullable'] === true) {
    add(problems, `${path}.items.nullable`, 'Forbidden', `cannot be nullable when x-kubernetes-list-type is ${listType}`);
  }
  if (listType === 'map') {
    if (!Array.isArray(mapKeys) || mapKeys.length === 0) add(problems, `${path}.x-kubernetes-list-map-keys`, 'Required', 'must not be empty if x-kubernetes-list-type is map');
    if (items !== undefined && items['type'] !== 'object') add(problems, `${path}.items.type`, 'Invalid', 'must be object if parent array\'s x-kubernetes-list-type is map');
    if (items !== undefined && items['type'] === 'object' && Array.isArray(mapKeys)) {
      const props = isObject(items['properties']) ? items['properties'] : {};
      const required = Array.isArray(items['required']) ? (items['required'] as unknown[]) : [];
      mapKeys.forEach((k, i) => {
        if (typeof k !== 'string') return;
        const p = props[k];
        if (!isObject(p)) {
          add(problems, `${path}.x-kubernetes-list-map-keys[${i}]`, 'Invalid', `entries must all be names of item properties (no property "${k}")`);
          return;
        }
        if (typeof p['type'] !== 'string' || !SCALARS.has(p['type'])) add(problems, `${key(`${path}.items`, k)}.type`, 'Invalid', 'must be a scalar type if parent array\'s x-kubernetes-list-type is map');
        if (p['nullable'] === true) add(problems, `${key(`${path}.items`, k)}.nullable`, 'Forbidden', 'this property is in x-kubernetes-list-map-keys, so it cannot be nullable');
        if (!required.includes(k) && p['default'] === undefined) {
          add(problems, `${key(`${path}.items`, k)}.default`, 'Required', 'this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property');
        }
      });
      if (new Set(mapKeys).size !== mapKeys.length) add(problems, `${path}.x-kubernetes-list-map-keys`, 'Invalid', 'must not contain duplicate entries');
    }
  } else if (Array.isArray(mapKeys) && mapKeys.length > 0) {
    add(problems, `${path}.x-kubernetes-list-type`, 'Required', 'must be map if x-kubernetes-list-map-keys is non-empty');
  }
  if (listType === 'set' && items !== undefined) {
    const t = items['type'];
    const atomicObject = t === 'object' && items['x-kubernetes-map-type'] === 'atomic';
    const atomicArray = t === 'array' && items['x-kubernetes-list-type'] === 'atomic';
    if (typeof t === 'string' && !SCALARS.has(t) && !atomicObject && !atomicArray) {
      add(problems, `${path}.items.x-kubernetes-map-type`, 'Invalid', 'must be atomic as item of a list with x-kubernetes-list-type=set');
    }
  }
  const mapType = s['x-kubernetes-map-type'];
  if (mapType !== undefined) {
    if (type !== 'object') add(problems, `${path}.type`, 'Invalid', `${JSON.stringify(type ?? '')}: must be object if x-kubernetes-map-type is specified`);
    if (mapType !== 'granular' && mapType !== 'atomic') add(problems, `${path}.x-kubernetes-map-type`, 'Unsupported', `${JSON.stringify(mapType)}: supported values: "atomic", "granular"`);
  }
  const rules = s['x-kubernetes-validations'];
  if (rules !== undefined) {
    if (!Array.isArray(rules)) add(problems, `${path}.x-kubernetes-validations`, 'Invalid', 'must be a list of rules');
    else rules.forEach((r, i) => rule(r, `${path}.x-kubernetes-validations[${i}]`, problems));
  }
}

const RULE_FIELDS = new Set(['rule', 'message', 'messageExpression', 'reason', 'fieldPath', 'optionalOldSelf']);
const RULE_REASONS = new Set(['FieldValueInvalid', 'FieldValueForbidden', 'FieldValueRequired', 'FieldValueDuplicate']);

function rule(r: unknown, path: string, problems: SchemaProblem[]): void {
  if (!isObject(r)) {
    add(problems, path, 'Invalid', 'must be an object with a rule');
    return;
  }
  for (const k of Object.keys(r)) if (!RULE_FIELDS.has(k)) add(problems, `${path}.${k}`, 'Forbidden', `${k} is not a field of a validation rule`);
  if (typeof r['rule'] !== 'string' || r['rule'].trim() === '') add(problems, `${path}.rule`, 'Required', 'rule is not specified');
  if (r['message'] !== undefined) {
    if (typeof r['message'] !== 'string' || r['message'].trim() === '') add(problems, `${path}.message`, 'Invalid', 'message must be non-empty if specified');
    else if (/[\r\n]/.test(r['message'])) add(problems, `${path}.message`, 'Invalid', 'message must not contain line breaks');
  }
  if (r['reason'] !== undefined && !(typeof r['reason'] === 'string' && RULE_REASONS.has(r['reason']))) {
    add(problems, `${path}.reason`, 'Unsupported', `${JSON.stringify(r['reason'])}: supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"`);
  }
}

/**
 * Patterns are Go (RE2) regular expressions on the server: no lookaround, no
 * backreferences, no possessive or atomic groups. Reports what JavaScript
 * accepts but RE2 does not, and what neither accepts.
 */
function patternProblem(pattern: string): string | undefined {
  // RE2-only syntax (inline flags, \A, \z, \C, \Q...\E) is fine on the server; JavaScript cannot judge those.
  if (!/\(\?[imsU-]+[:)]|\\[AzCQ]/.test(pattern)) {
    try {
      new RegExp(pattern);
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
  }
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(next)) return 'invalid escape sequence: backreferences are not supported by RE2';
      if (!inClass && next === 'k') return 'invalid escape sequence: named backreferences are not supported by RE2';
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(' && pattern[i + 1] === '?') {
      const rest = pattern.slice(i + 2);
      if (rest.startsWith('=') || rest.startsWith('!') || rest.startsWith('<=') || rest.startsWith('<!')) return 'invalid or unsupported Perl syntax: lookaround assertions are not supported by RE2';
    }
  }
  return undefined;
}
