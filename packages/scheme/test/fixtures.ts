/**
 * The seed's custom resource, crd-demo.io/v1 HardDisk, declared as a user
 * would, and a generator of distinct throwaway kinds.
 */
import { defineKind } from '../src/index.js';
import type { KubeObject, ResourceDescriptor } from '../src/index.js';

export interface HardDisk extends KubeObject {
  apiVersion?: 'crd-demo.io/v1';
  kind?: 'HardDisk';
  spec: { sizeGiB: number; storageClass?: string };
  status?: { phase?: 'Pending' | 'Bound'; boundAt?: string };
}

export const HardDisk = defineKind<HardDisk>({
  group: 'crd-demo.io',
  version: 'v1',
  kind: 'HardDisk',
  plural: 'harddisks',
  namespaced: true,
  listKind: 'HardDiskList',
});

/** A distinct namespaced kind in group `gen.example.com`, e.g. `Widget7.v1.gen.example.com`. */
export function generatedKind(n: number, version = 'v1'): ResourceDescriptor {
  return defineKind({
    group: 'gen.example.com',
    version,
    kind: `Widget${n}`,
    plural: `widget${n}s`,
    namespaced: true,
    listKind: `Widget${n}List`,
  });
}
