/**
 * The filter stage: keeps the objects a predicate admits, on the client
 * side, before they reach the store. The simplest stage, and the pattern
 * for one of your own (see `ListWatchStage`).
 */
import type { KubeObject } from '@kubeloop/scheme';
import { passThrough } from '../list-watch.js';
import type { ListWatchStage, ListWatcher } from '../list-watch.js';
import { eventsInScope, pageInScope } from './scope.js';

/**
 * A stage that keeps only the objects `admit` returns true for. A listed or
 * added object it refuses never reaches the store (nor does a streaming
 * list's initial event); a MODIFIED it refuses becomes a DELETED (an object
 * that stopped matching leaves the store and handlers see a delete); a
 * DELETED always goes on. `admit` must not throw
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
      return pageInScope(await inner.list(options), admit);
    },
    async watch(options) {
      return eventsInScope(await inner.watch(options), admit, options.sendInitialEvents === true);
    },
  });
}
