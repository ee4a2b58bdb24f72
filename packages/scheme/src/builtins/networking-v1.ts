/**
 * Built-in kinds of the `networking.k8s.io` API group, version `v1`: their wire types and descriptors.
 *
 * Each name is both a type (the object as JSON from the API server) and a
 * descriptor value (group/version/kind, plural, scope, list kind).
 *
 * @example
 * ```ts
 * import { networkingv1 } from '@kubeloop/scheme';
 *
 * const d = networkingv1.Ingress; // { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', plural: 'ingresses', ... }
 * const obj: networkingv1.Ingress = { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'example' } };
 * ```
 */
import type { V1Ingress, V1IngressClass, V1NetworkPolicy } from '@kubernetes/client-node';
import { defineKind } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import type { GroupVersion } from '../group-version.js';
import type { WireObject } from '../wire.js';

/** The `networking.k8s.io` API group, version `v1`. */
export const groupVersion: GroupVersion = Object.freeze({ group: 'networking.k8s.io', version: 'v1' });

/** An ingress: HTTP routing from outside the cluster to services. */
export type Ingress = WireObject<V1Ingress, 'networking.k8s.io/v1', 'Ingress'>;
/** Descriptor of Ingress.v1.networking.k8s.io: `ingresses`, namespaced, lists are `IngressList`. */
export const Ingress = defineKind<Ingress>({ group: 'networking.k8s.io', version: 'v1', kind: 'Ingress', plural: 'ingresses', namespaced: true, listKind: 'IngressList' });

/** An ingress class: which controller implements ingresses (cluster-scoped). */
export type IngressClass = WireObject<V1IngressClass, 'networking.k8s.io/v1', 'IngressClass'>;
/** Descriptor of IngressClass.v1.networking.k8s.io: `ingressclasses`, cluster-scoped, lists are `IngressClassList`. */
export const IngressClass = defineKind<IngressClass>({ group: 'networking.k8s.io', version: 'v1', kind: 'IngressClass', plural: 'ingressclasses', namespaced: false, listKind: 'IngressClassList' });

/** A network policy: allowed traffic to and from pods; ingress rules keep their JSON name `from`. */
export type NetworkPolicy = WireObject<V1NetworkPolicy, 'networking.k8s.io/v1', 'NetworkPolicy'>;
/** Descriptor of NetworkPolicy.v1.networking.k8s.io: `networkpolicies`, namespaced, lists are `NetworkPolicyList`. */
export const NetworkPolicy = defineKind<NetworkPolicy>({ group: 'networking.k8s.io', version: 'v1', kind: 'NetworkPolicy', plural: 'networkpolicies', namespaced: true, listKind: 'NetworkPolicyList' });

/** Every descriptor of this module, for `SchemeBuilder.register(...kinds)`. */
export const kinds: readonly ResourceDescriptor[] = Object.freeze([Ingress, IngressClass, NetworkPolicy]);
