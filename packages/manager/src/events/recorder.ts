/**
 * Events (events.k8s.io/v1) about objects, as `kubectl describe` shows them,
 * recorded the way client-go's `tools/events` and `tools/record` record them:
 * `event()` only puts the event in memory; a writer loop of bounded
 * concurrency writes it. On the way:
 * - Isomorphic events (same object, type, reason, action, note and reporter)
 *   within `seriesWindowMs` of each other are one Event whose `series.count`
 *   grows, written with a merge PATCH at most every `seriesFlushIntervalMs`
 *   per Event, so a hot loop costs one write per interval, not one per call.
 * - A spam filter gives each object (per reporting controller) `spamBurst`
 *   new Events at once, then one every 1/`spamQps` seconds (client-go's
 *   `EventSourceObjectSpamFilter`: 25, then one per 5 minutes).
 * - At most `maxQueuedEvents` new Events wait to be written (client-go's
 *   1,000); more are dropped rather than held.
 * - A failed write is retried a few times with backoff, then dropped.
 * Every dropped event is counted in `kubeloop_events_dropped_total{reason}`.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { Counter, Gauge, Registry } from '../metrics/prom.js';
import { isAlreadyExists, isClientError, isNotFound, mergePatch, outsideFence } from '@kubeloop/client';
import { untraced } from '@kubeloop/client/internal';
import type { AnyKubeObject } from '@kubeloop/client/internal';
import type { Writer } from '@kubeloop/client';
import { eventsv1 } from '@kubeloop/scheme';
import { monotonicNow, sleep } from '@kubeloop/workqueue';
import { describeError, ManagerError } from '../errors.js';
import { SpamFilter } from '../internal/spam-filter.js';
import { createLogger } from '../log/logging.js';
import { once } from '../metrics/register.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { randomFillSync } = process.getBuiltinModule('node:crypto');

/** The type of an event: `Warning` for what a human may need to act on, `Normal` for the rest. */
export type EventType = 'Normal' | 'Warning';

/** Records events about objects. */
export interface EventRecorder {
  /**
   * Record an event about `regarding`. Never throws and never waits: the
   * event is written in the background, folded into an earlier identical
   * one (its `series.count` grows), or dropped (counted in
   * `kubeloop_events_dropped_total`) when the object has had too many
   * events lately, the queue is full, the input is invalid or the recorder
   * has stopped. `note` is cut to the 1,024 bytes the API allows.
   *
   * @param regarding - the object the event is about; needs `apiVersion`, `kind` and `metadata.name`.
   * @param type - `Normal` or `Warning`.
   * @param reason - why, in UpperCamelCase (`Provisioned`); 1 to 128 bytes.
   * @param action - what was done or failed (`Reconcile`, `Bind`); 1 to 128 bytes.
   * @param note - a human-readable description.
   *
   * @example
   * ```ts
   * recorder.event(disk, 'Normal', 'Provisioned', 'Reconcile', `created ConfigMap ${name}`);
   * ```
   */
  event(regarding: AnyKubeObject, type: EventType, reason: string, action: string, note: string): void;
  /**
   * Resolves once every event recorded so far, by any recorder of the same
   * provider, has been written or dropped, pending series counts included
   * (they are written at once instead of at the next interval). Never rejects.
   */
  flush(): Promise<void>;
}

/** Makes recorders named after their controller; they share one queue, spam filter and writer. */
export interface EventRecorderProvider {
  /**
   * A recorder reporting as `name` (the Events' `reportingController`).
   *
   * @throws ManagerError `InvalidOptions` when `name` is not a qualified name (`disk-controller`, `example.com/disk`), as the API requires.
   */
  recorderFor(name: string): EventRecorder;
  /** Resolves once every event recorded so far, by any recorder of this provider, has been written or dropped. */
  flush(): Promise<void>;
  /**
   * Stop: later events are dropped; what is pending is written within
   * `timeoutMs`, then in-flight writes are abandoned and the rest is
   * dropped (counted with reason `shutdown`). Idempotent; never rejects.
   * The cluster calls it when it stops.
   */
  stop(timeoutMs?: number): Promise<void>;
}

/** What the recorder writes Events with: a client's `create` and `patch`. */
export type EventWriter = Pick<Writer, 'create' | 'patch'>;

/** Tuning of an event recorder. Every field is optional; the defaults are client-go's unless said otherwise. */
export interface EventRecorderTuning {
  /** New Events waiting to be written at most; more are dropped (`reason="queue_full"`). Default: 1 000. */
  readonly maxQueuedEvents?: number;
  /** Writes in flight at once. Default: 4. */
  readonly concurrency?: number;
  /** New Events an object may get at once, per reporting controller. Default: 25. */
  readonly spamBurst?: number;
  /** New Events per second an object may get after its burst, per reporting controller. Default: 1/300 (one every 5 minutes). */
  readonly spamQps?: number;
  /** An event identical to one seen less than this long ago joins its series. Default: 360 000 (6 minutes). */
  readonly seriesWindowMs?: number;
  /** A series' count is written at most this often per Event (`flush()` and `stop()` write it at once). Default: 30 000. */
  readonly seriesFlushIntervalMs?: number;
  /** Events (and objects, for the spam filter) remembered; the least recently used are forgotten first, and an event as soon as its series window has passed. Default: 4 096. */
  readonly maxCachedEvents?: number;
  /** Tries of one write before the event is dropped (`reason="write_failed"`); only network errors, timeouts, 429 and 5xx are retried. Default: 5. */
  readonly maxAttempts?: number;
  /** Backoff before the second try, doubling for each further one (the first is jittered). Default: 500. */
  readonly retryDelayMs?: number;
  /** One write's timeout, ms; a write that takes longer is abandoned and retried. Default: 10 000. */
  readonly writeTimeoutMs?: number;
  /** How long `stop()` waits for pending writes by default, ms. Default: 5 000. */
  readonly stopTimeoutMs?: number;
}

/** Options for {@link createEventRecorderProvider}. */
export interface EventRecorderOptions extends EventRecorderTuning {
  /**
   * Writes the Events. Give it a transport of its own (the cluster does) so
   * event writes never wait behind reconcile traffic. Required.
   */
  readonly client: EventWriter;
  /** `reportingInstance` of the Events (1 to 128 bytes). Default: the host name. */
  readonly instance?: string;
  /** Where write failures and drops are logged (never an Event's body). Default: pino at `KUBELOOP_LOG_LEVEL` / `LOG_LEVEL` / info. */
  readonly logger?: Logger;
  /** Where `kubeloop_events_dropped_total`, `kubeloop_events_queued` and `kubeloop_events_written_total` go. Default: none. */
  readonly registry?: Registry;
}

/** Why an event was not written: the `reason` label of `kubeloop_events_dropped_total`. */
export type EventDropReason = 'queue_full' | 'spam' | 'invalid' | 'write_failed' | 'shutdown';

const DROP_REASONS: readonly EventDropReason[] = ['queue_full', 'spam', 'invalid', 'write_failed', 'shutdown'];
/** A drop of one reason is logged at most this often (the counter has every one). */
const DROP_LOG_INTERVAL_MS = 30_000;
const NOTE_LIMIT = 1024;
const FIELD_LIMIT = 128;
/** Room for `.` and 16 hex digits in a 253-character name. */
const NAME_PREFIX_LIMIT = 236;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^(?:([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)\/)?([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;

interface Settings {
  readonly maxQueuedEvents: number;
  readonly concurrency: number;
  readonly spamBurst: number;
  readonly spamQps: number;
  readonly seriesWindowMs: number;
  readonly seriesFlushIntervalMs: number;
  readonly maxCachedEvents: number;
  readonly maxAttempts: number;
  readonly retryDelayMs: number;
  readonly writeTimeoutMs: number;
  readonly stopTimeoutMs: number;
}

function settingsOf(o: EventRecorderTuning): Settings {
  const int = (name: keyof EventRecorderTuning, value: number | undefined, fallback: number): number => {
    const v = value ?? fallback;
    if (!Number.isInteger(v) || v < 1) throw new ManagerError('InvalidOptions', `event recorder: ${name} must be an integer >= 1, got ${String(v)}`);
    return v;
  };
  const ms = (name: keyof EventRecorderTuning, value: number | undefined, fallback: number, min: number): number => {
    const v = value ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min) throw new ManagerError('InvalidOptions', `event recorder: ${name} must be a finite number >= ${min}, got ${String(v)}`);
    return v;
  };
  const spamQps = o.spamQps ?? 1 / 300;
  if (typeof spamQps !== 'number' || Number.isNaN(spamQps) || spamQps <= 0) {
    throw new ManagerError('InvalidOptions', `event recorder: spamQps must be a number > 0, got ${String(spamQps)}`);
  }
  return {
    maxQueuedEvents: int('maxQueuedEvents', o.maxQueuedEvents, 1_000),
    concurrency: int('concurrency', o.concurrency, 4),
    spamBurst: int('spamBurst', o.spamBurst, 25),
    spamQps,
    seriesWindowMs: ms('seriesWindowMs', o.seriesWindowMs, 360_000, 1),
    seriesFlushIntervalMs: ms('seriesFlushIntervalMs', o.seriesFlushIntervalMs, 30_000, 0),
    maxCachedEvents: int('maxCachedEvents', o.maxCachedEvents, 4_096),
    maxAttempts: int('maxAttempts', o.maxAttempts, 5),
    retryDelayMs: ms('retryDelayMs', o.retryDelayMs, 500, 0),
    writeTimeoutMs: ms('writeTimeoutMs', o.writeTimeoutMs, 10_000, 1),
    stopTimeoutMs: ms('stopTimeoutMs', o.stopTimeoutMs, 5_000, 0),
  };
}

/** An events.k8s.io/v1 Event as the recorder creates it. */
interface EventBody {
  readonly apiVersion: 'events.k8s.io/v1';
  readonly kind: 'Event';
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly eventTime: string;
  readonly reportingController: string;
  readonly reportingInstance: string;
  readonly action: string;
  readonly reason: string;
  readonly type: EventType;
  readonly note: string;
  readonly regarding: Readonly<Record<string, string>>;
}

/** One Event: its first occurrence and the series that follows. */
interface Entry {
  /** The isomorphism key. */
  readonly key: string;
  readonly body: EventBody;
  /** Occurrences recorded. */
  count: number;
  /** Occurrences the API holds (the count last written). */
  written: number;
  /** Occurrences written or dropped; the Event is pending while `settled < count`. */
  settled: number;
  lastObserved: Date;
  lastObservedMono: number;
  /** The Event exists (a create succeeded). */
  created: boolean;
  /** idle: nothing to write; waiting: a series write is due at `timer`; queued: in the queue; writing: a writer has it. */
  state: 'idle' | 'waiting' | 'queued' | 'writing';
  timer: NodeJS.Timeout | undefined;
  /** When the last successful write started (monotonic ms). */
  lastWriteMono: number;
  /** flush() calls waiting for `settled >= target`. */
  waiters: { readonly target: number; readonly resolve: () => void }[];
}

interface RecorderMetrics {
  readonly dropped: Counter<'reason'>;
  readonly queued: Gauge;
  readonly cached: Gauge;
  readonly written: Counter<'operation'>;
}

function recorderMetrics(registry: Registry): RecorderMetrics {
  const registers = [registry];
  const dropped = once(registry, 'kubeloop_events_dropped_total', () => new Counter({ name: 'kubeloop_events_dropped_total', help: 'Events not written, by reason: queue_full, spam, invalid, write_failed, shutdown (occurrences, series counts included)', labelNames: ['reason'], registers }));
  const queued = once(registry, 'kubeloop_events_queued', () => new Gauge({ name: 'kubeloop_events_queued', help: 'Event writes (new Events and series updates) waiting for a writer', registers }));
  const cached = once(registry, 'kubeloop_events_cached', () => new Gauge({ name: 'kubeloop_events_cached', help: 'Events remembered to fold a repeat into their series: those observed within the series window, at most maxCachedEvents', registers }));
  const written = once(registry, 'kubeloop_events_written_total', () => new Counter({ name: 'kubeloop_events_written_total', help: 'Successful Event writes, by operation: create (a new Event) or patch (a series update)', labelNames: ['operation'], registers }));
  for (const reason of DROP_REASONS) dropped.inc({ reason }, 0);
  written.inc({ operation: 'create' }, 0);
  written.inc({ operation: 'patch' }, 0);
  return { dropped, queued, cached, written };
}

/** A MicroTime (RFC 3339 with microseconds) from a Date, which has milliseconds: `…T12:00:00.123000Z`. */
function microTime(date: Date): string {
  // toISOString always ends in `.sssZ`, for any year.
  return `${date.toISOString().slice(0, -1)}000Z`;
}

/**
 * Random bytes for Event names, taken 8 at a time from a pool refilled when used up: one call into
 * the random generator per 512 Events, not one per Event (each cost tens of µs of CPU with the
 * shipped node flags, docs/benchmarks.md).
 */
const suffixPool = Buffer.alloc(4096);
let suffixAt = suffixPool.length;

/** 16 random hex digits: the part of an Event's name after the object's. */
function randomSuffix(): string {
  if (suffixAt + 8 > suffixPool.length) {
    randomFillSync(suffixPool);
    suffixAt = 0;
  }
  suffixAt += 8;
  return suffixPool.toString('hex', suffixAt - 8, suffixAt);
}

function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** `s` cut to at most `limit` UTF-8 bytes (ending in `...` when cut), never inside a character. */
function truncateBytes(s: string, limit: number): string {
  if (byteLength(s) <= limit) return s;
  const buf = Buffer.from(s, 'utf8').subarray(0, limit - 3);
  // drop a partial character at the end (continuation bytes 10xxxxxx and their lead byte)
  let end = buf.length;
  let i = end - 1;
  while (i >= 0 && (buf[i]! & 0xc0) === 0x80) i--;
  if (i >= 0) {
    const lead = buf[i]!;
    const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    if (end - i < need) end = i;
  }
  return `${buf.subarray(0, end).toString('utf8')}...`;
}

/** A DNS-subdomain prefix for Event names made from the object's name (names of some kinds, RBAC's `system:...`, are not). */
function namePrefix(name: string): string {
  if (name.length <= NAME_PREFIX_LIMIT && DNS_SUBDOMAIN.test(name)) return name;
  const cleaned = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, NAME_PREFIX_LIMIT)
    .replace(/^-+|-+$/g, '');
  return cleaned || 'event';
}

/** Why an event cannot be recorded, or undefined. */
function invalidEvent(regarding: AnyKubeObject, type: unknown, reason: unknown, action: unknown, note: unknown): string | undefined {
  if (!regarding || typeof regarding !== 'object') return 'the object is missing';
  if (typeof regarding.apiVersion !== 'string' || !regarding.apiVersion || typeof regarding.kind !== 'string' || !regarding.kind) return 'the object needs apiVersion and kind';
  if (typeof regarding.metadata?.name !== 'string' || !regarding.metadata.name) return 'the object needs metadata.name';
  if (type !== 'Normal' && type !== 'Warning') return `type must be Normal or Warning, got ${JSON.stringify(type)}`;
  if (typeof reason !== 'string' || !reason || byteLength(reason) > FIELD_LIMIT) return `reason must be 1 to ${FIELD_LIMIT} bytes`;
  if (typeof action !== 'string' || !action || byteLength(action) > FIELD_LIMIT) return `action must be 1 to ${FIELD_LIMIT} bytes`;
  if (typeof note !== 'string') return 'note must be a string';
  return undefined;
}

/** Whether a failed write may succeed if tried again: no answer, a timeout, 429 or 5xx. */
function retriable(err: unknown): boolean {
  if (!isClientError(err)) return true; // our own timeout, or a client that is not kubeloop's
  if (err.code === 429 || err.code >= 500) return true;
  if (err.code === 0) return err.reason !== 'InvalidRequest' && err.reason !== 'InvalidConfig';
  return false;
}

/** `p`, or a rejection as soon as `signal` aborts (a client that ignores its signal cannot hold a writer). */
function bounded<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason instanceof Error ? signal.reason : new Error('event write aborted'));
    if (signal.aborted) {
      p.catch(() => undefined);
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(describeError(err)));
      },
    );
  });
}

/**
 * Create an event recorder provider: recorders named after their
 * controllers, sharing one bounded queue, spam filter, series cache and
 * writer loop. The manager's cluster makes one; make your own to record
 * through a client of your choosing.
 *
 * @example
 * ```ts
 * const recorders = createEventRecorderProvider({ client, instance: 'replica-1', registry });
 * const recorder = recorders.recorderFor('disk-controller');
 * recorder.event(disk, 'Warning', 'ProvisioningFailed', 'Reconcile', 'no capacity left');
 * await recorders.stop(); // on shutdown: writes what is pending, within 5 s
 * ```
 */
export function createEventRecorderProvider(options: EventRecorderOptions): EventRecorderProvider {
  return new Recorders(options);
}

class Recorders implements EventRecorderProvider {
  readonly #client: EventWriter;
  readonly #logger: Logger;
  readonly #instance: string;
  readonly #s: Settings;
  readonly #metrics: RecorderMetrics;
  readonly #spam: SpamFilter;
  /**
   * Events by isomorphism key, least recently observed first: those a repeat may still fold into
   * (observed within the series window), at most `maxCachedEvents`. Entries are forgotten once their
   * window has passed (as client-go's finishSeries does), not only when the cache is full: kept, a
   * past event on every object the controller ever touched would stay held, up to the bound.
   */
  readonly #cache = new Map<string, Entry>();
  readonly #queue: Entry[] = [];
  /** Entries in the queue whose Event does not exist yet: what `maxQueuedEvents` bounds. */
  #queuedNew = 0;
  #inflight = 0;
  /** Entries with occurrences neither written nor dropped. */
  readonly #pending = new Set<Entry>();
  readonly #abort = new AbortController();
  #stopped = false;
  #stopping: Promise<void> | undefined;
  readonly #lastDropLog = new Map<EventDropReason, number>();
  readonly #unloggedDrops = new Map<EventDropReason, number>();

  constructor(options: EventRecorderOptions) {
    if (!options || typeof options.client?.create !== 'function' || typeof options.client.patch !== 'function') {
      throw new ManagerError('InvalidOptions', 'event recorder: options.client needs create and patch');
    }
    this.#s = settingsOf(options);
    const instance = options.instance ?? hostname();
    if (typeof instance !== 'string' || !instance || byteLength(instance) > FIELD_LIMIT) {
      throw new ManagerError('InvalidOptions', `event recorder: instance (reportingInstance) must be 1 to ${FIELD_LIMIT} bytes, got ${JSON.stringify(instance)}`);
    }
    this.#client = options.client;
    this.#instance = instance;
    this.#logger = options.logger ?? createLogger();
    this.#metrics = recorderMetrics(options.registry ?? new Registry());
    this.#spam = new SpamFilter(this.#s.spamQps, this.#s.spamBurst, this.#s.maxCachedEvents);
  }

  recorderFor(name: string): EventRecorder {
    if (typeof name !== 'string' || !QUALIFIED_NAME.test(name) || name.split('/').at(-1)!.length > 63 || name.length > 317) {
      throw new ManagerError('InvalidOptions', `recorderFor: ${JSON.stringify(name)} is not a qualified name (reportingController): [prefix/]name, name up to 63 characters of [A-Za-z0-9_.-] starting and ending alphanumeric`);
    }
    return {
      event: (regarding, type, reason, action, note) => this.#record(name, regarding, type, reason, action, note),
      flush: () => this.flush(),
    };
  }

  flush(): Promise<void> {
    if (this.#pending.size === 0) return Promise.resolve();
    const waits: Promise<void>[] = [];
    for (const entry of [...this.#pending]) {
      waits.push(new Promise<void>((resolve) => entry.waiters.push({ target: entry.count, resolve })));
      if (entry.state === 'waiting') this.#wake(entry);
      else this.#schedule(entry);
    }
    this.#pump();
    return Promise.all(waits).then(() => undefined);
  }

  stop(timeoutMs = this.#s.stopTimeoutMs): Promise<void> {
    this.#stopping ??= (async () => {
      this.#stopped = true;
      const flushed = this.flush();
      let timer: NodeJS.Timeout | undefined;
      const inTime = await Promise.race([flushed.then(() => true), new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, timeoutMs))))]);
      clearTimeout(timer);
      if (!inTime) {
        // Abandon in-flight writes (they drop their entries) and drop everything else.
        this.#abort.abort(new ManagerError('ShutdownTimeout', `event recorder: pending events not written within ${timeoutMs} ms`));
        for (const entry of this.#queue.splice(0)) {
          this.#metrics.queued.dec();
          entry.state = 'idle';
          this.#drop(entry, 'shutdown');
        }
        this.#queuedNew = 0;
        for (const entry of [...this.#pending]) if (entry.state !== 'writing') this.#drop(entry, 'shutdown');
        await flushed;
      }
      this.#metrics.cached.dec(this.#cache.size);
      this.#cache.clear();
    })();
    return this.#stopping;
  }

  // --- recording -------------------------------------------------------------

  #record(controller: string, regarding: AnyKubeObject, type: EventType, reason: string, action: string, note: string): void {
    try {
      if (this.#stopped) return this.#countDrop('shutdown', 1);
      const problem = invalidEvent(regarding, type, reason, action, note);
      if (problem) return this.#countDrop('invalid', 1, problem);
      const m = regarding.metadata!;
      const ref: Record<string, string> = { apiVersion: regarding.apiVersion!, kind: regarding.kind!, name: m.name! };
      if (m.namespace) ref['namespace'] = m.namespace;
      if (m.uid) ref['uid'] = m.uid;
      if (m.resourceVersion) ref['resourceVersion'] = m.resourceVersion;
      const cut = truncateBytes(note, NOTE_LIMIT);
      // The object's resourceVersion is left out: the same object, changed, still folds (as tools/record).
      const source = JSON.stringify([controller, ref['apiVersion'], ref['kind'], ref['namespace'] ?? '', ref['name'], ref['uid'] ?? '']);
      const key = `${source}${JSON.stringify([type, reason, action, cut])}`;
      const now = monotonicNow();
      this.#expire(now);

      const seen = this.#cache.get(key);
      if (seen && now - seen.lastObservedMono <= this.#s.seriesWindowMs) {
        seen.count++;
        seen.lastObserved = new Date();
        seen.lastObservedMono = now;
        this.#cache.delete(key);
        this.#cache.set(key, seen);
        this.#pending.add(seen);
        this.#schedule(seen);
        return;
      }
      if (seen) this.#forget(seen); // its window has passed: a new Event

      if (this.#queuedNew >= this.#s.maxQueuedEvents) return this.#countDrop('queue_full', 1);
      if (!this.#spam.allow(source)) return this.#countDrop('spam', 1);

      const observed = new Date();
      const entry: Entry = {
        key,
        body: {
          apiVersion: 'events.k8s.io/v1',
          kind: 'Event',
          metadata: { name: `${namePrefix(m.name!)}.${randomSuffix()}`, namespace: m.namespace || 'default' },
          eventTime: microTime(observed),
          reportingController: controller,
          reportingInstance: this.#instance,
          action,
          reason,
          type,
          note: cut,
          regarding: ref,
        },
        count: 1,
        written: 0,
        settled: 0,
        lastObserved: observed,
        lastObservedMono: now,
        created: false,
        state: 'idle',
        timer: undefined,
        lastWriteMono: -Infinity,
        waiters: [],
      };
      this.#cache.set(key, entry);
      this.#metrics.cached.inc();
      if (this.#cache.size > this.#s.maxCachedEvents) this.#forget(this.#cache.values().next().value!);
      this.#pending.add(entry);
      this.#enqueue(entry);
      this.#pump();
    } catch (err) {
      // Nothing above should throw; if it does, the caller's reconcile must not see it.
      this.#countDrop('invalid', 1, `unexpected: ${describeError(err)}`);
    }
  }

  /** Take an entry out of the cache; a series count it still owes is written now. */
  #forget(entry: Entry): void {
    this.#uncache(entry);
    if (entry.state === 'waiting') this.#wake(entry);
  }

  #uncache(entry: Entry): void {
    if (this.#cache.get(entry.key) !== entry) return;
    this.#cache.delete(entry.key);
    this.#metrics.cached.dec();
  }

  /**
   * Forget the entries whose series window has passed: a repeat of one starts a new Event anyway.
   * The cache is in order of last observation, so they are at its front; each entry is looked at
   * once more than it is kept.
   */
  #expire(now: number): void {
    for (const entry of this.#cache.values()) {
      if (now - entry.lastObservedMono <= this.#s.seriesWindowMs) return;
      this.#forget(entry);
    }
  }

  /** A waiting entry's series write is due now. */
  #wake(entry: Entry): void {
    clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.state = 'idle';
    this.#schedule(entry);
    this.#pump();
  }

  /**
   * An idle entry with unwritten occurrences: queue its write now, or when
   * the series interval since its last write has passed. Now when a flush
   * waits for it, when stopping, or when it has left the cache.
   */
  #schedule(entry: Entry): void {
    if (entry.state !== 'idle' || entry.settled >= entry.count) return;
    const urgent = entry.waiters.length > 0 || this.#stopped || this.#cache.get(entry.key) !== entry;
    const wait = urgent ? 0 : entry.lastWriteMono + this.#s.seriesFlushIntervalMs - monotonicNow();
    if (wait <= 0) {
      this.#enqueue(entry);
      return;
    }
    entry.state = 'waiting';
    entry.timer = setTimeout(() => this.#wake(entry), wait);
    // Pending series counts do not keep the process alive; stop() writes them.
    entry.timer.unref();
  }

  #enqueue(entry: Entry): void {
    // Series updates of existing Events take no new-event slot, but the queue as a whole stays bounded.
    if (this.#queue.length >= this.#s.maxQueuedEvents + this.#s.maxCachedEvents) {
      this.#drop(entry, 'queue_full');
      return;
    }
    if (!entry.created) this.#queuedNew++;
    entry.state = 'queued';
    this.#queue.push(entry);
    this.#metrics.queued.inc();
  }

  // --- writing ---------------------------------------------------------------

  #pump(): void {
    while (this.#inflight < this.#s.concurrency && this.#queue.length > 0) {
      const entry = this.#queue.shift()!;
      this.#metrics.queued.dec();
      if (!entry.created) this.#queuedNew--;
      this.#inflight++;
      entry.state = 'writing';
      // Events are a record, not the reconcile's work: written outside the write fence of whoever triggered the pump.
      void outsideFence(() => untraced(() => this.#write(entry)));
    }
  }

  /** Write an entry until it succeeds, fails for good or runs out of tries. Never rejects. */
  async #write(entry: Entry): Promise<void> {
    try {
      for (let attempt = 1; ; attempt++) {
        const started = monotonicNow();
        const target = entry.count;
        try {
          await this.#attempt(entry, target);
          entry.written = Math.max(entry.written, target);
          entry.lastWriteMono = started;
          this.#settle(entry, target);
          return;
        } catch (err) {
          if (this.#abort.signal.aborted) return this.#drop(entry, 'shutdown');
          if (!retriable(err)) {
            // A request the server will refuse again (missing namespace, RBAC, validation): say which, once.
            this.#logger.warn({ err: describeError(err), reason: entry.body.reason, object: this.#describe(entry), event: entry.body.metadata.name }, 'could not record event');
            return this.#drop(entry, 'write_failed', { quiet: true });
          }
          if (attempt >= this.#s.maxAttempts) return this.#drop(entry, 'write_failed', { problem: `gave up after ${attempt} tries: ${describeError(err)}` });
          // client-go jitters the first wait so that recorders do not retry in step after an outage.
          const delay = this.#s.retryDelayMs * 2 ** (attempt - 1) * (attempt === 1 ? Math.random() : 1);
          if (!(await sleep(delay, this.#abort.signal))) return this.#drop(entry, 'shutdown');
        }
      }
    } catch (err) {
      this.#logger.error({ err: describeError(err), event: entry.body.metadata.name }, 'event recorder failed');
      this.#drop(entry, 'write_failed', { quiet: true });
    } finally {
      this.#inflight--;
      if (entry.state === 'writing') entry.state = 'idle';
      this.#schedule(entry);
      this.#pump();
    }
  }

  /** One try, bounded by `writeTimeoutMs` and by stop(). */
  async #attempt(entry: Entry, target: number): Promise<void> {
    const ac = new AbortController();
    const stop = this.#abort.signal;
    const onStop = (): void => ac.abort(stop.reason);
    stop.addEventListener('abort', onStop, { once: true });
    const timer = setTimeout(() => ac.abort(new Error(`event write timed out after ${this.#s.writeTimeoutMs} ms`)), this.#s.writeTimeoutMs);
    try {
      await this.#send(entry, target, ac.signal);
    } finally {
      clearTimeout(timer);
      stop.removeEventListener('abort', onStop);
    }
  }

  /** Create the Event (with its series when it has one), or patch its series. */
  async #send(entry: Entry, target: number, signal: AbortSignal): Promise<void> {
    const series = target >= 2 ? { count: target, lastObservedTime: microTime(entry.lastObserved) } : undefined;
    const { name, namespace } = entry.body.metadata;
    const patch = async (): Promise<void> => {
      await bounded(this.#client.patch(eventsv1.Event, { namespace, name }, mergePatch({ series }), { signal }), signal);
      this.#metrics.written.inc({ operation: 'patch' });
    };
    if (entry.created) {
      if (target <= entry.written) return;
      try {
        return await patch();
      } catch (err) {
        if (!isNotFound(err)) throw err;
        // The Event is gone (its TTL passed, or someone deleted it): create it again, series and all.
        entry.created = false;
      }
    }
    try {
      await bounded(this.#client.create(series ? { ...entry.body, series } : entry.body, { signal }), signal);
      entry.created = true;
      this.#metrics.written.inc({ operation: 'create' });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      // An earlier try that timed out here reached the server after all.
      entry.created = true;
      if (series) await patch();
    }
  }

  // --- accounting ------------------------------------------------------------

  #settle(entry: Entry, upTo: number): void {
    entry.settled = Math.max(entry.settled, upTo);
    if (entry.settled >= entry.count) this.#pending.delete(entry);
    if (entry.waiters.length === 0) return;
    const done = entry.waiters.filter((w) => w.target <= entry.settled);
    entry.waiters = entry.waiters.filter((w) => w.target > entry.settled);
    for (const w of done) w.resolve();
  }

  /** Give up on an entry's unwritten occurrences (counted); the next identical event starts a new Event. */
  #drop(entry: Entry, reason: EventDropReason, how: { readonly quiet?: boolean; readonly problem?: string } = {}): void {
    const lost = entry.count - entry.settled;
    if (lost > 0) {
      if (how.quiet) this.#metrics.dropped.inc({ reason }, lost);
      else this.#countDrop(reason, lost, how.problem);
    }
    if (entry.timer) {
      clearTimeout(entry.timer);
      entry.timer = undefined;
      entry.state = 'idle';
    }
    this.#uncache(entry);
    this.#settle(entry, entry.count);
  }

  /** Count drops and log them, at most once per reason every 30 s (with how many were not logged). */
  #countDrop(reason: EventDropReason, n: number, problem?: string): void {
    this.#metrics.dropped.inc({ reason }, n);
    const unlogged = (this.#unloggedDrops.get(reason) ?? 0) + n;
    const now = monotonicNow();
    const last = this.#lastDropLog.get(reason);
    if (last !== undefined && now - last < DROP_LOG_INTERVAL_MS) {
      this.#unloggedDrops.set(reason, unlogged);
      return;
    }
    this.#lastDropLog.set(reason, now);
    this.#unloggedDrops.delete(reason);
    this.#logger.warn({ reason, dropped: unlogged, ...(problem ? { problem } : {}) }, 'events dropped');
  }

  #describe(entry: Entry): string {
    const r = entry.body.regarding;
    return `${r['namespace'] ? `${r['namespace']}/` : ''}${r['name'] ?? ''}`;
  }
}
