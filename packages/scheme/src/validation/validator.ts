/**
 * Local validation of custom resources against their kind's schema, the way
 * kube-apiserver validates a create: unknown fields pruned, nulls dropped,
 * defaults applied, then the OpenAPI schema (ajv), list-set / list-map
 * uniqueness, embedded resources and metadata, with errors in the server's
 * words. CEL rules (`x-kubernetes-validations`) are not evaluated here; the
 * result names each one it skipped.
 */
import { Ajv } from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { ResourceDescriptor } from '../descriptor.js';
import { SchemeError } from '../errors.js';
import type { FieldError, SchemaProblem } from '../errors.js';
import { stringifyJson } from '../json.js';
import { INTEGER_FORMATS, SERVER_STRING_FORMATS, STRING_FORMATS, UNCHECKED_STRING_FORMATS } from '../internal/formats.js';
import { normalizeSchema } from '../internal/normalize-schema.js';
import { defaults, kubernetesChecks, prune } from '../internal/structural-walk.js';
import type { KubeObject } from '../wire.js';

type Json = Record<string, unknown>;

/** Options for {@link createValidator}. */
export interface ValidatorOptions {
  /**
   * Fields the schema does not declare: `'prune'` drops them and lists them
   * in `warnings` (the API server's default, `fieldValidation=Warn`);
   * `'error'` also reports each as a `FieldValueUnknown` error
   * (`fieldValidation=Strict`, kubectl's default). Default: `'prune'`.
   */
  readonly unknownFields?: 'prune' | 'error';
  /** Check `metadata.name` / `generateName` as the server does for a create. Default: true. */
  readonly checkMetadata?: boolean;
}

/** What {@link Validator.validate} found. */
export interface ValidationResult<T> {
  /** True when the API server would accept the object, as far as local checks can tell (CEL rules aside). */
  readonly valid: boolean;
  /** Every error, in the API server's terms. */
  readonly errors: readonly FieldError[];
  /** The object as the server would store it: unknown fields pruned, nulls dropped, defaults applied. */
  readonly object: T;
  /** Warnings the server would send (`unknown field "spec.x"`). */
  readonly warnings: readonly string[];
  /** Checks that were not made locally: CEL rules and formats without a local checker, each with its schema path. */
  readonly unchecked: readonly string[];
}

/** Validates objects of one kind. */
export interface Validator<T extends KubeObject = KubeObject> {
  /** The kind validated. */
  readonly kind: ResourceDescriptor<T>;
  /**
   * Validates a value as a create of the kind. Never throws for bad input;
   * the input is not modified.
   */
  validate(value: unknown): ValidationResult<T>;
  /**
   * The object as stored (pruned, defaulted) when valid.
   *
   * @throws {@link SchemeError} `Invalid` with `fieldErrors` otherwise.
   */
  assert(value: unknown): T;
}

/** A checker per schema path that the validator could not check locally. */
interface Prepared {
  readonly ajvSchema: Json;
  readonly unchecked: string[];
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** RE2 inline flags at the start (`(?i)`) become JavaScript flags; anything JavaScript cannot compile is reported unchecked. */
function jsPattern(pattern: string): { source: string; flags: string } | undefined {
  let source = pattern;
  let flags = 'u';
  const inline = /^\(\?([ims]+)\)/.exec(source);
  if (inline) {
    source = source.slice(inline[0].length);
    flags += inline[1]!;
  }
  try {
    new RegExp(source, flags);
    return { source, flags };
  } catch {
    try {
      new RegExp(source, flags.replace('u', ''));
      return { source, flags: flags.replace('u', '') };
    } catch {
      return undefined;
    }
  }
}

/** The CRD schema rewritten for ajv (draft-07): OpenAPI v3.0 bounds, int-or-string as a type list, Kubernetes keywords removed. */
function prepare(schema: unknown, path: string, out: Prepared['unchecked']): unknown {
  if (Array.isArray(schema)) return schema.map((s, i) => prepare(s, `${path}[${i}]`, out));
  if (!isObject(schema)) return schema;
  const s: Json = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'properties' && isObject(v)) s[k] = Object.fromEntries(Object.entries(v).map(([n, p]) => [n, prepare(p, `${path}.properties[${n}]`, out)]));
    else if (k === 'items' || k === 'not') s[k] = prepare(v, `${path}.${k}`, out);
    else if (k === 'additionalProperties') {
      if (isObject(v)) s[k] = prepare(v, `${path}.${k}`, out);
      // false / true: pruning already removed what the schema does not declare
    } else if (k === 'allOf' || k === 'anyOf' || k === 'oneOf') s[k] = prepare(v, `${path}.${k}`, out);
    else if (k.startsWith('x-kubernetes-') || k === 'default' || k === 'example' || k === 'externalDocs' || k === 'description' || k === 'title') continue;
    else s[k] = v;
  }
  if (schema['x-kubernetes-int-or-string'] === true) {
    s['type'] = ['integer', 'string'];
    const pair = (b: unknown): boolean => Array.isArray(b) && b.length === 2 && isObject(b[0]) && b[0]['type'] === 'integer' && isObject(b[1]) && b[1]['type'] === 'string';
    if (pair(schema['anyOf'])) delete s['anyOf'];
    if (Array.isArray(schema['allOf']) && isObject(schema['allOf'][0]) && pair(schema['allOf'][0]['anyOf'])) s['allOf'] = (s['allOf'] as unknown[]).slice(1);
  }
  if (Array.isArray(schema['x-kubernetes-validations']) && schema['x-kubernetes-validations'].length > 0) {
    (schema['x-kubernetes-validations'] as { rule?: unknown }[]).forEach((r, i) => out.push(`${path}.x-kubernetes-validations[${i}]: CEL rule ${JSON.stringify(r.rule)} (server-only)`));
  }
  // an integer field given a fraction: kube-openapi's number validator says so too, besides the type error (numberChecks)
  if (schema['type'] === 'integer') s['x-kubeloop-integer'] = schema['format'] === 'int32' || schema['format'] === 'int64' ? schema['format'] : '';
  // a number's bounds and factor with a fraction: kube-openapi's own checks (numberChecks), which cut them to integers for whole values
  const fractional = (k: string): boolean => typeof s[k] === 'number' && !Number.isInteger(s[k]);
  if (schema['type'] === 'number' && (fractional('minimum') || fractional('maximum') || fractional('multipleOf'))) {
    const checks: Json = {};
    for (const k of ['minimum', 'maximum', 'multipleOf', 'exclusiveMinimum', 'exclusiveMaximum']) {
      if (s[k] !== undefined) checks[k] = s[k];
      delete s[k];
    }
    s['x-kubeloop-number'] = checks;
  }
  for (const [exclusive, bound, key] of [['exclusiveMinimum', 'minimum', 'exclusiveMinimum'], ['exclusiveMaximum', 'maximum', 'exclusiveMaximum']] as const) {
    if (s[exclusive] === true && typeof s[bound] === 'number') {
      s[key] = s[bound];
      delete s[bound];
    } else if (typeof s[exclusive] === 'boolean') delete s[exclusive];
  }
  if (typeof s['format'] === 'string') {
    const format = s['format'];
    const type = schema['type'];
    if (type === 'string' && SERVER_STRING_FORMATS.has(format)) {
      s['type'] = ['string', 'array'];
      s['x-kubeloop-format'] = format;
    }
    if (type === 'integer' && format in INTEGER_FORMATS) s['format'] = `kubeloop-${format}`;
    else if (type === 'string' && format in STRING_FORMATS) s['format'] = `kubeloop-${format}`;
    else {
      if (type === 'string' && !UNCHECKED_STRING_FORMATS.has(format)) out.push(`${path}.format: ${JSON.stringify(format)} (no local checker)`);
      delete s['format'];
    }
  }
  if (typeof s['pattern'] === 'string') {
    const js = jsPattern(s['pattern']);
    if (js === undefined) {
      out.push(`${path}.pattern: ${JSON.stringify(s['pattern'])} (not a JavaScript regular expression)`);
      delete s['pattern'];
    } else {
      s['pattern'] = js.flags.includes('i') || js.flags.includes('s') || js.flags.includes('m') ? `(?${js.flags.replace('u', '')})${js.source}` : js.source;
    }
  }
  return s;
}

let sharedAjv: Ajv | undefined;

/** go-openapi's `IsFloat64AJSONInteger`: whole within a relative 1e-9, and within ±(2^53 - 1). */
function isJsonInteger(f: number): boolean {
  if (!Number.isFinite(f) || Math.abs(f) > Number.MAX_SAFE_INTEGER) return false;
  const rounded = Math.round(f);
  if (f === rounded) return true;
  if (rounded === 0) return false;
  return Math.abs(f - rounded) < 1e-9 * Math.abs(rounded);
}

/**
 * kube-openapi's number checks for a `number` field with fractional bounds
 * (`x-kubeloop-number`), in its order (multipleOf, minimum, maximum): a whole
 * value is an int64 to the server, checked against the bounds and factor cut
 * to integers (`minimum: 0.5` takes 0; `multipleOf: 0.5` becomes 0, "must be
 * positive"); a fractional value against them as given, a factor below 1 by
 * multiplying with its inverse, within go-openapi's epsilon (found by the
 * schema-change fuzzer against kube-apiserver v1.37.2).
 */
function numberChecks(this: unknown, schema: Json, data: number): boolean {
  const errors: Partial<ErrorObject>[] = [];
  const whole = Number.isInteger(data);
  const factor = schema['multipleOf'];
  if (typeof factor === 'number') {
    const f = whole ? Math.trunc(factor) : factor;
    if (f <= 0) errors.push({ keyword: 'multipleOfPositive', params: { factor: f } });
    else if (whole ? data % f !== 0 : !isJsonInteger(f < 1 ? (1 / f) * data : data / f)) errors.push({ keyword: 'multipleOf', params: { multipleOf: f } });
  }
  for (const [bound, exclusive, keyword, below] of [['minimum', 'exclusiveMinimum', 'minimum', true], ['maximum', 'exclusiveMaximum', 'maximum', false]] as const) {
    const b = schema[bound];
    if (typeof b !== 'number') continue;
    const limit = whole ? Math.trunc(b) : b;
    const excl = schema[exclusive] === true;
    const fails = below ? (excl ? data <= limit : data < limit) : excl ? data >= limit : data > limit;
    if (fails) errors.push({ keyword: excl ? (below ? 'exclusiveMinimum' : 'exclusiveMaximum') : keyword, params: { limit } });
  }
  (numberChecks as unknown as { errors: Partial<ErrorObject>[] }).errors = errors;
  return errors.length === 0;
}

/**
 * kube-openapi's range check of a value in an `integer` field
 * (`IsValueValidAgainstRange`): a fraction is "Checked value must be of type
 * integer", an error without a field path (the server writes `<nil>`), beside
 * the type error (found by the schema-change fuzzer).
 */
function integerChecks(this: unknown, format: string, data: number): boolean {
  const errors: Partial<ErrorObject>[] = Number.isInteger(data) ? [] : [{ keyword: 'checkedInteger', params: { format } }];
  (integerChecks as unknown as { errors: Partial<ErrorObject>[] }).errors = errors;
  return errors.length === 0;
}

function ajv(): Ajv {
  if (sharedAjv) return sharedAjv;
  const instance = new Ajv({
    allErrors: true,
    // each error's parentSchema: the server's words for a string format's type error and a pattern as written need the schema
    verbose: true,
    strict: false,
    validateFormats: true,
    // RE2's inline flags (kept as a (?flags) prefix above) become JavaScript flags.
    code: {
      regExp: Object.assign(
        (pattern: string, flags: string) => {
          const inline = /^\(\?([ims]+)\)/.exec(pattern);
          return inline ? new RegExp(pattern.slice(inline[0].length), `${flags}${inline[1]!}`) : new RegExp(pattern, flags);
        },
        { code: 'new RegExp' },
      ),
    },
  });
  instance.addKeyword({ keyword: 'x-kubeloop-number', type: 'number', schemaType: 'object', errors: true, validate: numberChecks as never });
  instance.addKeyword({ keyword: 'x-kubeloop-integer', type: 'number', schemaType: 'string', errors: true, validate: integerChecks as never });
  for (const [name, check] of Object.entries(STRING_FORMATS)) instance.addFormat(`kubeloop-${name}`, { type: 'string', validate: check });
  for (const [name, [min, max]] of Object.entries(INTEGER_FORMATS)) instance.addFormat(`kubeloop-${name}`, { type: 'number', validate: (n: number) => n >= min && n <= max });
  sharedAjv = instance;
  return instance;
}

function show(value: unknown): string {
  return stringifyJson(value) ?? 'null';
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  if (typeof value === 'bigint') return 'integer';
  return typeof value;
}

/**
 * `value` with every bigint (an int64 past 2^53, as parseJson reads it) as
 * the nearest number, for ajv, which knows no bigint: its type, bound and
 * int64-range checks then see an integer of about the right size (a bound
 * within one unit of a 2^53+ value is the only thing this can get wrong).
 * `value` itself when it holds no bigint, which is nearly always.
 */
function bigintsAsNumbers(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const list = value as unknown[];
    let out: unknown[] | undefined;
    for (let i = 0; i < list.length; i++) {
      const v = bigintsAsNumbers(list[i]);
      if (v !== list[i]) (out ??= [...list])[i] = v;
    }
    return out ?? list;
  }
  let out: Json | undefined;
  for (const key in value) {
    const before = (value as Json)[key];
    const v = bigintsAsNumbers(before);
    if (v !== before) (out ??= { ...(value as Json) })[key] = v;
  }
  return out ?? value;
}

/** `/spec/ports/1/name` → `spec.ports[1].name`, using the data to tell indexes from keys. */
function fieldPath(pointer: string, data: unknown): string {
  let path = '';
  let current: unknown = data;
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(current)) {
      path += `[${segment}]`;
      current = current[Number(segment)];
    } else {
      path = path === '' ? segment : `${path}.${segment}`;
      current = isObject(current) ? current[segment] : undefined;
    }
  }
  return path;
}

function valueAt(pointer: string, data: unknown): unknown {
  let current: unknown = data;
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    current = Array.isArray(current) ? current[Number(segment)] : isObject(current) ? current[segment] : undefined;
  }
  return current;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/**
 * For a failed anyOf the API server reports, besides "must validate at least
 * one schema", the errors of its best branch (fewest errors, first on ties).
 * Those come back marked so {@link toFieldError} keeps them; the errors of
 * other branches are dropped.
 */
function withBestAnyOfBranch(errors: readonly ErrorObject[]): ErrorObject[] {
  const out: ErrorObject[] = [];
  for (const e of errors) {
    if (e.keyword !== 'anyOf') continue;
    const prefix = `${e.schemaPath}/`;
    const byBranch = new Map<string, ErrorObject[]>();
    for (const b of errors) {
      if (!b.schemaPath.startsWith(prefix)) continue;
      const branch = b.schemaPath.slice(prefix.length).split('/')[0]!;
      byBranch.set(branch, [...(byBranch.get(branch) ?? []), b]);
    }
    const best = [...byBranch.entries()].sort((x, y) => x[1].length - y[1].length || Number(x[0]) - Number(y[0]))[0];
    for (const b of best?.[1] ?? []) out.push({ ...b, schemaPath: b.schemaPath.slice(0, prefix.length - 1).replace(/\/anyOf$/, '/anyOf-best') + b.schemaPath.slice(prefix.length - 1 + `/${best![0]}`.length) });
  }
  return [...errors, ...out];
}

/**
 * The API server validates an object's properties before its `required`
 * list (kube-openapi's object validator), so a missing field is reported
 * after the errors found inside the object's present properties; ajv checks
 * `required` first. Move each `required` error after the last error under its
 * object, deepest objects first, keeping every other order.
 */
function requiredAfterProperties(errors: readonly ErrorObject[]): ErrorObject[] {
  const out = [...errors];
  const required = out.filter((e) => e.keyword === 'required');
  const depth = (e: ErrorObject): number => (e.instancePath === '' ? 0 : e.instancePath.split('/').length - 1);
  const moved = new Set<ErrorObject>();
  for (const r of [...required].sort((a, b) => depth(b) - depth(a))) {
    const from = out.indexOf(r);
    const prefix = `${r.instancePath}/`;
    let last = -1;
    // under the object, or a missing sibling already moved (the required list keeps its order)
    for (let i = 0; i < out.length; i++) if (out[i] !== r && (out[i]!.instancePath.startsWith(prefix) || (moved.has(out[i]!) && out[i]!.instancePath === r.instancePath))) last = i;
    if (last > from) {
      out.splice(from, 1);
      out.splice(last, 0, r);
      moved.add(r);
    }
  }
  return out;
}

/**
 * kube-openapi checks one value's keywords in its validators' order: the
 * type, the junctors, the string, format and number bounds, the list's,
 * then `enum`; ajv may report `enum` before a type error when the schema
 * has keywords of the type (found by the schema-change fuzzer). Errors of
 * the same value, next to each other, are put in the server's order.
 */
const KEYWORD_RANK: Readonly<Record<string, number>> = {
  type: 0, allOf: 1, anyOf: 1, oneOf: 1, not: 1, maxLength: 2, minLength: 2, pattern: 2, format: 3,
  checkedInteger: 3.9, multipleOf: 4, multipleOfPositive: 4, minimum: 4.1, exclusiveMinimum: 4.1, maximum: 4.2, exclusiveMaximum: 4.2, minItems: 5, maxItems: 5.1, uniqueItems: 5.2, enum: 6,
};

function inServerOrder(errors: readonly ErrorObject[]): ErrorObject[] {
  const out: ErrorObject[] = [];
  for (let i = 0; i < errors.length; ) {
    let j = i;
    while (j < errors.length && errors[j]!.instancePath === errors[i]!.instancePath && KEYWORD_RANK[errors[j]!.keyword] !== undefined) j++;
    if (j === i) {
      out.push(errors[i]!);
      i++;
      continue;
    }
    out.push(...errors.slice(i, j).sort((a, b) => KEYWORD_RANK[a.keyword]! - KEYWORD_RANK[b.keyword]!));
    i = j;
  }
  return out;
}

const STRING_ORDER = ['maxLength', 'minLength', 'pattern'];

/**
 * The API server checks a string's maxLength, minLength and pattern in that
 * order and reports the first that fails (kube-openapi's string validator
 * returns at the first); ajv reports them all. Keep the first per value.
 */
function firstStringError(errors: readonly ErrorObject[]): ErrorObject[] {
  const first = new Map<string, ErrorObject>();
  for (const e of errors) {
    if (!STRING_ORDER.includes(e.keyword)) continue;
    const key = `${e.instancePath}\u0000${e.schemaPath.slice(0, e.schemaPath.lastIndexOf('/'))}`;
    const seen = first.get(key);
    if (!seen || STRING_ORDER.indexOf(e.keyword) < STRING_ORDER.indexOf(seen.keyword)) first.set(key, e);
  }
  return errors.filter((e) => !STRING_ORDER.includes(e.keyword) || first.get(`${e.instancePath}\u0000${e.schemaPath.slice(0, e.schemaPath.lastIndexOf('/'))}`) === e);
}

/**
 * kube-openapi's enum check: the value converted to each allowed value's Go
 * type, then compared. A JSON number is an int64 when whole, else a float64,
 * so a fraction matches the whole value it truncates to (-1.5 is -1) and a
 * whole number matches the one-character string of its code point (97 is
 * "a"); found by the schema-change fuzzer against kube-apiserver v1.37.2.
 */
function goEnumMatch(value: unknown, allowed: unknown): boolean {
  if (typeof value === 'number' && typeof allowed === 'number') return Number.isInteger(allowed) ? Math.trunc(value) === allowed : value === allowed;
  if (typeof value === 'number' && typeof allowed === 'string' && Number.isInteger(value)) {
    const rune = value >= 0 && value <= 0x10ffff && !(value >= 0xd800 && value <= 0xdfff) ? String.fromCodePoint(value) : '\ufffd';
    return rune === allowed;
  }
  return false;
}

/** One ajv error in the API server's words; undefined for errors under a junctor branch (the junctor reports them). */
function toFieldError(e: ErrorObject, data: unknown, formatNames: ReadonlyMap<string, string>): FieldError | undefined {
  if (/\/(anyOf|oneOf)\/\d+\/|\/not\//.test(e.schemaPath)) return undefined;
  const field = fieldPath(e.instancePath, data);
  const value = valueAt(e.instancePath, data);
  const p = e.params as Record<string, unknown>;
  const make = (type: FieldError['type'], detail: string, f = field, badValue: unknown = value, prefix?: string): FieldError => ({
    type,
    field: f,
    badValue,
    detail,
    message: `${f}: ${prefix ?? `Invalid value: ${show(badValue)}`}${detail === '' ? '' : `: ${detail}`}`,
  });
  switch (e.keyword) {
    case 'required': {
      const f = field === '' ? String(p['missingProperty']) : `${field}.${String(p['missingProperty'])}`;
      return { type: 'FieldValueRequired', field: f, detail: '', message: `${f}: Required value` };
    }
    case 'type': {
      const serverFormat = (e.parentSchema as Json | undefined)?.['x-kubeloop-format'];
      // null is the plain type error of the declared type (kube-openapi checks null before the format; found by the schema-change fuzzer)
      if (typeof serverFormat === 'string' && value === null) return make('FieldValueTypeInvalid', `${field} in body must be of type string: "null"`, field, 'null');
      if (typeof serverFormat === 'string') {
        const shown = typeof value === 'number' ? (Number.isInteger(value) ? 'int64' : 'float64') : '';
        return make('FieldValueTypeInvalid', `${field} in body must be of type ${serverFormat}: ${show(shown)}`, field, shown);
      }
      const expected = Array.isArray(p['type']) ? (p['type'] as string[]).join(',') : String(p['type']);
      return make('FieldValueTypeInvalid', `${field} in body must be of type ${expected}: ${show(jsonType(value))}`, field, jsonType(value));
    }
    case 'enum': {
      if ((p['allowedValues'] as unknown[]).some((allowed) => goEnumMatch(value, allowed))) return undefined;
      // as apiextensions writes them: strings as they are, other values as JSON, each then quoted (found by the schema-change fuzzer)
      const allowed = (p['allowedValues'] as unknown[]).map((v) => show(typeof v === 'string' ? v : show(v))).join(', ');
      return make('FieldValueNotSupported', `supported values: ${allowed}`, field, value, `Unsupported value: ${show(value)}`);
    }
    case 'pattern':
      return make('FieldValueInvalid', `${field} in body should match '${String((e.parentSchema as Json | undefined)?.['pattern'] ?? p['pattern'])}'`);
    case 'format': {
      const name = formatNames.get(String(p['format'])) ?? String(p['format']);
      if (typeof value === 'number') return make('FieldValueInvalid', `${field} in body must be of type integer with format ${name}`);
      return make('FieldValueTypeInvalid', `${field} in body must be of type ${name}: ${show(value)}`);
    }
    case 'maxLength':
      return make('FieldValueTooLong', `may not be more than ${plural(Number(p['limit']), 'byte')}`, field, value, 'Too long');
    case 'minLength':
      return make('FieldValueInvalid', `${field} in body should be at least ${String(p['limit'])} chars long`);
    case 'maxItems':
      return make('FieldValueTooMany', `must have at most ${plural(Number(p['limit']), 'item')}`, field, value, `Too many: ${(value as unknown[]).length}`);
    case 'minItems':
      return make('FieldValueInvalid', `${field} in body should have at least ${String(p['limit'])} items`, field, (value as unknown[]).length);
    case 'maxProperties':
      return make('FieldValueTooMany', `must have at most ${plural(Number(p['limit']), 'item')}`, field, value, `Too many: ${Object.keys(value as Json).length}`);
    case 'minProperties':
      return make('FieldValueInvalid', `${field} in body should have at least ${String(p['limit'])} properties`, field, Object.keys(value as Json).length);
    case 'maximum':
      return make('FieldValueInvalid', `${field} in body should be less than or equal to ${String(p['limit'])}`);
    case 'exclusiveMaximum':
      return make('FieldValueInvalid', `${field} in body should be less than ${String(p['limit'])}`);
    case 'minimum':
      return make('FieldValueInvalid', `${field} in body should be greater than or equal to ${String(p['limit'])}`);
    case 'exclusiveMinimum':
      return make('FieldValueInvalid', `${field} in body should be greater than ${String(p['limit'])}`);
    case 'multipleOf':
      return make('FieldValueInvalid', `${field} in body should be a multiple of ${String(p['multipleOf'])}`);
    case 'checkedInteger':
      return make('FieldValueInvalid', `Checked value must be of type integer ${typeof p['format'] === 'string' && p['format'] !== '' ? `with format ${p['format']}` : '(default format)'} in ${field}`, '<nil>', '');
    case 'multipleOfPositive':
      return make('FieldValueInvalid', `factor MultipleOf declared for ${field} must be positive: ${String(p['factor'])}`, field, p['factor']);
    case 'anyOf':
      return make('FieldValueInvalid', `${show(field)} must validate at least one schema (anyOf)`, field, '');
    case 'oneOf':
      return make('FieldValueInvalid', `${show(field)} must validate one and only one schema (oneOf)`, field, '');
    case 'not':
      return make('FieldValueInvalid', `${show(field)} must not validate the schema (not)`, field, '');
    default:
      return make('FieldValueInvalid', e.message ?? e.keyword);
  }
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function metadataErrors(metadata: unknown): FieldError[] {
  const errors: FieldError[] = [];
  if (metadata !== undefined && !isObject(metadata)) {
    return [{ type: 'FieldValueTypeInvalid', field: 'metadata', badValue: metadata, detail: 'must be an object', message: `metadata: Invalid value: ${show(metadata)}: must be an object` }];
  }
  const name = metadata?.['name'];
  const generateName = metadata?.['generateName'];
  if ((name === undefined || name === '') && (generateName === undefined || generateName === '')) {
    errors.push({ type: 'FieldValueRequired', field: 'metadata.name', detail: 'name or generateName is required', message: 'metadata.name: Required value: name or generateName is required' });
  } else if (name !== undefined && name !== '') {
    if (typeof name !== 'string' || name.length > 253 || !DNS1123_SUBDOMAIN.test(name)) {
      const detail = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
      errors.push({ type: 'FieldValueInvalid', field: 'metadata.name', badValue: name, detail, message: `metadata.name: Invalid value: ${show(name)}: ${detail}` });
    }
  }
  return errors;
}

/**
 * A validator for a schema-first kind: validates objects as kube-apiserver
 * validates a create of that kind, with the same field paths and error
 * types. CEL rules are server-only (listed in `unchecked`), as are formats
 * this package has no checker for.
 *
 * @throws {@link SchemeError} `InvalidCRD` when the kind has no schema.
 *
 * @example
 * ```ts
 * import { createValidator } from '@kubeloop/scheme/validation';
 *
 * const validator = createValidator(HardDisk);
 * const result = validator.validate({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'd' }, spec: { size: 5 } });
 * result.valid;                // false
 * result.errors[0]?.message;   // 'spec.size: Invalid value: "integer": spec.size in body must be of type string: "integer"'
 * ```
 */
export function createValidator<T extends KubeObject>(kind: ResourceDescriptor<T>, options: ValidatorOptions = {}): Validator<T> {
  if (kind.schema === undefined) {
    throw new SchemeError('InvalidCRD', `${kind.kind}.${kind.version}.${kind.group} has no schema: define it with defineKind({ ..., schema }) to validate its objects`, { input: kind.kind });
  }
  const schema = normalizeSchema(kind.schema.openAPIV3Schema);
  const unchecked: string[] = [];
  const prepared = prepare(schema, 'openAPIV3Schema', unchecked) as Json;
  // metadata is checked as ObjectMeta, not by the schema
  if (isObject(prepared['properties'])) prepared['properties'] = { ...prepared['properties'], metadata: {} };
  const formatNames = new Map([...Object.keys(STRING_FORMATS), ...Object.keys(INTEGER_FORMATS)].map((n) => [`kubeloop-${n}`, n]));
  let compiled: ValidateFunction;
  try {
    compiled = ajv().compile(prepared);
  } catch (cause) {
    throw new SchemeError('NonStructural', `the schema of ${kind.kind}.${kind.version}.${kind.group} cannot be compiled: ${String(cause)}`, { input: kind.kind, cause });
  }
  const unknownFields = options.unknownFields ?? 'prune';
  const checkMetadata = options.checkMetadata ?? true;
  const frozenUnchecked = Object.freeze([...unchecked]);

  const validate = (value: unknown): ValidationResult<T> => {
    if (!isObject(value)) {
      const error: FieldError = { type: 'FieldValueTypeInvalid', field: '', badValue: value, detail: 'must be an object', message: `Invalid value: ${show(value)}: must be an object` };
      return { valid: false, errors: [error], object: value as T, warnings: [], unchecked: frozenUnchecked };
    }
    let object: Json;
    try {
      object = structuredClone(value);
    } catch (cause) {
      const error: FieldError = { type: 'FieldValueInvalid', field: '', detail: `not JSON data (${String(cause)})`, message: `Invalid value: not JSON data` };
      return { valid: false, errors: [error], object: value as T, warnings: [], unchecked: frozenUnchecked };
    }
    const errors: FieldError[] = [];
    if (object['apiVersion'] !== kind.apiVersion) {
      errors.push({ type: 'FieldValueInvalid', field: 'apiVersion', badValue: object['apiVersion'], detail: `must be ${show(kind.apiVersion)}`, message: `apiVersion: Invalid value: ${show(object['apiVersion'])}: must be ${show(kind.apiVersion)}` });
    }
    if (object['kind'] !== kind.kind) {
      errors.push({ type: 'FieldValueInvalid', field: 'kind', badValue: object['kind'], detail: `must be ${show(kind.kind)}`, message: `kind: Invalid value: ${show(object['kind'])}: must be ${show(kind.kind)}` });
    }
    if (checkMetadata) errors.push(...metadataErrors(object['metadata']));
    const unknown: string[] = [];
    prune(object, schema, '', true, unknown);
    const warnings = unknown.map((f) => `unknown field "${f}"`);
    if (unknownFields === 'error') {
      for (const f of unknown) errors.push({ type: 'FieldValueUnknown', field: f, detail: 'field not declared in schema', message: `${f}: unknown field "${f}"` });
    }
    defaults(object, schema);
    if (!compiled(bigintsAsNumbers(object))) {
      for (const e of requiredAfterProperties(inServerOrder(firstStringError(withBestAnyOfBranch(compiled.errors ?? []))))) {
        const fe = toFieldError(e, object, formatNames);
        if (fe && !errors.some((x) => x.message === fe.message)) errors.push(fe);
      }
    }
    kubernetesChecks(object, schema, '', errors);
    return { valid: errors.length === 0, errors, object: object as T, warnings, unchecked: frozenUnchecked };
  };

  return Object.freeze({
    kind,
    validate,
    assert(value: unknown): T {
      const result = validate(value);
      if (result.valid) return result.object;
      const name = isObject(value) && isObject(value['metadata']) && typeof value['metadata']['name'] === 'string' ? ` "${value['metadata']['name']}"` : '';
      throw new SchemeError('Invalid', `${kind.kind}.${kind.group}${name} is invalid: ${result.errors.map((e) => e.message).join(', ')}`, { input: kind.kind, fieldErrors: result.errors });
    },
  });
}

/**
 * Checks every `default` in a kind's schema as the API server does when the
 * CRD is created: each must validate against the schema it sits in and must
 * not hold fields that schema would prune. (`kubeloop generate crds` runs
 * this next to the structural check.)
 *
 * @example
 * ```ts
 * checkDefaults(HardDisk); // [] when every default is valid
 * // [{ path: 'openAPIV3Schema.properties[spec].properties[mode].default', type: 'Invalid', detail: 'spec.mode: Unsupported value: "x": supported values: "auto", "manual"' }]
 * ```
 */
export function checkDefaults(kind: ResourceDescriptor, options: { readonly basePath?: string } = {}): SchemaProblem[] {
  if (kind.schema === undefined) throw new SchemeError('InvalidCRD', `${kind.kind}.${kind.version}.${kind.group} has no schema`, { input: kind.kind });
  const problems: SchemaProblem[] = [];
  const visit = (schema: unknown, path: string, field: string): void => {
    if (!isObject(schema)) return;
    if (schema['default'] !== undefined && field !== '') {
      const value = structuredClone(schema['default']);
      const unknown: string[] = [];
      prune(value, schema, field, false, unknown);
      for (const u of unknown) problems.push({ path: `${path}.default`, type: 'Invalid', detail: `must not have unknown fields: ${u}` });
      defaults(value, schema);
      const ignored: string[] = [];
      let check: ValidateFunction | undefined;
      try {
        check = ajv().compile(prepare(schema, path, ignored) as Json);
      } catch {
        check = undefined; // a schema ajv cannot compile is reported by the structural check
      }
      if (check && !check(value)) {
        for (const e of withBestAnyOfBranch(check.errors ?? [])) {
          const fe = toFieldError({ ...e, instancePath: e.instancePath }, value, new Map());
          if (fe) problems.push({ path: `${path}.default`, type: 'Invalid', detail: fe.message.replace(/^(\.|: )/, '').replace(/^/, fe.field === '' ? `${field}: ` : `${field}.`) });
        }
      }
    }
    const props = schema['properties'];
    if (isObject(props)) for (const [name, p] of Object.entries(props)) visit(p, `${path}.properties[${name}]`, field === '' ? name : `${field}.${name}`);
    if (isObject(schema['items'])) visit(schema['items'], `${path}.items`, `${field}[*]`);
    if (isObject(schema['additionalProperties'])) visit(schema['additionalProperties'], `${path}.additionalProperties`, `${field}[*]`);
  };
  visit(normalizeSchema(kind.schema.openAPIV3Schema), options.basePath ?? 'openAPIV3Schema', '');
  return problems;
}
