/**
 * Built-in kinds of the core API group (`""`), version `v1`: their wire types and descriptors.
 *
 * Each name is both a type (the object as JSON from the API server) and a
 * descriptor value (group/version/kind, plural, scope, list kind).
 *
 * @example
 * ```ts
 * import { corev1 } from '@kubeloop/scheme';
 *
 * const d = corev1.Pod; // { apiVersion: 'v1', kind: 'Pod', plural: 'pods', ... }
 * const obj: corev1.Pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'example' } };
 * ```
 */
import type { CoreV1Event, V1ConfigMap, V1Endpoints, V1LimitRange, V1Namespace, V1Node, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1ReplicationController, V1ResourceQuota, V1Secret, V1Service, V1ServiceAccount } from '@kubernetes/client-node';
import { defineKind } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import type { GroupVersion } from '../group-version.js';
import type { WireObject } from '../wire.js';

/** The core API group (`""`), version `v1`. */
export const groupVersion: GroupVersion = Object.freeze({ group: '', version: 'v1' });

/** A pod: one or more containers scheduled together onto a node. */
export type Pod = WireObject<V1Pod, 'v1', 'Pod'>;
/** Descriptor of Pod.v1: `pods`, namespaced, lists are `PodList`. */
export const Pod = defineKind<Pod>({ group: '', version: 'v1', kind: 'Pod', plural: 'pods', namespaced: true, listKind: 'PodList' });

/** A service: a stable address and load balancing for a set of pods. */
export type Service = WireObject<V1Service, 'v1', 'Service'>;
/** Descriptor of Service.v1: `services`, namespaced, lists are `ServiceList`. */
export const Service = defineKind<Service>({ group: '', version: 'v1', kind: 'Service', plural: 'services', namespaced: true, listKind: 'ServiceList' });

/** A config map: non-secret configuration as string or binary (base64) data. */
export type ConfigMap = WireObject<V1ConfigMap, 'v1', 'ConfigMap'>;
/** Descriptor of ConfigMap.v1: `configmaps`, namespaced, lists are `ConfigMapList`. */
export const ConfigMap = defineKind<ConfigMap>({ group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true, listKind: 'ConfigMapList' });

/** A secret: sensitive data; `data` values are base64 strings on the wire. */
export type Secret = WireObject<V1Secret, 'v1', 'Secret'>;
/** Descriptor of Secret.v1: `secrets`, namespaced, lists are `SecretList`. */
export const Secret = defineKind<Secret>({ group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true, listKind: 'SecretList' });

/** A namespace (cluster-scoped). */
export type Namespace = WireObject<V1Namespace, 'v1', 'Namespace'>;
/** Descriptor of Namespace.v1: `namespaces`, cluster-scoped, lists are `NamespaceList`. */
export const Namespace = defineKind<Namespace>({ group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false, listKind: 'NamespaceList' });

/** A node of the cluster (cluster-scoped). */
export type Node = WireObject<V1Node, 'v1', 'Node'>;
/** Descriptor of Node.v1: `nodes`, cluster-scoped, lists are `NodeList`. */
export const Node = defineKind<Node>({ group: '', version: 'v1', kind: 'Node', plural: 'nodes', namespaced: false, listKind: 'NodeList' });

/** A service account: an identity for processes in pods. */
export type ServiceAccount = WireObject<V1ServiceAccount, 'v1', 'ServiceAccount'>;
/** Descriptor of ServiceAccount.v1: `serviceaccounts`, namespaced, lists are `ServiceAccountList`. */
export const ServiceAccount = defineKind<ServiceAccount>({ group: '', version: 'v1', kind: 'ServiceAccount', plural: 'serviceaccounts', namespaced: true, listKind: 'ServiceAccountList' });

/** The endpoints of a service (the plural is `endpoints`, the list kind `EndpointsList`). Superseded by EndpointSlice. */
export type Endpoints = WireObject<V1Endpoints, 'v1', 'Endpoints'>;
/** Descriptor of Endpoints.v1: `endpoints`, namespaced, lists are `EndpointsList`. */
export const Endpoints = defineKind<Endpoints>({ group: '', version: 'v1', kind: 'Endpoints', plural: 'endpoints', namespaced: true, listKind: 'EndpointsList' });

/** A core/v1 event. New code records events.k8s.io/v1 events (`eventsv1.Event`); both are served on the same storage. */
export type Event = WireObject<CoreV1Event, 'v1', 'Event'>;
/** Descriptor of Event.v1: `events`, namespaced, lists are `EventList`. */
export const Event = defineKind<Event>({ group: '', version: 'v1', kind: 'Event', plural: 'events', namespaced: true, listKind: 'EventList' });

/** A persistent volume (cluster-scoped). */
export type PersistentVolume = WireObject<V1PersistentVolume, 'v1', 'PersistentVolume'>;
/** Descriptor of PersistentVolume.v1: `persistentvolumes`, cluster-scoped, lists are `PersistentVolumeList`. */
export const PersistentVolume = defineKind<PersistentVolume>({ group: '', version: 'v1', kind: 'PersistentVolume', plural: 'persistentvolumes', namespaced: false, listKind: 'PersistentVolumeList' });

/** A claim on a persistent volume. */
export type PersistentVolumeClaim = WireObject<V1PersistentVolumeClaim, 'v1', 'PersistentVolumeClaim'>;
/** Descriptor of PersistentVolumeClaim.v1: `persistentvolumeclaims`, namespaced, lists are `PersistentVolumeClaimList`. */
export const PersistentVolumeClaim = defineKind<PersistentVolumeClaim>({ group: '', version: 'v1', kind: 'PersistentVolumeClaim', plural: 'persistentvolumeclaims', namespaced: true, listKind: 'PersistentVolumeClaimList' });

/** A replication controller (superseded by Deployment / ReplicaSet). */
export type ReplicationController = WireObject<V1ReplicationController, 'v1', 'ReplicationController'>;
/** Descriptor of ReplicationController.v1: `replicationcontrollers`, namespaced, lists are `ReplicationControllerList`. */
export const ReplicationController = defineKind<ReplicationController>({ group: '', version: 'v1', kind: 'ReplicationController', plural: 'replicationcontrollers', namespaced: true, listKind: 'ReplicationControllerList' });

/** A resource quota of a namespace. */
export type ResourceQuota = WireObject<V1ResourceQuota, 'v1', 'ResourceQuota'>;
/** Descriptor of ResourceQuota.v1: `resourcequotas`, namespaced, lists are `ResourceQuotaList`. */
export const ResourceQuota = defineKind<ResourceQuota>({ group: '', version: 'v1', kind: 'ResourceQuota', plural: 'resourcequotas', namespaced: true, listKind: 'ResourceQuotaList' });

/** Default and maximum resource limits in a namespace. */
export type LimitRange = WireObject<V1LimitRange, 'v1', 'LimitRange'>;
/** Descriptor of LimitRange.v1: `limitranges`, namespaced, lists are `LimitRangeList`. */
export const LimitRange = defineKind<LimitRange>({ group: '', version: 'v1', kind: 'LimitRange', plural: 'limitranges', namespaced: true, listKind: 'LimitRangeList' });

/** Every descriptor of this module, for `SchemeBuilder.register(...kinds)`. */
export const kinds: readonly ResourceDescriptor[] = Object.freeze([Pod, Service, ConfigMap, Secret, Namespace, Node, ServiceAccount, Endpoints, Event, PersistentVolume, PersistentVolumeClaim, ReplicationController, ResourceQuota, LimitRange]);
