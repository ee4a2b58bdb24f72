/**
 * Conversion between HardDisk v1 (the hub: the storage version, and the one
 * the operator reconciles) and v2, served at /convert by the operator's
 * webhook server. v1's `size: "20Gi"` is v2's `capacity: { value: 20, unit:
 * "Gi" }`. A v1 size v2 cannot express (a fraction, a decimal unit, a value
 * past int64, or a malformed size the operator reports Invalid) is kept in
 * the annotation `crd-demo.io/v1-size`, so v1 → v2 → v1 gives the object
 * back unchanged.
 *
 * Sizes are read with BigInt, never Number: `9007199254740993Gi` is v2's
 * value 9007199254740993 (a bigint, past 2^53) and back, not ...992. A v2
 * capacity v1 cannot be made from (no value, a unit v2 does not know) is
 * refused, naming the field, rather than written as a made-up size.
 */
import { defineConversion, fieldError, refuseConversion, spoke } from '@kubeloop/webhook';
import type { FieldError, KindConversion } from '@kubeloop/webhook';
import { HardDisk, HardDiskV2 } from './harddisk.js';

/** Where a v1 size that v2 cannot express is kept on a v2 object. */
export const V1_SIZE_ANNOTATION = 'crd-demo.io/v1-size';

const WHOLE = /^([1-9][0-9]*)(Mi|Gi|Ti)$/;
const UNITS = ['Mi', 'Gi', 'Ti'] as const;
type Unit = (typeof UNITS)[number];
/** The API server keeps v2's value as an int64. */
const INT64_MAX = 2n ** 63n - 1n;

function withoutAnnotation(annotations: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!annotations || !(V1_SIZE_ANNOTATION in annotations)) return annotations;
  const { [V1_SIZE_ANNOTATION]: _kept, ...rest } = annotations;
  return Object.keys(rest).length > 0 ? rest : undefined;
}

/** v1's size as v2's capacity, or undefined when v2 cannot hold it. A safe integer stays a number; a larger one is a bigint. */
function capacityOf(size: string): { value: number | bigint; unit: Unit } | undefined {
  const whole = WHOLE.exec(size);
  if (!whole) return undefined;
  const value = BigInt(whole[1]!);
  if (value > INT64_MAX) return undefined;
  return { value: value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value, unit: whole[2] as Unit };
}

/** v2's capacity as v1's size; throws a refusal naming each field v1 cannot be made from. */
function sizeOf(capacity: unknown): string {
  const at = 'spec.capacity';
  if (typeof capacity !== 'object' || capacity === null || Array.isArray(capacity)) throw refuseConversion(fieldError.invalid(at, capacity, 'must be an object with value and unit'));
  const { value, unit } = capacity as { value?: unknown; unit?: unknown };
  const errors: FieldError[] = [];
  const whole = typeof value === 'bigint' || (typeof value === 'number' && Number.isSafeInteger(value));
  if (value === undefined) errors.push(fieldError.required(`${at}.value`, 'how many units'));
  else if (!whole) errors.push(fieldError.invalid(`${at}.value`, value, 'must be a whole number'));
  else if (value < 1 || BigInt(value) > INT64_MAX) errors.push(fieldError.invalid(`${at}.value`, value, 'must be from 1 to 2^63-1'));
  if (unit === undefined) errors.push(fieldError.required(`${at}.unit`, 'Mi, Gi or Ti'));
  else if (!UNITS.includes(unit as Unit)) errors.push(fieldError.notSupported(`${at}.unit`, unit, UNITS));
  if (errors.length > 0) throw refuseConversion(...errors);
  return `${value as number | bigint}${unit as Unit}`;
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
      const capacity: unknown = disk.spec?.capacity;
      let size: string | undefined;
      if (disk.spec) {
        if (capacity !== undefined) size = sizeOf(capacity);
        else if (typeof kept === 'string') size = kept;
        else throw refuseConversion(fieldError.required('spec.capacity', `v1 needs a size: set spec.capacity or the annotation ${V1_SIZE_ANNOTATION}`));
      }
      return {
        metadata: { ...metadata, ...(annotations ? { annotations } : {}) },
        ...(disk.spec && size !== undefined ? { spec: { size, ...(disk.spec.storageClass !== undefined ? { storageClass: disk.spec.storageClass } : {}) } } : {}),
        ...(disk.status ? { status: disk.status } : {}),
      };
    },
    fromHub(disk) {
      const size: unknown = disk.spec?.size;
      if (disk.spec && typeof size !== 'string') throw refuseConversion(size === undefined ? fieldError.required('spec.size') : fieldError.invalid('spec.size', size, 'must be a string such as 20Gi'));
      const capacity = typeof size === 'string' ? capacityOf(size) : undefined;
      const annotations = { ...disk.metadata?.annotations, ...(disk.spec && !capacity ? { [V1_SIZE_ANNOTATION]: size as string } : {}) };
      return {
        metadata: { ...disk.metadata, ...(Object.keys(annotations).length > 0 ? { annotations } : {}) },
        ...(disk.spec
          ? {
              spec: {
                ...(capacity ? { capacity } : {}),
                ...(disk.spec.storageClass !== undefined ? { storageClass: disk.spec.storageClass } : {}),
              },
            }
          : {}),
        ...(disk.status ? { status: disk.status } : {}),
      };
    },
  }),
]);
