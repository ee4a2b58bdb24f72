/**
 * Status conditions (metav1.Condition): set one so that its
 * lastTransitionTime moves only when its status does; find and test them.
 */
import { jsonEqual } from '../internal/json-equal.js';

/** A status condition (metav1.Condition). */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

/**
 * Set a condition in a list: lastTransitionTime changes only when the status does.
 * Returns true when anything changed.
 *
 * @example
 * ```ts
 * const status = (disk.status ??= {});
 * setStatusCondition((status.conditions ??= []), { type: 'Ready', status: 'True', reason: 'Provisioned', message: 'ok', observedGeneration: disk.metadata?.generation ?? 0 });
 * ```
 */
export function setStatusCondition(conditions: Condition[], condition: Condition, now: Date = new Date()): boolean {
  const i = conditions.findIndex((c) => c.type === condition.type);
  const time = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  if (i < 0) {
    conditions.push({ ...condition, lastTransitionTime: condition.lastTransitionTime ?? time });
    return true;
  }
  const old = conditions[i]!;
  const next: Condition = {
    ...condition,
    lastTransitionTime: old.status === condition.status ? (old.lastTransitionTime ?? time) : (condition.lastTransitionTime ?? time),
  };
  const changed = !jsonEqual(old, next);
  conditions[i] = next;
  return changed;
}

/**
 * The condition of a type, if present.
 *
 * @example
 * ```ts
 * const ready = findStatusCondition(disk.status?.conditions, 'Ready');
 * ```
 */
export function findStatusCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * Whether a condition of this type is True.
 *
 * @example
 * ```ts
 * if (isStatusConditionTrue(disk.status?.conditions, 'Ready')) return Result.done();
 * ```
 */
export function isStatusConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findStatusCondition(conditions, type)?.status === 'True';
}
