/**
 * Owner references: make one object the controller or an owner of another
 * (garbage collection and the builder's `owns` both follow them).
 */
import type { AnyKubeObject } from '@kubeloop/client/internal';
import type { DeepReadonly } from '@kubeloop/client';
import type { KubeObject, OwnerReference } from '@kubeloop/scheme';
import { ManagerError } from '../errors.js';

function ownerRef(owner: AnyKubeObject, controller: boolean): OwnerReference {
  const m = owner.metadata;
  if (!owner.apiVersion || !owner.kind || !m?.name || !m.uid) {
    throw new ManagerError('InvalidOptions', 'an owner needs apiVersion, kind, metadata.name and metadata.uid (read it from the server first)');
  }
  return { apiVersion: owner.apiVersion, kind: owner.kind, name: m.name, uid: m.uid, ...(controller ? { controller: true, blockOwnerDeletion: true } : {}) };
}

function checkScope(owner: AnyKubeObject, obj: AnyKubeObject): void {
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
export function setControllerReference<T extends KubeObject>(owner: AnyKubeObject, obj: T): T {
  checkScope(owner, obj);
  const ref = ownerRef(owner, true);
  const refs = obj.metadata?.ownerReferences ?? [];
  const other = refs.find((r) => r.controller && r.uid !== ref.uid);
  if (other) throw new ManagerError('InvalidOptions', `${obj.metadata?.name ?? 'object'} is already controlled by ${other.kind} ${other.name}`);
  obj.metadata = { ...obj.metadata, ownerReferences: [...refs.filter((r) => r.uid !== ref.uid), ref] };
  return obj;
}

/**
 * Add `owner` as a (non-controller) owner of `obj`.
 *
 * @example
 * ```ts
 * setOwnerReference(team, configMap);
 * ```
 */
export function setOwnerReference<T extends KubeObject>(owner: AnyKubeObject, obj: T): T {
  checkScope(owner, obj);
  const ref = ownerRef(owner, false);
  const refs = obj.metadata?.ownerReferences ?? [];
  obj.metadata = { ...obj.metadata, ownerReferences: [...refs.filter((r) => r.uid !== ref.uid), ref] };
  return obj;
}

/**
 * The controller owner reference of `obj`, if any.
 *
 * @example
 * ```ts
 * const owner = getControllerOf(configMap); // { kind: 'HardDisk', name: 'disk-1', ... }
 * ```
 */
export function getControllerOf(obj: AnyKubeObject): DeepReadonly<OwnerReference> | undefined {
  return obj.metadata?.ownerReferences?.find((r) => r.controller === true);
}

