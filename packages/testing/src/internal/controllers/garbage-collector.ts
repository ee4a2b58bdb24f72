/**
 * The garbage collector of kube-controller-manager, as far as a test needs
 * it: dependents whose owners are all gone are deleted (background), an
 * owner deleted with `Orphan` loses its dependents' references and then its
 * `orphan` finalizer, an owner deleted with `Foreground` waits for its
 * blocking dependents before its `foregroundDeletion` finalizer goes.
 */
import { deleteObject } from '../delete.js';
import { objKey } from '../json.js';
import type { Json } from '../json.js';
import type { Storage, StoredType } from '../storage.js';
import { controllerWrite, targetOf } from './run.js';

function dependents(s: Storage, uid: string): { st: StoredType; obj: Json }[] {
  const out: { st: StoredType; obj: Json }[] = [];
  for (const st of s.types.values()) {
    for (const obj of st.objects.values()) {
      const refs = (obj['metadata'] as Json)['ownerReferences'];
      if (Array.isArray(refs) && (refs as Json[]).some((r) => r['uid'] === uid)) out.push({ st, obj });
    }
  }
  return out;
}

function dropFinalizer(s: Storage, st: StoredType, m: Json, finalizer: string): void {
  controllerWrite(s, st, st.objects.get(objKey(m['namespace'] as string | undefined, m['name'] as string))!, (n) => {
    const nm = n['metadata'] as Json;
    nm['finalizers'] = ((nm['finalizers'] as string[]) ?? []).filter((f) => f !== finalizer);
    if ((nm['finalizers'] as string[]).length === 0) delete nm['finalizers'];
  });
}

/** One pass over every object. */
export function collectGarbage(s: Storage): void {
  for (const st of s.types.values()) {
    for (const obj of [...st.objects.values()]) {
      const m = obj['metadata'] as Json;
      const refs = Array.isArray(m['ownerReferences']) ? (m['ownerReferences'] as Json[]) : [];
      // owners being deleted with orphan / foreground
      const finalizers = (m['finalizers'] as string[] | undefined) ?? [];
      if (m['deletionTimestamp'] !== undefined && finalizers.includes('orphan')) {
        for (const dep of dependents(s, m['uid'] as string)) {
          controllerWrite(s, dep.st, dep.obj, (n) => {
            const nm = n['metadata'] as Json;
            nm['ownerReferences'] = ((nm['ownerReferences'] as Json[]) ?? []).filter((r) => r['uid'] !== m['uid']);
            if ((nm['ownerReferences'] as Json[]).length === 0) delete nm['ownerReferences'];
          });
        }
        dropFinalizer(s, st, m, 'orphan');
        continue;
      }
      if (m['deletionTimestamp'] !== undefined && finalizers.includes('foregroundDeletion')) {
        for (const dep of dependents(s, m['uid'] as string)) {
          const dm = dep.obj['metadata'] as Json;
          if (dm['deletionTimestamp'] === undefined) deleteObject(s, targetOf(dep.st, dep.obj), dep.obj, { propagationPolicy: 'Foreground' }, false);
        }
        const blocking = dependents(s, m['uid'] as string).filter((d) => ((d.obj['metadata'] as Json)['ownerReferences'] as Json[]).some((r) => r['uid'] === m['uid'] && r['blockOwnerDeletion'] === true));
        if (blocking.length === 0) dropFinalizer(s, st, m, 'foregroundDeletion');
        continue;
      }
      if (refs.length === 0) continue;
      const live = refs.filter((r) => s.uids.has(r['uid'] as string));
      const current = st.objects.get(objKey(m['namespace'] as string | undefined, m['name'] as string));
      if (!current || current !== obj) continue;
      if (live.length === 0) {
        if (m['deletionTimestamp'] === undefined) deleteObject(s, targetOf(st, obj), obj, {}, false);
      } else if (live.length < refs.length) {
        controllerWrite(s, st, obj, (n) => {
          (n['metadata'] as Json)['ownerReferences'] = live;
        });
      }
    }
  }
}
