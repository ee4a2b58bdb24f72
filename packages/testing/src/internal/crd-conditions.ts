/**
 * A CustomResourceDefinition's status conditions, set as apiextensions'
 * `SetCRDCondition` sets them: a condition of a new type is appended; one
 * already there keeps its place and takes the new status, reason and
 * message, and its `lastTransitionTime` moves only when its status changes.
 * The CRD storage's delete (delete.ts) and the finalizer controller
 * (controllers/crds.ts) both mark a CRD Terminating through it.
 */
import { isObject } from './json.js';
import type { Json } from './json.js';

export interface CRDCondition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
}

/** Set `condition` in `crd`'s status, in place (the status and its conditions are replaced by copies: an object they are shared with is left alone). */
export function setCRDCondition(crd: Json, condition: CRDCondition, now: string): void {
  const status = isObject(crd['status']) ? crd['status'] : {};
  const conditions = Array.isArray(status['conditions']) ? (status['conditions'] as unknown[]).filter(isObject).map((c) => ({ ...c })) : [];
  const existing = conditions.find((c) => c['type'] === condition.type);
  if (!existing) conditions.push({ type: condition.type, status: condition.status, lastTransitionTime: now, reason: condition.reason, message: condition.message });
  else {
    if (existing['status'] !== condition.status || existing['lastTransitionTime'] === undefined || existing['lastTransitionTime'] === null) existing['lastTransitionTime'] = now;
    existing['status'] = condition.status;
    existing['reason'] = condition.reason;
    existing['message'] = condition.message;
  }
  crd['status'] = { ...status, conditions };
}

/** The Terminating condition the CRD storage sets on the first delete. */
export const DELETION_PENDING: CRDCondition = { type: 'Terminating', status: 'True', reason: 'InstanceDeletionPending', message: 'CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon' };

/** The Terminating condition the finalizer controller sets while it deletes the custom resources. */
export const DELETION_IN_PROGRESS: CRDCondition = { type: 'Terminating', status: 'True', reason: 'InstanceDeletionInProgress', message: 'CustomResource deletion is in progress' };
