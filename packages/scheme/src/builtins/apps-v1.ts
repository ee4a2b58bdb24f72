/**
 * Built-in kinds of the `apps` API group, version `v1`: their wire types and descriptors.
 *
 * Each name is both a type (the object as JSON from the API server) and a
 * descriptor value (group/version/kind, plural, scope, list kind).
 *
 * @example
 * ```ts
 * import { appsv1 } from '@kubeloop/scheme';
 *
 * const d = appsv1.Deployment; // { apiVersion: 'apps/v1', kind: 'Deployment', plural: 'deployments', ... }
 * const obj: appsv1.Deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'example' } };
 * ```
 */
import type { V1ControllerRevision, V1DaemonSet, V1Deployment, V1ReplicaSet, V1StatefulSet } from '@kubernetes/client-node';
import { defineKind } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import type { GroupVersion } from '../group-version.js';
import type { WireObject } from '../wire.js';

/** The `apps` API group, version `v1`. */
export const groupVersion: GroupVersion = Object.freeze({ group: 'apps', version: 'v1' });

/** A deployment: declarative updates of replicated pods through replica sets. */
export type Deployment = WireObject<V1Deployment, 'apps/v1', 'Deployment'>;
/** Descriptor of Deployment.v1.apps: `deployments`, namespaced, lists are `DeploymentList`. */
export const Deployment = defineKind<Deployment>({ group: 'apps', version: 'v1', kind: 'Deployment', plural: 'deployments', namespaced: true, listKind: 'DeploymentList' });

/** A stateful set: pods with stable identities and storage. */
export type StatefulSet = WireObject<V1StatefulSet, 'apps/v1', 'StatefulSet'>;
/** Descriptor of StatefulSet.v1.apps: `statefulsets`, namespaced, lists are `StatefulSetList`. */
export const StatefulSet = defineKind<StatefulSet>({ group: 'apps', version: 'v1', kind: 'StatefulSet', plural: 'statefulsets', namespaced: true, listKind: 'StatefulSetList' });

/** A daemon set: one pod per (matching) node. */
export type DaemonSet = WireObject<V1DaemonSet, 'apps/v1', 'DaemonSet'>;
/** Descriptor of DaemonSet.v1.apps: `daemonsets`, namespaced, lists are `DaemonSetList`. */
export const DaemonSet = defineKind<DaemonSet>({ group: 'apps', version: 'v1', kind: 'DaemonSet', plural: 'daemonsets', namespaced: true, listKind: 'DaemonSetList' });

/** A replica set: a number of identical pods. */
export type ReplicaSet = WireObject<V1ReplicaSet, 'apps/v1', 'ReplicaSet'>;
/** Descriptor of ReplicaSet.v1.apps: `replicasets`, namespaced, lists are `ReplicaSetList`. */
export const ReplicaSet = defineKind<ReplicaSet>({ group: 'apps', version: 'v1', kind: 'ReplicaSet', plural: 'replicasets', namespaced: true, listKind: 'ReplicaSetList' });

/** An immutable snapshot of state, as stateful sets and daemon sets keep for rollbacks. */
export type ControllerRevision = WireObject<V1ControllerRevision, 'apps/v1', 'ControllerRevision'>;
/** Descriptor of ControllerRevision.v1.apps: `controllerrevisions`, namespaced, lists are `ControllerRevisionList`. */
export const ControllerRevision = defineKind<ControllerRevision>({ group: 'apps', version: 'v1', kind: 'ControllerRevision', plural: 'controllerrevisions', namespaced: true, listKind: 'ControllerRevisionList' });

/** Every descriptor of this module, for `SchemeBuilder.register(...kinds)`. */
export const kinds: readonly ResourceDescriptor[] = Object.freeze([Deployment, StatefulSet, DaemonSet, ReplicaSet, ControllerRevision]);
