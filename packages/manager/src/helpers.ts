/**
 * Helpers operator authors reach for: owner and controller references,
 * finalizers, create-or-update / create-or-patch, and status conditions.
 */
import type { Client, WithKind } from '@kubeloop/client';
import { isNotFound, mergeFrom, retryOnConflict } from '@kubeloop/client';
import type { KubeObject, OwnerReference } from '@kubeloop/scheme';
import { ManagerError } from './errors.js';

function ownerRef(owner: KubeObject, controller: boolean): OwnerReference {
  const m = owner.metadata;
  if (!owner.apiVersion || !owner.kind || !m?.name || !m.uid) {
    throw new ManagerError('InvalidOptions', 'an owner needs apiVersion, kind, metadata.name and metadata.uid (read it from the server first)');
  }
  return { apiVersion: owner.apiVersion, kind: owner.kind, name: m.name, uid: m.uid, ...(controller ? { controller: true, blockOwnerDeletion: true } : {}) };
}

function checkScope(owner: KubeObject, obj: KubeObject): void {
  const on = owner.metadata?.namespace;
  const n = obj.metadata?.namespace;
  if (on && on !== n) {
    throw new ManagerError('InvalidOptions', `cross-namespace owner references are not allowed: owner in ${on}, object in ${n ?? '(cluster scope)'}`);
  }
}

/**
 * Make `owner` the controller of `obj` (garbage collection and `owns` both use it).
 * Throws if another object already controls it.
 *
 * @example
 * ```ts
 * setControllerReference(disk, configMap);
 * ```
 */
export function setControllerReference<T extends KubeObject>(owner: KubeObject, obj: T): T {
  checkScope(owner, obj);
  const ref = ownerRef(owner, true);
  const refs = obj.metadata?.ownerReferences ?? [];
  const other = refs.find((r) => r.controller && r.uid !== ref.uid);
  if (other) throw new ManagerError('InvalidOptions', `${obj.metadata?.name ?? 'object'} is already controlled by ${other.kind} ${other.name}`);
  obj.metadata = { ...obj.metadata, ownerReferences: [...refs.filter((r) => r.uid !== ref.uid), ref] };
  return obj;
}

/** Add `owner` as a (non-controller) owner of `obj`. */
export function setOwnerReference<T extends KubeObject>(owner: KubeObject, obj: T): T {
  checkScope(owner, obj);
  const ref = ownerRef(owner, false);
  const refs = obj.metadata?.ownerReferences ?? [];
  obj.metadata = { ...obj.metadata, ownerReferences: [...refs.filter((r) => r.uid !== ref.uid), ref] };
  return obj;
}

/** The controller owner reference of `obj`, if any. */
export function getControllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata?.ownerReferences?.find((r) => r.controller === true);
}

/** Whether `obj` carries `finalizer`. */
export function containsFinalizer(obj: KubeObject, finalizer: string): boolean {
  return obj.metadata?.finalizers?.includes(finalizer) ?? false;
}

/**
 * Run the finalizer protocol for `obj`, conflict-safe:
 * - not being deleted and without the finalizer → add it (patch, optimistic lock);
 * - being deleted with the finalizer → run `cleanup`, then remove it;
 * Returns `'deleting'` when the object is going away (stop reconciling), else `'present'`.
 *
 * @example
 * ```ts
 * if ((await finalize(client, disk, 'crd-demo.io/cleanup', () => releaseDisk(disk))) === 'deleting') return Result.done();
 * ```
 */
export async function finalize<T extends KubeObject>(client: Client, obj: WithKind<T>, finalizer: string, cleanup: () => Promise<void> | void): Promise<'present' | 'deleting'> {
  const deleting = Boolean(obj.metadata?.deletionTimestamp);
  if (!deleting) {
    if (!containsFinalizer(obj, finalizer)) {
      await patchFinalizers(client, obj, (list) => [...list, finalizer]);
    }
    return 'present';
  }
  if (containsFinalizer(obj, finalizer)) {
    await cleanup();
    await patchFinalizers(client, obj, (list) => list.filter((f) => f !== finalizer));
  }
  return 'deleting';
}

async function patchFinalizers<T extends KubeObject>(client: Client, obj: WithKind<T>, change: (list: string[]) => string[]): Promise<void> {
  let current: WithKind<T> = obj;
  await retryOnConflict(async (attempt) => {
    if (attempt > 1) {
      const fresh = await client.apiReader.get({ apiVersion: obj.apiVersion, kind: obj.kind }, { name: obj.metadata!.name!, ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}) });
      current = fresh as unknown as WithKind<T>;
    }
    const before = { metadata: { finalizers: current.metadata?.finalizers ?? [], resourceVersion: current.metadata?.resourceVersion } };
    const after = { metadata: { finalizers: change([...(current.metadata?.finalizers ?? [])]), resourceVersion: current.metadata?.resourceVersion } };
    await client.patch(current, mergeFrom(before, after, { optimisticLock: true })).catch((err: unknown) => {
      if (isNotFound(err)) return undefined; // gone already: nothing to finalize
      throw err;
    });
  });
}

/** Deep equality of JSON values, ignoring object key order (the API server sorts map keys). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]));
  }
  const ak = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const bk = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** What createOrUpdate / createOrPatch did. */
export type OperationResult = 'created' | 'updated' | 'unchanged';

/**
 * Read `obj` (by its kind, namespace and name); create it after `mutate` if
 * missing, else run `mutate` on the current object and update it if that
 * changed anything. Retries on conflict.
 *
 * @example
 * ```ts
 * const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace } };
 * await createOrUpdate(client, cm, (c) => { c.data = { size: disk.spec.size }; setControllerReference(disk, c); });
 * ```
 */
export function createOrUpdate<T extends KubeObject>(client: Client, obj: WithKind<T>, mutate: (obj: WithKind<T>) => void): Promise<OperationResult> {
  return createOr('update', client, obj, mutate);
}

/** As {@link createOrUpdate}, but sends a merge patch of what `mutate` changed (status included via the status subresource). */
export function createOrPatch<T extends KubeObject>(client: Client, obj: WithKind<T>, mutate: (obj: WithKind<T>) => void): Promise<OperationResult> {
  return createOr('patch', client, obj, mutate);
}

async function createOr<T extends KubeObject>(how: 'update' | 'patch', client: Client, obj: WithKind<T>, mutate: (obj: WithKind<T>) => void): Promise<OperationResult> {
  const name = obj.metadata?.name;
  if (!name) throw new ManagerError('InvalidOptions', 'createOrUpdate needs metadata.name');
  const key = { name, ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}) };
  return retryOnConflict(async () => {
    let existing: WithKind<T> | undefined;
    try {
      existing = structuredClone(await client.apiReader.get({ apiVersion: obj.apiVersion, kind: obj.kind }, key)) as unknown as WithKind<T>;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!existing) {
      const fresh = structuredClone(obj);
      mutate(fresh);
      await client.create(fresh);
      return 'created';
    }
    const before = structuredClone(existing);
    mutate(existing);
    if (jsonEqual(before, existing)) return 'unchanged';
    if (how === 'update') {
      await client.update(existing);
    } else {
      const { status: _s1, ...beforeMain } = before as KubeObject & { status?: unknown };
      const { status: _s2, ...afterMain } = existing as KubeObject & { status?: unknown };
      if (!jsonEqual(beforeMain, afterMain)) await client.patch(existing, mergeFrom(beforeMain, afterMain));
      if (!jsonEqual(_s1, _s2)) await client.status().patch(existing, mergeFrom({ status: _s1 }, { status: _s2 }));
    }
    return 'updated';
  });
}

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
 * setStatusCondition(disk.status.conditions ??= [], { type: 'Ready', status: 'True', reason: 'Provisioned', message: 'ok', observedGeneration: disk.metadata.generation });
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

/** The condition of a type, if present. */
export function findStatusCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Whether a condition of this type is True. */
export function isStatusConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findStatusCondition(conditions, type)?.status === 'True';
}
