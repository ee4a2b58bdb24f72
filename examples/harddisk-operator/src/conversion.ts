/**
 * Conversion between HardDisk v1 (the hub: the storage version, and the one
 * the operator reconciles) and v2, served at /convert by the operator's
 * webhook server. v1's `size: "20Gi"` is v2's `capacity: { value: 20, unit:
 * "Gi" }`. A v1 size v2 cannot express (a fraction, a decimal unit, or a
 * malformed size the operator reports Invalid) is kept in the annotation
 * `crd-demo.io/v1-size`, so v1 → v2 → v1 gives the object back unchanged.
 */
import { defineConversion, spoke } from '@kubeloop/webhook';
import type { KindConversion } from '@kubeloop/webhook';
import { HardDisk, HardDiskV2 } from './harddisk.js';

/** Where a v1 size that v2 cannot express is kept on a v2 object. */
export const V1_SIZE_ANNOTATION = 'crd-demo.io/v1-size';

const WHOLE = /^([1-9][0-9]*)(Mi|Gi|Ti)$/;

function withoutAnnotation(annotations: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!annotations || !(V1_SIZE_ANNOTATION in annotations)) return annotations;
  const { [V1_SIZE_ANNOTATION]: _kept, ...rest } = annotations;
  return Object.keys(rest).length > 0 ? rest : undefined;
}

/**
 * The HardDisk conversion: hub v1, spoke v2.
 *
 * @example
 * ```ts
 * manager.webhookServer?.register(conversionWebhook([hardDiskConversion]));
 * ```
 */
export const hardDiskConversion: KindConversion<HardDisk> = defineConversion(HardDisk, [
  spoke<HardDiskV2, HardDisk>(HardDiskV2, {
    toHub(disk) {
      const kept = disk.metadata?.annotations?.[V1_SIZE_ANNOTATION];
      const annotations = withoutAnnotation(disk.metadata?.annotations);
      const { annotations: _dropped, ...metadata } = disk.metadata ?? {};
      const capacity = disk.spec?.capacity;
      return {
        metadata: { ...metadata, ...(annotations ? { annotations } : {}) },
        ...(disk.spec
          ? { spec: { size: capacity ? `${capacity.value}${capacity.unit}` : (kept ?? ''), ...(disk.spec.storageClass !== undefined ? { storageClass: disk.spec.storageClass } : {}) } }
          : {}),
        ...(disk.status ? { status: disk.status } : {}),
      };
    },
    fromHub(disk) {
      const size = disk.spec?.size;
      const whole = size === undefined ? null : WHOLE.exec(size);
      const annotations = { ...disk.metadata?.annotations, ...(disk.spec && !whole ? { [V1_SIZE_ANNOTATION]: size ?? '' } : {}) };
      return {
        metadata: { ...disk.metadata, ...(Object.keys(annotations).length > 0 ? { annotations } : {}) },
        ...(disk.spec
          ? {
              spec: {
                ...(whole ? { capacity: { value: Number(whole[1]), unit: whole[2] as 'Mi' | 'Gi' | 'Ti' } } : {}),
                ...(disk.spec.storageClass !== undefined ? { storageClass: disk.spec.storageClass } : {}),
              },
            }
          : {}),
        ...(disk.status ? { status: disk.status } : {}),
      };
    },
  }),
]);
