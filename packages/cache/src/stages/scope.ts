/**
 * What every stage that narrows a kind's objects does to what comes back
 * (the filter and shard stages): list pages keep the items in scope, watch
 * events out of scope are dropped or turned into what the store needs.
 */
import type { WatchEvent } from '@kubeloop/client';
import type { KubeObject, ObjectList } from '@kubeloop/scheme';

const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

/** Whether a value has metadata to be judged by; anything else goes on for the reflector to report. */
export function judgeable(object: unknown): object is KubeObject {
  if (typeof object !== 'object' || object === null) return false;
  const m = (object as { metadata?: unknown }).metadata;
  return typeof m === 'object' && m !== null;
}

/** `page` with only the items `inScope` keeps (the same page when it keeps them all). */
export function pageInScope<T extends KubeObject>(page: ObjectList<T>, inScope: (object: T) => boolean): ObjectList<T> {
  const items: unknown = (page as { items?: unknown } | null)?.items;
  if (!Array.isArray(items)) return page; // the reflector reports it
  const kept = (items as unknown[]).filter((item) => !judgeable(item) || inScope(item as T));
  return kept.length === items.length ? page : { ...page, items: kept as T[] };
}

/**
 * The events in scope. Out of scope: a streaming list's initial event is
 * dropped (the list is what the store becomes); later, a MODIFIED becomes a
 * DELETED (an object that left the scope leaves the store, handlers see a
 * delete), an ADDED becomes a bookmark of its resourceVersion (the
 * reflector's position and idle deadline move on as if it had seen it;
 * `dropped` is told). DELETED, BOOKMARK and ERROR always go on.
 */
export async function* eventsInScope<T extends KubeObject>(
  events: AsyncIterableIterator<WatchEvent<T>>,
  inScope: (object: T) => boolean,
  streaming: boolean,
  dropped?: () => void,
): AsyncIterableIterator<WatchEvent<T>> {
  let initial = streaming;
  for await (const event of events) {
    if (event.type === 'BOOKMARK') {
      if (initial && event.object.metadata?.annotations?.[INITIAL_EVENTS_END] === 'true') initial = false;
      yield event;
      continue;
    }
    if ((event.type !== 'ADDED' && event.type !== 'MODIFIED') || !judgeable(event.object) || inScope(event.object)) {
      yield event;
      continue;
    }
    if (initial) continue;
    if (event.type === 'MODIFIED') {
      yield { type: 'DELETED', object: event.object };
      continue;
    }
    dropped?.();
    const resourceVersion = event.object.metadata?.resourceVersion;
    if (resourceVersion) yield { type: 'BOOKMARK', object: { metadata: { resourceVersion } } as T };
  }
}
