/**
 * Sources feed a controller's workqueue: informer events of a kind (through
 * an event handler and predicates), or any rxjs Observable of requests (a
 * timer, an external queue).
 */
import type { Observable } from 'rxjs';
import type { InformerCache } from '@kubeloop/cache';
import type { KindRef } from '@kubeloop/client';
import { isMetadataRef } from '@kubeloop/client';
import type { EventHandler } from './handlers.js';
import type { Predicate } from './predicates.js';
import type { Request } from './reconcile.js';

/** What a source is given when its controller starts. */
export interface SourceContext {
  readonly enqueue: (request: Request) => void;
  readonly cache: InformerCache;
  readonly signal: AbortSignal;
}

/** A source of requests. */
export interface Source {
  /** A short description for logs and readiness (`kind HardDisk.crd-demo.io/v1`). */
  readonly description: string;
  /** Start delivering; resolve once the initial state has been delivered (the source is synced). */
  start(context: SourceContext): Promise<void>;
}

/**
 * Informer events of a kind, mapped by `handler` and filtered by `predicates`.
 *
 * @example
 * ```ts
 * kindSource(ConfigMap, enqueueOwner(HardDisk), [generationChanged()]);
 * ```
 */
export function kindSource(kind: KindRef, handler: EventHandler, predicates: readonly Predicate[] = []): Source {
  const ref = isMetadataRef(kind) ? kind.of : kind;
  return {
    description: `kind ${ref.kind}.${ref.apiVersion}${isMetadataRef(kind) ? ' (metadata)' : ''}`,
    async start({ enqueue, cache, signal }) {
      const informer = await cache.getInformer(kind, { signal });
      const subscription = informer.events().subscribe((event) => {
        if (!predicates.every((p) => p(event))) return;
        for (const request of handler(event)) enqueue(request);
      });
      signal.addEventListener('abort', () => subscription.unsubscribe(), { once: true });
    },
  };
}

/**
 * Requests from any Observable (one request or a batch per emission).
 *
 * @example
 * ```ts
 * observableSource(interval(60_000).pipe(map(() => ({ namespace: 'ops', name: 'nightly' }))));
 * ```
 */
export function observableSource(requests: Observable<Request | readonly Request[]>, description = 'observable'): Source {
  return {
    description,
    start({ enqueue, signal }) {
      const subscription = requests.subscribe((r) => {
        for (const request of Array.isArray(r) ? (r as readonly Request[]) : [r as Request]) enqueue(request);
      });
      signal.addEventListener('abort', () => subscription.unsubscribe(), { once: true });
      return Promise.resolve();
    },
  };
}
