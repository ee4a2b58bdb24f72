/**
 * The seed's custom resource, crd-demo.io/v1 HardDisk, defined by its
 * schema: the TypeScript type is inferred from it and `kubeloop generate
 * crds` writes crd/harddisks.crd-demo.io.yaml from it (scripts/test.sh checks
 * the committed file with --check).
 */
import { defineKind } from '@kubeloop/scheme';
import type { ObjectOf } from '@kubeloop/scheme';
import { Type, k8s } from '@kubeloop/scheme/schema';

export const HardDisk = defineKind({
  group: 'crd-demo.io',
  version: 'v1',
  kind: 'HardDisk',
  plural: 'harddisks',
  namespaced: true,
  listKind: 'HardDiskList',
  schema: {
    spec: Type.Optional(
      Type.Object({
        // Not a quantity pattern on purpose: the operator reports a malformed size in status (phase Invalid).
        size: Type.String({ description: 'Capacity, as a Kubernetes quantity (10Gi).' }),
        storageClass: Type.Optional(Type.String({ description: 'Storage class; default "standard".' })),
      }),
    ),
    status: Type.Object({
      phase: Type.Optional(k8s.Enum(['Pending', 'Bound', 'Invalid'])),
      configMapName: Type.Optional(Type.String()),
      observedGeneration: Type.Optional(Type.Integer()),
      conditions: Type.Optional(k8s.Conditions()),
    }),
  },
  crd: {
    shortNames: ['hd'],
    subresources: { status: true },
    printerColumns: [
      { name: 'Size', type: 'string', jsonPath: '.spec.size' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    ],
  },
});

/** A HardDisk object: inferred from the schema above (`metadata` is an ObjectMeta). */
export type HardDisk = ObjectOf<typeof HardDisk>;

/** The finalizer the operator puts on every HardDisk. */
export const FINALIZER = 'crd-demo.io/release-disk';
