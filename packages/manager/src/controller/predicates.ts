/**
 * Predicates filter events before they reach the workqueue, as
 * controller-runtime's do.
 */
import type { InformerEvent } from '@kubeloop/cache';
import { matchesLabels, parseLabelSelector } from '@kubeloop/client';
import type { Selector } from '@kubeloop/client/internal';
import type { KubeObject } from '@kubeloop/scheme';
import { describeError, ManagerError } from '../errors.js';
import { jsonEqual } from '../internal/json-equal.js';

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

/**
 * Events of objects whose labels match `selector`: exact matches
 * (`{ app: 'web' }`) or a selector string in the API server's syntax
 * (`app=web,tier!=db`, `env in (a,b)`, `env notin (c)`, `canary`, `!canary`).
 * On update, the new object decides.
 */
export function labelSelectorPredicate(selector: Selector): Predicate {
  let requirements;
  try {
    requirements = parseLabelSelector(selector);
  } catch (cause) {
    throw new ManagerError('InvalidOptions', describeError(cause), { cause });
  }
  return (e) => matchesLabels(requirements, e.object.metadata?.labels);
}

/** All must pass. */
export const and = (...ps: Predicate[]): Predicate => (e) => ps.every((p) => p(e));
/** Any may pass. */
export const or = (...ps: Predicate[]): Predicate => (e) => ps.some((p) => p(e));
/** Inverts a predicate. */
export const not = (p: Predicate): Predicate => (e) => !p(e);
