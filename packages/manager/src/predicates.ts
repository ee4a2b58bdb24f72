/**
 * Predicates filter events before they reach the workqueue, as
 * controller-runtime's do.
 */
import type { InformerEvent } from '@kubeloop/cache';
import type { Selector } from '@kubeloop/client';
import type { KubeObject } from '@kubeloop/scheme';

/** Decides whether an event enqueues anything. */
export type Predicate = (event: InformerEvent<KubeObject>) => boolean;

function onUpdate(test: (old: KubeObject, obj: KubeObject) => boolean): Predicate {
  return (e) => e.type !== 'update' || test(e.old, e.object);
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});

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

/** Events of objects whose labels match `selector` (exact matches: `{ app: 'web' }` or `app=web,tier=db`). */
export function labelSelectorPredicate(selector: Selector): Predicate {
  const pairs = typeof selector === 'string'
    ? selector.split(',').filter(Boolean).map((t) => t.split('=').map((s) => s.trim()) as [string, string])
    : Object.entries(selector);
  return (e) => pairs.every(([k, v]) => e.object.metadata?.labels?.[k] === v);
}

/** All must pass. */
export const and = (...ps: Predicate[]): Predicate => (e) => ps.every((p) => p(e));
/** Any may pass. */
export const or = (...ps: Predicate[]): Predicate => (e) => ps.some((p) => p(e));
/** Inverts a predicate. */
export const not = (p: Predicate): Predicate => (e) => !p(e);
