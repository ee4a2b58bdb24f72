/**
 * How the fake's controllers run: after writes, one pass at a time on the
 * next turn of the event loop (as kube-controller-manager reacts to watch
 * events), writing through the same path as clients do.
 */
import type { Json } from '../json.js';
import type { Target } from '../request-info.js';
import type { Storage, StoredType } from '../storage.js';
import { commit } from '../write.js';

/** The field manager of the controllers' writes. */
const MANAGER = 'kubeloop-fake-controller';

export function targetOf(st: StoredType, obj: Json): Target {
  const m = obj['metadata'] as Json;
  return { st, version: st.type.versions[0]!, namespace: m['namespace'] as string | undefined, name: m['name'] as string, subresource: undefined };
}

/** Change a stored object as a controller: a copy edited by `change`, committed. */
export function controllerWrite(s: Storage, st: StoredType, obj: Json, change: (next: Json) => void): void {
  const next = structuredClone(obj);
  change(next);
  commit(s, targetOf(st, obj), obj, next, 'main', undefined, MANAGER, false, undefined);
}

/**
 * Run `passes` after every change, coalesced: at most one pending run,
 * skipped once `closed()` says so. A pass that fails is retried on the next
 * change.
 */
export function runAfterChanges(s: Storage, passes: readonly ((s: Storage) => void)[], closed: () => boolean): void {
  if (passes.length === 0) return;
  let scheduled = false;
  s.onChange(() => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      if (closed()) return;
      try {
        for (const pass of passes) pass(s);
      } catch {
        // retried on the next change
      }
    });
  });
}
