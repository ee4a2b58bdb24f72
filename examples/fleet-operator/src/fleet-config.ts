/**
 * The example's kind: a cluster-scoped `FleetConfig` in the host cluster.
 * Its `spec.data` is copied as a ConfigMap (same name, in `spec.namespace`)
 * into every member cluster of the fleet; each member reports back in
 * `status.members[]`, one entry per cluster, written with server-side apply
 * by a field manager of that cluster's own (`fleet-operator/<cluster>`), so
 * members never overwrite each other's entries.
 */
import { defineKind } from '@kubeloop/scheme';
import type { ObjectOf } from '@kubeloop/scheme';
import { Type, k8s } from '@kubeloop/scheme/schema';

/** One member's report: which generation of the FleetConfig its copy holds, and a `Synced` condition. */
const MemberStatus = Type.Object({
  cluster: Type.String({ description: 'The member cluster, as its provider names it (the kubeconfig Secret\'s name).' }),
  syncedGeneration: Type.Optional(Type.Integer({ description: 'The FleetConfig generation the member\'s ConfigMap holds.' })),
  conditions: Type.Optional(k8s.Conditions()),
});

export const FleetConfig = defineKind({
  group: 'fleet-demo.io',
  version: 'v1alpha1',
  kind: 'FleetConfig',
  plural: 'fleetconfigs',
  listKind: 'FleetConfigList',
  namespaced: false,
  schema: {
    spec: Type.Object({
      namespace: Type.String({ description: 'The namespace of the ConfigMap in every member (created when missing).', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 }),
      data: Type.Optional(k8s.Map(Type.String(), { description: 'The ConfigMap\'s data.' })),
    }),
    status: Type.Optional(
      Type.Object({
        members: Type.Optional(k8s.ListMap(MemberStatus, ['cluster'], { description: 'One entry per engaged member cluster.' })),
      }),
    ),
  },
  crd: {
    storage: true,
    shortNames: ['fc'],
    subresources: { status: true },
    printerColumns: [
      { name: 'Namespace', type: 'string', jsonPath: '.spec.namespace' },
      { name: 'Members', type: 'string', jsonPath: '.status.members[*].cluster' },
    ],
  },
});

/** A FleetConfig object, inferred from the schema. */
export type FleetConfig = ObjectOf<typeof FleetConfig>;

/** The label on every member ConfigMap the operator manages: its value is the FleetConfig's name. */
export const FLEETCONFIG_LABEL = 'fleet-demo.io/fleetconfig';

/** The field manager of a member's status entry. */
export const memberFieldManager = (cluster: string): string => `fleet-operator/${cluster}`;
