/**
 * CRD validation rules (`x-kubernetes-validations`) evaluated as
 * kube-apiserver evaluates them, with @marcbachmann/cel-js (the CEL
 * language, its macros, optional types and string extensions) plus the
 * Kubernetes list and regex library functions the server adds. `self` is
 * the value at the rule's node, typed by its schema (integers as CEL ints,
 * numbers as doubles), `oldSelf` the same value before an update; a rule
 * naming `oldSelf` (a transition rule) is only evaluated when there is an
 * old value. A failed rule is the server's field error at the node (or at
 * its `fieldPath`): `spec.name: Invalid value: "Abc": <message>` (no value
 * for a map or list: `spec: Invalid value: <message>`), the message from
 * `messageExpression` when it gives one. The quantity, IP/CIDR and URL
 * libraries and four formats are cel-k8s.ts. Not evaluated: the semver
 * library, the other formats and the server's cost limits
 * (docs/testing-fake.md).
 */
import { Environment } from '@marcbachmann/cel-js';
import { registerKubernetesLibraries } from './cel-k8s.js';
import { isObject } from './json.js';
import type { Json } from './json.js';
import type { FieldError } from './status.js';

interface Rule {
  readonly rule: string;
  readonly message?: string;
  readonly messageExpression?: string;
  readonly fieldPath?: string;
  readonly reason?: string;
}

type Compiled = (context: Record<string, unknown>) => unknown;

const REASONS: Readonly<Record<string, FieldError['type']>> = {
  FieldValueInvalid: 'FieldValueInvalid',
  FieldValueForbidden: 'FieldValueForbidden',
  FieldValueRequired: 'FieldValueRequired',
  FieldValueDuplicate: 'FieldValueDuplicate',
};

const compare = (a: unknown, b: unknown): number => (a === b ? 0 : (a as number) < (b as number) ? -1 : 1);

/** The CEL environment: the language and its macros from the library, Kubernetes' list and regex functions added. */
function environment(): Environment {
  const env = new Environment({ unlistedVariablesAreDyn: true, enableOptionalTypes: true, homogeneousAggregateLiterals: false });
  env.registerFunction('list.isSorted(): bool', (l: unknown[]) => l.every((v, i) => i === 0 || compare(l[i - 1], v) <= 0));
  env.registerFunction('list.sum(): dyn', (l: unknown[]) => l.reduce((a: unknown, b) => (typeof a === 'bigint' && typeof b === 'bigint' ? a + b : Number(a) + Number(b)), typeof l[0] === 'number' ? 0 : 0n));
  env.registerFunction('list.min(): dyn', (l: unknown[]) => {
    if (l.length === 0) throw new Error('min called on empty list');
    return l.reduce((a, b) => (compare(b, a) < 0 ? b : a));
  });
  env.registerFunction('list.max(): dyn', (l: unknown[]) => {
    if (l.length === 0) throw new Error('max called on empty list');
    return l.reduce((a, b) => (compare(b, a) > 0 ? b : a));
  });
  env.registerFunction('list.indexOf(dyn): int', (l: unknown[], v: unknown) => BigInt(l.findIndex((x) => x === v)));
  env.registerFunction('list.lastIndexOf(dyn): int', (l: unknown[], v: unknown) => BigInt(l.findLastIndex((x) => x === v)));
  env.registerFunction('string.replace(string, string): string', (s: string, from: string, to: string) => s.split(from).join(to));
  env.registerFunction('string.replace(string, string, int): string', (s: string, from: string, to: string, n: bigint) => {
    let out = s;
    let at = 0;
    for (let i = 0n; n < 0n || i < n; i++) {
      const found = out.indexOf(from, at);
      if (found < 0) break;
      out = out.slice(0, found) + to + out.slice(found + from.length);
      at = found + to.length;
    }
    return out;
  });
  env.registerFunction('string.find(string): string', (s: string, re: string) => new RegExp(re).exec(s)?.[0] ?? '');
  env.registerFunction('string.findAll(string): list<string>', (s: string, re: string) => [...s.matchAll(new RegExp(re, 'g'))].map((m) => m[0]));
  registerKubernetesLibraries(env);
  return env;
}

let shared: Environment | undefined;
const cache = new Map<string, Compiled | Error>();

/** A rule compiled once (the server refuses a CRD whose rule does not compile; here it is a failed rule). */
function compiled(rule: string): Compiled | Error {
  let c = cache.get(rule);
  if (c === undefined) {
    shared ??= environment();
    try {
      c = shared.parse(rule);
    } catch (err) {
      c = err instanceof Error ? err : new Error(String(err));
    }
    if (cache.size >= 1000) cache.clear(); // rules come from CRDs a test installs: keep the cache bounded
    cache.set(rule, c);
  }
  return c;
}

/** A JSON value as CEL sees it under its schema: integers as ints (bigint), numbers as doubles. */
function toCel(value: unknown, schema: Json | undefined): unknown {
  if (Array.isArray(value)) return value.map((v) => toCel(v, isObject(schema?.['items']) ? schema['items'] : undefined));
  if (isObject(value)) {
    const props = isObject(schema?.['properties']) ? schema['properties'] : undefined;
    const extra = isObject(schema?.['additionalProperties']) ? schema['additionalProperties'] : undefined;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toCel(v, isObject(props?.[k]) ? props[k] : extra)]));
  }
  if (typeof value === 'number') return schema?.['type'] === 'number' || !Number.isInteger(value) ? value : BigInt(value);
  return value;
}

function rulesOf(schema: Json): Rule[] {
  const rules = schema['x-kubernetes-validations'];
  return Array.isArray(rules) ? (rules as Rule[]).filter((r) => typeof r?.rule === 'string') : [];
}

/** Whether a schema holds any validation rule (most do not: nothing to walk). */
export function hasRules(schema: unknown): boolean {
  if (!isObject(schema)) return false;
  if (rulesOf(schema).length > 0) return true;
  if (isObject(schema['properties']) && Object.values(schema['properties']).some(hasRules)) return true;
  return hasRules(schema['items']) || hasRules(schema['additionalProperties']);
}

/**
 * A failed rule's message: its messageExpression's result when that is a
 * non-blank single line, else its message, else `failed rule: <rule>` (the
 * server's order; an expression that fails to evaluate falls back alike).
 */
function messageOf(r: Rule, value: unknown, old: unknown, schema: Json, transition: boolean): string {
  if (typeof r.messageExpression === 'string') {
    const program = compiled(r.messageExpression);
    try {
      const text = program instanceof Error ? undefined : program({ self: toCel(value, schema), ...(transition ? { oldSelf: toCel(old, schema) } : {}) });
      if (typeof text === 'string' && text.trim() !== '' && !/[\r\n]/.test(text)) return text;
    } catch {
      // as unset
    }
  }
  return r.message ?? `failed rule: ${r.rule}`;
}

function walk(value: unknown, old: unknown, schema: Json, path: string, errors: FieldError[]): void {
  for (const r of rulesOf(schema)) {
    const transition = /\boldSelf\b/.test(r.rule);
    if (transition && old === undefined) continue;
    const program = compiled(r.rule);
    let ok: unknown;
    try {
      ok = program instanceof Error ? false : program({ self: toCel(value, schema), ...(transition ? { oldSelf: toCel(old, schema) } : {}) });
    } catch (err) {
      // a rule that fails to evaluate: the error at the node, its value shown as the node's type, then the rule's message or text
      // (`spec.cpu: Invalid value: "string": cannot convert value to integer evaluating rule: ...`; found by the CEL differential)
      const detail = `${err instanceof Error ? err.message : String(err)} evaluating rule: ${(r.message ?? r.rule).trim()}`;
      errors.push({ type: 'FieldValueInvalid', field: path, value: typeof schema['type'] === 'string' ? schema['type'] : 'object', detail });
      continue;
    }
    if (ok === true) continue;
    const field = r.fieldPath ? `${path}${r.fieldPath}` : path;
    const type = REASONS[r.reason ?? ''] ?? 'FieldValueInvalid';
    // the value is shown for a scalar (`spec.name: Invalid value: "Abc": ...`), left out for a map or list and for Forbidden and Required
    const scalar = !isObject(value) && !Array.isArray(value) && type !== 'FieldValueForbidden' && type !== 'FieldValueRequired';
    errors.push({ type, field, ...(scalar ? { value } : {}), detail: messageOf(r, value, old, schema, transition) });
  }
  if (isObject(value) && isObject(schema['properties'])) {
    for (const [k, sub] of Object.entries(schema['properties'])) {
      if (!isObject(sub) || value[k] === undefined || value[k] === null) continue;
      walk(value[k], isObject(old) ? old[k] : undefined, sub, path === '' ? k : `${path}.${k}`, errors);
    }
  } else if (isObject(value) && isObject(schema['additionalProperties'])) {
    for (const [k, v] of Object.entries(value)) walk(v, isObject(old) ? old[k] : undefined, schema['additionalProperties'], `${path}[${k}]`, errors);
  } else if (Array.isArray(value) && isObject(schema['items'])) {
    const keys = schema['x-kubernetes-list-type'] === 'map' && Array.isArray(schema['x-kubernetes-list-map-keys']) ? (schema['x-kubernetes-list-map-keys'] as string[]) : undefined;
    const olds = Array.isArray(old) ? (old as unknown[]) : [];
    for (const [i, item] of value.entries()) {
      // only a map list's items have an old self (matched by their keys)
      const before = keys && isObject(item) ? olds.find((o) => isObject(o) && keys.every((k) => o[k] === item[k])) : undefined;
      walk(item, before, schema['items'], `${path}[${i}]`, errors);
    }
  }
}

/** The failed rules of an object (an old one on update) under its version's `openAPIV3Schema`. */
export function celErrors(obj: Json, old: Json | undefined, openAPIV3Schema: Json): FieldError[] {
  const errors: FieldError[] = [];
  walk(obj, old, openAPIV3Schema, '', errors);
  return errors;
}
