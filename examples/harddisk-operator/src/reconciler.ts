/**
 * The HardDisk controller: for each HardDisk, an owned ConfigMap describing
 * the disk, kept in sync with the spec; status phase and conditions; events;
 * and a finalizer that releases the ConfigMap when the disk is deleted.
 */
import { inject, injectable } from 'tsyringe';
import { ConfigMap } from '@kubeloop/scheme';
import type { CachedClient, DeepReadonly, Fetched } from '@kubeloop/client';
import { isNotFound, mergeFrom, mutableCopy } from '@kubeloop/client';
import {
  Result,
  TOKENS,
  controller,
  createOrUpdate,
  finalize,
  generationChanged,
  setControllerReference,
  setStatusCondition,
} from '@kubeloop/manager';
import type { ControllerRegistration, EventRecorder, EventRecorderProvider, ReconcileContext, ReconcileResult, Reconciler, Request } from '@kubeloop/manager';
import { FINALIZER, HardDisk } from './harddisk.js';
import { StorageClassCatalog } from './storage-classes.js';
import { QUANTITY } from './webhooks.js';


/** What the controller watches: shared by the decorator and by explicit registration. */
export const harddiskController = {
  name: 'harddisk',
  for: HardDisk,
  forPredicates: [generationChanged()],
  owns: [ConfigMap],
  // What it writes (reads of HardDisks and ConfigMaps follow from watching them; status
  // and finalizers of HardDisk, events and leases from the manager): `kubeloop generate rbac`.
  permissions: [
    { resource: HardDisk, verbs: ['update', 'patch'] }, // the finalizer
    { resource: ConfigMap, verbs: ['create', 'update', 'patch', 'delete'] },
  ],
} as const satisfies ControllerRegistration;

@controller(harddiskController)
@injectable()
export class HardDiskReconciler implements Reconciler {
  private readonly recorder: EventRecorder;

  constructor(
    @inject(TOKENS.Client) private readonly client: CachedClient,
    @inject(TOKENS.EventRecorderProvider) recorders: EventRecorderProvider,
    private readonly catalog: StorageClassCatalog,
  ) {
    this.recorder = recorders.recorderFor('harddisk-controller');
  }

  /**
   * At debug level (`KUBELOOP_LOG_LEVEL=debug`) every reconcile logs `reconcile started` and
   * `reconcile finished` with its key and reconcileID: the sharded test reads them to check that
   * no two replicas ever reconcile one disk at once.
   */
  async reconcile(request: Request, ctx: ReconcileContext): Promise<ReconcileResult> {
    ctx.log.debug('reconcile started');
    try {
      return await this.sync(request, ctx);
    } finally {
      ctx.log.debug('reconcile finished');
    }
  }

  private async sync(request: Request, ctx: ReconcileContext): Promise<ReconcileResult> {
    const key = { namespace: request.namespace!, name: request.name };
    const disk = await this.client.get(HardDisk, key).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    if (!disk) return Result.done(); // deleted, and the finalizer already ran
    const configMapName = `${request.name}-disk`;

    // `disk` comes from the cache: read-only, and written back as it is.
    const state = await finalize(this.client, disk, FINALIZER, async () => {
      await this.client.delete(ConfigMap, { namespace: key.namespace, name: configMapName }).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
      this.recorder.event(disk, 'Normal', 'Released', 'Finalize', `released ConfigMap ${configMapName}`);
      ctx.log.info({ configMap: configMapName }, 'disk released');
    });
    if (state === 'deleting') return Result.done();
    const current = disk;

    const size = current.spec?.size ?? '';
    const storageClass = current.spec?.storageClass ?? 'standard';
    const described = this.catalog.describe(storageClass);
    if (!QUANTITY.test(size) || !described) {
      const message = !QUANTITY.test(size) ? `spec.size ${JSON.stringify(size)} is not a quantity` : `unknown storage class ${storageClass}`;
      await this.updateStatus(current, 'Invalid', undefined, 'False', 'InvalidSpec', message);
      this.recorder.event(current, 'Warning', 'InvalidSpec', 'Reconcile', message);
      return Result.done(); // nothing to retry until the spec changes
    }

    const cm: ConfigMap & { apiVersion: 'v1'; kind: 'ConfigMap' } = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: configMapName, namespace: key.namespace } };
    const op = await createOrUpdate(this.client, cm, (c) => {
      c.metadata = { ...c.metadata, labels: { ...c.metadata?.labels, 'crd-demo.io/disk': request.name } };
      c.data = { size, storageClass, medium: described.medium, iops: described.iops };
      setControllerReference(current, c);
    });
    if (op !== 'unchanged') {
      this.recorder.event(current, 'Normal', op === 'created' ? 'Provisioned' : 'Resized', 'Reconcile', `ConfigMap ${configMapName} ${op}`);
      ctx.log.info({ configMap: configMapName, op }, 'disk ConfigMap synced');
    }
    await this.updateStatus(current, 'Bound', configMapName, 'True', 'Provisioned', `ConfigMap ${configMapName} describes ${size} ${storageClass}`);
    return Result.done();
  }

  private async updateStatus(
    disk: DeepReadonly<Fetched<HardDisk>>,
    phase: 'Bound' | 'Invalid',
    configMapName: string | undefined,
    ready: 'True' | 'False',
    reason: string,
    message: string,
  ): Promise<void> {
    const status = mutableCopy(disk.status ?? {});
    const generation = disk.metadata?.generation;
    let changed = status.phase !== phase || (configMapName !== undefined && status.configMapName !== configMapName) || (generation !== undefined && status.observedGeneration !== generation);
    status.phase = phase;
    if (configMapName) status.configMapName = configMapName;
    if (generation !== undefined) status.observedGeneration = generation;
    const condition = { type: 'Ready', status: ready, reason, message, ...(generation !== undefined ? { observedGeneration: generation } : {}) } as const;
    changed = setStatusCondition((status.conditions ??= []), condition) || changed;
    // Nothing new: no request at all (a steady-state reconcile makes none).
    if (!changed) return;
    await this.client.status().patch(disk, mergeFrom({ status: disk.status ?? {} }, { status }));
  }
}
