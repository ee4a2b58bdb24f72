/**
 * Label and field selectors evaluated in memory, with the API server's
 * grammar and answers: the one parser of kubeloop. The informer cache
 * filters with it, predicates match with it, the fake API server of
 * `@kubeloop/testing` serves lists and watches with it, and each is checked
 * against the real API server on the same selectors, malformed ones
 * included (packages/client/test/selectors.test.ts).
 *
 * Labels: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`,
 * `a>1`, `a<1` (integers), terms joined by commas, keys and values checked
 * as the server checks them. Fields: `=`, `==` and `!=`, with `\,`, `\=`
 * and `\\` escapes in values; nothing is trimmed.
 */
import { ClientError } from './errors.js';
import type { Selector } from './options.js';
import { renderSelector } from './options.js';

/** One parsed term of a label selector. */
export type LabelRequirement =
  | { readonly key: string; readonly op: 'in'; readonly values: ReadonlySet<string> }
  | { readonly key: string; readonly op: 'notin'; readonly values: ReadonlySet<string> }
  | { readonly key: string; readonly op: 'exists' }
  | { readonly key: string; readonly op: '!exists' }
  /** `key>value` / `key<value`: the label holds an integer greater / less than `value`. */
  | { readonly key: string; readonly op: 'gt' | 'lt'; readonly value: bigint };

const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const NAME_RULE = `must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`;
const SUBDOMAIN_RULE = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`;
const INT64_MAX = 9223372036854775807n;

/** A length as Go's len() of a string gives it: UTF-8 bytes, which the server's bounds count. */
const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/**
 * Why a label key is invalid (`[prefix/]name`: an optional DNS subdomain
 * prefix, a name of at most 63 characters), or undefined if it is valid.
 * The API server's rule and wording.
 *
 * @example
 * ```ts
 * labelKeyProblem('example.com/tier'); // undefined
 * labelKeyProblem('-tier'); // 'name part must consist of alphanumeric characters, ...'
 * ```
 */
export function labelKeyProblem(key: string): string | undefined {
  const problems = labelKeyProblems(key);
  return problems.length > 0 ? problems.join('; ') : undefined;
}

/**
 * Every problem of a label key (also an annotation key or a finalizer), one
 * message each, in the API server's order and words (kube-apiserver v1.37:
 * lengths in bytes, the regular expressions named); empty when it is valid.
 * The server reports each as a field error of its own.
 *
 * @example
 * ```ts
 * labelKeyProblems(''); // ['name part must be non-empty', 'name part must consist of ...']
 * ```
 */
export function labelKeyProblems(key: string): string[] {
  const parts = key.split('/');
  if (parts.length > 2) return [`a valid label key ${NAME_RULE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  const name = parts.length === 2 ? parts[1]! : parts[0]!;
  const problems: string[] = [];
  if (parts.length === 2) {
    const prefix = parts[0]!;
    if (prefix.length === 0) problems.push('prefix part must be non-empty');
    else {
      if (bytes(prefix) > 253) problems.push('prefix part must be no more than 253 bytes');
      if (!SUBDOMAIN.test(prefix)) problems.push(`prefix part ${SUBDOMAIN_RULE}`);
    }
  }
  if (name.length === 0) problems.push('name part must be non-empty');
  else if (bytes(name) > 63) problems.push('name part must be no more than 63 bytes');
  if (!NAME.test(name)) problems.push(`name part ${NAME_RULE}`);
  return problems;
}

/**
 * Why a label value is invalid (at most 63 characters, alphanumerics with
 * `-`, `_`, `.` inside; empty is valid), or undefined if it is valid.
 *
 * @example
 * ```ts
 * labelValueProblem('v1.2'); // undefined
 * labelValueProblem('not valid!'); // 'a valid label must be an empty string or ...'
 * ```
 */
export function labelValueProblem(value: string): string | undefined {
  const problems = labelValueProblems(value);
  return problems.length > 0 ? problems.join('; ') : undefined;
}

/**
 * Every problem of a label value, one message each, as the API server
 * reports them (each a field error of its own); empty when it is valid.
 *
 * @example
 * ```ts
 * labelValueProblems('-'.repeat(64)); // ['must be no more than 63 bytes', 'a valid label must be ...']
 * ```
 */
export function labelValueProblems(value: string): string[] {
  const problems: string[] = [];
  if (bytes(value) > 63) problems.push('must be no more than 63 bytes');
  if (!VALUE.test(value)) {
    problems.push(
      `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
    );
  }
  return problems;
}

// ---- label selector lexer: the server's tokens, byte for byte ----------------

type Token = 'id' | 'in' | 'notin' | '(' | ')' | ',' | '!' | '=' | '==' | '!=' | '>' | '<' | 'end';
interface Scanned {
  readonly tok: Token;
  readonly lit: string;
}
const SYMBOLS = new Set(['=', '!', '(', ')', ',', '>', '<']);
const SYMBOL_TOKENS = new Set<string>(['(', ')', ',', '!', '=', '==', '!=', '>', '<']);
const WHITESPACE = new Set([' ', '\t', '\r', '\n']);

/** Tokens up to the end (a NUL ends the input, as on the server). */
function lex(text: string): Scanned[] {
  const out: Scanned[] = [];
  let pos = 0;
  // As the server's lexer: a NUL reads like the end of the input.
  const read = (): string => (pos < text.length ? text[pos++]! : (pos++, '\0'));
  for (;;) {
    let ch = read();
    while (WHITESPACE.has(ch)) ch = read();
    if (ch === '\0') {
      out.push({ tok: 'end', lit: '' });
      return out;
    }
    if (SYMBOLS.has(ch)) {
      let buffer = ch;
      let last = buffer;
      for (;;) {
        const next = read();
        if (next === '\0') break; // consumed, as the server does
        if (SYMBOLS.has(next) && SYMBOL_TOKENS.has(buffer + next)) {
          buffer += next;
          last = buffer;
        } else {
          pos--;
          break;
        }
      }
      out.push({ tok: last as Token, lit: last });
      continue;
    }
    let word = ch;
    for (;;) {
      const next = read();
      if (next === '\0') break; // consumed, as the server does
      if (SYMBOLS.has(next) || WHITESPACE.has(next)) {
        pos--;
        break;
      }
      word += next;
    }
    out.push({ tok: word === 'in' || word === 'notin' ? word : 'id', lit: word });
  }
}

class SelectorSyntaxError extends Error {}

/** A recursive-descent parser over the tokens, as the server's (`in`/`notin` are identifiers where a value may stand). */
class LabelParser {
  private position = 0;
  constructor(private readonly items: readonly Scanned[]) {}

  private peek(values = true): Scanned {
    const s = this.items[this.position]!;
    return values && (s.tok === 'in' || s.tok === 'notin') ? { tok: 'id', lit: s.lit } : s;
  }
  private next(values = true): Scanned {
    const s = this.peek(values);
    this.position++;
    return s;
  }

  parse(): LabelRequirement[] {
    const out: LabelRequirement[] = [];
    for (;;) {
      const { tok, lit } = this.peek();
      if (tok === 'end') return out;
      if (tok !== 'id' && tok !== '!') throw new SelectorSyntaxError(`found '${lit}', expected: !, identifier, or 'end of string'`);
      try {
        out.push(this.requirement());
      } catch (e) {
        if (e instanceof SelectorSyntaxError) throw new SelectorSyntaxError(`unable to parse requirement: ${e.message}`);
        throw e;
      }
      const after = this.next();
      if (after.tok === 'end') return out;
      if (after.tok !== ',') throw new SelectorSyntaxError(`found '${after.lit}', expected: ',' or 'end of string'`);
      const t2 = this.peek();
      if (t2.tok !== 'id' && t2.tok !== '!') throw new SelectorSyntaxError(`found '${t2.lit}', expected: identifier after ','`);
    }
  }

  private requirement(): LabelRequirement {
    let first = this.next();
    const negated = first.tok === '!';
    if (negated) first = this.next();
    if (first.tok !== 'id') throw new SelectorSyntaxError(`found '${first.lit}', expected: identifier`);
    const key = checkKey(first.lit);
    const after = this.peek().tok;
    if (negated) return { key, op: '!exists' };
    if (after === 'end' || after === ',') return { key, op: 'exists' };
    const op = this.next(false);
    switch (op.tok) {
      case 'in':
      case 'notin':
        return { key, op: op.tok, values: new Set(checkValues(key, this.values())) };
      case '=':
      case '==':
      case '!=':
        return { key, op: op.tok === '!=' ? 'notin' : 'in', values: new Set([checkValue(key, this.exactValue())]) };
      case '>':
      case '<': {
        const raw = this.exactValue();
        const problems: string[] = [];
        const n = /^[+-]?[0-9]+$/.test(raw) ? BigInt(raw) : undefined;
        if (n === undefined || n > INT64_MAX || n < -INT64_MAX - 1n) problems.push(`values[0]: Invalid value: ${JSON.stringify(raw)}: for 'Gt', 'Lt' operators, the value must be an integer`);
        const vp = labelValueProblem(raw);
        if (vp) problems.push(`values[0][${key}]: Invalid value: ${JSON.stringify(raw)}: ${vp}`);
        // several errors as apimachinery prints an aggregate of them: in brackets (found by the generated selector differential)
        if (problems.length > 0) throw new SelectorSyntaxError(problems.length === 1 ? problems[0]! : `[${problems.join(', ')}]`);
        return { key, op: op.tok === '>' ? 'gt' : 'lt', value: n! };
      }
      default:
        throw new SelectorSyntaxError(`found '${op.lit}', expected: in, notin, =, ==, !=, gt, lt`);
    }
  }

  private values(): string[] {
    const open = this.next();
    if (open.tok !== '(') throw new SelectorSyntaxError(`found '${open.lit}' expected: '('`);
    const first = this.peek();
    if (first.tok === ')') {
      this.next();
      return [''];
    }
    if (first.tok !== 'id' && first.tok !== ',') throw new SelectorSyntaxError(`found '${first.lit}', expected: ',', ')' or identifier`);
    const out = new Set<string>();
    for (;;) {
      const t = this.next();
      if (t.tok === 'id') {
        out.add(t.lit);
        const t2 = this.peek();
        if (t2.tok === ',') continue;
        if (t2.tok === ')') break;
        throw new SelectorSyntaxError(`found '${t2.lit}', expected: ',' or ')'`);
      } else if (t.tok === ',') {
        if (out.size === 0) out.add('');
        const t2 = this.peek();
        if (t2.tok === ')') {
          out.add('');
          break;
        }
        // ",," is an empty value; the next round reads the second comma (so "(a,,)" is accepted, as the API server accepts it).
        if (t2.tok === ',') out.add('');
      } else {
        throw new SelectorSyntaxError(`found '${t.lit}', expected: ',', or identifier`);
      }
    }
    const close = this.next();
    if (close.tok !== ')') throw new SelectorSyntaxError(`found '${first.lit}', expected: ')'`);
    return [...out];
  }

  private exactValue(): string {
    const t = this.peek();
    if (t.tok === 'end' || t.tok === ',') return '';
    this.next();
    if (t.tok === 'id') return t.lit;
    throw new SelectorSyntaxError(`found '${t.lit}', expected: identifier`);
  }
}

function checkKey(key: string): string {
  // one error whatever the key's problems (joined with '; ', as the server's selector parser does), with no field path: Go prints <nil>
  const problem = labelKeyProblem(key);
  if (problem) throw new SelectorSyntaxError(`<nil>: Invalid value: ${JSON.stringify(key)}: ${problem}`);
  return key;
}

/**
 * A set's values as apimachinery's NewRequirement checks them: sorted (Go's byte order, as `sets.List` gives them), each
 * problem at its index, several in one aggregate (found by the generated selector differential: `app in (,-1)`
 * names `values[1]`).
 */
function checkValues(key: string, values: readonly string[]): string[] {
  const sorted = [...values].sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
  const problems: string[] = [];
  sorted.forEach((value, i) => {
    const problem = labelValueProblem(value);
    if (problem) problems.push(`values[${i}][${key}]: Invalid value: ${JSON.stringify(value)}: ${problem}`);
  });
  if (problems.length > 0) throw new SelectorSyntaxError(problems.length === 1 ? problems[0]! : `[${problems.join(', ')}]`);
  return sorted;
}

function checkValue(key: string, value: string): string {
  const problem = labelValueProblem(value);
  if (problem) throw new SelectorSyntaxError(`values[0][${key}]: Invalid value: ${JSON.stringify(value)}: ${problem}`);
  return value;
}

/**
 * Parse a label selector (a string in the API server's syntax, or a map of
 * exact matches, read as the server reads `k1=v1,k2=v2`); an empty one
 * matches everything. What the API server refuses, this refuses.
 *
 * @throws ClientError `InvalidRequest` with the server's explanation.
 *
 * @example
 * ```ts
 * const wanted = parseLabelSelector('app=web,env in (prod,staging),!canary,replicas>2');
 * matchesLabels(wanted, pod.metadata?.labels); // true or false
 * ```
 */
export function parseLabelSelector(selector: Selector | undefined): LabelRequirement[] {
  const text = renderSelector(selector) ?? '';
  try {
    return new LabelParser(lex(text)).parse();
  } catch (e) {
    if (!(e instanceof SelectorSyntaxError)) throw e;
    // the parser's words alone are the error's cause: what the API server's 400 says
    throw new ClientError('InvalidRequest', `invalid label selector ${JSON.stringify(text)}: ${e.message}`, { cause: e });
  }
}

/** A label's value as a signed 64-bit integer, as the server reads it for `>` and `<`; undefined if it is not one. */
function int64(value: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(value)) return undefined;
  const n = BigInt(value);
  return n > INT64_MAX || n < -INT64_MAX - 1n ? undefined : n;
}

/**
 * Whether `labels` meet every requirement, as the API server decides.
 *
 * @example
 * ```ts
 * matchesLabels(parseLabelSelector({ app: 'web' }), { app: 'web', tier: 'fe' }); // true
 * matchesLabels(parseLabelSelector('replicas>2'), { replicas: '3' }); // true
 * ```
 */
export function matchesLabels(requirements: readonly LabelRequirement[], labels: Readonly<Record<string, string>> | undefined): boolean {
  for (const r of requirements) {
    const value = labels !== undefined && Object.hasOwn(labels, r.key) ? labels[r.key] : undefined;
    switch (r.op) {
      case 'in':
        if (value === undefined || !r.values.has(value)) return false;
        break;
      case 'notin':
        if (value !== undefined && r.values.has(value)) return false;
        break;
      case 'exists':
        if (value === undefined) return false;
        break;
      case '!exists':
        if (value !== undefined) return false;
        break;
      case 'gt':
      case 'lt': {
        const n = value === undefined ? undefined : int64(value);
        if (n === undefined || (r.op === 'gt' ? n <= r.value : n >= r.value)) return false;
        break;
      }
    }
  }
  return true;
}

/** One parsed term of a field selector. */
export interface FieldRequirement {
  /** The field label, e.g. `metadata.name` or `status.phase`: a dotted path. */
  readonly path: string;
  /** `=` / `==` (true) or `!=` (false). */
  readonly equal: boolean;
  /** The value, escapes resolved. */
  readonly value: string;
}

/** Split on commas not escaped with a backslash. */
function splitFieldTerms(text: string): string[] {
  const terms: string[] = [];
  let start = 0;
  let escaped = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (escaped) escaped = false;
    else if (c === '\\') escaped = true;
    else if (c === ',') {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(text.slice(start));
  return terms;
}

const FIELD_OPERATORS = ['!=', '==', '='] as const;
const FIELD_PATH = /^[A-Za-z0-9_\-/]+(\.[A-Za-z0-9_\-/]+)*$/;

function fieldValueOf(raw: string, term: string): string {
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === '\\') {
      const next = raw[i + 1];
      if (next !== '\\' && next !== ',' && next !== '=') {
        throw new SelectorSyntaxError(next === undefined ? `invalid escape sequence: \\ at the end of ${JSON.stringify(term)}` : `invalid escape sequence: \\${next} in ${JSON.stringify(term)}`);
      }
      out += next;
      i++;
    } else if (c === ',' || c === '=') {
      throw new SelectorSyntaxError(`invalid field selector: unescaped ${c} in the value of ${JSON.stringify(term)} (write \\${c})`);
    } else out += c;
  }
  return out;
}

/**
 * Parse a field selector: exact matches only (`=`, `==`, `!=`), values with
 * `\,`, `\=` and `\\` escapes, no spaces trimmed (the server reads
 * `a = b` as the field `a ` and the value ` b`, and refuses it). The API
 * server supports only some fields per kind (`metadata.name`,
 * `metadata.namespace`, a kind's own like `status.phase`, a CRD's
 * `selectableFields`); in memory any dotted path can be compared.
 *
 * @throws ClientError `InvalidRequest` naming the term it cannot parse.
 *
 * @example
 * ```ts
 * const [req] = parseFieldSelector('status.phase!=Running');
 * if (req) (fieldValue(pod, req.path) === req.value) === req.equal; // matches?
 * ```
 */
export function parseFieldSelector(selector: Selector | undefined): FieldRequirement[] {
  const text = renderSelector(selector) ?? '';
  const out: FieldRequirement[] = [];
  try {
    for (const term of splitFieldTerms(text)) {
      if (term === '') continue;
      let found: { at: number; op: (typeof FIELD_OPERATORS)[number] } | undefined;
      for (let i = 0; i < term.length && !found; i++) {
        const op = FIELD_OPERATORS.find((o) => term.startsWith(o, i));
        if (op) found = { at: i, op };
      }
      if (!found) throw new SelectorSyntaxError(`can't understand ${JSON.stringify(term)} (exact matches only: field=value, field==value, field!=value)`);
      const path = term.slice(0, found.at);
      const rest = term.slice(found.at + found.op.length);
      // The server reads an empty field with an empty value (`=`, `!=`) as no requirement at all.
      if (path === '' && rest === '') continue;
      if (!FIELD_PATH.test(path)) throw new SelectorSyntaxError(`${JSON.stringify(path)} in ${JSON.stringify(term)} is not a field path (e.g. metadata.name; spaces are not trimmed)`);
      out.push({ path, equal: found.op !== '!=', value: fieldValueOf(rest, term) });
    }
  } catch (e) {
    if (!(e instanceof SelectorSyntaxError)) throw e;
    throw new ClientError('InvalidRequest', `invalid field selector ${JSON.stringify(text)}: ${e.message}`);
  }
  return out;
}

/**
 * Stands for a field whose value is an object or array: the API server's
 * field selectors compare scalars only, so it equals no selector value (and
 * every `!=` matches). Never serialised: an object can be nested deeper than
 * `JSON.stringify` can follow.
 */
const NOT_A_SCALAR = '\u0000(object)';

/**
 * The string value of a dotted path in an object, as the API server compares
 * it (`''` when absent). Walks only the path's own steps.
 *
 * @example
 * ```ts
 * fieldValue(pod, 'spec.nodeName'); // 'node-1'
 * ```
 */
export function fieldValue(obj: unknown, path: string): string {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return '';
    cur = (cur as Record<string, unknown>)[part];
  }
  if (cur === undefined || cur === null) return '';
  return typeof cur === 'string' ? cur : typeof cur === 'number' || typeof cur === 'bigint' || typeof cur === 'boolean' ? String(cur) : NOT_A_SCALAR;
}

/**
 * Whether an object meets every field requirement, comparing the values of
 * their paths as strings ({@link fieldValue}).
 *
 * @example
 * ```ts
 * matchesFields(parseFieldSelector('status.phase=Running'), pod); // true or false
 * ```
 */
export function matchesFields(requirements: readonly FieldRequirement[], obj: unknown): boolean {
  return requirements.every((f) => (fieldValue(obj, f.path) === f.value) === f.equal);
}
