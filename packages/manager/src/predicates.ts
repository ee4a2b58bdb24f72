/**
 * Predicates filter events before they reach the workqueue, as
 * controller-runtime's do.
 */
import type { InformerEvent } from '@kubeloop/cache';
import type { Selector } from '@kubeloop/client';
import type { KubeObject } from '@kubeloop/scheme';
import { ManagerError } from './errors.js';
import { jsonEqual } from './helpers.js';

/** Decides whether an event enqueues anything. */
export type Predicate = (event: InformerEvent<KubeObject>) => boolean;

function onUpdate(test: (old: KubeObject, obj: KubeObject) => boolean): Predicate {
  return (e) => e.type !== 'update' || test(e.old, e.object);
}

// Key order does not matter: a relist or another client may serialise the same map differently.
const same = (a: unknown, b: unknown): boolean => jsonEqual(a ?? {}, b ?? {});

/**
 * Updates pass only when metadata.generation changed (spec changes, not status).
 *
 * @example
 * ```ts
 * builder.for(HardDisk, { predicates: [generationChanged()] });
 * ```
 */
export const generationChanged = (): Predicate => onUpdate((o, n) => o.metadata?.generation !== n.metadata?.generation);
/** Updates pass only when the resourceVersion changed (drops relist no-ops). */
export const resourceVersionChanged = (): Predicate => onUpdate((o, n) => o.metadata?.resourceVersion !== n.metadata?.resourceVersion);
/** Updates pass only when labels changed. */
export const labelsChanged = (): Predicate => onUpdate((o, n) => !same(o.metadata?.labels, n.metadata?.labels));
/** Updates pass only when annotations changed. */
export const annotationsChanged = (): Predicate => onUpdate((o, n) => !same(o.metadata?.annotations, n.metadata?.annotations));

type LabelTest = (labels: Readonly<Record<string, string>>) => boolean;

/** One term of a label selector string, in the API server's syntax. */
function labelTerm(term: string): LabelTest {
  const key = '([^\\s!=(),]+)';
  let m = new RegExp(`^${key}\\s+(in|notin)\\s+\\(([^)]*)\\)$`).exec(term);
  if (m) {
    const [, k, op, list] = m as unknown as [string, string, string, string];
    const values = new Set(list.split(',').map((v) => v.trim()).filter(Boolean));
    return op === 'in' ? (l) => l[k] !== undefined && values.has(l[k]) : (l) => l[k] === undefined || !values.has(l[k]);
  }
  m = new RegExp(`^${key}\\s*(==|=|!=)\\s*([^\\s!=(),]*)$`).exec(term);
  if (m) {
    const [, k, op, v] = m as unknown as [string, string, string, string];
    return op === '!=' ? (l) => l[k] !== v : (l) => l[k] === v;
  }
  m = new RegExp(`^(!?)\\s*${key}$`).exec(term);
  if (m) {
    const [, bang, k] = m as unknown as [string, string, string];
    return bang ? (l) => l[k] === undefined : (l) => l[k] !== undefined;
  }
  throw new ManagerError('InvalidOptions', `cannot parse label selector term ${JSON.stringify(term)}`);
}

/** Split a selector on the commas outside parentheses. */
function selectorTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = '';
  for (const c of selector) {
    if (c === ',' && depth === 0) {
      terms.push(current);
      current = '';
      continue;
    }
    if (c === '(') depth++;
    if (c === ')') depth--;
    current += c;
  }
  terms.push(current);
  return terms.map((t) => t.trim()).filter(Boolean);
}

/**
 * Events of objects whose labels match `selector`: exact matches
 * (`{ app: 'web' }`) or a selector string in the API server's syntax
 * (`app=web,tier!=db`, `env in (a,b)`, `env notin (c)`, `canary`, `!canary`).
 * On update, the new object decides.
 */
export function labelSelectorPredicate(selector: Selector): Predicate {
  const tests: LabelTest[] = typeof selector === 'string'
    ? selectorTerms(selector).map(labelTerm)
    : Object.entries(selector).map(([k, v]) => (l) => l[k] === v);
  return (e) => {
    const labels = e.object.metadata?.labels ?? {};
    return tests.every((t) => t(labels));
  };
}

/** All must pass. */
export const and = (...ps: Predicate[]): Predicate => (e) => ps.every((p) => p(e));
/** Any may pass. */
export const or = (...ps: Predicate[]): Predicate => (e) => ps.some((p) => p(e));
/** Inverts a predicate. */
export const not = (p: Predicate): Predicate => (e) => !p(e);
