/**
 * Admission webhooks for HardDisk: a defaulter fills `spec.storageClass`,
 * a validator refuses a size that is not a quantity or an unknown storage
 * class at `kubectl apply`, before the object is stored. The reconciler
 * keeps its own check (phase Invalid) for clusters where the webhooks are
 * not installed.
 */
import { injectable } from 'tsyringe';
import type { Manager } from '@kubeloop/manager';
import { webhook } from '@kubeloop/manager';
import { fieldError } from '@kubeloop/webhook';
import type { Defaulter, FieldError, ValidationResult, Validator } from '@kubeloop/webhook';
import type { HardDisk } from './harddisk.js';
import { HardDisk as HardDiskKind } from './harddisk.js';
import { hardDiskConversion } from './conversion.js';
import { StorageClassCatalog } from './storage-classes.js';

/** A Kubernetes quantity as the operator accepts it: `10Gi`, `500M`, `1.5Ti`. */
export const QUANTITY = /^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$/;

/** Fills `spec.storageClass` with `standard` when it is missing. */
export function defaultHardDisk(disk: HardDisk): void {
  if (disk.spec && disk.spec.storageClass === undefined) disk.spec.storageClass = 'standard';
}

/** What is wrong with a disk's spec, as field errors (empty: valid). */
export function hardDiskSpecErrors(disk: HardDisk, catalog: StorageClassCatalog): FieldError[] {
  const errors: FieldError[] = [];
  const size = disk.spec?.size;
  if (size === undefined || size === '') errors.push(fieldError.required('spec.size', 'a size such as 10Gi'));
  else if (!QUANTITY.test(size)) errors.push(fieldError.invalid('spec.size', size, 'must be a quantity such as 10Gi'));
  const storageClass = disk.spec?.storageClass;
  if (storageClass !== undefined && !catalog.describe(storageClass)) errors.push(fieldError.notSupported('spec.storageClass', storageClass, catalog.names()));
  return errors;
}

/** The HardDisk validator: creates and updates must have a valid spec; deletes are always allowed. */
export function hardDiskValidator(catalog: StorageClassCatalog): Validator<HardDisk> {
  return {
    validateCreate: (disk) => hardDiskSpecErrors(disk, catalog),
    validateUpdate: (disk) => hardDiskSpecErrors(disk, catalog),
  };
}

/**
 * The same admission as a class the manager's container builds (its
 * StorageClassCatalog injected): registered with
 * `manager.registerWebhook(HardDiskAdmission)`, as reconciler classes are.
 */
@webhook({ for: HardDiskKind })
@injectable()
export class HardDiskAdmission implements Validator<HardDisk>, Defaulter<HardDisk> {
  constructor(private readonly catalog: StorageClassCatalog) {}

  validateCreate(disk: HardDisk): ValidationResult {
    return hardDiskSpecErrors(disk, this.catalog);
  }

  validateUpdate(disk: HardDisk): ValidationResult {
    return hardDiskSpecErrors(disk, this.catalog);
  }

  default(disk: HardDisk): void {
    defaultHardDisk(disk);
  }
}

/**
 * Register the HardDisk webhooks on the manager's webhook server
 * (`createManager({ webhook: {...} })`), at controller-runtime's paths:
 * `/validate-crd-demo-io-v1-harddisk` and `/mutate-crd-demo-io-v1-harddisk`
 * (see webhook/manifests.yaml), and the v1 ⇄ v2 conversion at `/convert`
 * (the CRD's conversion stanza, src/conversion.ts). `style: 'decorator'`
 * registers the admission class {@link HardDiskAdmission} through DI (needs
 * emitted decorator metadata, as tsc gives); `'builder'` gives functions to
 * the builder (works everywhere).
 */
export function setupHardDiskWebhooks(manager: Manager, style: 'builder' | 'decorator' = 'builder', catalog = new StorageClassCatalog()): void {
  if (style === 'decorator') {
    manager.registerWebhook(HardDiskAdmission);
    manager.webhook(HardDiskKind).withConversion(hardDiskConversion).complete();
    return;
  }
  manager.webhook(HardDiskKind).withDefaulter(defaultHardDisk).withValidator(hardDiskValidator(catalog)).withConversion(hardDiskConversion).complete();
}
