import { describe, expect, it } from 'vitest';
import * as scheme from '../src/index.js';
import { builtinScheme, corev1, eventsv1, formatGroupVersionKind } from '../src/index.js';
import type { ResourceDescriptor } from '../src/index.js';

/** Every built-in: apiVersion, kind, plural, namespaced, list kind, as the API server serves them. */
const EXPECTED: readonly [string, string, string | undefined, boolean, string | undefined][] = [
  ['v1', 'Pod', 'pods', true, 'PodList'],
  ['v1', 'Service', 'services', true, 'ServiceList'],
  ['v1', 'ConfigMap', 'configmaps', true, 'ConfigMapList'],
  ['v1', 'Secret', 'secrets', true, 'SecretList'],
  ['v1', 'Namespace', 'namespaces', false, 'NamespaceList'],
  ['v1', 'Node', 'nodes', false, 'NodeList'],
  ['v1', 'ServiceAccount', 'serviceaccounts', true, 'ServiceAccountList'],
  ['v1', 'Endpoints', 'endpoints', true, 'EndpointsList'],
  ['v1', 'Event', 'events', true, 'EventList'],
  ['v1', 'PersistentVolume', 'persistentvolumes', false, 'PersistentVolumeList'],
  ['v1', 'PersistentVolumeClaim', 'persistentvolumeclaims', true, 'PersistentVolumeClaimList'],
  ['v1', 'ReplicationController', 'replicationcontrollers', true, 'ReplicationControllerList'],
  ['v1', 'ResourceQuota', 'resourcequotas', true, 'ResourceQuotaList'],
  ['v1', 'LimitRange', 'limitranges', true, 'LimitRangeList'],
  ['apps/v1', 'Deployment', 'deployments', true, 'DeploymentList'],
  ['apps/v1', 'StatefulSet', 'statefulsets', true, 'StatefulSetList'],
  ['apps/v1', 'DaemonSet', 'daemonsets', true, 'DaemonSetList'],
  ['apps/v1', 'ReplicaSet', 'replicasets', true, 'ReplicaSetList'],
  ['apps/v1', 'ControllerRevision', 'controllerrevisions', true, 'ControllerRevisionList'],
  ['batch/v1', 'Job', 'jobs', true, 'JobList'],
  ['batch/v1', 'CronJob', 'cronjobs', true, 'CronJobList'],
  ['coordination.k8s.io/v1', 'Lease', 'leases', true, 'LeaseList'],
  ['events.k8s.io/v1', 'Event', 'events', true, 'EventList'],
  ['rbac.authorization.k8s.io/v1', 'Role', 'roles', true, 'RoleList'],
  ['rbac.authorization.k8s.io/v1', 'RoleBinding', 'rolebindings', true, 'RoleBindingList'],
  ['rbac.authorization.k8s.io/v1', 'ClusterRole', 'clusterroles', false, 'ClusterRoleList'],
  ['rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', 'clusterrolebindings', false, 'ClusterRoleBindingList'],
  ['apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'customresourcedefinitions', false, 'CustomResourceDefinitionList'],
  ['policy/v1', 'PodDisruptionBudget', 'poddisruptionbudgets', true, 'PodDisruptionBudgetList'],
  ['policy/v1', 'Eviction', undefined, true, undefined],
  ['networking.k8s.io/v1', 'Ingress', 'ingresses', true, 'IngressList'],
  ['networking.k8s.io/v1', 'IngressClass', 'ingressclasses', false, 'IngressClassList'],
  ['networking.k8s.io/v1', 'NetworkPolicy', 'networkpolicies', true, 'NetworkPolicyList'],
  ['discovery.k8s.io/v1', 'EndpointSlice', 'endpointslices', true, 'EndpointSliceList'],
  ['autoscaling/v2', 'HorizontalPodAutoscaler', 'horizontalpodautoscalers', true, 'HorizontalPodAutoscalerList'],
  ['admissionregistration.k8s.io/v1', 'ValidatingWebhookConfiguration', 'validatingwebhookconfigurations', false, 'ValidatingWebhookConfigurationList'],
  ['admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration', 'mutatingwebhookconfigurations', false, 'MutatingWebhookConfigurationList'],
  ['storage.k8s.io/v1', 'StorageClass', 'storageclasses', false, 'StorageClassList'],
];

describe('built-in descriptors', () => {
  it.each(EXPECTED)('%s %s: plural %s, namespaced %s, list %s', (apiVersion, kind, plural, namespaced, listKind) => {
    const d = builtinScheme.recognize({ apiVersion, kind });
    expect(d).toBeDefined();
    expect(d?.plural).toBe(plural);
    expect(d?.namespaced).toBe(namespaced);
    expect(d?.listKind).toBe(listKind);
    expect(Object.isFrozen(d)).toBe(true);
  });

  it('are exactly the kinds of builtinScheme', () => {
    expect(builtinScheme.size).toBe(EXPECTED.length);
    expect(builtinScheme.descriptors().map((d) => `${d.apiVersion} ${d.kind}`)).toEqual(EXPECTED.map(([apiVersion, kind]) => `${apiVersion} ${kind}`));
  });

  it('are exported by name as the same objects as in their group modules', () => {
    const byName = scheme as unknown as Record<string, ResourceDescriptor | undefined>;
    const grouped = Object.entries(scheme).filter(([, value]) => typeof value === 'object' && value !== null && 'groupVersion' in value);
    expect(grouped.map(([name]) => name).sort()).toEqual([
      'admissionregistrationv1',
      'apiextensionsv1',
      'appsv1',
      'autoscalingv2',
      'batchv1',
      'coordinationv1',
      'corev1',
      'discoveryv1',
      'eventsv1',
      'networkingv1',
      'policyv1',
      'rbacv1',
      'storagev1',
    ]);
    let named = 0;
    for (const [, module] of grouped) {
      const mod = module as { groupVersion: { group: string; version: string }; kinds: readonly ResourceDescriptor[] };
      expect(Object.isFrozen(mod.kinds)).toBe(true);
      for (const d of mod.kinds) {
        expect(d.group).toBe(mod.groupVersion.group);
        expect(d.version).toBe(mod.groupVersion.version);
        expect(builtinScheme.lookup(d)).toBe(d);
        if (d.kind === 'Event') continue; // two groups have one: only exported grouped
        expect(byName[d.kind], formatGroupVersionKind(d)).toBe(d);
        named += 1;
      }
    }
    expect(named).toBe(EXPECTED.length - 2);
    expect(byName.Event).toBeUndefined();
  });

  it('tell the two Event kinds apart by group', () => {
    expect(corev1.Event).not.toBe(eventsv1.Event);
    expect(corev1.Event.apiVersion).toBe('v1');
    expect(eventsv1.Event.apiVersion).toBe('events.k8s.io/v1');
    expect(builtinScheme.lookupGroupKind({ group: 'events.k8s.io', kind: 'Event' })).toEqual([eventsv1.Event]);
  });
});
