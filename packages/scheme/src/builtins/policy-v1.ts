/**
 * Built-in kinds of the `policy` API group, version `v1`: their wire types and descriptors.
 *
 * Each name is both a type (the object as JSON from the API server) and a
 * descriptor value (group/version/kind, plural, scope, list kind).
 *
 * @example
 * ```ts
 * import { policyv1 } from '@kubeloop/scheme';
 *
 * const d = policyv1.PodDisruptionBudget; // { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets', ... }
 * const obj: policyv1.PodDisruptionBudget = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'example' } };
 * ```
 */
import type { V1Eviction, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { defineKind } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import type { GroupVersion } from '../group-version.js';
import type { WireObject } from '../wire.js';

/** The `policy` API group, version `v1`. */
export const groupVersion: GroupVersion = Object.freeze({ group: 'policy', version: 'v1' });

/** A pod disruption budget: how many pods voluntary disruptions may take down. */
export type PodDisruptionBudget = WireObject<V1PodDisruptionBudget, 'policy/v1', 'PodDisruptionBudget'>;
/** Descriptor of PodDisruptionBudget.v1.policy: `poddisruptionbudgets`, namespaced, lists are `PodDisruptionBudgetList`. */
export const PodDisruptionBudget = defineKind<PodDisruptionBudget>({ group: 'policy', version: 'v1', kind: 'PodDisruptionBudget', plural: 'poddisruptionbudgets', namespaced: true, listKind: 'PodDisruptionBudgetList' });

/**
 * An eviction: a request to delete a pod that honours disruption budgets.
 */
export type Eviction = WireObject<V1Eviction, 'policy/v1', 'Eviction'>;
/**
 * Descriptor of Eviction.v1.policy: namespaced, with no plural and no list
 * kind, because it is only served as the `eviction` subresource of pods
 * (`POST /api/v1/namespaces/{namespace}/pods/{name}/eviction`).
 */
export const Eviction = defineKind<Eviction>({ group: 'policy', version: 'v1', kind: 'Eviction', namespaced: true });

/** Every descriptor of this module, for `SchemeBuilder.register(...kinds)`. */
export const kinds: readonly ResourceDescriptor[] = Object.freeze([PodDisruptionBudget, Eviction]);
