/**
 * Built-in kinds of the `coordination.k8s.io` API group, version `v1`: their wire types and descriptors.
 *
 * Each name is both a type (the object as JSON from the API server) and a
 * descriptor value (group/version/kind, plural, scope, list kind).
 *
 * @example
 * ```ts
 * import { coordinationv1 } from '@kubeloop/scheme';
 *
 * const d = coordinationv1.Lease; // { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', plural: 'leases', ... }
 * const obj: coordinationv1.Lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'example' } };
 * ```
 */
import type { V1Lease } from '@kubernetes/client-node';
import { defineKind } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import type { GroupVersion } from '../group-version.js';
import type { WireObject } from '../wire.js';

/** The `coordination.k8s.io` API group, version `v1`. */
export const groupVersion: GroupVersion = Object.freeze({ group: 'coordination.k8s.io', version: 'v1' });

/** A lease, as leader election and node heartbeats use; `acquireTime` and `renewTime` are strings (MicroTime) on the wire. */
export type Lease = WireObject<V1Lease, 'coordination.k8s.io/v1', 'Lease'>;
/** Descriptor of Lease.v1.coordination.k8s.io: `leases`, namespaced, lists are `LeaseList`. */
export const Lease = defineKind<Lease>({ group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true, listKind: 'LeaseList' });

/** Every descriptor of this module, for `SchemeBuilder.register(...kinds)`. */
export const kinds: readonly ResourceDescriptor[] = Object.freeze([Lease]);
