/**
 * Built-in kinds of the `rbac.authorization.k8s.io` API group, version `v1`: their wire types and descriptors.
 *
 * Each name is both a type (the object as JSON from the API server) and a
 * descriptor value (group/version/kind, plural, scope, list kind).
 *
 * @example
 * ```ts
 * import { rbacv1 } from '@kubeloop/scheme';
 *
 * const d = rbacv1.Role; // { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', plural: 'roles', ... }
 * const obj: rbacv1.Role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'example' } };
 * ```
 */
import type { V1ClusterRole, V1ClusterRoleBinding, V1Role, V1RoleBinding } from '@kubernetes/client-node';
import { defineKind } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import type { GroupVersion } from '../group-version.js';
import type { WireObject } from '../wire.js';

/** The `rbac.authorization.k8s.io` API group, version `v1`. */
export const groupVersion: GroupVersion = Object.freeze({ group: 'rbac.authorization.k8s.io', version: 'v1' });

/** A role: permissions within one namespace. */
export type Role = WireObject<V1Role, 'rbac.authorization.k8s.io/v1', 'Role'>;
/** Descriptor of Role.v1.rbac.authorization.k8s.io: `roles`, namespaced, lists are `RoleList`. */
export const Role = defineKind<Role>({ group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'Role', plural: 'roles', namespaced: true, listKind: 'RoleList' });

/** A role binding: grants a role or cluster role within one namespace. */
export type RoleBinding = WireObject<V1RoleBinding, 'rbac.authorization.k8s.io/v1', 'RoleBinding'>;
/** Descriptor of RoleBinding.v1.rbac.authorization.k8s.io: `rolebindings`, namespaced, lists are `RoleBindingList`. */
export const RoleBinding = defineKind<RoleBinding>({ group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'RoleBinding', plural: 'rolebindings', namespaced: true, listKind: 'RoleBindingList' });

/** A cluster role: permissions cluster-wide or reusable in namespaces (cluster-scoped). */
export type ClusterRole = WireObject<V1ClusterRole, 'rbac.authorization.k8s.io/v1', 'ClusterRole'>;
/** Descriptor of ClusterRole.v1.rbac.authorization.k8s.io: `clusterroles`, cluster-scoped, lists are `ClusterRoleList`. */
export const ClusterRole = defineKind<ClusterRole>({ group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRole', plural: 'clusterroles', namespaced: false, listKind: 'ClusterRoleList' });

/** A cluster role binding: grants a cluster role cluster-wide (cluster-scoped). */
export type ClusterRoleBinding = WireObject<V1ClusterRoleBinding, 'rbac.authorization.k8s.io/v1', 'ClusterRoleBinding'>;
/** Descriptor of ClusterRoleBinding.v1.rbac.authorization.k8s.io: `clusterrolebindings`, cluster-scoped, lists are `ClusterRoleBindingList`. */
export const ClusterRoleBinding = defineKind<ClusterRoleBinding>({ group: 'rbac.authorization.k8s.io', version: 'v1', kind: 'ClusterRoleBinding', plural: 'clusterrolebindings', namespaced: false, listKind: 'ClusterRoleBindingList' });

/** Every descriptor of this module, for `SchemeBuilder.register(...kinds)`. */
export const kinds: readonly ResourceDescriptor[] = Object.freeze([Role, RoleBinding, ClusterRole, ClusterRoleBinding]);
