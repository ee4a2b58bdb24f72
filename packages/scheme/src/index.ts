/**
 * `@kubeloop/scheme` names the kinds kubeloop works with. It sits at the
 * bottom of the import graph: the mapper, client, cache and manager all take
 * its descriptors and schemes, and it imports none of them.
 *
 * - Group/version/kind and group/version/resource types, with parsing and
 *   formatting of their text forms (`apps/v1`, `v1`, `Deployment.v1.apps`,
 *   `Deployment.apps`, `deployments.v1.apps`).
 * - Resource descriptors: frozen values naming a kind, its plural, scope and
 *   list kind, and carrying its TypeScript type, so `client.get(Pod, key)`
 *   returns a `Pod`. `defineKind` declares a custom resource, either from a
 *   schema (the type is inferred; the CRD is generated from it; builders in
 *   `@kubeloop/scheme/schema`, validation in `@kubeloop/scheme/validation`)
 *   or with a hand-written type (`defineKind<T>()`).
 * - Wire types for the built-in kinds users touch most, derived from
 *   `@kubernetes/client-node`'s models with every timestamp a `string`, as on
 *   the wire. Each built-in name is both the type and its descriptor
 *   (`Pod`, `Deployment`); all are also grouped by API group (`corev1.Pod`,
 *   `eventsv1.Event`). `Event` exists in two groups and is only exported
 *   grouped.
 * - `Scheme`: an immutable registry of kinds, made by a `SchemeBuilder`.
 *   Registration is idempotent, conflicts are errors naming both sides, a
 *   built scheme never changes (`extend` returns a new one) and there is no
 *   global mutable scheme: `builtinScheme` is immutable.
 *
 * @example
 * ```ts
 * import { builtinScheme, defineKind, Pod } from '@kubeloop/scheme';
 * import type { KubeObject } from '@kubeloop/scheme';
 *
 * interface HardDisk extends KubeObject {
 *   apiVersion?: 'crd-demo.io/v1';
 *   kind?: 'HardDisk';
 *   spec: { sizeGiB: number };
 * }
 * const HardDisk = defineKind<HardDisk>({
 *   group: 'crd-demo.io', version: 'v1', kind: 'HardDisk',
 *   plural: 'harddisks', namespaced: true, listKind: 'HardDiskList',
 * });
 *
 * const scheme = builtinScheme.extend(HardDisk);
 * scheme.recognize({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' }) === HardDisk;    // true
 * scheme.recognizeList({ apiVersion: 'crd-demo.io/v1', kind: 'HardDiskList' }) === HardDisk; // true
 * scheme.recognize({ apiVersion: 'v1', kind: 'Pod' }) === Pod;                           // true
 * ```
 *
 * @packageDocumentation
 */
export {
  formatGroupKind,
  formatGroupResource,
  formatGroupVersion,
  formatGroupVersionKind,
  formatGroupVersionResource,
  parseApiVersion,
  parseGroupKind,
  parseGroupResource,
  parseGroupVersion,
  parseGroupVersionKind,
  parseGroupVersionResource,
  readGroupVersionKind,
} from './group-version.js';
export type { GroupKind, GroupResource, GroupVersion, GroupVersionKind, GroupVersionResource } from './group-version.js';
export { defineKind, describeDescriptor, sameDescriptor } from './descriptor.js';
export type { KindDefinition, ObjectOf, ResourceDescriptor } from './descriptor.js';
export type {
  ApiVersionOf,
  ConversionWebhookTarget,
  CustomResourceOptions,
  JsonSchema,
  KindSchema,
  PrinterColumn,
  RootProperties,
  ScaleSubresource,
  SchemaKindDefinition,
  SchemaKindObject,
  ValidationRule,
} from './kind-schema.js';
export type { KubeObject, ListMeta, ObjectList, ObjectMeta, OwnerReference, Wire, WireObject } from './wire.js';
export { parseJson, stringifyJson } from './json.js';
export { createScheme, createSchemeBuilder, isScheme } from './scheme.js';
export type { Scheme, SchemeBuilder, SchemeJSON } from './scheme.js';
export { builtinScheme } from './builtin-scheme.js';
export { SchemeError, isSchemeError } from './errors.js';
export type { FieldError, FieldErrorType, SchemaProblem, SchemeErrorReason } from './errors.js';

// Built-in kinds, grouped by API group (`corev1.Pod`, `eventsv1.Event`).
export * as admissionregistrationv1 from './builtins/admissionregistration-v1.js';
export * as apiextensionsv1 from './builtins/apiextensions-v1.js';
export * as appsv1 from './builtins/apps-v1.js';
export * as autoscalingv2 from './builtins/autoscaling-v2.js';
export * as batchv1 from './builtins/batch-v1.js';
export * as coordinationv1 from './builtins/coordination-v1.js';
export * as corev1 from './builtins/core-v1.js';
export * as discoveryv1 from './builtins/discovery-v1.js';
export * as eventsv1 from './builtins/events-v1.js';
export * as networkingv1 from './builtins/networking-v1.js';
export * as policyv1 from './builtins/policy-v1.js';
export * as rbacv1 from './builtins/rbac-v1.js';
export * as storagev1 from './builtins/storage-v1.js';

// Built-in kinds by name: each is a type (the wire object) and a descriptor.
export {
  ConfigMap,
  Endpoints,
  LimitRange,
  Namespace,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  ReplicationController,
  ResourceQuota,
  Secret,
  Service,
  ServiceAccount,
} from './builtins/core-v1.js';
export { ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet } from './builtins/apps-v1.js';
export { CronJob, Job } from './builtins/batch-v1.js';
export { Lease } from './builtins/coordination-v1.js';
export { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from './builtins/rbac-v1.js';
export { CustomResourceDefinition } from './builtins/apiextensions-v1.js';
export { Eviction, PodDisruptionBudget } from './builtins/policy-v1.js';
export { Ingress, IngressClass, NetworkPolicy } from './builtins/networking-v1.js';
export { EndpointSlice } from './builtins/discovery-v1.js';
export { HorizontalPodAutoscaler } from './builtins/autoscaling-v2.js';
export { MutatingWebhookConfiguration, ValidatingWebhookConfiguration } from './builtins/admissionregistration-v1.js';
export { StorageClass } from './builtins/storage-v1.js';
