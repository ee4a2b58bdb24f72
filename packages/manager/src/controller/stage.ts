/**
 * Reconcile stages: what a controller runs around each reconcile, built from
 * its options. The controller itself knows queues, workers and sources; a
 * stage adds one concern without touching it: it may pass a key over (not
 * reconciled here), run the reconcile under a narrower signal and a write
 * fence, note what it needs of each request as a source enqueues it (from
 * the event's object, so nothing is read or hashed again at reconcile), and
 * bring a source of its own (keys to enqueue when something outside the
 * controller changes).
 *
 * Today: sharding (shard-stage.ts) and the per-object pause (pause.ts),
 * listed in stages.ts. A new scale dimension (tenants) or a new per-key
 * filter is a file like shard-stage.ts and one line in stages.ts.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { InformerCache, InformerEvent } from '@kubeloop/cache';
import type { Client, KindRef } from '@kubeloop/client';
import type { KubeObject } from '@kubeloop/scheme';
import type { ControllerLabels, ControllerMetrics } from '../metrics/controller-metrics.js';
import type { Request } from './reconcile.js';
import type { Source } from './source.js';

/** What a stage's `around` resolves to when it passed the key over: the reconciler did not run and the key is forgotten. */
export const PASSED = Symbol('passed');

/** One reconcile as the stages see it. */
export interface StageItem {
  /** `namespace/name`, as the queue holds it. */
  readonly key: string;
  /** The key parsed once per reconcile. */
  readonly request: Request;
  /** The signal the reconcile runs under so far (outer stages may have narrowed it). */
  readonly signal: AbortSignal;
  /**
   * The key's `for` object from the cache; undefined when it is not cached
   * (deleted, another shard's) or the controller has no `for` kind. Read at
   * most once per reconcile, whichever stages ask.
   */
  object(): Promise<KubeObject | undefined>;
}

/**
 * Runs the inner stages and the reconcile under `signal`; resolves to
 * whether the key was done with (not queued again), or {@link PASSED} when
 * an inner stage passed it over.
 */
export type StageNext = (signal: AbortSignal) => Promise<boolean | typeof PASSED>;

/** A stage around a controller's reconciles. */
export interface ReconcileStage {
  /** Whether the controller needs leadership unless its options say: a shard runs on every replica (false). Default: no say. */
  readonly needLeaderElection?: boolean;
  /**
   * A request a source is enqueuing, with the informer event it came from
   * (absent for requeues, resyncs, Observable sources and `enqueue` by
   * hand) and whether that event is of the controller's `for` kind. Runs on
   * the event path: no I/O, no per-event allocation.
   */
  enqueued?(key: string, request: Request, event: InformerEvent<KubeObject> | undefined, ofForKind: boolean): void;
  /** A source the controller runs beside its own (started and stopped with them). */
  readonly source?: Source;
  /** Run one reconcile: call `next` (at most once) and resolve to what it resolves to, or resolve to {@link PASSED} without calling it (the stage counts its own skips). */
  around(item: StageItem, next: StageNext): Promise<boolean | typeof PASSED>;
}

/** What stages may use of their controller. */
export interface StageDeps {
  readonly name: string;
  readonly cache: InformerCache;
  readonly registry: Registry;
  readonly metrics: ControllerMetrics;
  readonly labels: ControllerLabels;
  readonly log: Logger;
  readonly forKind?: KindRef | undefined;
  readonly client?: Pick<Client, 'status'> | undefined;
}

/** Runs `item` through `stages[from..]`, then `last`. */
export function runStages(stages: readonly ReconcileStage[], from: number, item: StageItem, last: StageNext): Promise<boolean | typeof PASSED> {
  const stage = stages[from];
  if (stage === undefined) return last(item.signal);
  return stage.around(item, (signal) => runStages(stages, from + 1, signal === item.signal ? item : { ...item, signal }, last));
}
