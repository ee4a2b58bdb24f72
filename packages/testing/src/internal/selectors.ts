/**
 * Label and field selectors with the API server's grammar: labels take
 * `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`,
 * `a<1`; fields take `=`, `==` and `!=`. A malformed selector is a 400.
 */
import { badRequest } from './status.js';

type LabelRequirement =
  | { readonly key: string; readonly op: 'in' | 'notin'; readonly values: ReadonlySet<string> }
  | { readonly key: string; readonly op: 'exists' | '!exists' }
  | { readonly key: string; readonly op: 'gt' | 'lt'; readonly value: number };

export interface LabelSelector {
  matches(labels: Readonly<Record<string, string>> | undefined): boolean;
  readonly empty: boolean;
}

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function keyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const name = slash === -1 ? key : key.slice(slash + 1);
  const prefix = slash === -1 ? undefined : key.slice(0, slash);
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !PREFIX.test(prefix))) {
    return `prefix part must be a lowercase RFC 1123 subdomain`;
  }
  if (name.length === 0 || name.length > 63 || !NAME.test(name)) {
    return `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`;
  }
  return undefined;
}

/** Whether a label key is valid (used by metadata validation too). */
export function labelKeyProblem(key: string): string | undefined {
  return keyProblem(key);
}

/** Whether a label value is valid. */
export function labelValueProblem(value: string): string | undefined {
  if (value.length > 63) return 'must be no more than 63 characters';
  if (!VALUE.test(value)) {
    return `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`;
  }
  return undefined;
}

function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(text.slice(start));
  return terms.map((t) => t.trim());
}

function bad(term: string, why: string): never {
  throw badRequest(`unable to parse requirement: ${JSON.stringify(term)}: ${why}`);
}

function checkKey(term: string, key: string): string {
  const problem = keyProblem(key);
  if (problem) bad(term, `key ${JSON.stringify(key)}: ${problem}`);
  return key;
}

function checkValue(term: string, value: string): string {
  const problem = labelValueProblem(value);
  if (problem) bad(term, `value ${JSON.stringify(value)}: ${problem}`);
  return value;
}

function parseTerm(term: string): LabelRequirement {
  if (term.length === 0) bad(term, 'empty requirement');
  let m = /^!\s*([^\s!=<>(),]+)$/.exec(term);
  if (m) return { key: checkKey(term, m[1]!), op: '!exists' };
  m = /^([^\s!=<>(),]+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(term);
  if (m) {
    const values = m[3]!
      .split(',')
      .map((v) => v.trim())
      .map((v) => checkValue(term, v));
    if (m[2] === 'in' && values.length === 1 && values[0] === '' && m[3]!.trim() === '') bad(term, 'for "in" and "notin" operators, values set cannot be empty');
    return { key: checkKey(term, m[1]!), op: m[2] as 'in' | 'notin', values: new Set(values) };
  }
  m = /^([^\s!=<>(),]+)\s*(==|=|!=)\s*([^\s!=<>(),]*)$/.exec(term);
  if (m) {
    const key = checkKey(term, m[1]!);
    const value = checkValue(term, m[3]!);
    return { key, op: m[2] === '!=' ? 'notin' : 'in', values: new Set([value]) };
  }
  m = /^([^\s!=<>(),]+)\s*(>|<)\s*(\S+)$/.exec(term);
  if (m) {
    const n = Number(m[3]);
    if (!Number.isInteger(n)) bad(term, `for 'Gt', 'Lt' operators, the value must be an integer`);
    return { key: checkKey(term, m[1]!), op: m[2] === '>' ? 'gt' : 'lt', value: n };
  }
  m = /^([^\s!=<>(),]+)$/.exec(term);
  if (m) return { key: checkKey(term, m[1]!), op: 'exists' };
  return bad(term, 'found unexpected input');
}

function requirementMatches(r: LabelRequirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = has ? labels[r.key]! : undefined;
  switch (r.op) {
    case 'in':
      return has && r.values.has(value!);
    case 'notin':
      return !has || !r.values.has(value!);
    case 'exists':
      return has;
    case '!exists':
      return !has;
    case 'gt':
    case 'lt': {
      if (!has || !/^-?\d+$/.test(value!)) return false;
      const n = Number(value);
      return r.op === 'gt' ? n > r.value : n < r.value;
    }
  }
}

/** Parse a `labelSelector` query value. */
export function parseLabelSelector(text: string | undefined): LabelSelector {
  const trimmed = (text ?? '').trim();
  if (trimmed === '') return { empty: true, matches: () => true };
  const reqs = splitTerms(trimmed).map(parseTerm);
  return {
    empty: false,
    matches: (labels) => {
      const l = labels ?? {};
      for (const r of reqs) if (!requirementMatches(r, l)) return false;
      return true;
    },
  };
}

export interface FieldRequirement {
  readonly field: string;
  readonly op: '=' | '!=';
  readonly value: string;
}

/** Split on a separator that is not escaped with a backslash. */
function splitUnescaped(text: string, sep: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '\\' && i + 1 < text.length) {
      cur += c + text[i + 1]!;
      i++;
    } else if (c === sep) {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out;
}

function unescape(value: string): string {
  return value.replace(/\\(.)/g, '$1');
}

/** Parse a `fieldSelector` query value into requirements (checked against the kind's fields by the caller). */
export function parseFieldSelector(text: string | undefined): FieldRequirement[] {
  const trimmed = (text ?? '').trim();
  if (trimmed === '') return [];
  return splitUnescaped(trimmed, ',').map((term) => {
    const m = /^([^=!]+?)\s*(==|=|!=)\s*(.*)$/s.exec(term.trim());
    if (!m) throw badRequest(`invalid selector: '${trimmed}'; can't understand '${term}'`);
    return { field: m[1]!.trim(), op: m[2] === '!=' ? '!=' : '=', value: unescape(m[3]!.trim()) };
  });
}
