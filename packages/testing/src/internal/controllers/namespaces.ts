/**
 * The namespace controller of kube-controller-manager: a terminating
 * namespace's objects are deleted, and once none is left the namespace is
 * finalized and goes.
 */
import { deleteObject } from '../delete.js';
import { objKey } from '../json.js';
import type { Json } from '../json.js';
import type { Storage } from '../storage.js';
import { targetOf } from './run.js';

/** One pass over the terminating namespaces. */
export function finalizeNamespaces(s: Storage): void {
  const nsType = s.namespaces;
  for (const ns of [...nsType.objects.values()]) {
    const m = ns['metadata'] as Json;
    if (m['deletionTimestamp'] === undefined) continue;
    const name = m['name'] as string;
    let remaining = 0;
    for (const st of s.types.values()) {
      if (!st.type.namespaced) continue;
      for (const obj of [...st.objects.values()]) {
        const om = obj['metadata'] as Json;
        if (om['namespace'] !== name) continue;
        remaining++;
        if (om['deletionTimestamp'] === undefined) deleteObject(s, targetOf(st, obj), obj, {}, false);
      }
    }
    if (remaining > 0) continue;
    // finalize: drop the "kubernetes" finalizer, the namespace goes
    s.store(nsType, objKey(undefined, name), structuredClone(ns), ns, 'DELETED');
  }
}
