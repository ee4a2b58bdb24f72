/**
 * A built-in object decoded as kube-apiserver decodes it into its Go types,
 * from the kind's OpenAPI schema: wrong JSON types are 400 BadRequest with
 * the decoder's message; unknown fields are dropped with a warning
 * (`fieldValidation` Warn, the default), refused (Strict) or dropped
 * silently (Ignore); values are written back in the server's normal forms:
 * quantities canonical (resource lists rounded up to milli units),
 * timestamps in UTC (`Time` to the second, `MicroTime` with six
 * fractional digits, which it requires), base64 byte fields re-encoded;
 * `null` members gone.
 */
import { parseJson, stringifyJson } from '@kubeloop/scheme';
import { goFormat, goSyntax, goValueType } from '../go-format.js';
import { canonical, isObject } from '../json.js';
import type { Json } from '../json.js';
import { childOf, INT_OR_STRING, kindSchema, MICRO_TIME, QUANTITY, resolve, TIME } from './model.js';
import type { Resolved, SchemaNode } from './model.js';
import { formatQuantity, parseQuantity, QuantityError, roundUpToMilli } from './quantity.js';

export type FieldValidation = 'Ignore' | 'Warn' | 'Strict';

/** A decoding failure: the message after "<Kind> in version ... cannot be handled as a <Kind>: ". */
export class DecodeError extends Error {
  /**
   * The same failure as apimachinery's unstructured converter words it
   * (what a strategic merge patch's result goes through instead of
   * encoding/json), where it is known; undefined: the same message.
   */
  readonly converter: string | undefined;

  constructor(message: string, converter?: string) {
    super(message);
    this.converter = converter;
  }
}

/** The Go kind of a value as a strategic merge patch decodes it (integers kept as int64, apimachinery's PreserveInts). */
function goKindOf(value: unknown): string {
  if (typeof value === 'string') return 'string';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'bigint') return value > 9223372036854775807n || value < -9223372036854775808n ? 'float64' : 'int64';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int64' : 'float64';
  if (Array.isArray(value)) return 'slice';
  return 'map';
}

/**
 * How the unstructured converter (runtime.DefaultUnstructuredConverter)
 * refuses `value` for a field of `r`'s type; undefined where it would take
 * it (an integer into a narrower one: it wraps) or its words are not known
 * (a quantity, which decodes itself).
 */
function converterMismatch(value: unknown, r: Resolved): string | undefined {
  // a time decodes itself (metav1.Time's UnmarshalJSON reads a Go string), so the words are encoding/json's without a
  // struct field: measured on kube-apiserver v1.37.2 (a Lease's acquireTime and renewTime applied as 5 or true)
  if (r.name === TIME || r.name === MICRO_TIME) return `json: cannot unmarshal ${jsonType(value)} into Go value of type string`;
  // int-or-string reads anything but a Go string into its int32 (IntOrString's UnmarshalJSON), also without a field
  if (r.name === INT_OR_STRING) return `json: cannot unmarshal ${typeof value === 'number' || typeof value === 'bigint' ? `number ${String(value)}` : jsonType(value)} into Go value of type int32`;
  if (r.name === QUANTITY) return undefined;
  const n = r.node;
  const from = goKindOf(value);
  if (n.type === 'array' || (n.type === 'string' && n.format === 'byte')) return `cannot restore slice from ${from}`;
  if (n.type === 'object') return n.properties ? `cannot restore struct from: ${from}` : `cannot restore map from ${from}`;
  const to = n.type === 'string' ? 'string' : n.type === 'integer' ? (n.format === 'int32' ? 'int32' : 'int64') : n.type === 'number' ? 'float64' : n.type === 'boolean' ? 'bool' : undefined;
  if (to === undefined) return undefined;
  const numeric = (k: string): boolean => k === 'int32' || k === 'int64' || k === 'float64';
  // reflect's ConvertibleTo: numbers to numbers, integers to strings (as runes); JSON allows neither across its groups
  if (from === 'int64' && to === 'string') return 'cannot convert int64 to string';
  if (from === 'float64' && (to === 'int32' || to === 'int64')) return `cannot convert float64 to ${to}`;
  if (numeric(from) && numeric(to)) return undefined;
  return `unrecognized type: ${to}`;
}

export interface Decoded {
  readonly object: Json;
  /** `unknown field "spec.foo"` per dropped field (Warn). */
  readonly warnings: readonly string[];
}

interface Context {
  /** The Go struct holding the current field, for messages. */
  struct: string;
  /** JSON field names from the root, without indices (the decoder's field stack). */
  fields: string[];
  /** The path with indices and keys, for unknown-field messages. */
  path: string;
  readonly unknown: string[];
  /**
   * Decoding through the unstructured converter (a strategic merge patch's
   * result) rather than encoding/json: an integer too large for an int32
   * field wraps (reflect's SetInt) instead of being refused.
   */
  readonly converter: boolean;
}

function jsonType(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'object';
  if (typeof value === 'boolean') return 'bool';
  return typeof value;
}

function goName(name: string | undefined): string | undefined {
  if (!name) return undefined;
  const parts = name.split('.');
  return `${parts[parts.length - 2]}.${parts[parts.length - 1]}`;
}

/** The Go type of a node, as encoding/json names it in messages. */
function goType(r: Resolved): string {
  if (r.name === QUANTITY) return 'resource.Quantity';
  if (r.name === INT_OR_STRING) return 'int32';
  if (r.name === TIME || r.name === MICRO_TIME) return 'string';
  const n = r.node;
  switch (n.type) {
    case 'string':
      return n.format === 'byte' ? '[]uint8' : 'string';
    case 'integer':
      return n.format === 'int32' ? 'int32' : 'int64';
    case 'number':
      return 'float64';
    case 'boolean':
      return 'bool';
    case 'array': {
      const items = resolve(n.items);
      return `[]${items ? goType(items) : 'interface {}'}`;
    }
    case 'object':
      if (n.properties) return goName(r.name) ?? 'struct';
      if (typeof n.additionalProperties === 'object') {
        const values = resolve(n.additionalProperties);
        return `map[string]${values ? goType(values) : 'interface {}'}`;
      }
      return 'map[string]interface {}';
    default:
      return 'interface {}';
  }
}

function mismatch(ctx: Context, value: unknown, r: Resolved): DecodeError {
  const shown = (typeof value === 'number' || typeof value === 'bigint') && (r.node.type === 'integer' || r.name === INT_OR_STRING) ? `number ${String(value)}` : jsonType(value);
  // a uid is a named string type (apimachinery's types.UID), which OpenAPI does not tell
  const uid = ctx.fields.at(-1) === 'uid' && (ctx.struct === 'ObjectMeta' || ctx.struct === 'OwnerReference') && r.node.type === 'string';
  return new DecodeError(`json: cannot unmarshal ${shown} into Go struct field ${ctx.struct}.${ctx.fields.join('.')} of type ${uid ? 'types.UID' : goType(r)}`, converterMismatch(value, r));
}

const TIME_LAYOUT = '2006-01-02T15:04:05Z07:00';
const MICRO_LAYOUT = '2006-01-02T15:04:05.000000Z07:00';

/** A parsed timestamp: epoch milliseconds (UTC) and the fraction of its second as written (at most nine digits). */
interface Parsed {
  readonly ms: number;
  readonly fraction: string;
}

/**
 * Parse a timestamp as Go's time.Parse does with the RFC 3339 layouts,
 * element by element: a number out of range fails at once (month, hour,
 * minute, second, zone offset), the day of the month after the whole text,
 * and the message is Go's for the first failure.
 */
function parseTime(text: string, micro: boolean): Parsed {
  const layout = micro ? MICRO_LAYOUT : TIME_LAYOUT;
  const cannot = (rest: string, elem: string): never => {
    throw new DecodeError(`parsing time ${JSON.stringify(text)} as ${JSON.stringify(layout)}: cannot parse ${JSON.stringify(rest)} as ${JSON.stringify(elem)}`);
  };
  const range = (what: string): never => {
    throw new DecodeError(`parsing time ${JSON.stringify(text)}: ${what} out of range`);
  };
  const digit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
  let rest = text;
  const literal = (l: string): void => {
    if (!rest.startsWith(l)) cannot(rest, l);
    rest = rest.slice(l.length);
  };
  /** Go's getnum: one or two digits, two when `fixed`. */
  const num = (elem: string, fixed: boolean): number => {
    if (!digit(rest[0])) cannot(rest, elem);
    if (!digit(rest[1])) {
      if (fixed) cannot(rest, elem);
      const n = Number(rest[0]);
      rest = rest.slice(1);
      return n;
    }
    const n = Number(rest.slice(0, 2));
    rest = rest.slice(2);
    return n;
  };
  if (rest.length < 4 || !/^\d{4}/.test(rest)) cannot(rest, '2006');
  const year = Number(rest.slice(0, 4));
  rest = rest.slice(4);
  literal('-');
  const month = num('01', true);
  if (month < 1 || month > 12) range('month');
  literal('-');
  const day = num('02', true);
  literal('T');
  const hour = num('15', false);
  if (hour >= 24) range('hour');
  literal(':');
  const minute = num('04', true);
  if (minute >= 60) range('minute');
  literal(':');
  const second = num('05', true);
  if (second >= 60) range('second');
  let fraction = '';
  if (micro) {
    // ".000000": a period or comma and exactly six digits
    if (rest.length < 7 || (rest[0] !== '.' && rest[0] !== ',') || !/^\d{6}/.test(rest.slice(1, 7))) cannot(rest, '.000000');
    fraction = rest.slice(1, 7);
    rest = rest.slice(7);
  } else if ((rest[0] === '.' || rest[0] === ',') && digit(rest[1])) {
    // a fraction the layout does not name is read all the same
    let n = 1;
    while (digit(rest[n])) n++;
    fraction = rest.slice(1, Math.min(n, 10));
    rest = rest.slice(n);
  }
  let offsetMinutes = 0;
  if (rest[0] === 'Z') rest = rest.slice(1);
  else {
    if (rest.length < 6 || rest[3] !== ':' || !/^\d\d$/.test(rest.slice(1, 3)) || !/^\d\d$/.test(rest.slice(4, 6))) cannot(rest, 'Z07:00');
    const hh = Number(rest.slice(1, 3));
    const mm = Number(rest.slice(4, 6));
    if (hh > 24) range('time zone offset hour');
    if (mm > 60) range('time zone offset minute');
    if (rest[0] !== '+' && rest[0] !== '-') cannot(rest, 'Z07:00');
    offsetMinutes = (rest[0] === '-' ? -1 : 1) * (hh * 60 + mm);
    rest = rest.slice(6);
  }
  if (rest.length > 0) throw new DecodeError(`parsing time ${JSON.stringify(text)}: extra text: ${JSON.stringify(rest)}`);
  const daysIn = new Date(Date.UTC(2000, month, 0)).getUTCDate() - (month === 2 && !leapYear(year) ? 1 : 0);
  if (day < 1 || day > daysIn) range('day');
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  return { ms: date.getTime() - offsetMinutes * 60_000, fraction };
}

function leapYear(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}

/** As metav1.Time (seconds) and MicroTime (six digits) write a time: RFC 3339 in UTC, the year as four digits. */
function formatTime(parsed: Parsed, micro: boolean): string {
  const d = new Date(parsed.ms);
  const year = d.getUTCFullYear();
  const two = (n: number): string => String(n).padStart(2, '0');
  const base = `${year < 0 ? '-' : ''}${String(Math.abs(year)).padStart(4, '0')}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}T${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  return micro ? `${base}.${parsed.fraction.padEnd(6, '0').slice(0, 6)}Z` : `${base}Z`;
}

const BASE64 = /[A-Za-z0-9+/]/;

/**
 * Base64 as Go's StdEncoding reads it (padding required; CR and LF
 * skipped): the canonical text, or the server's message naming the first
 * illegal byte.
 */
function decodeBase64(src: string): string {
  const illegal = (at: number): never => {
    throw new DecodeError(`illegal base64 data at input byte ${at}`, `error decoding from json: illegal base64 data at input byte ${at}`);
  };
  const newline = (c: string | undefined): boolean => c === '\n' || c === '\r';
  let si = 0;
  for (;;) {
    // one quantum of four characters
    for (let j = 0; j < 4; j++) {
      if (si === src.length) {
        if (j === 0) return Buffer.from(src.replace(/[\r\n]/g, ''), 'base64').toString('base64');
        illegal(si - j);
      }
      const c = src[si]!;
      si++;
      if (BASE64.test(c)) continue;
      if (newline(c)) {
        j--;
        continue;
      }
      if (c !== '=' || j < 2) illegal(si - 1);
      if (j === 2) {
        while (si < src.length && newline(src[si])) si++;
        if (si === src.length) illegal(src.length);
        if (src[si] !== '=') illegal(si - 1);
        si++;
      }
      while (si < src.length && newline(src[si])) si++;
      if (si < src.length) illegal(si);
      return Buffer.from(src.replace(/[\r\n]/g, ''), 'base64').toString('base64');
    }
  }
}

/** Decode one value against its node; undefined: the member goes. */
function decodeValue(value: unknown, r: Resolved | undefined, ctx: Context, inResourceList: boolean): unknown {
  if (!r) return value;
  if (value === null) return undefined;
  const n = r.node;
  if (r.name === QUANTITY) {
    // Quantity's UnmarshalJSON parses whatever JSON it is given that is not a string as the quantity's text: a bool,
    // a list or a map fails its regular expression (measured on kube-apiserver v1.37.2, merge patches of a cpu limit)
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'bigint') throw new DecodeError('quantities must match the regular expression \'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$\'');
    try {
      const q = parseQuantity(String(value));
      return formatQuantity(inResourceList ? roundUpToMilli(q) : q);
    } catch (err) {
      if (err instanceof QuantityError) throw new DecodeError(err.message);
      throw err;
    }
  }
  if (r.name === INT_OR_STRING) {
    if (typeof value === 'string') return value;
    if (typeof value === 'number' && Number.isInteger(value) && value >= -2147483648 && value <= 2147483647) return value;
    throw mismatch(ctx, value, r);
  }
  if (r.name === TIME || r.name === MICRO_TIME) {
    if (typeof value !== 'string') throw mismatch(ctx, value, r);
    return formatTime(parseTime(value, r.name === MICRO_TIME), r.name === MICRO_TIME);
  }
  if (n['x-kubernetes-preserve-unknown-fields'] === true) return value;
  switch (n.type) {
    case 'string':
      if (typeof value !== 'string') throw mismatch(ctx, value, r);
      return n.format === 'byte' ? decodeBase64(value) : value;
    case 'integer': {
      // an int64 past 2^53 arrives as a bigint (parseJson); int32 fields never hold one
      if (typeof value === 'bigint') {
        const int64 = value <= 9223372036854775807n && value >= -9223372036854775808n;
        if (ctx.converter) {
          // past int64 the patch holds a float64, which the converter takes when it is integral: Go's int64() of it
          // overflows to the minimum int64 (amd64), whose low 32 bits are 0 (kube-apiserver v1.37.2 answers 0)
          const asInt64 = int64 ? value : -9223372036854775808n;
          return n.format === 'int32' ? Number(BigInt.asIntN(32, asInt64)) : asInt64;
        }
        if (n.format === 'int32' || !int64) throw mismatch(ctx, value, r);
        return value;
      }
      // the converter sets an int64 into an int32 field as Go's reflect does: the low 32 bits, two's complement; an
      // integral float64 at or past 2^63 (`3e20`) overflows Go's int64() to the minimum first, whose low bits are 0
      if (ctx.converter && n.format === 'int32' && typeof value === 'number' && Number.isInteger(value)) return Math.abs(value) >= 2 ** 63 ? 0 : value | 0;
      const max = n.format === 'int32' ? 2147483647 : Number.MAX_SAFE_INTEGER;
      if (typeof value !== 'number' || !Number.isInteger(value) || Math.abs(value) > max) throw mismatch(ctx, value, r);
      return value;
    }
    case 'number':
      if (typeof value !== 'number') throw mismatch(ctx, value, r);
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') throw mismatch(ctx, value, r);
      return value;
    case 'array': {
      if (!Array.isArray(value)) throw mismatch(ctx, value, r);
      const items = resolve(n.items);
      const path = ctx.path;
      const out = value.map((item, i) => {
        ctx.path = `${path}[${i}]`;
        const decoded = decodeValue(item, items, ctx, false);
        return decoded === undefined ? zeroOf(items) : decoded;
      });
      ctx.path = path;
      return out;
    }
    case 'object': {
      if (!isObject(value)) throw mismatch(ctx, value, r);
      if (n.properties) return decodeStruct(value, r, ctx);
      if (typeof n.additionalProperties === 'object') {
        const values = resolve(n.additionalProperties);
        const resourceList = values?.name === QUANTITY;
        const out: Json = {};
        const path = ctx.path;
        for (const [k, v] of Object.entries(value)) {
          ctx.path = `${path}[${k}]`;
          const decoded = v === null ? zeroOf(values) : decodeValue(v, values, ctx, resourceList);
          if (decoded !== undefined) out[k] = decoded;
        }
        ctx.path = path;
        return out;
      }
      return value;
    }
    default:
      return value;
  }
}

/** What Go leaves in a map value or list item given `null`. */
function zeroOf(r: Resolved | undefined): unknown {
  if (!r) return null;
  if (r.node.type === 'string' && r.name !== QUANTITY && r.name !== TIME && r.name !== MICRO_TIME) return '';
  if (r.node.type === 'integer' || r.node.type === 'number') return 0;
  if (r.node.type === 'boolean') return false;
  return undefined;
}

/**
 * Server-side apply of a built-in kind: a map value given as `null` stays,
 * as the Go zero value of the map's value type (`data: {a: null}` stores
 * `a: ""`), where a merge would drop the key. Returns the configuration
 * with those values filled in (a copy where anything changed).
 */
export function fillAppliedNulls(config: Json, apiVersion: string, kind: string): Json {
  const fill = (value: unknown, r: Resolved | undefined): unknown => {
    if (!r || value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) {
      const items = resolve(r.node.items);
      return value.map((v) => fill(v, items));
    }
    const out: Json = {};
    const props = r.node.properties;
    const values = !props && typeof r.node.additionalProperties === 'object' ? resolve(r.node.additionalProperties) : undefined;
    for (const [k, v] of Object.entries(value as Json)) {
      if (values && v === null) {
        const zero = zeroOf(values);
        out[k] = zero === undefined ? null : zero;
      } else out[k] = fill(v, props ? childOf(r, k) : values);
    }
    return out;
  };
  const schema = kindSchema(apiVersion, kind);
  return schema ? (fill(config, schema) as Json) : config;
}

function decodeStruct(value: Json, r: Resolved, ctx: Context): Json {
  const out: Json = {};
  const struct = ctx.struct;
  const path = ctx.path;
  ctx.struct = goName(r.name)?.split('.')[1] ?? struct;
  for (const [k, v] of Object.entries(value)) {
    const props = r.node.properties!;
    const childPath = path === '' ? k : `${path}.${k}`;
    if (!Object.hasOwn(props, k)) {
      ctx.unknown.push(childPath);
      continue;
    }
    ctx.fields.push(k);
    ctx.path = childPath;
    const decoded = decodeValue(v, childOf(r, k), ctx, false);
    ctx.fields.pop();
    if (decoded !== undefined) out[k] = decoded;
  }
  ctx.struct = struct;
  ctx.path = path;
  return out;
}

/**
 * Decode a built-in object (apiVersion and kind set) as the server does;
 * undefined when the snapshot does not know the kind. Throws DecodeError.
 * `converter`: as the unstructured converter decodes a strategic merge
 * patch's result (integers wrap into int32 fields) rather than as JSON.
 */
export function decodeBuiltin(obj: Json, apiVersion: string, kind: string, validation: FieldValidation, converter = false): Decoded | undefined {
  const schema = kindSchema(apiVersion, kind);
  if (!schema) return undefined;
  const ctx: Context = { struct: kind, fields: [], path: '', unknown: [], converter };
  const object = decodeStruct(obj, schema, ctx);
  if (ctx.unknown.length > 0 && validation === 'Strict') {
    throw new DecodeError(`strict decoding error: ${ctx.unknown.map((p) => `unknown field ${JSON.stringify(p)}`).join(', ')}`);
  }
  return { object, warnings: validation === 'Warn' ? ctx.unknown.map((p) => `unknown field ${JSON.stringify(p)}`) : [] };
}

/** ObjectMeta's schema: every kind's metadata, a custom resource's too. */
function objectMetaSchema(): Resolved | undefined {
  const configMap = kindSchema('v1', 'ConfigMap');
  return configMap ? childOf(configMap, 'metadata') : undefined;
}

/**
 * A custom resource's metadata decoded into ObjectMeta as apiextensions'
 * decoder does (it encodes the unstructured metadata, keys sorted, and
 * unmarshals that), in encoding/json's words for the first value of the
 * wrong type (`json: cannot unmarshal number into Go struct field
 * ObjectMeta.labels of type string`); undefined when it decodes. Measured
 * on kube-apiserver v1.37.2 (issue 40; a label patched to a number, found by
 * the differential fuzzer).
 *
 * @example
 * ```ts
 * objectMetaProblem({ name: 'a', labels: { app: 2 } })?.message;
 * // 'json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string'
 * ```
 */
export function objectMetaProblem(metadata: unknown): DecodeError | undefined {
  const r = objectMetaSchema();
  if (!r || !isObject(metadata)) return undefined;
  const decode = (value: Json): DecodeError | undefined => {
    try {
      decodeStruct(value, r, { struct: 'ObjectMeta', fields: [], path: '', unknown: [], converter: false });
      return undefined;
    } catch (err) {
      if (err instanceof DecodeError) return err;
      throw err;
    }
  };
  // every write of a custom resource passes here: the metadata as given first, and only when it fails, sorted to name
  // the first bad value in the server's order
  return decode(metadata) && decode(parseJson(canonical(metadata)) as Json);
}

/** A list item's path element as structured-merge-diff prints it: its index, its value in a set, its keys in a map list. */
function itemElement(list: SchemaNode, item: unknown, index: number, items?: Resolved): string {
  if (list['x-kubernetes-list-type'] === 'set') return `[=${stringifyJson(item) ?? 'null'}]`;
  if (list['x-kubernetes-list-type'] === 'map' && isObject(item)) return mapKey(list, item, items);
  return `[${index}]`;
}

/** A map list item's key as structured-merge-diff prints it (`[containerPort=80,protocol="TCP"]`): a key field it leaves out has its schema's default. */
function mapKey(list: SchemaNode, item: Json, items: Resolved | undefined): string {
  const value = (k: string): unknown => item[k] ?? (items ? childOf(items, k)?.node.default : undefined);
  return `[${(list['x-kubernetes-list-map-keys'] ?? []).map((k) => `${k}=${stringifyJson(value(k)) ?? 'null'}`).join(',')}]`;
}

/**
 * Check an object against the kind's schema as server-side apply's typed
 * converter does (structured-merge-diff, on the schema kube-openapi's
 * schemaconv makes of the OpenAPI or the CRD's schema), in its words: a
 * field the schema does not declare (not where it keeps unknown fields; not
 * at all for a `live` object, whose unknown fields were pruned or kept), an
 * object or array node given something else (`expected map, got &{abc}`),
 * a string given a non-string (`expected string, got
 * &value.valueUnstructured{Value:3}`), unless it has a format other than
 * `byte` (then any scalar goes), a number given a non-number (`expected
 * numeric (int or float), got string`), a boolean given a non-boolean, a
 * quantity given a list or a map. A node without a type
 * (`x-kubernetes-int-or-string`) takes anything.
 * Several problems are listed, sorted (the server meets them in Go's map
 * order). Found by the differential and schema-change fuzzers.
 */
export function applyProblem(config: Json, apiVersion: string, kind: string, crdSchema?: Json, options: { readonly live?: boolean } = {}): string | undefined {
  const schema = crdSchema ? { node: crdSchema as SchemaNode, name: undefined } : kindSchema(apiVersion, kind);
  if (!schema) return undefined;
  const problems: string[] = [];
  // the converter's value as Go prints it: %v (`&{...}`), %#v, and %T of what it holds
  const shown = (value: unknown): string => `&{${goFormat(value)}}`;
  const walk = (value: unknown, r: Resolved | undefined, path: string, preserved = false): string | undefined => {
    if (!r || value === null || value === undefined) return undefined;
    const n = r.node;
    // a quantity is an untyped scalar to the typed converter (a list or a map is refused here); an int-or-string takes
    // anything, its own decoding refuses the rest later (measured on kube-apiserver v1.37.2: a container's cpu limit
    // applied as ['x'], a Service's targetPort applied as {a: 1})
    if (r.name === QUANTITY) return !Array.isArray(value) && !isObject(value) ? undefined : `${path}: expected any scalar, got ${shown(value)}`;
    if (r.name === INT_OR_STRING || (n as { 'x-kubernetes-int-or-string'?: boolean })['x-kubernetes-int-or-string'] === true) return undefined;
    // a node keeping unknown fields without properties: an object one still wants a map (found by the schema-change fuzzer)
    if (n['x-kubernetes-preserve-unknown-fields'] === true && !n.properties) return n.type === 'object' && !isObject(value) ? `${path}: expected map, got ${shown(value)}` : undefined;
    // under a node that keeps unknown fields, a custom resource's typed converter takes undeclared ones (the write prunes them; found by the fuzzer)
    const keeps = preserved || (crdSchema !== undefined && n['x-kubernetes-preserve-unknown-fields'] === true);
    const scalar = !Array.isArray(value) && !isObject(value);
    switch (n.type) {
      case 'string':
        // a string with a format other than byte is an untyped scalar (found by the schema-change fuzzer, seed 908583713)
        if (n.format !== undefined && n.format !== '' && n.format !== 'byte') return scalar ? undefined : `${path}: expected any scalar, got ${shown(value)}`;
        return typeof value === 'string' ? undefined : `${path}: expected string, got &value.valueUnstructured{Value:${goSyntax(value)}}`;
      case 'integer':
      case 'number':
        return typeof value === 'number' || typeof value === 'bigint' ? undefined : `${path}: expected numeric (int or float), got ${goValueType(value)}`;
      case 'boolean':
        return typeof value === 'boolean' ? undefined : `${path}: expected boolean, got ${shown(value)}`;
      case 'array': {
        if (!Array.isArray(value)) return `${path}: expected list, got ${shown(value)}`;
        const items = resolve(n.items);
        // a map list's key given twice: once per repeat (measured on kube-apiserver v1.37.2: two containers named c, two
        // ports 80/TCP, an env variable twice); a live object's are the field manager's to keep
        const keys = new Set<string>();
        for (const [i, item] of value.entries()) {
          if (n['x-kubernetes-list-type'] === 'map' && isObject(item) && !options.live) {
            const key = mapKey(n, item, items);
            if (keys.has(key)) problems.push(`${path}: duplicate entries for key ${key}`);
            keys.add(key);
          }
          const p = walk(item, items, `${path}${itemElement(n, item, i, items)}`, keeps);
          if (p) problems.push(p);
        }
        return undefined;
      }
      case 'object':
        if (!isObject(value)) return `${path}: expected map, got ${shown(value)}`;
        for (const [k, v] of Object.entries(value)) {
          // what the schema does not declare is refused, also in a custom resource's structural schema (where a write prunes it); not where it keeps unknown fields
          const envelope = crdSchema !== undefined && path === '' && (k === 'apiVersion' || k === 'kind' || k === 'metadata');
          if (envelope && options.live) continue;
          if (n.properties && !Object.hasOwn(n.properties, k) && !envelope && typeof n.additionalProperties !== 'object' && !keeps) {
            if (!options.live) problems.push(`${path}.${k}: field not declared in schema`);
            continue;
          }
          // a custom resource's metadata is typed as ObjectMeta, whatever its schema says of it (measured on kube-apiserver v1.37.2)
          const p = walk(v, envelope && k === 'metadata' ? objectMetaSchema() : childOf(r, k), `${path}.${k}`, keeps);
          if (p) problems.push(p);
        }
        return undefined;
      default:
        return undefined;
    }
  };
  const top = walk(config, schema, '');
  if (top) problems.push(top);
  if (problems.length === 0) return undefined;
  // one problem as it is, several as the typed converter lists them (sorted by path)
  return problems.length === 1 ? problems[0] : `errors:\n${[...problems].sort().map((p) => `  ${p}`).join('\n')}`;
}
