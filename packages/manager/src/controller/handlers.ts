/**
 * Event handlers turn informer events into requests: the object itself, its
 * controller owner, or whatever a map function says.
 */
import type { InformerEvent } from '@kubeloop/cache';
import type { TypeRef } from '@kubeloop/client';
import type { KubeObject, ResourceDescriptor } from '@kubeloop/scheme';
import type { Request } from './reconcile.js';

/** Maps an event to the requests it should enqueue. */
export type EventHandler = (event: InformerEvent<KubeObject>) => readonly Request[];

/**
 * Enqueue the object itself (what `for` uses).
 *
 * @example
 * ```ts
 * builder.watches(ConfigMap, enqueueObject());
 * ```
 */
export function enqueueObject(): EventHandler {
  return (e) => {
    const m = e.object.metadata;
    if (!m?.name) return [];
    return [m.namespace ? { namespace: m.namespace, name: m.name } : { name: m.name }];
  };
}

/**
 * Enqueue the owner of the object named in its ownerReferences, if it is of
 * `ownerKind` (apiVersion group and kind checked); by default only the
 * controller owner (`controller: true`), as `owns` uses. On update, both the
 * old and the new owner are enqueued. The owner is looked up in the object's
 * namespace unless `ownerNamespaced` is false or `ownerKind` is a descriptor
 * of a cluster-scoped kind.
 *
 * @example
 * ```ts
 * builder.watches(ConfigMap, enqueueOwner(HardDisk));
 * ```
 */
export function enqueueOwner(ownerKind: ResourceDescriptor | TypeRef, options: { onlyController?: boolean; ownerNamespaced?: boolean } = {}): EventHandler {
  const onlyController = options.onlyController ?? true;
  const group = (apiVersion: string): string => (apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '');
  const ownerGroup = group(ownerKind.apiVersion);
  // A descriptor knows its scope: a cluster-scoped owner (a Namespace, a ClusterRole) is enqueued without a namespace.
  const ownerNamespaced = options.ownerNamespaced ?? (ownerKind as Partial<ResourceDescriptor>).namespaced;
  const owners = (obj: KubeObject): Request[] =>
    (obj.metadata?.ownerReferences ?? [])
      .filter((ref) => ref.kind === ownerKind.kind && group(ref.apiVersion) === ownerGroup && (!onlyController || ref.controller === true))
      .map((ref) => (ownerNamespaced === false || !obj.metadata?.namespace ? { name: ref.name } : { namespace: obj.metadata.namespace, name: ref.name }));
  return (e) => (e.type === 'update' ? [...owners(e.old), ...owners(e.object)] : owners(e.object));
}

/**
 * Enqueue whatever `map` returns for the object.
 *
 * @example
 * ```ts
 * builder.watches(Node, enqueueMapped((node) => podsOn(node).map((p) => ({ namespace: p.ns, name: p.name }))));
 * ```
 */
export function enqueueMapped(map: (obj: KubeObject) => readonly Request[]): EventHandler {
  return (e) => (e.type === 'update' ? [...map(e.old), ...map(e.object)] : map(e.object));
}
