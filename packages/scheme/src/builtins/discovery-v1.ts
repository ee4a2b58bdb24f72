/**
 * Built-in kinds of the `discovery.k8s.io` API group, version `v1`: their wire types and descriptors.
 *
 * Each name is both a type (the object as JSON from the API server) and a
 * descriptor value (group/version/kind, plural, scope, list kind).
 *
 * @example
 * ```ts
 * import { discoveryv1 } from '@kubeloop/scheme';
 *
 * const d = discoveryv1.EndpointSlice; // { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', plural: 'endpointslices', ... }
 * const obj: discoveryv1.EndpointSlice = { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'example' }, addressType: 'IPv4' };
 * ```
 */
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { defineKind } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import type { GroupVersion } from '../group-version.js';
import type { WireObject } from '../wire.js';

/** The `discovery.k8s.io` API group, version `v1`. */
export const groupVersion: GroupVersion = Object.freeze({ group: 'discovery.k8s.io', version: 'v1' });

/** An endpoint slice: a subset of the endpoints of a service. */
export type EndpointSlice = WireObject<V1EndpointSlice, 'discovery.k8s.io/v1', 'EndpointSlice'>;
/** Descriptor of EndpointSlice.v1.discovery.k8s.io: `endpointslices`, namespaced, lists are `EndpointSliceList`. */
export const EndpointSlice = defineKind<EndpointSlice>({ group: 'discovery.k8s.io', version: 'v1', kind: 'EndpointSlice', plural: 'endpointslices', namespaced: true, listKind: 'EndpointSliceList' });

/** Every descriptor of this module, for `SchemeBuilder.register(...kinds)`. */
export const kinds: readonly ResourceDescriptor[] = Object.freeze([EndpointSlice]);
