/**
 * The seed's custom resource, HardDisk of crd-demo.io, in two versions
 * defined by their schemas: v1 (`size` as a quantity string, the storage
 * version and the one the operator reconciles) and v2 (`capacity` as value
 * and unit). The TypeScript types are inferred from the schemas and
 * `kubeloop generate crds` writes crd/harddisks.crd-demo.io.yaml from both
 * (scripts/test.sh checks the committed file with --check), with webhook
 * conversion between them (src/conversion.ts, served at /convert).
 */
import { defineKind } from '@kubeloop/scheme';
import type { ObjectOf } from '@kubeloop/scheme';
import { Type, k8s } from '@kubeloop/scheme/schema';

/**
 * Where the API server sends ConversionReviews in a cluster: the operator's
 * webhook Service (webhook/manifests.yaml names the same one). envtest's
 * installWebhooks points the CRD at a local server instead.
 */
const conversion = { service: { namespace: 'harddisk-operator-system', name: 'harddisk-operator-webhook', path: '/convert' } } as const;

/** What both versions share: the kind's names and scope, its status, the storage class, how kubectl shows it. */
const identity = { group: 'crd-demo.io', kind: 'HardDisk', plural: 'harddisks', namespaced: true, listKind: 'HardDiskList' } as const;
const storageClass = Type.Optional(Type.String({ description: 'Storage class; default "standard".' }));
const shared = { conversion, shortNames: ['hd'], subresources: { status: true } } as const;

const status = Type.Object({
  phase: Type.Optional(k8s.Enum(['Pending', 'Bound', 'Invalid'])),
  configMapName: Type.Optional(Type.String()),
  observedGeneration: Type.Optional(Type.Integer()),
  conditions: Type.Optional(k8s.Conditions()),
});

export const HardDisk = defineKind({
  ...identity,
  version: 'v1',
  schema: {
    spec: Type.Optional(
      Type.Object({
        // Not a quantity pattern on purpose: the operator reports a malformed size in status (phase Invalid).
        size: Type.String({ description: 'Capacity, as a Kubernetes quantity (10Gi).' }),
        storageClass,
      }),
    ),
    status,
  },
  crd: {
    ...shared,
    storage: true,
    printerColumns: [
      { name: 'Size', type: 'string', jsonPath: '.spec.size' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    ],
  },
});

/** A HardDisk object: inferred from the schema above (`metadata` is an ObjectMeta). */
export type HardDisk = ObjectOf<typeof HardDisk>;

/**
 * crd-demo.io/v2 HardDisk: the capacity as a whole number (`number`, or a
 * `bigint` past 2^53) and a unit. A v1 size v2 cannot express (`1.5Gi`, one
 * past int64, or a malformed one the operator reports Invalid) has no
 * `capacity` here and travels in the annotation
 * `crd-demo.io/v1-size`, so converting back gives it unchanged.
 */
export const HardDiskV2 = defineKind({
  ...identity,
  version: 'v2',
  schema: {
    spec: Type.Optional(
      Type.Object({
        capacity: Type.Optional(
          Type.Object({
            // An int64 on the server: 9007199254740993 reads back exact (a bigint past 2^53), never rounded.
            value: k8s.Int64({ minimum: 1, description: 'How many units.' }),
            unit: k8s.Enum(['Mi', 'Gi', 'Ti'], { description: 'Binary unit of value.' }),
          }),
        ),
        storageClass,
      }),
    ),
    status,
  },
  crd: {
    ...shared,
    printerColumns: [
      { name: 'Value', type: 'integer', jsonPath: '.spec.capacity.value' },
      { name: 'Unit', type: 'string', jsonPath: '.spec.capacity.unit' },
      { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    ],
  },
});

/** A crd-demo.io/v2 HardDisk object. */
export type HardDiskV2 = ObjectOf<typeof HardDiskV2>;

/** The finalizer the operator puts on every HardDisk. */
export const FINALIZER = 'crd-demo.io/release-disk';
