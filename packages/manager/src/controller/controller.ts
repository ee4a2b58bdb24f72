/**
 * A controller: sources fill a workqueue with requests; up to
 * `maxConcurrentReconciles` workers take them, never two on one key, and run
 * the reconciler. Errors are caught, counted and retried with per-key
 * backoff; terminal errors are not retried.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { InformerCache } from '@kubeloop/cache';
import { fnv1a64, runFenced } from '@kubeloop/client';
import { isMetadataRef } from '@kubeloop/client/internal';
import type { Client, KindRef } from '@kubeloop/client';
import type { ShardRing } from '@kubeloop/leaderelection';
import { createPriorityQueue, defaultControllerRateLimiter, LOW_PRIORITY, sleep } from '@kubeloop/workqueue';
import type { RateLimiter, WorkQueue, WorkQueueOptions } from '@kubeloop/workqueue';
import { isManagerError, ManagerError } from '../errors.js';
import { validateControllerOptions } from '../options-validation.js';
import type { ControllerLabels, ControllerMetrics } from '../metrics/controller-metrics.js';
import { shardKeyMetrics } from '../metrics/shard-metrics.js';
import type { ShardKeyMetrics } from '../metrics/shard-metrics.js';
import { createWorkQueueMetrics } from '../metrics/workqueue-metrics.js';
import { CRD_WAIT_SUFFIX } from '../readiness.js';
import { isTerminal, requestKey, requestOf } from './reconcile.js';
import type { ReconcileContext, ReconcileResult, Reconciler, Request } from './reconcile.js';
import type { Source, SourceContext } from './source.js';
import { checkPaused, PAUSED_ANNOTATION, PauseGate } from './pause.js';
import type { PauseOptions } from './pause.js';

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
   * {@link PAUSED_ANNOTATION} and no condition.
   */
  readonly pause?: PauseOptions | false;
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

/** How a controller's keys map to a shard ring. */
export interface ControllerShard {
  readonly ring: ShardRing;
  /**
   * What the `for` object is hashed by: its `uid`, or its `namespace` (every
   * object of a namespace on one replica). Default: `uid`.
   */
  readonly by?: 'uid' | 'namespace';
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
}

/**
 * One finished reconcile, as `Manager.onReconcile` listeners see it: which
 * controller, which object, how it ended (the `controller_runtime_reconcile_total`
 * result label) and how long it took.
 */
export interface ReconcileReport {
  readonly controller: string;
  /** The fleet cluster the reconcile ran for; absent for the manager's own cluster. */
  readonly cluster?: string;
  readonly request: Request;
  readonly reconcileID: string;
  /** `success`, `requeue`, `requeue_after` or `error` (a terminal error too). */
  readonly result: 'success' | 'requeue' | 'requeue_after' | 'error';
  /** What the reconciler threw, when `result` is `error`. */
  readonly error?: unknown;
  readonly durationMs: number;
}

/** How far a controller has got, for readiness. */
export interface ControllerStatus {
  readonly name: string;
  /** Its workers have started (this replica leads, or the controller needs no leadership). */
  readonly started: boolean;
  /** Its sources run without workers: a warm standby's controller. */
  readonly warm: boolean;
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
}

const PANIC_TYPES = [TypeError, ReferenceError, RangeError, SyntaxError];

/** The same kind, whatever its form (a metadata-only watch of the `for` kind is that kind). */
function sameKind(a: KindRef, b: KindRef): boolean {
  const x = isMetadataRef(a) ? a.of : a;
  const y = isMetadataRef(b) ? b.of : b;
  return x.apiVersion === y.apiVersion && x.kind === y.kind;
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** `Kind.group/version` of a kind ref. */
function kindLabel(kind: KindRef): string {
  const ref = isMetadataRef(kind) ? kind.of : kind;
  return `${ref.kind}.${ref.apiVersion}`;
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
  /** Reconciles in flight per shard bucket (sharded controllers only). */
  private readonly inFlight = new Map<number, number>();
  private readonly drained = new Set<() => void>();
  /**
   * The bucket of the uid each key's object had when last seen here
   * (sharded by uid), so a deleted object still maps to its bucket.
   */
  private readonly uidBuckets = new Map<string, number>();
  /** The keys of `uidBuckets` by bucket: a bucket's are forgotten without hashing every uid remembered. */
  private readonly bucketUids = new Map<number, Set<string>>();
  /**
   * Keys that came up while their bucket was assigned here but not yet
   * started (its previous owner still draining it): the start enqueues them,
   * a deleted object's included (a list of the cache would not find it).
   */
  private readonly waiting = new Map<number, Set<string>>();
  /** A sharded controller's key counters, looked up once when it starts (not per key). */
  private shardKeys: ShardKeyMetrics | undefined;
  private readonly labels: ControllerLabels;
  /** The whole controller's pause, and the reconciles in flight (`pause` waits for them). */
  private readonly gate = new PauseGate();
  /** Holds the workers while the `for` kind is not served (its CRD deleted or not installed). */
  private readonly kindGate = new PauseGate();
  /** Sources whose kind is not served now: stopped, waiting for their CRD. */
  private readonly missing = new Set<Source>();
  private readonly inFlightReconciles = new Set<Promise<void>>();

  constructor(
    readonly name: string,
    private readonly reconciler: Reconciler,
    private readonly sources: readonly Source[],
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
  }

  /** The priority of initial lists and resyncs. */
  private get lowPriority(): number {
    return this.options.initialListPriority ?? LOW_PRIORITY;
  }

  get needLeaderElection(): boolean {
    return this.options.needLeaderElection ?? this.options.shard === undefined;
  }

  status(): ControllerStatus {
    const waiting = [...this.pending].map((s) => {
      if (this.missing.has(s)) return `${s.description}: ${CRD_WAIT_SUFFIX}`;
      const why = s.waitingReason?.(this.deps.cache);
      return why ? `${s.description}: ${why}` : s.description;
    });
    const crd = [...new Set([...this.missing].flatMap((s) => (s.kind ? [kindLabel(s.kind)] : [])))];
    return {
      name: this.name,
      started: this.started,
      warm: this.warm !== undefined,
      synced: this.synced && this.missing.size === 0,
      paused: this.gate.paused,
      waitingFor: waiting,
      waitingForCRD: crd,
      forKindMissing: this.kindGate.paused,
    };
  }

  /** The kinds whose informers its sources read. */
  kinds(): KindRef[] {
    return this.sources.flatMap((s) => (s.kind ? [s.kind] : []));
  }

  /** Add a request by hand (tests, external triggers). */
  enqueue(request: Request): void {
    this.queue?.add(requestKey(request));
  }

  /**
   * Start the sources into the queue without workers, until `signal` aborts
   * (a warm standby: its caches fill and its queue holds what changed, so a
   * takeover reconciles without a sync). Resolves once the sources have
   * synced. A later `start` takes over this queue.
   */
  async warmup(signal: AbortSignal): Promise<void> {
    if (this.warm) throw new ManagerError('InvalidRegistration', `controller ${this.name} was already warmed up`);
    const fill = this.fill(signal);
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
      own = this.warm ? undefined : this.fill(signal);
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
      const shard = this.options.shard;
      if (shard) {
        const keys = (this.shardKeys ??= shardKeyMetrics(this.deps.registry));
        keys.moved.inc({ controller: this.name }, 0);
        keys.skipped.inc({ controller: this.name }, 0);
        const offDrain = shard.ring.addDrainer((buckets) => this.drain(buckets));
        const offStart = shard.ring.subscribe(({ started, lost }) => {
          if (lost) this.log.warn({ ring: shard.ring.name }, `this replica lost its share of the shard ring: ${lost}`);
          this.forgetElsewhere(shard);
          void this.enqueueStarted(shard, started, queue, signal);
        });
        signal.addEventListener('abort', () => (offDrain(), offStart()), { once: true });
        void this.enqueueStarted(shard, [...shard.ring.active()], queue, signal);
      }
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
  private fill(signal: AbortSignal): { queue: WorkQueue; synced: Promise<void> } {
    const queue = (this.options.newQueue ?? createPriorityQueue)({
      name: this.name,
      rateLimiter: this.options.rateLimiter ?? defaultControllerRateLimiter(),
      metrics: createWorkQueueMetrics(this.deps.registry, this.name, this.deps.cluster === undefined ? {} : { cluster: this.deps.cluster }),
      ...(this.options.queueMaxWaitMs === undefined ? {} : { maxWaitMs: this.options.queueMaxWaitMs }),
    });
    this.queue = queue;
    this.synced = false;
    const enqueue = (request: Request, priority = 0): void => {
      if (priority === 0) queue.add(requestKey(request));
      else queue.addWithOptions(requestKey(request), { priority });
    };
    const onError = (err: unknown, where: string): void => {
      this.deps.metrics.sourceErrors.inc(this.labels);
      this.log.error({ err, source: where }, 'a predicate, event handler or source failed; the event is dropped');
    };
    for (const s of this.sources) this.pending.add(s);
    const context = { enqueue, cache: this.deps.cache, onError, lowPriority: this.lowPriority };
    const synced = Promise.all(
      this.sources.map(async (source) => {
        try {
          await this.runSource(source, context, signal);
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
      if (this.queue === queue) this.queue = undefined;
    }, { once: true });
    return { queue, synced };
  }

  /**
   * Run one source under `signal`; resolves once it has synced, or once its
   * kind is found not served (it then waits for its CRD; synced or not, the
   * controller's workers are not held back by a watched kind). With
   * `waitForKind`, a source whose kind stops being served is stopped, its
   * informer dropped from the cache (unless served again meanwhile), and
   * started afresh once the kind is back: its initial list enqueues every
   * object there is then. Rejects when the source fails to start.
   */
  private runSource(source: Source, context: Omit<SourceContext, 'signal'>, signal: AbortSignal): Promise<void> {
    const kind = source.kind;
    const waitForKind = this.deps.waitForKind;
    if (!kind || !waitForKind) {
      return source.start({ ...context, signal }).then(() => void this.pending.delete(source));
    }
    const forKind = this.deps.forKind !== undefined && sameKind(kind, this.deps.forKind);
    return new Promise<void>((settle, fail) => {
      let settled = false;
      const settleOnce = (): void => {
        if (settled) return;
        settled = true;
        settle();
      };
      const stopped = new Promise<'stopped'>((resolve) => {
        if (signal.aborted) resolve('stopped');
        else signal.addEventListener('abort', () => resolve('stopped'), { once: true });
      });
      void (async () => {
        while (!signal.aborted) {
          const run = new AbortController();
          const runSignal = AbortSignal.any([signal, run.signal]);
          let off = (): void => undefined;
          let gone: () => void = () => undefined;
          const wentAway = new Promise<'gone'>((resolve) => (gone = () => resolve('gone')));
          let started: Promise<'synced'>;
          try {
            const informer = await this.deps.cache.getInformer(kind, { signal, blockUntilSynced: false });
            off = informer.onServedChange((served) => {
              if (!served) gone();
            });
            if (informer.notServed) gone();
            started = source.start({ ...context, signal: runSignal }).then(() => 'synced' as const);
          } catch (err) {
            off();
            if (!signal.aborted) fail(asError(err));
            else settleOnce();
            return;
          }
          started.catch(() => undefined);
          let outcome: 'synced' | 'gone' | 'stopped';
          try {
            outcome = await Promise.race([started, wentAway, stopped]);
          } catch (err) {
            off();
            if (!signal.aborted) fail(asError(err));
            else settleOnce();
            return;
          }
          if (outcome === 'synced') {
            this.pending.delete(source);
            settleOnce();
            outcome = await Promise.race([wentAway, stopped]);
          }
          off();
          run.abort();
          if (outcome === 'stopped') break;
          // The kind is not served: stop this source, drop the informer, wait for the CRD.
          this.pending.add(source);
          this.missing.add(source);
          if (forKind) this.holdWorkers();
          this.log.info({ source: source.description }, forKind ? 'the CRD of the controller\'s kind is gone: workers wait for it' : 'the CRD of a watched kind is gone: this watch waits for it');
          settleOnce();
          await this.deps.cache.removeInformer(kind, { ifNotServed: true });
          const back = await waitForKind(kind, signal);
          this.missing.delete(source);
          if (forKind) this.releaseWorkers();
          if (!back) break;
          this.log.info({ source: source.description }, 'the CRD is back: the source starts again');
        }
        settleOnce();
      })();
    });
  }

  /** The `for` kind went away: workers take no keys (the queue keeps them) until it is back. */
  private holdWorkers(): void {
    this.kindGate.pause();
  }

  /** The `for` kind is served again (once every source of it is back). */
  private releaseWorkers(): void {
    const forKind = this.deps.forKind;
    if (forKind && [...this.missing].some((s) => s.kind && sameKind(s.kind, forKind))) return;
    this.kindGate.resume();
  }

  /** Every jittered period, every cached object of the `for` kind goes back into the queue at low priority. */
  private async resync(kind: KindRef, periodMs: number, queue: WorkQueue, signal: AbortSignal): Promise<void> {
    while (await sleep(periodMs * (0.9 + Math.random() * 0.2), signal)) {
      if (this.kindGate.paused) continue; // nothing cached to resync while the CRD is gone
      try {
        const list = await this.deps.cache.list(kind, { signal });
        for (const obj of list.items) {
          const m = obj.metadata;
          if (m?.name) queue.addWithOptions(requestKey(m.namespace ? { namespace: m.namespace, name: m.name } : { name: m.name }), { priority: this.lowPriority });
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
      if (!(await this.kindGate.whenRunning(stopSignal))) return;
      if (this.gate.paused) continue; // paused while waiting for the CRD
      if (period !== this.gate.signal || kindPeriod !== this.kindGate.signal) {
        getSignal = AbortSignal.any([stopSignal, (period = this.gate.signal), (kindPeriod = this.kindGate.signal)]);
      }
      const got = await queue.getWithPriority(getSignal);
      if (got === undefined) {
        if (stopSignal.aborted || queue.shuttingDown) return;
        continue; // paused, or the `for` kind's CRD went away
      }
      const work = this.process(queue, got.key, got.priority, stopSignal);
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

  /** Whether the key's object is paused by its annotation (counted and skipped); writes the Paused condition when asked. */
  private async skipPaused(key: string, stopSignal: AbortSignal): Promise<boolean> {
    const pause = this.options.pause;
    const kind = this.deps.forKind;
    if (pause === false || kind === undefined) return false;
    const { verdict, conditionError } = await checkPaused(this.deps, kind, requestOf(key), { annotation: pause?.annotation ?? PAUSED_ANNOTATION, condition: pause?.condition ?? false }, stopSignal);
    if (conditionError !== undefined) this.log.warn({ err: conditionError, key }, 'could not write the Paused condition; tried again at the next reconcile');
    if (verdict === 'run') return false;
    this.deps.metrics.pausedSkips.inc(this.labels);
    this.log.debug({ key }, 'object paused by annotation: reconcile skipped');
    return true;
  }

  /**
   * The bucket of a key's object in the ring; undefined when the object is
   * not cached here and was never reconciled here (another shard's). A
   * deleted object's bucket comes from the uid it had when last reconciled
   * here, so its owner gives it a final reconcile, as an unsharded
   * controller does.
   */
  private async bucketOf(shard: ControllerShard, key: string, request: Request, signal: AbortSignal): Promise<{ bucket: number; gone: boolean } | undefined> {
    if (shard.by === 'namespace') return { bucket: shard.ring.bucketOf(fnv1a64(request.namespace ?? '')), gone: false };
    const kind = this.deps.forKind;
    if (!kind) return undefined;
    let uid: string | undefined;
    try {
      const obj = await this.deps.cache.get(kind, request, { signal });
      uid = (obj as { metadata?: { uid?: string } }).metadata?.uid;
    } catch {
      uid = undefined;
    }
    if (uid !== undefined) return { bucket: this.rememberUid(shard, key, uid), gone: false };
    const last = this.uidBuckets.get(key);
    return last === undefined ? undefined : { bucket: last, gone: true };
  }

  /** Remember the uid a key's object has (a recreated object's new uid replaces the old); its bucket. */
  private rememberUid(shard: ControllerShard, key: string, uid: string): number {
    const bucket = shard.ring.bucketOf(fnv1a64(uid));
    if (this.uidBuckets.get(key) !== bucket) this.forgetUid(key);
    let keys = this.bucketUids.get(bucket);
    if (!keys) this.bucketUids.set(bucket, (keys = new Set()));
    keys.add(key);
    this.uidBuckets.set(key, bucket);
    return bucket;
  }

  private forgetUid(key: string): void {
    const bucket = this.uidBuckets.get(key);
    if (bucket === undefined) return;
    this.uidBuckets.delete(key);
    const keys = this.bucketUids.get(bucket);
    keys?.delete(key);
    if (keys?.size === 0) this.bucketUids.delete(bucket);
  }

  /**
   * Forget what is remembered of keys in these buckets, another member's
   * now: the uids of deleted objects (their new owner gives the final
   * reconcile) and keys waiting for the bucket to start here. The one place
   * both are dropped; O(keys in the buckets).
   */
  private forgetBuckets(buckets: Iterable<number>): void {
    for (const b of buckets) {
      this.waiting.delete(b);
      for (const key of this.bucketUids.get(b) ?? []) this.uidBuckets.delete(key);
      this.bucketUids.delete(b);
    }
  }

  /** At a ring change: forget the buckets no longer worked on, drained or assigned here (another member has them). */
  private forgetElsewhere(shard: ControllerShard): void {
    const here = (b: number): boolean => shard.ring.active().has(b) || shard.ring.draining().has(b) || shard.ring.assigned().has(b);
    this.forgetBuckets(new Set([...this.waiting.keys(), ...this.bucketUids.keys()].filter((b) => !here(b))));
  }

  /** Resolves once no reconcile of these buckets is in flight (the ring hands them on then). */
  drain(buckets: ReadonlySet<number>): Promise<void> {
    // Buckets leaving here: their new owner has their keys (no key of a bucket still active here waits for it).
    if (this.options.shard) this.forgetBuckets(buckets);
    const busy = (): boolean => [...buckets].some((b) => (this.inFlight.get(b) ?? 0) > 0);
    if (!busy()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = (): void => {
        if (busy()) return;
        this.drained.delete(check);
        resolve();
      };
      this.drained.add(check);
    });
  }

  /** Enqueue every cached `for` object in buckets that just started here. */
  private async enqueueStarted(shard: ControllerShard, started: readonly number[], queue: WorkQueue, signal: AbortSignal): Promise<void> {
    const kind = this.deps.forKind;
    if (!kind || started.length === 0) return;
    const set = new Set(started);
    for (const b of started) {
      for (const key of this.waiting.get(b) ?? []) {
        queue.add(key);
        this.shardKeys?.moved.inc({ controller: this.name });
      }
      this.waiting.delete(b);
    }
    try {
      const list = await this.deps.cache.list(kind, { signal });
      for (const obj of list.items) {
        const m = obj.metadata;
        if (!m?.name) continue;
        const hash = fnv1a64(shard.by === 'namespace' ? (m.namespace ?? '') : (m.uid ?? ''));
        if (!set.has(shard.ring.bucketOf(hash))) continue;
        queue.add(requestKey(m.namespace ? { namespace: m.namespace, name: m.name } : { name: m.name }));
        this.shardKeys?.moved.inc({ controller: this.name });
      }
    } catch (err) {
      if (!signal.aborted) this.log.warn({ err }, 'could not enqueue the objects of shard buckets that started here');
    }
  }

  private async process(queue: WorkQueue, key: string, priority: number, stopSignal: AbortSignal): Promise<void> {
    if (await this.skipPaused(key, stopSignal)) {
      queue.forget(key);
      return;
    }
    const shard = this.options.shard;
    if (!shard) {
      await this.reconcileKey(queue, key, priority, stopSignal);
      return;
    }
    const found = await this.bucketOf(shard, key, requestOf(key), stopSignal);
    // Not ours now (or not cached here): its owner reconciles it, and enqueues it when the bucket starts there.
    if (found === undefined || !shard.ring.active().has(found.bucket)) {
      // Ours once its previous owner has drained it: the start enqueues the key again.
      if (found !== undefined && shard.ring.assigned().has(found.bucket)) {
        const keys = this.waiting.get(found.bucket);
        if (keys) keys.add(key);
        else this.waiting.set(found.bucket, new Set([key]));
      }
      return this.skip(key, queue);
    }
    const bucket = found.bucket;
    // The bucket's write fence: the reconcile's writes are refused, and its signal aborts, once the bucket is handed on
    // or this member is past its renew deadline, whatever the reconciler does with its signal.
    const fence = shard.ring.fence(bucket);
    if (!fence) return this.skip(key, queue);
    this.inFlight.set(bucket, (this.inFlight.get(bucket) ?? 0) + 1);
    try {
      // A deleted object's final reconcile done with: nothing left to route by its uid.
      const fenced = AbortSignal.any([stopSignal, fence.signal]);
      if ((await runFenced(fence, () => this.reconcileKey(queue, key, priority, fenced))) && found.gone) this.forgetUid(key);
    } finally {
      const left = (this.inFlight.get(bucket) ?? 1) - 1;
      if (left > 0) this.inFlight.set(bucket, left);
      else this.inFlight.delete(bucket);
      for (const check of [...this.drained]) check();
    }
  }

  /** A key not reconciled here (another member's, or its bucket not started here). */
  private skip(key: string, queue: WorkQueue): void {
    queue.forget(key);
    this.shardKeys?.skipped.inc({ controller: this.name });
  }

  /**
   * Reconcile one key handed out at `priority`; a requeue or a retry waits at
   * that priority unless the result names another. Resolves to whether the
   * key was done with (not queued again).
   */
  private async reconcileKey(queue: WorkQueue, key: string, priority: number, stopSignal: AbortSignal): Promise<boolean> {
    const request = requestOf(key);
    const reconcileID = randomUUID();
    const log = this.log.child({ ...(request.namespace ? { namespace: request.namespace } : {}), name: request.name, reconcileID });
    const controller = new AbortController();
    const onStop = (): void => controller.abort(stopSignal.reason);
    stopSignal.addEventListener('abort', onStop, { once: true });
    const timeoutMs = this.options.reconcileTimeoutMs;
    const timer = timeoutMs ? setTimeout(() => {
      this.deps.metrics.reconcileTimeouts.inc(this.labels);
      controller.abort(new ManagerError('ReconcileTimeout', `reconcile ran past ${timeoutMs} ms (reconcileTimeoutMs)`));
    }, timeoutMs) : undefined;
    const context: ReconcileContext = { signal: controller.signal, log, reconcileID, controller: this.name };
    const m = this.deps.metrics;
    m.activeWorkers.inc(this.labels);
    const started = performance.now();
    let call: Promise<ReconcileResult | void> | undefined;
    let outcome: Pick<ReconcileReport, 'result' | 'error'> = { result: 'success' };
    try {
      let result: ReconcileResult | void;
      if (timeoutMs) {
        call = Promise.resolve(this.reconciler.reconcile(request, context));
        result = await Promise.race([
          call,
          // Only the timeout fails the reconcile; a stop (SIGTERM, lost leadership) lets it finish as it will.
          new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => {
            const reason: unknown = controller.signal.reason;
            if (isManagerError(reason) && reason.reason === 'ReconcileTimeout') reject(reason);
          }, { once: true })),
        ]);
      } else {
        result = await this.reconciler.reconcile(request, context);
      }
      const r = result ?? { kind: 'done' as const };
      if (r.kind === 'requeueAfter' && r.delayMs > 0) {
        queue.forget(key);
        queue.addWithOptions(key, { afterMs: r.delayMs, priority: r.priority ?? priority });
        m.reconcileTotal.inc({ ...this.labels, result: 'requeue_after' });
        outcome = { result: 'requeue_after' };
      } else if (r.kind === 'requeue' || r.kind === 'requeueAfter') {
        // requeueAfter(0) is a requeue with backoff, never a hot loop.
        queue.addWithOptions(key, { rateLimited: true, priority: r.priority ?? priority });
        m.reconcileTotal.inc({ ...this.labels, result: 'requeue' });
        outcome = { result: 'requeue' };
      } else {
        queue.forget(key);
        m.reconcileTotal.inc({ ...this.labels, result: 'success' });
      }
    } catch (err) {
      outcome = { result: 'error', error: err };
      m.reconcileTotal.inc({ ...this.labels, result: 'error' });
      m.reconcileErrors.inc(this.labels);
      if (PANIC_TYPES.some((t) => err instanceof t)) m.panics.inc(this.labels);
      if (isTerminal(err)) {
        m.terminalErrors.inc(this.labels);
        queue.forget(key);
        log.error({ err }, 'reconcile failed with a terminal error; not retrying');
      } else {
        queue.addWithOptions(key, { rateLimited: true, priority });
        log.error({ err, retries: queue.numRequeues(key) }, 'reconcile failed; retrying with backoff');
      }
    } finally {
      if (timer) clearTimeout(timer);
      // A reconcile that outlives its timeout still holds its key and its worker
      // (never two on one key, never more than maxConcurrentReconciles): wait for it.
      if (call) await call.catch(() => undefined);
      stopSignal.removeEventListener('abort', onStop);
      const durationMs = performance.now() - started;
      m.reconcileTime.observe(this.labels, durationMs / 1000);
      m.activeWorkers.dec(this.labels);
      this.deps.observe?.({ controller: this.name, ...(this.deps.cluster === undefined ? {} : { cluster: this.deps.cluster }), request, reconcileID, ...outcome, durationMs });
    }
    return outcome.result === 'success' || (outcome.result === 'error' && isTerminal(outcome.error));
  }
}

