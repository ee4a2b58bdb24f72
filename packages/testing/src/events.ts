/**
 * Collect the events (events.k8s.io/v1, what kubeloop's recorder writes)
 * that a test's controllers record, and wait for one.
 */
import type { Client, Fetched, WatchEvent } from '@kubeloop/client';
import { eventsv1 } from '@kubeloop/scheme';
import { eventually } from './eventually.js';

/** An events.k8s.io/v1 Event as read. */
export type RecordedEvent = Fetched<eventsv1.Event>;

/**
 * Which events to collect.
 *
 * @example
 * ```ts
 * const options: EventCollectorOptions = { namespace: ns, regarding: { kind: 'HardDisk', name: 'disk-1' } };
 * ```
 */
export interface EventCollectorOptions {
  /** Only events in this namespace. Default: every namespace. */
  readonly namespace?: string;
  /** Only events about this object (each field given must match). Default: any object. */
  readonly regarding?: { readonly kind?: string; readonly name?: string; readonly namespace?: string; readonly uid?: string };
  /** Only events with this reason. Default: any. */
  readonly reason?: string;
}

/**
 * Events seen so far, in arrival order.
 *
 * @example
 * ```ts
 * await using events = await collectEvents(client, { namespace: ns });
 * const bound = await events.waitFor((e) => e.reason === 'Bound');
 * ```
 */
export interface EventCollector extends AsyncDisposable {
  readonly events: readonly RecordedEvent[];
  /** The first collected event (already seen or still to come) that passes `predicate`. Rejects with TestingError `ConditionNotMet` after `timeoutMs` (default 10 000). */
  waitFor(predicate?: (event: RecordedEvent) => boolean, options?: { readonly timeoutMs?: number }): Promise<RecordedEvent>;
  /** Stop watching. */
  stop(): Promise<void>;
}

/**
 * Start collecting events. Events that already exist are collected too.
 *
 * @example
 * ```ts
 * const events = await collectEvents(client, { namespace: 'default', reason: 'Synced' });
 * // ... run the reconciler ...
 * expect((await events.waitFor()).note).toContain('synced');
 * await events.stop();
 * ```
 */
export async function collectEvents(client: Client, options: EventCollectorOptions = {}): Promise<EventCollector> {
  const controller = new AbortController();
  const events: RecordedEvent[] = [];
  let failure: unknown;
  const wanted = (e: RecordedEvent): boolean => {
    const r = options.regarding;
    if (options.reason !== undefined && e.reason !== options.reason) return false;
    if (!r) return true;
    const reg = e.regarding ?? {};
    return (r.kind === undefined || reg.kind === r.kind) && (r.name === undefined || reg.name === r.name) && (r.namespace === undefined || reg.namespace === r.namespace) && (r.uid === undefined || reg.uid === r.uid);
  };
  const stream = await client.watch(eventsv1.Event, { ...(options.namespace ? { namespace: options.namespace } : {}), signal: controller.signal, allowWatchBookmarks: false });
  const pump = (async () => {
    try {
      for await (const event of stream as AsyncIterable<WatchEvent<RecordedEvent>>) {
        if (event.type !== 'ADDED' && event.type !== 'MODIFIED') continue;
        if (!wanted(event.object)) continue;
        const uid = event.object.metadata?.uid;
        const at = events.findIndex((e) => e.metadata?.uid === uid);
        if (at === -1) events.push(event.object);
        else events[at] = event.object;
      }
    } catch (err) {
      if (!controller.signal.aborted) failure = err;
    }
  })();
  const stop = async (): Promise<void> => {
    controller.abort();
    await pump;
  };
  return {
    events,
    waitFor: (predicate = () => true, waitOptions = {}) =>
      eventually(
        () => {
          if (failure !== undefined) throw failure instanceof Error ? failure : new Error('the event watch failed', { cause: failure });
          const found = events.find(predicate);
          if (!found) throw new Error(`no matching event among ${events.length}: ${events.map((e) => `${e.reason ?? ''} ${e.note ?? ''}`.trim()).join('; ') || '(none)'}`);
          return found;
        },
        { timeoutMs: waitOptions.timeoutMs ?? 10_000, message: 'a matching event' },
      ),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
