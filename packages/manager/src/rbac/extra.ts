/**
 * Permissions that parts of the manager package built beside a manager (a
 * fleet) add to what it needs: in the host (`manager.permissions()`) and in
 * member clusters (`memberPermissions(manager)` of `@kubeloop/manager/fleet`).
 * Package-internal: a part registers a function, read when asked.
 */
import type { PermissionRequirement } from './permissions.js';

/** Where a permission is needed: the manager's own cluster, or the member clusters of its fleets. */
export type PermissionScope = 'host' | 'members';

const sources = new WeakMap<object, { scope: PermissionScope; read: () => readonly PermissionRequirement[] }[]>();

/** Add `read`'s permissions to what `manager` needs in `scope`. */
export function addPermissions(manager: object, scope: PermissionScope, read: () => readonly PermissionRequirement[]): void {
  const list = sources.get(manager) ?? [];
  list.push({ scope, read });
  sources.set(manager, list);
}

/** What the parts built beside `manager` need in `scope`, in the order they registered. */
export function addedPermissions(manager: object, scope: PermissionScope): PermissionRequirement[] {
  return (sources.get(manager) ?? []).filter((s) => s.scope === scope).flatMap((s) => [...s.read()]);
}
