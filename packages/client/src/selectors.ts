/**
 * Label and field selectors evaluated in memory, with the API server's
 * syntax: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`;
 * field selectors take `=`, `==` and `!=` on dotted paths. The one parser of
 * kubeloop: the informer cache filters with it, predicates match with it.
 */
import { ClientError } from './errors.js';
import type { Selector } from './options.js';

/** One parsed term of a label selector. */
export type LabelRequirement =
  | { readonly key: string; readonly op: 'in'; readonly values: ReadonlySet<string> }
  | { readonly key: string; readonly op: 'notin'; readonly values: ReadonlySet<string> }
  | { readonly key: string; readonly op: 'exists' }
  | { readonly key: string; readonly op: '!exists' };

/** Split on commas that are not inside parentheses. */
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
  return terms.map((t) => t.trim()).filter((t) => t.length > 0);
}

/**
 * Parse a label selector; an empty one matches everything.
 *
 * @throws ClientError `InvalidRequest` naming the term it cannot parse.
 *
 * @example
 * ```ts
 * const wanted = parseLabelSelector('app=web,env in (prod,staging),!canary');
 * matchesLabels(wanted, pod.metadata?.labels); // true or false
 * ```
 */
export function parseLabelSelector(selector: Selector | undefined): LabelRequirement[] {
  if (selector === undefined) return [];
  if (typeof selector !== 'string') {
    return Object.entries(selector).map(([key, value]) => ({ key, op: 'in', values: new Set([value]) }));
  }
  return splitTerms(selector).map((term): LabelRequirement => {
    let m = /^([^\s!=(),]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
    if (m) {
      const values = new Set(m[3]!.split(',').map((v) => v.trim()).filter((v) => v.length > 0));
      return { key: m[1]!, op: m[2] as 'in' | 'notin', values };
    }
    m = /^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/.exec(term);
    if (m) return { key: m[1]!, op: m[2] === '!=' ? 'notin' : 'in', values: new Set([m[3]!]) };
    m = /^!\s*([^\s!=(),]+)$/.exec(term);
    if (m) return { key: m[1]!, op: '!exists' };
    m = /^([^\s!=(),]+)$/.exec(term);
    if (m) return { key: m[1]!, op: 'exists' };
    throw new ClientError('InvalidRequest', `cannot parse label selector term ${JSON.stringify(term)}`);
  });
}

/**
 * Whether `labels` meet every requirement.
 *
 * @example
 * ```ts
 * matchesLabels(parseLabelSelector({ app: 'web' }), { app: 'web', tier: 'fe' }); // true
 * ```
 */
export function matchesLabels(requirements: readonly LabelRequirement[], labels: Readonly<Record<string, string>> | undefined): boolean {
  for (const r of requirements) {
    const value = labels?.[r.key];
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
    }
  }
  return true;
}

/** One parsed term of a field selector. */
export interface FieldRequirement {
  readonly path: string;
  readonly equal: boolean;
  readonly value: string;
}

/**
 * Parse a field selector: exact matches only (`=`, `==`, `!=`).
 *
 * @throws ClientError `InvalidRequest` naming the term it cannot parse.
 *
 * @example
 * ```ts
 * const [req] = parseFieldSelector('status.phase!=Running');
 * (fieldValue(pod, req.path) === req.value) === req.equal; // matches?
 * ```
 */
export function parseFieldSelector(selector: Selector | undefined): FieldRequirement[] {
  if (selector === undefined) return [];
  if (typeof selector !== 'string') return Object.entries(selector).map(([path, value]) => ({ path, equal: true, value }));
  return splitTerms(selector).map((term) => {
    const m = /^([A-Za-z0-9_.\-/]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!m) throw new ClientError('InvalidRequest', `cannot parse field selector term ${JSON.stringify(term)} (exact matches only)`);
    return { path: m[1]!, equal: m[2] !== '!=', value: m[3]!.trim() };
  });
}

/**
 * The string value of a dotted path in an object, as the API server compares it (`''` when absent).
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
  return typeof cur === 'string' ? cur : typeof cur === 'number' || typeof cur === 'boolean' ? String(cur) : JSON.stringify(cur);
}
