/**
 * Built-in kinds of the `autoscaling` API group, version `v2`: their wire types and descriptors.
 *
 * Each name is both a type (the object as JSON from the API server) and a
 * descriptor value (group/version/kind, plural, scope, list kind).
 *
 * @example
 * ```ts
 * import { autoscalingv2 } from '@kubeloop/scheme';
 *
 * const d = autoscalingv2.HorizontalPodAutoscaler; // { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', plural: 'horizontalpodautoscalers', ... }
 * const obj: autoscalingv2.HorizontalPodAutoscaler = { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: { name: 'example' }, spec: { scaleTargetRef: { kind: 'Deployment', name: 'web' }, maxReplicas: 3 } };
 * ```
 */
import type { V2HorizontalPodAutoscaler } from '@kubernetes/client-node';
import { defineKind } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import type { GroupVersion } from '../group-version.js';
import type { WireObject } from '../wire.js';

/** The `autoscaling` API group, version `v2`. */
export const groupVersion: GroupVersion = Object.freeze({ group: 'autoscaling', version: 'v2' });

/** A horizontal pod autoscaler. */
export type HorizontalPodAutoscaler = WireObject<V2HorizontalPodAutoscaler, 'autoscaling/v2', 'HorizontalPodAutoscaler'>;
/** Descriptor of HorizontalPodAutoscaler.v2.autoscaling: `horizontalpodautoscalers`, namespaced, lists are `HorizontalPodAutoscalerList`. */
export const HorizontalPodAutoscaler = defineKind<HorizontalPodAutoscaler>({ group: 'autoscaling', version: 'v2', kind: 'HorizontalPodAutoscaler', plural: 'horizontalpodautoscalers', namespaced: true, listKind: 'HorizontalPodAutoscalerList' });

/** Every descriptor of this module, for `SchemeBuilder.register(...kinds)`. */
export const kinds: readonly ResourceDescriptor[] = Object.freeze([HorizontalPodAutoscaler]);
