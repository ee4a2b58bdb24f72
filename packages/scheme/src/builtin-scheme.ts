/**
 * `builtinScheme`: an immutable scheme of every built-in kind this package
 * describes, built once at import. It is the usual starting point:
 * `builtinScheme.extend(HardDisk)` or
 * `createSchemeBuilder().include(builtinScheme)`.
 */
import { kinds as admissionregistrationv1 } from './builtins/admissionregistration-v1.js';
import { kinds as apiextensionsv1 } from './builtins/apiextensions-v1.js';
import { kinds as appsv1 } from './builtins/apps-v1.js';
import { kinds as autoscalingv2 } from './builtins/autoscaling-v2.js';
import { kinds as batchv1 } from './builtins/batch-v1.js';
import { kinds as coordinationv1 } from './builtins/coordination-v1.js';
import { kinds as corev1 } from './builtins/core-v1.js';
import { kinds as discoveryv1 } from './builtins/discovery-v1.js';
import { kinds as eventsv1 } from './builtins/events-v1.js';
import { kinds as networkingv1 } from './builtins/networking-v1.js';
import { kinds as policyv1 } from './builtins/policy-v1.js';
import { kinds as rbacv1 } from './builtins/rbac-v1.js';
import { kinds as storagev1 } from './builtins/storage-v1.js';
import type { Scheme } from './scheme.js';
import { createSchemeBuilder } from './scheme.js';

/**
 * Every built-in kind of this package: core/v1, apps/v1, batch/v1,
 * coordination.k8s.io/v1, events.k8s.io/v1, rbac.authorization.k8s.io/v1,
 * apiextensions.k8s.io/v1, policy/v1, networking.k8s.io/v1,
 * discovery.k8s.io/v1, autoscaling/v2, admissionregistration.k8s.io/v1 and
 * storage.k8s.io/v1. Immutable: extending it returns a new scheme.
 *
 * @example
 * ```ts
 * import { builtinScheme, defineKind } from '@kubeloop/scheme';
 *
 * const scheme = builtinScheme.extend(HardDisk);
 * builtinScheme.recognize({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' }); // undefined: unchanged
 * scheme.recognize({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' });        // HardDisk
 * ```
 */
export const builtinScheme: Scheme = createSchemeBuilder()
  .register(
    ...corev1,
    ...appsv1,
    ...batchv1,
    ...coordinationv1,
    ...eventsv1,
    ...rbacv1,
    ...apiextensionsv1,
    ...policyv1,
    ...networkingv1,
    ...discoveryv1,
    ...autoscalingv2,
    ...admissionregistrationv1,
    ...storagev1,
  )
  .build();
