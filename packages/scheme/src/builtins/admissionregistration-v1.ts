/**
 * Built-in kinds of the `admissionregistration.k8s.io` API group, version `v1`: their wire types and descriptors.
 *
 * Each name is both a type (the object as JSON from the API server) and a
 * descriptor value (group/version/kind, plural, scope, list kind).
 *
 * @example
 * ```ts
 * import { admissionregistrationv1 } from '@kubeloop/scheme';
 *
 * const d = admissionregistrationv1.ValidatingWebhookConfiguration; // { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', plural: 'validatingwebhookconfigurations', ... }
 * const obj: admissionregistrationv1.ValidatingWebhookConfiguration = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: 'example' } };
 * ```
 */
import type { V1MutatingWebhookConfiguration, V1ValidatingWebhookConfiguration } from '@kubernetes/client-node';
import { defineKind } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import type { GroupVersion } from '../group-version.js';
import type { WireObject } from '../wire.js';

/** The `admissionregistration.k8s.io` API group, version `v1`. */
export const groupVersion: GroupVersion = Object.freeze({ group: 'admissionregistration.k8s.io', version: 'v1' });

/** Validating admission webhooks (cluster-scoped). */
export type ValidatingWebhookConfiguration = WireObject<V1ValidatingWebhookConfiguration, 'admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration'>;
/** Descriptor of ValidatingWebhookConfiguration.v1.admissionregistration.k8s.io: `validatingwebhookconfigurations`, cluster-scoped, lists are `ValidatingWebhookConfigurationList`. */
export const ValidatingWebhookConfiguration = defineKind<ValidatingWebhookConfiguration>({ group: 'admissionregistration.k8s.io', version: 'v1', kind: 'ValidatingWebhookConfiguration', plural: 'validatingwebhookconfigurations', namespaced: false, listKind: 'ValidatingWebhookConfigurationList' });

/** Mutating admission webhooks (cluster-scoped). */
export type MutatingWebhookConfiguration = WireObject<V1MutatingWebhookConfiguration, 'admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration'>;
/** Descriptor of MutatingWebhookConfiguration.v1.admissionregistration.k8s.io: `mutatingwebhookconfigurations`, cluster-scoped, lists are `MutatingWebhookConfigurationList`. */
export const MutatingWebhookConfiguration = defineKind<MutatingWebhookConfiguration>({ group: 'admissionregistration.k8s.io', version: 'v1', kind: 'MutatingWebhookConfiguration', plural: 'mutatingwebhookconfigurations', namespaced: false, listKind: 'MutatingWebhookConfigurationList' });

/** Every descriptor of this module, for `SchemeBuilder.register(...kinds)`. */
export const kinds: readonly ResourceDescriptor[] = Object.freeze([ValidatingWebhookConfiguration, MutatingWebhookConfiguration]);
