/**
 * Pausing: an object whose `kubeloop.dev/paused` annotation is set is not
 * reconciled (unless it is being deleted), and a whole controller can stop
 * taking keys and start again on a running manager. The pieces a controller
 * composes: the check before a reconcile, the source that enqueues an
 * object when its annotation goes, and the gate its workers wait at.
 */
import type { Client, KindRef } from '@kubeloop/client';
import { mergeFrom } from '@kubeloop/client';
import { isMetadataRef } from '@kubeloop/client/internal';
import type { KubeObject } from '@kubeloop/scheme';
import { setStatusCondition } from '../controllerutil/conditions.js';
import type { Condition } from '../controllerutil/conditions.js';
import { enqueueObject } from './handlers.js';
import type { Predicate } from './predicates.js';
import { PASSED } from './stage.js';
import type { ReconcileStage, StageDeps } from './stage.js';
import { kindSource } from './source.js';
import type { Source } from './source.js';

/**
 * The annotation that pauses an object's reconciles unless a controller
 * names another (`pause.annotation`): set it with any value but `"false"`.
 *
 * @example
 * ```ts
 * // kubectl annotate harddisk disk-1 kubeloop.dev/paused=true   (remove it with kubeloop.dev/paused-)
 * await manager.client.patch(HardDisk, { namespace: 'default', name: 'disk-1' }, mergePatch({ metadata: { annotations: { [PAUSED_ANNOTATION]: 'true' } } }));
 * ```
 */
export const PAUSED_ANNOTATION = 'kubeloop.dev/paused';

/** How a controller pauses objects (`ControllerOptions.pause`). */
export interface PauseOptions {
  /** The annotation that pauses an object: set with any value but `"false"`. Default: {@link PAUSED_ANNOTATION}. */
  readonly annotation?: string;
  /**
   * Also write a `Paused` status condition (metav1.Condition) on the `for`
   * object: `True` (reason `PausedByAnnotation`) when a reconcile is skipped,
   * `False` (reason `NotPaused`) on the first reconcile after the annotation
   * is removed, only when it changes. Needs the kind's status subresource
   * with a `conditions` list, and `patch` on it in the controller's RBAC.
   * Default: false.
   */
  readonly condition?: boolean;
}

/**
 * Whether `object` carries `annotation` with a value other than `"false"`.
 *
 * @example
 * ```ts
 * isPaused(disk, PAUSED_ANNOTATION); // true for kubeloop.dev/paused: "true" (or "", or "yes")
 * ```
 */
export function isPaused(object: KubeObject | undefined, annotation: string): boolean {
  const value = object?.metadata?.annotations?.[annotation];
  return value !== undefined && value !== 'false';
}

/** Update events whose object was paused and no longer is: the source that enqueues them bypasses the controller's own predicates (a `generationChanged()` would drop them). */
function unpaused(annotation: string): Predicate {
  return (e) => e.type === 'update' && isPaused(e.old, annotation) && !isPaused(e.object, annotation);
}

/** A source of the `for` kind enqueueing each object whose pause annotation was removed. */
export function unpausedSource(kind: KindRef, annotation: string): Source {
  const source = kindSource(kind, enqueueObject(), [unpaused(annotation)]);
  return {
    ...source,
    description: `${source.description} (pause annotation removed)`,
    // Its events are the controller's own doing: reported as `pause-lifted`, never checked for own writes.
    start: (context) => {
      const { ownWrites: _ownWrites, ...rest } = context;
      return source.start({ ...rest, enqueue: (request, priority, _trigger, event) => context.enqueue(request, priority, { source: 'controller', event: 'pause-lifted', ...(request.namespace ? { namespace: request.namespace } : {}), name: request.name }, event) });
    },
  };
}

/**
 * What a reconcile should do: `skip` when its object (`read`, from the
 * cache) is paused and not being deleted (a deletion still runs, so
 * finalizers are removed); `run` otherwise (also when the object is gone).
 * With `condition`, writes the `Paused` condition as {@link PauseOptions}
 * says; a failed write is returned as `conditionError`, not thrown.
 */
export async function checkPaused(
  deps: { readonly client?: Pick<Client, 'status'> | undefined },
  kind: KindRef,
  read: () => Promise<KubeObject | undefined>,
  options: { readonly annotation: string; readonly condition: boolean },
): Promise<{ readonly verdict: 'skip' | 'run'; readonly conditionError?: unknown }> {
  const object = await read();
  if (object === undefined) return { verdict: 'run' }; // gone (or unreadable): the reconciler finds out
  const paused = isPaused(object, options.annotation) && object.metadata?.deletionTimestamp === undefined;
  // A metadata-only `for` kind has no status here to keep: no condition is written.
  if (!options.condition || deps.client === undefined || isMetadataRef(kind)) return { verdict: paused ? 'skip' : 'run' };
  const conditions = ((object as { status?: { conditions?: Condition[] } }).status?.conditions ?? []).map((c) => ({ ...c }));
  const current = conditions.find((c) => c.type === 'Paused');
  // Written only when it changes: a skip sets True; the first run after unpausing sets False where it was True.
  const next: Condition | undefined = paused
    ? { type: 'Paused', status: 'True', reason: 'PausedByAnnotation', message: `reconciles are paused by the ${options.annotation} annotation`, observedGeneration: object.metadata?.generation ?? 0 }
    : current?.status === 'True'
      ? { type: 'Paused', status: 'False', reason: 'NotPaused', message: 'reconciles run', observedGeneration: object.metadata?.generation ?? 0 }
      : undefined;
  if (next === undefined || (current?.status === next.status && current.reason === next.reason)) return { verdict: paused ? 'skip' : 'run' };
  setStatusCondition(conditions, next);
  try {
    // The whole list is replaced (a merge patch): guarded by the resourceVersion read, so a concurrent writer's conditions are never lost (a conflict is tried again at the next reconcile).
    const before = object as KubeObject & { status?: object };
    const ref = isMetadataRef(kind) ? kind.of : kind;
    await deps.client.status().patch({ ...before, apiVersion: ref.apiVersion, kind: ref.kind }, mergeFrom(before, { ...before, status: { ...before.status, conditions } }, { optimisticLock: true }));
  } catch (conditionError) {
    return { verdict: paused ? 'skip' : 'run', conditionError };
  }
  return { verdict: paused ? 'skip' : 'run' };
}

/**
 * The per-object pause as a stage: a paused object's key is passed over
 * (counted in `kubeloop_reconcile_paused_total`), its `Paused` condition
 * written when `condition` asks. It reads the object through the
 * reconcile's one cache read.
 */
export function pauseStage(options: PauseOptions, kind: KindRef, deps: StageDeps): ReconcileStage {
  const settings = { annotation: options.annotation ?? PAUSED_ANNOTATION, condition: options.condition ?? false };
  return {
    async around(item, next) {
      const { verdict, conditionError } = await checkPaused(deps, kind, () => item.object(), settings);
      if (conditionError !== undefined) deps.log.warn({ err: conditionError, key: item.key }, 'could not write the Paused condition; tried again at the next reconcile');
      if (verdict === 'run') return next(item.signal);
      deps.metrics.pausedSkips.inc(deps.labels);
      deps.log.debug({ key: item.key }, 'object paused by annotation: reconcile skipped');
      return PASSED;
    },
  };
}

/**
 * A whole controller's pause: workers wait at `whenRunning` while it is
 * paused, and `signal` (one per running period) aborts the get a worker is
 * waiting in when `pause` is called, so no reconcile starts after it.
 */
export class PauseGate {
  #paused = false;
  #period = new AbortController();
  #resumed: Promise<void> = Promise.resolve();
  #resume: () => void = () => undefined;

  get paused(): boolean {
    return this.#paused;
  }

  /** Aborts when the controller is paused (a new one for each running period). */
  get signal(): AbortSignal {
    return this.#period.signal;
  }

  pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    this.#resumed = new Promise<void>((resolve) => (this.#resume = resolve));
    this.#period.abort();
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#period = new AbortController();
    this.#resume();
  }

  /** Resolves true once running, false when `stop` aborts first. */
  async whenRunning(stop: AbortSignal): Promise<boolean> {
    while (this.#paused && !stop.aborted) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          stop.removeEventListener('abort', done);
          resolve();
        };
        stop.addEventListener('abort', done, { once: true });
        void this.#resumed.then(done);
      });
    }
    return !stop.aborted;
  }
}
