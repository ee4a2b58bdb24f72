/**
 * Built-in kinds of the `apiextensions.k8s.io` API group, version `v1`: their wire types and descriptors.
 *
 * Each name is both a type (the object as JSON from the API server) and a
 * descriptor value (group/version/kind, plural, scope, list kind).
 *
 * @example
 * ```ts
 * import { apiextensionsv1 } from '@kubeloop/scheme';
 *
 * const d = apiextensionsv1.CustomResourceDefinition; // { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', plural: 'customresourcedefinitions', ... }
 * const obj: apiextensionsv1.CustomResourceDefinition = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' }, spec: { group: 'example.com', names: { plural: 'widgets', kind: 'Widget' }, scope: 'Namespaced', versions: [] } };
 * ```
 */
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { defineKind } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import type { GroupVersion } from '../group-version.js';
import type { WireObject } from '../wire.js';

/** The `apiextensions.k8s.io` API group, version `v1`. */
export const groupVersion: GroupVersion = Object.freeze({ group: 'apiextensions.k8s.io', version: 'v1' });

/** A custom resource definition (cluster-scoped); its schemas keep their JSON names (`$ref`, `x-kubernetes-preserve-unknown-fields`, `default`). */
export type CustomResourceDefinition = WireObject<V1CustomResourceDefinition, 'apiextensions.k8s.io/v1', 'CustomResourceDefinition'>;
/** Descriptor of CustomResourceDefinition.v1.apiextensions.k8s.io: `customresourcedefinitions`, cluster-scoped, lists are `CustomResourceDefinitionList`. */
export const CustomResourceDefinition = defineKind<CustomResourceDefinition>({ group: 'apiextensions.k8s.io', version: 'v1', kind: 'CustomResourceDefinition', plural: 'customresourcedefinitions', namespaced: false, listKind: 'CustomResourceDefinitionList' });

/** Every descriptor of this module, for `SchemeBuilder.register(...kinds)`. */
export const kinds: readonly ResourceDescriptor[] = Object.freeze([CustomResourceDefinition]);
