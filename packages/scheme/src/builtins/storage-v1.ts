/**
 * Built-in kinds of the `storage.k8s.io` API group, version `v1`: their wire types and descriptors.
 *
 * Each name is both a type (the object as JSON from the API server) and a
 * descriptor value (group/version/kind, plural, scope, list kind).
 *
 * @example
 * ```ts
 * import { storagev1 } from '@kubeloop/scheme';
 *
 * const d = storagev1.StorageClass; // { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', plural: 'storageclasses', ... }
 * const obj: storagev1.StorageClass = { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'example' }, provisioner: 'example.com/disk' };
 * ```
 */
import type { V1StorageClass } from '@kubernetes/client-node';
import { defineKind } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import type { GroupVersion } from '../group-version.js';
import type { WireObject } from '../wire.js';

/** The `storage.k8s.io` API group, version `v1`. */
export const groupVersion: GroupVersion = Object.freeze({ group: 'storage.k8s.io', version: 'v1' });

/** A storage class: how volumes of a class are provisioned (cluster-scoped). */
export type StorageClass = WireObject<V1StorageClass, 'storage.k8s.io/v1', 'StorageClass'>;
/** Descriptor of StorageClass.v1.storage.k8s.io: `storageclasses`, cluster-scoped, lists are `StorageClassList`. */
export const StorageClass = defineKind<StorageClass>({ group: 'storage.k8s.io', version: 'v1', kind: 'StorageClass', plural: 'storageclasses', namespaced: false, listKind: 'StorageClassList' });

/** Every descriptor of this module, for `SchemeBuilder.register(...kinds)`. */
export const kinds: readonly ResourceDescriptor[] = Object.freeze([StorageClass]);
