/**
 * The filter stage: keeps the objects a predicate admits, on the client
 * side, before they reach the store. The simplest stage, and the pattern
 * for one of your own (see `ListWatchStage`).
 */
import type { WatchEvent } from '@kubeloop/client';
import type { KubeObject, ObjectList } from '@kubeloop/scheme';
import { passThrough } from '../list-watch.js';
import type { ListWatchStage, ListWatcher } from '../list-watch.js';

/**
 * A stage that keeps only the objects `admit` returns true for. A listed or
 * added object it refuses never reaches the store; a MODIFIED it refuses
 * becomes a DELETED (an object that stopped matching leaves the store and
 * handlers see a delete); a DELETED always goes on. `admit` must not throw
 * and should be cheap: it runs on every object of the kind.
 *
 * @example
 * ```ts
 * const noScratch = filterStage<KubeObject>((o) => o.metadata?.labels?.['scratch'] !== 'true');
 * const cache = createInformerCache({ client, byKind: [{ kind: ConfigMap, options: { stages: [noScratch] } }] });
 * ```
 */
export function filterStage<T extends KubeObject>(admit: (object: T) => boolean): ListWatchStage<T> {
  return (inner: ListWatcher<T>): ListWatcher<T> => ({
    ...passThrough(inner),
    async list(options) {
      const page: ObjectList<T> = await inner.list(options);
      const items: unknown = (page as { items?: unknown } | null)?.items;
      if (!Array.isArray(items)) return page; // the reflector reports it
      const kept = (items as T[]).filter((o) => !hasMetadata(o) || admit(o));
      return kept.length === items.length ? page : { ...page, items: kept };
    },
    async watch(options) {
      return admitted(await inner.watch(options), admit);
    },
  });
}

function hasMetadata(object: unknown): boolean {
  if (typeof object !== 'object' || object === null) return false;
  const m = (object as { metadata?: unknown }).metadata;
  return typeof m === 'object' && m !== null;
}

async function* admitted<T extends KubeObject>(events: AsyncIterableIterator<WatchEvent<T>>, admit: (object: T) => boolean): AsyncIterableIterator<WatchEvent<T>> {
  for await (const event of events) {
    if ((event.type !== 'ADDED' && event.type !== 'MODIFIED') || !hasMetadata(event.object) || admit(event.object)) {
      yield event;
    } else if (event.type === 'MODIFIED') {
      yield { type: 'DELETED', object: event.object };
    } else {
      // Refused: the reflector's position and idle deadline still move on.
      const resourceVersion = event.object.metadata?.resourceVersion;
      if (resourceVersion) yield { type: 'BOOKMARK', object: { metadata: { resourceVersion } } as T };
    }
  }
}
