/**
 * The HardDisk example operator as a library: its kind, its reconciler and a
 * `setup` that registers it with a manager.
 *
 * @example
 * ```ts
 * const manager = createManager({ scheme: builtinScheme.extend(HardDisk), fieldOwner: 'harddisk-operator' });
 * setupHardDiskController(manager);
 * await manager.start(signalHandler());
 * ```
 *
 * @packageDocumentation
 */
import 'reflect-metadata';
import type { ControllerShard, Manager } from '@kubeloop/manager';
import { TOKENS } from '@kubeloop/manager';
import { harddiskController, HardDiskReconciler } from './reconciler.js';
import { StorageClassCatalog } from './storage-classes.js';

export { FINALIZER, HardDisk, HardDiskV2 } from './harddisk.js';
export { V1_SIZE_ANNOTATION, hardDiskConversion } from './conversion.js';
export { HardDiskReconciler, harddiskController } from './reconciler.js';
export { StorageClassCatalog } from './storage-classes.js';
export { HardDiskAdmission, defaultHardDisk, hardDiskSpecErrors, hardDiskValidator, QUANTITY, setupHardDiskWebhooks } from './webhooks.js';

/** Options of {@link setupHardDiskController}. */
export interface HardDiskControllerOptions {
  /**
   * Run the controller sharded: each replica reconciles the HardDisks whose
   * uid hashes into its share of the ring (give the manager's cache the
   * matching filters: `ringShardFilter(ring)` for HardDisks,
   * `ringShardFilter(ring, 'controller-owner')` for ConfigMaps). Default:
   * unsharded.
   */
  readonly shard?: ControllerShard;
}

/**
 * Register the HardDisk controller. `style: 'decorator'` resolves the class
 * from its decorators (needs a build that emits decorator metadata, as tsc
 * does); `'explicit'` names every constructor dependency (works everywhere).
 */
export function setupHardDiskController(manager: Manager, style: 'decorator' | 'explicit' = 'explicit', options: HardDiskControllerOptions = {}): void {
  const sharded = options.shard ? { options: { shard: options.shard } } : {};
  // The decorator's registration is harddiskController; sharded, its options are added to it.
  if (style === 'decorator') manager.register(HardDiskReconciler, options.shard ? { ...harddiskController, ...sharded } : undefined);
  else manager.register(HardDiskReconciler, { ...harddiskController, ...sharded, inject: [TOKENS.Client, TOKENS.EventRecorderProvider, StorageClassCatalog] });
}
