/**
 * A controller: sources fill a workqueue with requests; up to
 * `maxConcurrentReconciles` workers take them, never two on one key, and run
 * the reconciler. Errors are caught, counted and retried with per-key
 * backoff; terminal errors are not retried.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { InformerCache, InformerEvent } from '@kubeloop/cache';
import { currentTracer } from '@kubeloop/client/internal';
import type { SpanHandle } from '@kubeloop/client/internal';
import { reconcileLinks, reconcileSpanAttributes, reconcileStampsWrites } from '../tracing/reconcile-span.js';
import type { Client, KindRef } from '@kubeloop/client';
import type { KubeObject } from '@kubeloop/scheme';
import { createPriorityQueue, defaultControllerRateLimiter, LOW_PRIORITY, sleep } from '@kubeloop/workqueue';
import type { RateLimiter, WorkQueue, WorkQueueOptions } from '@kubeloop/workqueue';
import { isManagerError, ManagerError } from '../errors.js';
import { validateControllerOptions } from '../options-validation.js';
import type { ControllerLabels, ControllerMetrics } from '../metrics/controller-metrics.js';
import { createWorkQueueMetrics } from '../metrics/workqueue-metrics.js';
import { isTerminal, requestKey, requestOf } from './reconcile.js';
import type { ReconcileContext, ReconcileResult, Reconciler, Request } from './reconcile.js';
import type { Source, SourceContext } from './source.js';
import { PauseGate } from './pause.js';
import type { PauseOptions } from './pause.js';
import type { ControllerShard } from './shard-stage.js';
import { PASSED, runStages } from './stage.js';
import type { ReconcileStage, StageItem } from './stage.js';
import { stagesFor } from './stages.js';
import type { EventRecorder } from '../events/recorder.js';
import { inReconcileOf } from './own-writes.js';
import { MissingKinds, sameKind } from './kind-waiter.js';
import type { OwnWrites } from './own-writes.js';
import { describeTrigger, NO_TRIGGERS, SelfTriggerWatch, TriggerLedger } from './triggers.js';
import type { TriggerEvent, TriggerInput, TriggerOptions, TriggerSet } from './triggers.js';
import { ReconcileHistory, redactError } from './inspection.js';
import type { BackoffKey, ControllerInspection, InFlightKey, KeyInspection, ReconcileRecord } from './inspection.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { randomUUID } = process.getBuiltinModule('node:crypto');

/** Options of one controller. */
export interface ControllerOptions {
  /** Workers reconciling at once (never two on one key). Default: 1. */
  readonly maxConcurrentReconciles?: number;
  /**
   * Abort a reconcile's signal after this long, as controller-runtime's
   * `ReconciliationTimeout`: the signal's reason is a `ManagerError` with
   * reason `ReconcileTimeout`, the attempt counts as an error (retried with
   * backoff) and in `controller_runtime_reconcile_timeouts_total`. Its key
   * and worker stay held until the reconciler returns. 0: none. Default:
   * none.
   */
  readonly reconcileTimeoutMs?: number;
  /** Per-key retry delays. Default: max(5 ms → 1000 s exponential per key, 10 qps / 100 burst overall). */
  readonly rateLimiter?: RateLimiter;
  /**
   * Makes the controller's queue from the options the controller chose
   * (name, rate limiter, metrics). Default: `createPriorityQueue` from
   * `@kubeloop/workqueue`, as controller-runtime since v0.23: the events of
   * an informer's initial list and resyncs wait behind other changes, so an
   * edit made while a large cache fills is reconciled first. With every
   * event at one priority it behaves exactly as the FIFO queue. Pass
   * `createWorkQueue` for the classic FIFO queue.
   */
  readonly newQueue?: (options: WorkQueueOptions) => WorkQueue;
  /**
   * The priority of the events of informers' initial lists and of resyncs
   * (periodic, and updates that changed nothing), which wait behind changes
   * (priority 0) in the priority queue. 0 puts them in line with changes.
   * Default: `LOW_PRIORITY` (-100), as controller-runtime.
   */
  readonly initialListPriority?: number;
  /**
   * The priority queue's aging bound (`maxWaitMs` of `createPriorityQueue`):
   * while a key has waited this long, every other key handed out is the
   * longest-waiting one, so keys at the initial-list priority are never
   * starved by a steady stream of changes. `Infinity`: strict priority order
   * (controller-runtime's, which can starve). Default: 60 s
   * (`DEFAULT_MAX_WAIT_MS`).
   */
  readonly queueMaxWaitMs?: number;
  /**
   * Re-enqueue every cached object of the `for` kind this often, at low
   * priority, each period jittered by ±10 % (controller-runtime's
   * `SyncPeriod`): a safety net for drift a watch cannot see (state outside
   * Kubernetes, a reconcile that forgot to requeue). 0 turns it off.
   * Default: the manager's `syncPeriodMs` (10 hours, as controller-runtime:
   * often enough to repair drift within a working day, rare enough that a
   * 50,000-object cache costs no noticeable load).
   */
  readonly syncPeriodMs?: number;
  /**
   * Objects whose `kubeloop.dev/paused` annotation (or the one named here)
   * is set are not reconciled: each skipped reconcile is counted in
   * `kubeloop_reconcile_paused_total`; an object being deleted is still
   * reconciled (its finalizers run); removing the annotation enqueues the
   * object, whatever the `for` predicates say. `false`: no per-object
   * pause (and no cache read before each reconcile). Default: on, with
   * `PAUSED_ANNOTATION` and no condition.
   */
  readonly pause?: PauseOptions | false;
  /**
   * Trigger attribution: each waiting key keeps what enqueued it since its
   * last reconcile (source, event, object, resourceVersion, requeue reason;
   * `ctx.triggers`), counted in `kubeloop_reconcile_triggers_total`, named
   * in a debug log line per reconcile, shown by the inspect endpoint; events
   * that are only the echo of this controller's own writes are marked, and
   * a key reconciled `selfTriggerThreshold` times in a row by nothing else
   * is reported. `false` turns it off (`ctx.triggers` is then empty).
   * Default: on, with {@link TriggerOptions}' defaults.
   */
  readonly triggers?: TriggerOptions | false;
  /** Run only while this manager leads. Default: true, false for a sharded controller (`shard`: every replica runs its share). */
  readonly needLeaderElection?: boolean;
  /** While the manager does not lead, run the sources (caches, queue) but no workers, so a takeover needs no sync. Only for leader-only controllers. Default: the manager's `warmStandby`. */
  readonly warmStandby?: boolean;
  /**
   * Reconcile only this replica's shard of the `for` kind: a key is
   * reconciled only while the ring's bucket of its object's hash is active
   * here. When the ring hands a bucket on, the controller stops taking its
   * keys at once and the ring waits for the reconciles in flight there
   * before the new owner starts; when a bucket starts here, its cached
   * objects are enqueued. Run the ring: give it to the manager as its
   * leadership (`ringLeadership(ring)`: leader-only work then runs on the
   * member holding the ring's leader bucket), or run it yourself
   * (`manager.add((s) => ring.run(s), { needLeaderElection: false })`).
   * A sharded controller needs no leadership unless you say so. Default:
   * every key.
   */
  readonly shard?: ControllerShard;
}

export interface ControllerDeps {
  readonly cache: InformerCache;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly metrics: ControllerMetrics;
  /** The `for` kind, re-enqueued every sync period. Default: none (no resync). */
  readonly forKind?: KindRef;
  /** The sync period when the controller's options name none; 0: off. */
  readonly defaultSyncPeriodMs?: number;
  /** group and kind of the `for` object, for log fields. */
  readonly group: string;
  readonly kind: string;
  /** Told of every finished reconcile. Default: no one. */
  readonly observe?: (report: ReconcileReport) => void;
  /** The fleet cluster this controller runs for: a `cluster` label on its metrics and log lines. Default: none (the manager's own cluster). */
  readonly cluster?: string;
  /** Writes the `Paused` condition (`pause.condition`). Default: none (no condition written). */
  readonly client?: Pick<Client, 'status'>;
  /**
   * Resolves true once a kind the API server stopped serving (its CRD was
   * deleted, or is not installed yet) is served again; false when the signal
   * aborts first. With it, a source whose kind is not served stops, its
   * informer is dropped, and it starts again when the kind is back (the
   * `for` kind's absence also holds the workers). Default: none (a source
   * waits on its informer, which retries with backoff).
   */
  readonly waitForKind?: (kind: KindRef, signal: AbortSignal) => Promise<boolean>;
  /** The writes of the controller's client, to mark own-write echoes. Default: none (no event is marked). */
  readonly ownWrites?: OwnWrites;
  /** The recorder of the `SelfTriggering` Event. Default: none (no Event). */
  readonly recorder?: () => EventRecorder;
  /** Whether leadership comes in elected terms (leader election, a ring): a cold controller's first list is then reported as `leadership-start`. Default: false. */
  readonly electedLeadership?: boolean;
}

/**
 * One finished reconcile, as `Manager.onReconcile` listeners see it: which
 * controller, which object, how it ended (the `controller_runtime_reconcile_total`
 * result label) and how long it took.
 */
export interface ReconcileReport {
  /** The controller's name. */
  readonly controller: string;
  /** The fleet cluster the reconcile ran for; absent for the manager's own cluster. */
  readonly cluster?: string;
  /** The object reconciled. */
  readonly request: Request;
  /** The reconcile's ID, as in its log lines (`reconcileID`) and `ReconcileContext.reconcileID`. */
  readonly reconcileID: string;
  /** `success`, `requeue`, `requeue_after` or `error` (a terminal error too). */
  readonly result: 'success' | 'requeue' | 'requeue_after' | 'error';
  /** What the reconciler threw, when `result` is `error`. */
  readonly error?: unknown;
  /** How long the reconciler ran, ms. */
  readonly durationMs: number;
}

/** How far a controller has got, for readiness. */
export interface ControllerStatus {
  /** The controller's name. */
  readonly name: string;
  /** Its workers have started (this replica leads, or the controller needs no leadership). */
  readonly started: boolean;
  /** Its sources run without workers: a warm standby's controller. */
  readonly warm: boolean;
  /** Every source has delivered its initial state, and no kind is waited for (`waitingForCRD` is empty). */
  readonly synced: boolean;
  /** Paused with `Manager.pauseController`: its workers take no keys until resumed (its sources keep the queue up to date). */
  readonly paused: boolean;
  /** Sources not synced yet, with the last error their informer saw (those waiting for their CRD included). */
  readonly waitingFor: readonly string[];
  /**
   * The kinds (`Kind.group/version`) the API server does not serve now (CRD
   * not installed, or deleted), each waited for: their sources and informers
   * are stopped and start again when the CRD is back. When the controller's
   * `for` kind is among them its workers take no keys meanwhile; a watched
   * (`owns`, `watches`) kind alone leaves them running.
   */
  readonly waitingForCRD: readonly string[];
  /** Whether the `for` kind is among `waitingForCRD`: the workers wait for its CRD. */
  readonly forKindMissing: boolean;
  /** A fleet controller's members engaged here, each with its progress; absent for the manager's own controllers. */
  readonly clusters?: readonly MemberControllerStatus[];
}

/** A fleet controller in one member: its progress there, and whether this replica reconciles it (else a warm standby). */
export interface MemberControllerStatus extends Omit<ControllerStatus, 'clusters'> {
  readonly cluster: string;
  readonly reconciling: boolean;
}

const PANIC_TYPES = [TypeError, ReferenceError, RangeError, SyntaxError];

const SOURCE_ENQUEUE: TriggerInput = Object.freeze({ source: 'source', event: 'enqueue' });
const RESYNC: TriggerInput = Object.freeze({ source: 'controller', event: 'periodic-resync' });
const REQUEUE: TriggerInput = Object.freeze({ source: 'controller', event: 'requeue' });
const REQUEUE_AFTER: TriggerInput = Object.freeze({ source: 'controller', event: 'requeue-after' });
const BACKOFF: TriggerInput = Object.freeze({ source: 'controller', event: 'error-backoff' });

/** The `priority` label value of a priority, as the queue metrics' (`high`, `0`, `low`). */
function priorityLabel(p: number): string {
  return p > 0 ? 'high' : p < 0 ? 'low' : '0';
}

/** Per label, the sum (depth) or the largest (wait) of the priorities that map to it. */
function byLabel(m: ReadonlyMap<number, number> | undefined, fold: (a: number, b: number) => number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [p, n] of m ?? []) {
    const l = priorityLabel(p);
    out[l] = out[l] === undefined ? n : fold(out[l], n);
  }
  return out;
}

export class Controller {
  private queue: WorkQueue | undefined;
  /** The warm queue and sources, while `warmup` runs. */
  private warm: { queue: WorkQueue; synced: Promise<void> } | undefined;
  /** Settles when the last leadership term's workers have finished. */
  private termDone: Promise<void> = Promise.resolve();
  private started = false;
  private synced = false;
  private readonly pending = new Set<Source>();
  private readonly log: Logger;
  private readonly maxConcurrent: number;
  /** What runs around each reconcile (sharding, the per-object pause), outermost first: stages.ts. */
  private readonly stages: readonly ReconcileStage[];
  /** The builder's sources and the stages' own. */
  private readonly sources: readonly Source[];
  private readonly labels: ControllerLabels;
  /** The whole controller's pause, and the reconciles in flight (`pause` waits for them). */
  private readonly gate = new PauseGate();
  /** Sources waiting for their CRD, and the gate holding the workers while the `for` kind's is gone. */
  private readonly crd: MissingKinds;
  private readonly inFlightReconciles = new Set<Promise<void>>();
  /** Trigger attribution's bounds, undefined when off. */
  private readonly attribution: { readonly maxPerKey: number; readonly selfTriggerThreshold: number; readonly historySize: number } | undefined;
  /** Each queue's triggers of its waiting keys. */
  private readonly ledgers = new WeakMap<WorkQueue, TriggerLedger>();
  private readonly selfTriggers: SelfTriggerWatch | undefined;
  private readonly history: ReconcileHistory;
  /** Keys held by a worker now. */
  private readonly inFlightKeys = new Map<string, { readonly reconcileID: string; readonly startedAt: number }>();
  /** Keys whose last reconcile failed and are waiting out their backoff. */
  private readonly backoffKeys = new Map<string, { failures: number; nextRetryAt: number; lastError: string; lastErrorAt: number }>();
  /** The last delay the rate limiter gave, and for which key (read right after a rate-limited add). */
  private readonly noted = { key: undefined as string | undefined, ms: 0 };
  /** Child counters of kubeloop_reconcile_triggers_total by source and event, looked up once each. */
  private readonly triggerCounters = new Map<string, { inc(): void }>();

  constructor(
    readonly name: string,
    private readonly reconciler: Reconciler,
    sources: readonly Source[],
    readonly options: ControllerOptions,
    private readonly deps: ControllerDeps,
  ) {
    this.maxConcurrent = options.maxConcurrentReconciles ?? 1;
    if (!Number.isInteger(this.maxConcurrent) || this.maxConcurrent < 1) {
      throw new ManagerError('InvalidOptions', `controller ${name}: maxConcurrentReconciles must be a positive integer`);
    }
    validateControllerOptions(name, options);
    this.labels = deps.cluster === undefined ? { controller: name } : { controller: name, cluster: deps.cluster };
    this.log = deps.logger.child({ controller: name, controllerGroup: deps.group, controllerKind: deps.kind, ...(deps.cluster === undefined ? {} : { cluster: deps.cluster }) });
    const t = options.triggers;
    this.attribution = t === false ? undefined : { maxPerKey: t?.maxPerKey ?? 8, selfTriggerThreshold: t?.selfTriggerThreshold ?? 3, historySize: t?.historySize ?? 128 };
    this.selfTriggers = this.attribution && new SelfTriggerWatch(this.attribution.selfTriggerThreshold);
    this.history = new ReconcileHistory(this.attribution?.historySize ?? 0);
    this.crd = new MissingKinds({ cache: deps.cache, forKind: deps.forKind, waitForKind: deps.waitForKind, log: this.log });
    this.stages = stagesFor(options, { name, cache: deps.cache, registry: deps.registry, metrics: deps.metrics, labels: this.labels, log: this.log, forKind: deps.forKind, client: deps.client });
    this.sources = [...sources, ...this.stages.flatMap((s) => (s.source ? [s.source] : []))];
  }

  /** Count one trigger in kubeloop_reconcile_triggers_total (its child counter looked up once per source and event). */
  private countTrigger(t: TriggerInput): void {
    const id = `${t.source}\u0000${t.event}`;
    let c = this.triggerCounters.get(id);
    if (c === undefined) {
      c = this.deps.metrics.triggers.labels({ ...this.labels, source: t.source, event: t.event });
      this.triggerCounters.set(id, c);
    }
    c.inc();
  }

  /** Add `key` to `queue` with the options given, noting `trigger` for its next reconcile. */
  private addKey(queue: WorkQueue, key: string, trigger: TriggerInput, options?: { priority?: number; afterMs?: number; rateLimited?: boolean }): void {
    const ledger = this.ledgers.get(queue);
    if (options === undefined) queue.add(key);
    else queue.addWithOptions(key, options);
    if (ledger === undefined || queue.shuttingDown) return;
    if (options?.rateLimited === true) {
      const ms = this.noted.key === key ? this.noted.ms : 0;
      this.noted.key = undefined;
      ledger.delayed(key, trigger, ms);
    } else if ((options?.afterMs ?? 0) > 0) ledger.delayed(key, trigger, options!.afterMs!);
    else ledger.record(key, trigger);
  }

  /** The priority of initial lists and resyncs. */
  private get lowPriority(): number {
    return this.options.initialListPriority ?? LOW_PRIORITY;
  }

  /** The fleet member this controller runs for; undefined for the manager's own cluster. */
  get cluster(): string | undefined {
    return this.deps.cluster;
  }

  get needLeaderElection(): boolean {
    return this.options.needLeaderElection ?? !this.stages.some((s) => s.needLeaderElection === false);
  }

  status(): ControllerStatus {
    const waiting = [...this.pending].map((s) => {
      const why = this.crd.reason(s) ?? s.waitingReason?.(this.deps.cache);
      return why ? `${s.description}: ${why}` : s.description;
    });
    return { name: this.name, started: this.started, warm: this.warm !== undefined, synced: this.synced && this.crd.none, paused: this.gate.paused, waitingFor: waiting, ...this.crd.status() };
  }

  /** The kinds whose informers its sources read. */
  kinds(): KindRef[] {
    return this.sources.flatMap((s) => (s.kind ? [s.kind] : []));
  }

  /** Add a request by hand (tests, external triggers); its trigger is `manual`. */
  enqueue(request: Request): void {
    if (this.queue) this.addKey(this.queue, requestKey(request), { source: 'manual', event: 'enqueue', ...(request.namespace ? { namespace: request.namespace } : {}), name: request.name });
  }

  /**
   * Start the sources into the queue without workers, until `signal` aborts
   * (a warm standby: its caches fill and its queue holds what changed, so a
   * takeover reconciles without a sync). Resolves once the sources have
   * synced. A later `start` takes over this queue.
   */
  async warmup(signal: AbortSignal): Promise<void> {
    if (this.warm) throw new ManagerError('InvalidRegistration', `controller ${this.name} was already warmed up`);
    const fill = this.fill(signal, 'initial-list');
    this.warm = fill;
    signal.addEventListener('abort', () => {
      if (this.warm === fill) this.warm = undefined;
    }, { once: true });
    await fill.synced;
  }

  /**
   * Run workers until `signal` aborts (one leadership term); then stop
   * taking work and let in-flight reconciles finish. The sources and queue
   * are the warm ones when `warmup` runs, else this term's own.
   */
  async start(signal: AbortSignal): Promise<void> {
    // Never two terms' workers at once: a term starts once the previous one has finished.
    const previous = this.termDone;
    let finish: () => void = () => undefined;
    this.termDone = new Promise<void>((resolve) => (finish = resolve));
    let own: { queue: WorkQueue; synced: Promise<void> } | undefined;
    try {
      await previous;
      if (signal.aborted) return;
      own = this.warm ? undefined : this.fill(signal, this.deps.electedLeadership === true && this.needLeaderElection ? 'leadership-start' : 'initial-list');
      const { queue, synced } = this.warm ?? own!;
      this.started = true;
      this.deps.metrics.initController(this.labels, this.maxConcurrent);
      this.deps.metrics.paused.set(this.labels, this.gate.paused ? 1 : 0);
      this.log.info({ workers: this.maxConcurrent, warm: own === undefined }, 'starting controller');
      await Promise.race([synced, new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))]);
      if (signal.aborted) return;
      this.log.info('caches synced; starting workers');
      // A worker takes keys until the term ends; its reconcile in flight finishes (the worker awaits it).
      const workers = Array.from({ length: this.maxConcurrent }, () => this.worker(queue, signal));
      const syncPeriodMs = this.options.syncPeriodMs ?? this.deps.defaultSyncPeriodMs ?? 0;
      if (syncPeriodMs > 0 && this.deps.forKind) workers.push(this.resync(this.deps.forKind, syncPeriodMs, queue, signal));
      await Promise.all(workers);
      this.log.info('controller stopped');
    } finally {
      // A term's own queue ends with it: nothing is handed out any more.
      own?.queue.shutDown();
      finish();
    }
  }

  /** A queue and the sources filling it, under `signal`; `synced` resolves once every source has synced and rejects (CacheSync) when one fails to start. */
  private fill(signal: AbortSignal, initialEvent: TriggerEvent): { queue: WorkQueue; synced: Promise<void> } {
    const limiter = this.options.rateLimiter ?? defaultControllerRateLimiter();
    const noted = this.noted;
    const queue = (this.options.newQueue ?? createPriorityQueue)({
      name: this.name,
      // The delay of each rate-limited add is noted, so a retry's trigger knows when it is due.
      rateLimiter: this.attribution
        ? {
            when: (key) => {
              const ms = limiter.when(key);
              noted.key = key;
              noted.ms = ms;
              return ms;
            },
            forget: (key) => limiter.forget(key),
            numRequeues: (key) => limiter.numRequeues(key),
          }
        : limiter,
      metrics: createWorkQueueMetrics(this.deps.registry, this.name, this.deps.cluster === undefined ? {} : { cluster: this.deps.cluster }),
      ...(this.options.queueMaxWaitMs === undefined ? {} : { maxWaitMs: this.options.queueMaxWaitMs }),
    });
    this.queue = queue;
    this.synced = false;
    const writes = this.deps.ownWrites;
    const ledger =
      this.attribution &&
      new TriggerLedger(
        this.attribution.maxPerKey,
        (t) => this.countTrigger(t),
        writes && ((kindId, namespace, name, rv) => writes.wroteAt(kindId, namespace, name, rv, this.name)),
      );
    if (ledger) this.ledgers.set(queue, ledger);
    // The stages that note each enqueued request (a sharded controller's bucket of the key), told whether its event is of the `for` kind.
    const noting = this.stages.filter((s) => s.enqueued !== undefined);
    const enqueueFrom = (ofForKind: boolean) => (request: Request, priority = 0, trigger?: TriggerInput, event?: InformerEvent<KubeObject>): void => {
      const key = requestKey(request);
      for (const stage of noting) stage.enqueued!(key, request, event, ofForKind);
      if (priority === 0) queue.add(key);
      else queue.addWithOptions(key, { priority });
      if (ledger !== undefined && !queue.shuttingDown) ledger.record(key, trigger ?? SOURCE_ENQUEUE);
    };
    const forKind = this.deps.forKind;
    const enqueueFor = enqueueFrom(true);
    const enqueueOther = enqueueFrom(false);
    const ownWrites = this.deps.ownWrites && { controller: this.name, writes: this.deps.ownWrites };
    const onOwnWriteDropped = (): void => this.deps.metrics.ownWriteEvents.inc({ ...this.labels, action: 'dropped' });
    const onError = (err: unknown, where: string): void => {
      this.deps.metrics.sourceErrors.inc(this.labels);
      this.log.error({ err, source: where }, 'a predicate, event handler or source failed; the event is dropped');
    };
    for (const s of this.sources) this.pending.add(s);
    const context: Omit<SourceContext, 'signal'> = {
      enqueue: enqueueOther,
      cache: this.deps.cache,
      onError,
      lowPriority: this.lowPriority,
      attribute: ledger !== undefined,
      initialEvent,
      onOwnWriteDropped,
      ...(ownWrites ? { ownWrites } : {}),
    };
    const synced = Promise.all(
      this.sources.map(async (source) => {
        try {
          const own = forKind !== undefined && source.kind !== undefined && sameKind(source.kind, forKind) ? { ...context, enqueue: enqueueFor } : context;
          await this.crd.run(source, own, signal, { synced: () => this.pending.delete(source), unsynced: () => this.pending.add(source) });
        } catch (err) {
          if (!signal.aborted) throw err;
        }
      }),
    ).then(
      () => {
        if (!signal.aborted) this.synced = true;
      },
      (err: unknown) => {
        if (!signal.aborted) throw new ManagerError('CacheSync', `controller ${this.name}: a source failed to start: ${String(err)}`, { cause: err });
      },
    );
    signal.addEventListener('abort', () => {
      queue.shutDown();
      ledger?.clear();
      if (this.queue === queue) this.queue = undefined;
    }, { once: true });
    return { queue, synced };
  }

  /** Every jittered period, every cached object of the `for` kind goes back into the queue at low priority. */
  private async resync(kind: KindRef, periodMs: number, queue: WorkQueue, signal: AbortSignal): Promise<void> {
    while (await sleep(periodMs * (0.9 + Math.random() * 0.2), signal)) {
      if (this.crd.gate.paused) continue; // nothing cached to resync while the CRD is gone
      try {
        const list = await this.deps.cache.list(kind, { signal });
        for (const obj of list.items) {
          const m = obj.metadata;
          if (m?.name) this.addKey(queue, requestKey(m.namespace ? { namespace: m.namespace, name: m.name } : { name: m.name }), RESYNC, { priority: this.lowPriority });
        }
        this.log.debug({ objects: list.items.length }, 'periodic resync');
      } catch (err) {
        if (signal.aborted) return;
        this.log.warn({ err }, 'periodic resync failed; trying again next period');
      }
    }
  }

  private async worker(queue: WorkQueue, stopSignal: AbortSignal): Promise<void> {
    // The get a worker waits in ends at a stop or a pause (one signal per running period).
    let period: AbortSignal | undefined;
    let kindPeriod: AbortSignal | undefined;
    let getSignal = stopSignal;
    for (;;) {
      if (!(await this.gate.whenRunning(stopSignal))) return;
      if (!(await this.crd.gate.whenRunning(stopSignal))) return;
      if (this.gate.paused) continue; // paused while waiting for the CRD
      if (period !== this.gate.signal || kindPeriod !== this.crd.gate.signal) {
        getSignal = AbortSignal.any([stopSignal, (period = this.gate.signal), (kindPeriod = this.crd.gate.signal)]);
      }
      const got = await queue.getWithPriority(getSignal);
      if (got === undefined) {
        if (stopSignal.aborted || queue.shuttingDown) return;
        continue; // paused, or the `for` kind's CRD went away
      }
      const triggers = this.ledgers.get(queue)?.take(got.key) ?? NO_TRIGGERS;
      if (triggers.dropped > 0) this.deps.metrics.ownWriteEvents.inc({ ...this.labels, action: 'dropped' }, triggers.dropped);
      if (triggers.drop) {
        // Enqueued by nothing but echoes of its own writes, which its sources drop (ignoreOwnWrites()).
        queue.done(got.key);
        continue;
      }
      const work = this.process(queue, got.key, got.priority, stopSignal, triggers);
      this.inFlightReconciles.add(work);
      try {
        await work;
      } finally {
        this.inFlightReconciles.delete(work);
        queue.done(got.key);
      }
    }
  }

  /** Stop taking keys (the sources keep filling the queue); resolves once the reconciles in flight have finished. */
  async pause(): Promise<void> {
    this.gate.pause();
    this.deps.metrics.paused.set(this.labels, 1);
    this.log.info('controller paused');
    await Promise.allSettled([...this.inFlightReconciles]);
  }

  /** Take keys again after `pause`. */
  resume(): void {
    if (!this.gate.paused) return;
    this.gate.resume();
    this.deps.metrics.paused.set(this.labels, 0);
    this.log.info('controller resumed');
  }

  /** Run one key through the stages (stages.ts) and its reconcile; a key a stage passed over is forgotten. */
  private async process(queue: WorkQueue, key: string, priority: number, stopSignal: AbortSignal, triggers: TriggerSet): Promise<void> {
    const request = requestOf(key);
    if (this.stages.length === 0) {
      await this.reconcileKey(queue, key, request, priority, stopSignal, triggers);
      return;
    }
    const kind = this.deps.forKind;
    let read: Promise<KubeObject | undefined> | undefined;
    const item: StageItem = {
      key,
      request,
      signal: stopSignal,
      // The reconcile's one cache read, whichever stages ask (the pause check, a shard's bucket of a key no event explained).
      object: () => (read ??= kind === undefined ? Promise.resolve(undefined) : this.deps.cache.get(kind, request, { signal: stopSignal }).then((o) => o as KubeObject, () => undefined)),
    };
    const done = await runStages(this.stages, 0, item, (signal) => this.reconcileKey(queue, key, request, priority, signal, triggers));
    if (done === PASSED) queue.forget(key);
  }

  /**
   * Reconcile one key handed out at `priority`; a requeue or a retry waits at
   * that priority unless the result names another. Resolves to whether the
   * key was done with (not queued again).
   */
  private reconcileKey(queue: WorkQueue, key: string, request: Request, priority: number, stopSignal: AbortSignal, triggers: TriggerSet): Promise<boolean> {
    const reconcileID = randomUUID();
    // Tracing off: one property read per reconcile.
    const tracer = currentTracer();
    if (!tracer) return this.runReconcile(queue, key, request, reconcileID, priority, stopSignal, triggers, undefined);
    const attributes = {
      'kubeloop.controller': this.name,
      'kubeloop.controller.group': this.deps.group,
      'kubeloop.controller.kind': this.deps.kind,
      'k8s.namespace.name': request.namespace || undefined,
      'kubeloop.object.name': request.name,
      'kubeloop.reconcile.id': reconcileID,
      'kubeloop.cluster': this.deps.cluster,
    };
    return tracer.inSpan(`reconcile ${this.name}`, { attributes, links: reconcileLinks(triggers), stampWrites: reconcileStampsWrites(this.attribution !== undefined, triggers) }, (span) => this.runReconcile(queue, key, request, reconcileID, priority, stopSignal, triggers, span));
  }

  private async runReconcile(
    queue: WorkQueue,
    key: string,
    request: Request,
    reconcileID: string,
    priority: number,
    stopSignal: AbortSignal,
    triggers: TriggerSet,
    span: SpanHandle | undefined,
  ): Promise<boolean> {
    const log = this.log.child({ ...(request.namespace ? { namespace: request.namespace } : {}), name: request.name, reconcileID, ...(span ? { trace_id: span.traceId, span_id: span.spanId } : {}) });
    const controller = new AbortController();
    const onStop = (): void => controller.abort(stopSignal.reason);
    stopSignal.addEventListener('abort', onStop, { once: true });
    const timeoutMs = this.options.reconcileTimeoutMs;
    const timer = timeoutMs ? setTimeout(() => {
      this.deps.metrics.reconcileTimeouts.inc(this.labels);
      controller.abort(new ManagerError('ReconcileTimeout', `reconcile ran past ${timeoutMs} ms (reconcileTimeoutMs)`));
    }, timeoutMs) : undefined;
    const context: ReconcileContext = { signal: controller.signal, log, reconcileID, controller: this.name, triggers: triggers.triggers, triggersOverflow: triggers.overflow };
    if (this.attribution !== undefined) this.noteTriggers(key, request, triggers, log);
    const m = this.deps.metrics;
    m.activeWorkers.inc(this.labels);
    const started = performance.now();
    const startedAt = Date.now();
    this.inFlightKeys.set(key, { reconcileID, startedAt });
    let call: Promise<ReconcileResult | void> | undefined;
    let outcome: Pick<ReconcileReport, 'result' | 'error'> = { result: 'success' };
    // The reconcile runs as this controller's: its writes' echoes are its own.
    const run = (): Promise<ReconcileResult | void> | ReconcileResult | void =>
      this.deps.ownWrites ? inReconcileOf(this.name, () => this.reconciler.reconcile(request, context)) : this.reconciler.reconcile(request, context);
    let requeueAfterMs: number | undefined;
    try {
      let result: ReconcileResult | void;
      if (timeoutMs) {
        call = Promise.resolve(run());
        result = await Promise.race([
          call,
          // Only the timeout fails the reconcile; a stop (SIGTERM, lost leadership) lets it finish as it will.
          new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => {
            const reason: unknown = controller.signal.reason;
            if (isManagerError(reason) && reason.reason === 'ReconcileTimeout') reject(reason);
          }, { once: true })),
        ]);
      } else {
        result = await run();
      }
      const r = result ?? { kind: 'done' as const };
      if (r.kind === 'requeueAfter' && r.delayMs > 0) {
        requeueAfterMs = r.delayMs;
        queue.forget(key);
        this.addKey(queue, key, REQUEUE_AFTER, { afterMs: r.delayMs, priority: r.priority ?? priority });
        m.reconcileTotal.inc({ ...this.labels, result: 'requeue_after' });
        outcome = { result: 'requeue_after' };
      } else if (r.kind === 'requeue' || r.kind === 'requeueAfter') {
        // requeueAfter(0) is a requeue with backoff, never a hot loop.
        this.addKey(queue, key, REQUEUE, { rateLimited: true, priority: r.priority ?? priority });
        m.reconcileTotal.inc({ ...this.labels, result: 'requeue' });
        outcome = { result: 'requeue' };
      } else {
        queue.forget(key);
        m.reconcileTotal.inc({ ...this.labels, result: 'success' });
      }
      this.backoffKeys.delete(key);
    } catch (err) {
      outcome = { result: 'error', error: err };
      m.reconcileTotal.inc({ ...this.labels, result: 'error' });
      m.reconcileErrors.inc(this.labels);
      if (PANIC_TYPES.some((t) => err instanceof t)) m.panics.inc(this.labels);
      if (isTerminal(err)) {
        m.terminalErrors.inc(this.labels);
        queue.forget(key);
        this.backoffKeys.delete(key);
        log.error({ err }, 'reconcile failed with a terminal error; not retrying');
      } else {
        this.addKey(queue, key, BACKOFF, { rateLimited: true, priority });
        const failures = queue.numRequeues(key);
        if (this.attribution !== undefined) {
          const due = this.ledgers.get(queue)?.delayedUntil(key);
          this.backoffKeys.set(key, { failures, nextRetryAt: due === undefined ? Date.now() : Date.now() + Math.max(0, due - performance.now()), lastError: redactError(err), lastErrorAt: Date.now() });
        }
        log.error({ err, retries: failures }, 'reconcile failed; retrying with backoff');
      }
    } finally {
      if (timer) clearTimeout(timer);
      // A reconcile that outlives its timeout still holds its key and its worker
      // (never two on one key, never more than maxConcurrentReconciles): wait for it.
      if (call) await call.catch(() => undefined);
      stopSignal.removeEventListener('abort', onStop);
      const durationMs = performance.now() - started;
      this.inFlightKeys.delete(key);
      m.observeReconcile(this.labels, durationMs / 1000, span?.recording === true ? span.traceId : undefined);
      m.activeWorkers.dec(this.labels);
      if (this.attribution !== undefined) {
        this.history.push({
          key,
          reconcileID,
          startedAt,
          durationMs,
          result: outcome.result,
          ...(outcome.result === 'error' ? { error: redactError(outcome.error) } : {}),
          triggers: triggers.triggers,
          triggersOverflow: triggers.overflow,
        });
      }
      this.deps.observe?.({ controller: this.name, ...(this.deps.cluster === undefined ? {} : { cluster: this.deps.cluster }), request, reconcileID, ...outcome, durationMs });
      if (span) {
        span.setAttributes(reconcileSpanAttributes(context, outcome.result, requeueAfterMs, outcome.result === 'error' ? queue.numRequeues(key) : undefined));
        if (outcome.result === 'error') span.fail(outcome.error);
      }
    }
    return outcome.result === 'success' || (outcome.result === 'error' && isTerminal(outcome.error));
  }

  /** The debug line naming a reconcile's triggers, and self-trigger detection. */
  private noteTriggers(key: string, request: Request, triggers: TriggerSet, log: Logger): void {
    if (log.isLevelEnabled('debug')) {
      log.debug({ triggers: triggers.triggers.map(describeTrigger), ...(triggers.overflow > 0 ? { triggersOverflow: triggers.overflow } : {}) }, 'reconcile triggered');
    }
    for (const t of triggers.triggers) if (t.ownWrite === true) this.deps.metrics.ownWriteEvents.inc({ ...this.labels, action: 'enqueued' }, t.count);
    if (this.selfTriggers?.observe(key, triggers) !== true) return;
    const n = this.selfTriggers.threshold;
    this.deps.metrics.selfTriggered.inc(this.labels);
    log.warn(
      { triggers: triggers.triggers.map(describeTrigger), streak: n },
      `reconciled ${n} times in a row by nothing but its own writes: the reconciler writes something that changes every time (a timestamp, a reordered list?), so it re-triggers itself; see docs/troubleshooting.md, or drop its own writes' events with ignoreOwnWrites()`,
    );
    const kind = this.deps.forKind;
    const recorder = this.deps.recorder;
    if (kind === undefined || recorder === undefined) return;
    void this.deps.cache.get(kind, request).then(
      (obj) => {
        recorder().event(obj, 'Warning', 'SelfTriggering', 'Reconcile', `reconciled ${n} times in a row by nothing but the controller's own writes (${triggers.triggers.map(describeTrigger).join('; ')})`);
      },
      () => undefined,
    );
  }

  /** The controller as the inspect endpoint shows it. */
  inspect(): ControllerInspection {
    const queue = this.queue;
    const now = Date.now();
    const inFlight: InFlightKey[] = [...this.inFlightKeys].map(([key, f]) => ({ key, reconcileID: f.reconcileID, startedAt: f.startedAt, elapsedMs: now - f.startedAt }));
    const backoff: BackoffKey[] = [...this.backoffKeys].map(([key, b]) => ({ key, ...b }));
    const status = this.status();
    return {
      name: this.name,
      ...(this.deps.cluster === undefined ? {} : { cluster: this.deps.cluster }),
      started: status.started,
      paused: status.paused,
      synced: status.synced,
      waitingForCRD: status.waitingForCRD,
      forKindMissing: status.forKindMissing,
      triggers: this.attribution !== undefined,
      depth: queue?.len() ?? 0,
      depthByPriority: byLabel(queue?.depthByPriority?.(), (a, b) => a + b),
      oldestWaitMs: byLabel(queue?.oldestWaitMs(), Math.max),
      inFlight,
      backoff,
      selfTriggering: this.selfTriggers?.suspects() ?? [],
      historySize: this.history.size,
      recentReconciles: this.history.list().length,
    };
  }

  /** The reconciles in the history ring, oldest first. */
  recent(): readonly ReconcileRecord[] {
    return this.history.list();
  }

  /** One key as the inspect endpoint shows it. */
  inspectKey(key: string): KeyInspection {
    const ledger = this.queue && this.ledgers.get(this.queue);
    const pending = ledger?.peek(key) ?? NO_TRIGGERS;
    const f = this.inFlightKeys.get(key);
    const b = this.backoffKeys.get(key);
    return {
      controller: this.name,
      key,
      waiting: pending.triggers.length > 0 || ledger?.delayedUntil(key) !== undefined,
      pendingTriggers: pending.triggers,
      pendingTriggersOverflow: pending.overflow,
      ...(f ? { inFlight: { key, reconcileID: f.reconcileID, startedAt: f.startedAt, elapsedMs: Date.now() - f.startedAt } } : {}),
      ...(b ? { backoff: { key, ...b } } : {}),
      selfTriggerStreak: this.selfTriggers?.streakOf(key) ?? 0,
      reconciles: this.history.list(key),
    };
  }
}

