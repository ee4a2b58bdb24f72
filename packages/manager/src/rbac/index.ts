/**
 * `@kubeloop/manager/rbac`: the permissions a manager needs, the roles that
 * grant them, and the RBAC authorizer's decision on recorded requests (what
 * `kubeloop generate rbac` and its recording mode are built on).
 *
 * @example
 * ```ts
 * import { rolesFor } from '@kubeloop/manager/rbac';
 * const roles = rolesFor(manager.permissions(), { name: 'harddisk-operator' });
 * ```
 */
export { requiredPermissions, shardRingPermission } from './permissions.js';
export type { NonResourcePermission, Permission, PermissionRequirement, PermissionSources, ResourceName, ResourcePermission, Verb } from './permissions.js';
export { auditRequests, authorize, requestAttributes, rolesFor, ruleAllows } from './policy.js';
export type { DeniedRequest, PolicyRule, RequestAttributes, RequestAudit, RoleManifest, RolesOptions, UnusedGrant } from './policy.js';
