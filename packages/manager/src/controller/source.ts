/**
 * Sources feed a controller's workqueue: informer events of a kind (through
 * an event handler and predicates), or any rxjs Observable of requests (a
 * timer, an external queue). Errors thrown by user callbacks (predicates,
 * map functions, an Observable) are contained: reported through the
 * context's `onError`, never thrown into the informer or rxjs.
 */
import type { Observable } from 'rxjs';
import type { InformerCache, InformerEvent } from '@kubeloop/cache';
import type { KindRef } from '@kubeloop/client';
import { isNoKindMatch, isNotFound } from '@kubeloop/client';
import { currentTracer, isMetadataRef, parseTraceparent, TRACEPARENT_ANNOTATION } from '@kubeloop/client/internal';
import type { KubeObject } from '@kubeloop/scheme';
import { LOW_PRIORITY } from '@kubeloop/workqueue';
import { describeError } from '../errors.js';
import type { EventHandler } from './handlers.js';
import { isIgnoreOwnWrites, kindIdOf } from './own-writes.js';
import type { OwnWrites } from './own-writes.js';
import type { Predicate } from './predicates.js';
import type { Request } from './reconcile.js';
import type { SourceTrigger, TriggerEvent, TriggerInput, TriggerSource } from './triggers.js';

/** What a source is given when its controller starts. */
export interface SourceContext {
  /**
   * Queue a request. `priority` orders waiting requests in a priority queue
   * (higher first; default 0); kind sources use `lowPriority` for the
   * informer's initial list and for resyncs. `trigger` says why, for
   * `ctx.triggers` (default: `{ source: 'source', event: 'enqueue' }`).
   * `event` is the informer event the request came from, as the source got
   * it: the controller's stages learn what they need of the key from its
   * object then (a sharded controller its bucket) instead of reading the
   * object again at reconcile. Default: none.
   */
  readonly enqueue: (request: Request, priority?: number, trigger?: TriggerInput, event?: InformerEvent<KubeObject>) => void;
  /**
   * Whether the controller attributes triggers (`ControllerOptions.triggers`
   * is not false): a source that reports none need not build them.
   * Default: false.
   */
  readonly attribute?: boolean;
  /** The controller's name and the writes of its client, to mark own-write echoes. Default: none (nothing is marked). */
  readonly ownWrites?: { readonly controller: string; readonly writes: OwnWrites };
  /** The event a first list is reported as: `initial-list`, or `leadership-start` for a controller started cold by a new leadership term. Default: `initial-list`. */
  readonly initialEvent?: TriggerEvent;
  /** Told when `ignoreOwnWrites()` drops an event. Default: no one. */
  readonly onOwnWriteDropped?: () => void;
  /** The controller's priority for initial lists and resyncs (its `initialListPriority`). Default: `LOW_PRIORITY` (-100). */
  readonly lowPriority?: number;
  /** The informer cache the controller reads (kind sources get their informers here). */
  readonly cache: InformerCache;
  /** Aborts when the source must stop (the controller's term ended, or it was removed). */
  readonly signal: AbortSignal;
  /** Told of an error thrown by a user callback (predicate, map function, Observable); the source goes on. */
  readonly onError: (err: unknown, where: string) => void;
}

/** Whether an informer's error (or one of its causes) says the kind was not served: no such kind, or a 404 for its resource. */
function kindWasMissing(err: unknown): boolean {
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (isNoKindMatch(e) || isNotFound(e)) return true;
  }
  return false;
}

/** A source of requests. */
export interface Source {
  /** A short description for logs and readiness (`kind HardDisk.crd-demo.io/v1`). */
  readonly description: string;
  /** The kind whose informer it reads, if any: the manager stops that informer when the last controller reading it is removed. */
  readonly kind?: KindRef;
  /** Start delivering; resolve once the initial state has been delivered (the source is synced). */
  start(context: SourceContext): Promise<void>;
  /** Why the source is not synced yet (its informer's last error), for readiness. Default: nothing to add. */
  waitingReason?(cache: InformerCache): string | undefined;
}

/**
 * Informer events of a kind, mapped by `handler` and filtered by `predicates`.
 * The events of the informer's initial list and resyncs are enqueued at the
 * controller's low priority (`initialListPriority`, `LOW_PRIORITY` by default), so that with a priority queue a change made while a large cache
 * fills is reconciled first (as controller-runtime does).
 *
 * @example
 * ```ts
 * kindSource(ConfigMap, enqueueOwner(HardDisk), [generationChanged()]);
 * ```
 */
export function kindSource(kind: KindRef, handler: EventHandler, predicates: readonly Predicate[] = []): Source {
  return kindSourceAs('watches', kind, handler, predicates);
}

/** A kind source whose triggers name `role` (`for`, `owns`, `watches`). */
export function kindSourceAs(role: TriggerSource, kind: KindRef, handler: EventHandler, predicates: readonly Predicate[] = []): Source {
  const ref = isMetadataRef(kind) ? kind.of : kind;
  const kindId = kindIdOf(kind);
  const dropsOwnWrites = predicates.some(isIgnoreOwnWrites);
  return {
    description: `kind ${ref.kind}.${ref.apiVersion}${isMetadataRef(kind) ? ' (metadata)' : ''}`,
    kind,
    waitingReason(cache) {
      const err = cache.informerInfo(kind)?.stats.map((st) => st.lastError).find((e) => e !== undefined);
      return err === undefined ? undefined : describeError(err);
    },
    async start({ enqueue, cache, signal, onError, lowPriority = LOW_PRIORITY, attribute = false, ownWrites, initialEvent = 'initial-list', onOwnWriteDropped }) {
      const informer = await cache.getInformer(kind, { signal, blockUntilSynced: false });
      // tracing.linkWrites: events carry the trace context of the write that made them (decided once: tracing starts before controllers).
      const links = attribute && currentTracer()?.linksObjects === true;
      // The first list of a kind whose CRD was missing when this source started: decided once, at its first object.
      let firstListEvent: TriggerEvent | undefined;
      const initial = (): TriggerEvent => {
        if (firstListEvent === undefined) {
          const missing = kindWasMissing(informer.resolveError()) || cache.informerInfo(kind)?.stats.some((st) => kindWasMissing(st.lastError)) === true;
          firstListEvent = missing ? 'crd-established' : initialEvent;
        }
        return firstListEvent;
      };
      const deliver = (event: InformerEvent<KubeObject>, priority: number, what: TriggerEvent): void => {
        let requests: readonly Request[];
        // Only for an ignoreOwnWrites() predicate (one Map lookup); attribution looks echoes up when the reconcile starts,
        // since an echo can arrive before the answer of the write it echoes has been read.
        const echo = ownWrites !== undefined && dropsOwnWrites && event.type !== 'delete' && ownWrites.writes.isEcho(kindId, event.object, ownWrites.controller);
        try {
          if (dropsOwnWrites && echo) {
            onOwnWriteDropped?.();
            return;
          }
          if (!predicates.every((p) => p(event))) return;
          requests = handler(event);
        } catch (err) {
          onError(err, `${event.type} event of ${event.object.metadata?.namespace ?? ''}/${event.object.metadata?.name ?? ''}`);
          return;
        }
        if (!attribute) {
          for (const request of requests) enqueue(request, priority, undefined, event);
          return;
        }
        const m = event.object.metadata;
        const name = m?.name;
        const namespace = m?.namespace;
        // One record per event, fields assigned (no spreads): the bounded ledger keeps at most its fields.
        const trigger: { -readonly [K in keyof SourceTrigger]: SourceTrigger[K] } = { source: role, event: what, kind: ref.kind };
        if (namespace) trigger.namespace = namespace;
        if (name !== undefined) trigger.name = name;
        if (m?.resourceVersion !== undefined) trigger.resourceVersion = m.resourceVersion;
        if (echo) trigger.ownWrite = true;
        if (links && (what === 'add' || what === 'update')) {
          const traceparent = writtenTraceparent(event);
          if (traceparent !== undefined) trigger.traceparent = traceparent;
        }
        if (ownWrites !== undefined) {
          trigger.kindId = kindId;
          if (dropsOwnWrites) trigger.dropsOwnWrites = true;
        }
        for (const request of requests) {
          const mapped = request.name !== name || (request.namespace ?? '') !== (namespace ?? '');
          enqueue(request, priority, mapped ? { ...trigger, mapped: true } : trigger, event);
        }
      };
      // Each event as the informer built it: an initial list's adds and resyncs are not urgent.
      const registration = informer.addEventHandler((event) => {
        if (event.type === 'add') deliver(event, event.initial ? lowPriority : 0, event.initial && attribute ? initial() : 'add');
        else if (event.type === 'update') deliver(event, event.resync ? lowPriority : 0, event.resync ? 'informer-resync' : 'update');
        else deliver(event, 0, 'delete');
      });
      signal.addEventListener('abort', () => registration.remove(), { once: true });
      await informer.waitForSync(signal);
    },
  };
}

/**
 * The trace context recorded by the write that made `event`
 * (`kubeloop.dev/traceparent`): on an add, or an update that changed it (an
 * update by a writer that records nothing keeps the last writer's, which
 * did not cause this event). Untrusted: anything but a well-formed W3C
 * `traceparent` is ignored.
 */
function writtenTraceparent(event: InformerEvent<KubeObject>): string | undefined {
  if (event.type === 'delete') return undefined;
  const value = event.object.metadata?.annotations?.[TRACEPARENT_ANNOTATION];
  if (value === undefined || (event.type === 'update' && event.old.metadata?.annotations?.[TRACEPARENT_ANNOTATION] === value)) return undefined;
  return parseTraceparent(value);
}

/**
 * Requests from any Observable (one request or a batch per emission). An
 * error the Observable signals is reported and ends this source's stream;
 * the controller goes on with its other sources.
 *
 * @example
 * ```ts
 * observableSource(interval(60_000).pipe(map(() => ({ namespace: 'ops', name: 'nightly' }))));
 * ```
 */
export function observableSource(requests: Observable<Request | readonly Request[]>, description = 'observable'): Source {
  return {
    description,
    start({ enqueue, signal, onError }) {
      const subscription = requests.subscribe({
        next: (r) => {
          for (const request of Array.isArray(r) ? (r as readonly Request[]) : [r as Request]) enqueue(request);
        },
        error: (err: unknown) => onError(err, description),
      });
      signal.addEventListener('abort', () => subscription.unsubscribe(), { once: true });
      return Promise.resolve();
    },
  };
}
