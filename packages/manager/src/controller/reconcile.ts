/**
 * What a reconciler receives and returns. A reconciler is level-triggered:
 * it gets the key of an object (namespace/name), never the event, reads the
 * current state (from the cache) and makes the world match.
 */
import type { Logger } from 'pino';
import { isManagerError, ManagerError } from '../errors.js';
import type { Trigger } from './triggers.js';

/** The object to reconcile. */
export interface Request {
  /** Absent for cluster-scoped kinds. */
  readonly namespace?: string;
  readonly name: string;
}

/** Per-reconcile context. */
export interface ReconcileContext {
  /** Aborts on shutdown, on lost leadership, and at the reconcile timeout. */
  readonly signal: AbortSignal;
  /** A child logger with controller, controllerGroup, controllerKind, namespace, name and reconcileID. */
  readonly log: Logger;
  /** Unique per reconcile, in every log line of it. */
  readonly reconcileID: string;
  /** The controller's name. */
  readonly controller: string;
  /**
   * What enqueued this key since its last reconcile: informer events (source
   * `for`, `owns`, `watches`; event `add`, `update`, `delete`,
   * `initial-list`...; the object seen and its resourceVersion; `mapped`
   * when a handler's map function gave the key; `ownWrite` when the event
   * is only the echo of this controller's own write) and the controller's
   * requeues (`error-backoff`, `requeue`, `requeue-after`,
   * `periodic-resync`, `shard-handoff`). Repeats fold into one entry with a
   * count. For logs and diagnosis: a reconciler stays level-triggered and
   * should not branch on it. Empty when the controller's `triggers` option
   * is false.
   */
  readonly triggers: readonly Trigger[];
  /** Triggers beyond the per-key bound (`triggers.maxPerKey`), counted but not kept. */
  readonly triggersOverflow: number;
}

/**
 * What to do after a reconcile. Build it with {@link Result}. A requeue's
 * `priority` (priority queues: controllers' default) is the priority the key
 * waits at; without one it keeps the priority it was handed out at.
 */
export type ReconcileResult =
  | { readonly kind: 'done' }
  | { readonly kind: 'requeueAfter'; readonly delayMs: number; readonly priority?: number }
  | { readonly kind: 'requeue'; readonly priority?: number };

/** Options of a requeue ({@link Result.requeue}, {@link Result.requeueAfter}). */
export interface RequeueOptions {
  /**
   * The priority the key waits at (higher first; `LOW_PRIORITY` is -100, an
   * edit's events 0), as controller-runtime's `Result.Priority`. Default: the
   * priority the key was handed out at, so a resync's low priority and an
   * edit's normal one carry over.
   */
  readonly priority?: number;
}

function withPriority<R extends ReconcileResult>(result: R, options: RequeueOptions | undefined): R {
  const priority = options?.priority;
  if (priority === undefined) return result;
  if (typeof priority !== 'number' || !Number.isFinite(priority)) throw new ManagerError('InvalidOptions', `a requeue's priority must be a finite number, got ${String(priority)}`);
  return { ...result, priority };
}

/**
 * Named constructors for reconcile results.
 *
 * @example
 * ```ts
 * return Result.requeueAfter(30_000); // look again in 30 s
 * return Result.done();               // until something changes
 * return Result.requeueAfter(60_000, { priority: -100 }); // a slow poll, behind every edit (LOW_PRIORITY of @kubeloop/workqueue)
 * ```
 */
export const Result = Object.freeze({
  /** Nothing more to do until the object (or something it watches) changes. */
  done: (): ReconcileResult => ({ kind: 'done' }),
  /** Reconcile again after `delayMs` (failure backoff is reset). `0` requeues with the per-key backoff, as {@link Result.requeue}: never a hot loop. */
  requeueAfter: (delayMs: number, options?: RequeueOptions): ReconcileResult => {
    if (!Number.isFinite(delayMs) || delayMs < 0) throw new ManagerError('InvalidOptions', `requeueAfter needs a delay >= 0, got ${delayMs}`);
    return withPriority({ kind: 'requeueAfter', delayMs }, options);
  },
  /** Reconcile again with the per-key exponential backoff (5 ms → 1000 s). */
  requeue: (options?: RequeueOptions): ReconcileResult => withPriority({ kind: 'requeue' }, options),
});

/** A reconciler as a class. */
export interface Reconciler {
  reconcile(request: Request, context: ReconcileContext): Promise<ReconcileResult | void> | ReconcileResult | void;
}

/** A reconciler as a function. */
export type ReconcileFn = (request: Request, context: ReconcileContext) => Promise<ReconcileResult | void> | ReconcileResult | void;

/** Either form. */
export type ReconcilerLike = Reconciler | ReconcileFn;

export function toReconciler(r: ReconcilerLike): Reconciler {
  return typeof r === 'function' ? { reconcile: r } : r;
}

/**
 * An error that is not retried: the reconcile is counted as a terminal error
 * and the key is forgotten until the object changes again.
 *
 * @example
 * ```ts
 * if (!spec.size) throw terminalError('spec.size is required');
 * ```
 */
export function terminalError(cause: unknown): ManagerError {
  const message = cause instanceof Error ? cause.message : String(cause);
  return new ManagerError('Terminal', message, { cause });
}

/**
 * Whether `err` is, or wraps (in its `cause` chain, or an AggregateError's
 * `errors`), a {@link terminalError}: a reconciler may wrap one in its own
 * error and it still is not retried.
 */
export function isTerminal(err: unknown): boolean {
  const seen = new Set<unknown>();
  const pending: unknown[] = [err];
  while (pending.length > 0 && seen.size < 64) {
    const e = pending.pop();
    if (e === null || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    if (isManagerError(e) && e.reason === 'Terminal') return true;
    pending.push((e as { cause?: unknown }).cause);
    if (e instanceof AggregateError) pending.push(...(e.errors as unknown[]));
  }
  return false;
}

/**
 * `namespace/name` (or `name`) of a request.
 *
 * @example
 * ```ts
 * requestKey({ namespace: 'default', name: 'disk-1' }); // 'default/disk-1'
 * ```
 */
export function requestKey(request: Request): string {
  return request.namespace ? `${request.namespace}/${request.name}` : request.name;
}

/** The request of a key. */
export function requestOf(key: string): Request {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
