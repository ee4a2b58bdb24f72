/**
 * Finalizers: keep an object from going away until a controller has cleaned
 * up after it, conflict-safe.
 */
import type { AnyClient, AnyKubeObject } from '@kubeloop/client/internal';
import type { WithKind } from '@kubeloop/client';
import { isNotFound, mergeFrom, retryOnConflict } from '@kubeloop/client';

/**
 * Whether `obj` carries `finalizer`.
 *
 * @example
 * ```ts
 * if (!containsFinalizer(disk, 'crd-demo.io/cleanup')) console.log('not yet protected');
 * ```
 */
export function containsFinalizer(obj: AnyKubeObject, finalizer: string): boolean {
  return obj.metadata?.finalizers?.includes(finalizer) ?? false;
}

/**
 * Run the finalizer protocol for `obj`, conflict-safe:
 * - not being deleted and without the finalizer → add it (patch, optimistic lock);
 * - being deleted with the finalizer → run `cleanup`, then remove it;
 * Returns `'deleting'` when the object is going away (stop reconciling), else `'present'`.
 *
 * @example
 * ```ts
 * if ((await finalize(client, disk, 'crd-demo.io/cleanup', () => releaseDisk(disk))) === 'deleting') return Result.done();
 * ```
 */
export async function finalize<T extends AnyKubeObject>(client: AnyClient, obj: WithKind<T>, finalizer: string, cleanup: () => Promise<void> | void): Promise<'present' | 'deleting'> {
  const deleting = Boolean(obj.metadata?.deletionTimestamp);
  if (!deleting) {
    if (!containsFinalizer(obj, finalizer)) {
      await patchFinalizers(client, obj, (list) => [...list, finalizer]);
    }
    return 'present';
  }
  if (containsFinalizer(obj, finalizer)) {
    await cleanup();
    await patchFinalizers(client, obj, (list) => list.filter((f) => f !== finalizer));
  }
  return 'deleting';
}

async function patchFinalizers<T extends AnyKubeObject>(client: AnyClient, obj: WithKind<T>, change: (list: string[]) => string[]): Promise<void> {
  let current: WithKind<T> = obj;
  await retryOnConflict(async (attempt) => {
    if (attempt > 1) {
      const fresh = await client.apiReader.get({ apiVersion: obj.apiVersion, kind: obj.kind }, { name: obj.metadata!.name!, ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}) });
      current = fresh as unknown as WithKind<T>;
    }
    const before = { metadata: { finalizers: current.metadata?.finalizers ?? [], resourceVersion: current.metadata?.resourceVersion } };
    const after = { metadata: { finalizers: change([...(current.metadata?.finalizers ?? [])]), resourceVersion: current.metadata?.resourceVersion } };
    await client.patch(current, mergeFrom(before, after, { optimisticLock: true })).catch((err: unknown) => {
      if (isNotFound(err)) return undefined; // gone already: nothing to finalize
      throw err;
    });
  });
}

