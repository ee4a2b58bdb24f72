/** The seed's custom resource: crd-demo.io/v1 HardDisk. */
import { defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import type { Condition } from '@kubeloop/manager';

export interface HardDisk extends KubeObject {
  apiVersion?: 'crd-demo.io/v1';
  kind?: 'HardDisk';
  spec?: {
    /** Capacity, a quantity such as `10Gi`. */
    size?: string;
    /** Default `standard`. */
    storageClass?: string;
  };
  status?: {
    phase?: 'Pending' | 'Bound' | 'Invalid';
    configMapName?: string;
    observedGeneration?: number;
    conditions?: Condition[];
  };
}

export const HardDisk = defineKind<HardDisk>({
  group: 'crd-demo.io',
  version: 'v1',
  kind: 'HardDisk',
  plural: 'harddisks',
  namespaced: true,
  listKind: 'HardDiskList',
});

/** The finalizer the operator puts on every HardDisk. */
export const FINALIZER = 'crd-demo.io/release-disk';
