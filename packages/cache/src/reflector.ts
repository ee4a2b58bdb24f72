/**
 * The reflector: keeps a set of objects in step with the API server by
 * list + watch, with client-go's semantics, and never hangs silently.
 *
 * - Paginated consistent list, then a watch from the list's resourceVersion
 *   with bookmarks and a server timeout drawn from 5–10 minutes.
 * - Every phase has a deadline of its own: each list page (headers and body)
 *   `listTimeoutMs`; a watch's opening (headers, and the body of an error
 *   answer) and the gap between two of its events `watchIdleTimeoutMs`, two
 *   and a half bookmark intervals by default, independent of the server's
 *   timeout. A
 *   deadline that passes is a `CacheError` `Timeout`: counted, reported,
 *   backed off and retried, like any other failure.
 * - A watch that ends normally is re-opened from the last resourceVersion: no
 *   relist. 410 Gone / Expired: relist, and the sink replaces its store (and
 *   emits deletes for objects that vanished meanwhile).
 * - Refused, reset, 429, 5xx: exponential backoff 800 ms → 30 s with jitter,
 *   reset after two healthy minutes; Retry-After honoured (up to a minute).
 * - A list whose continue token comes back a second time is a
 *   `CacheError` `ContinueLoop`, and one that runs past `maxListPages` pages
 *   or `maxListObjects` objects (a server handing out a new token on every
 *   page) a `CacheError` `ListTooLarge`: backed off and retried from the
 *   start, never followed round forever.
 * - An object without a usable key (not an object, no name, a name with a
 *   `/`, a namespace or resourceVersion that is not a string) never reaches
 *   the sink: a `CacheError` `InvalidObject`, reported and counted
 *   (`stats.invalidObjects`); the rest of the list or watch goes on.
 * - By default the initial state (and a relist) comes from a streaming list
 *   (WatchList: `sendInitialEvents=true`, up to the
 *   `k8s.io/initial-events-end` bookmark), as client-go does since 1.35: the
 *   API server streams objects from its watch cache instead of building a
 *   list response several times their size, and this process holds one
 *   object at a time instead of a 500-item page. A server that refuses it
 *   (400, 403, 422, 501: WatchList off, or older than 1.27) gets a paginated
 *   LIST from then on.
 * - What it lists and watches is the {@link ListWatcher}'s business: stages
 *   wrap it to narrow what is asked and what comes back (the shard stage,
 *   `stages/shard.ts`); the reflector relists when the list-watch says its
 *   scope changed, and holds an empty store while it covers nothing.
 * - A kind the API server does not serve (the client's `NoKindMatch`, or a
 *   404 answer to a list or watch: its CRD was deleted or never installed)
 *   sets `stats.notServed` and is reported once, not at every retry; it is
 *   retried with the same backoff (each retry costs at most one discovery
 *   request) and relisted from scratch when the kind comes back.
 * - It never stops silently: every error is reported and retried until
 *   `stop()`; `stats` says what it is doing and what went wrong last.
 */
import { isClientError, isGone, isNoKindMatch } from '@kubeloop/client';
import { watchEventError } from '@kubeloop/client/internal';
import type { WatchEvent } from '@kubeloop/client';
import type { KubeObject, ObjectList } from '@kubeloop/scheme';
import { CacheError } from './errors.js';
import { sleep as delay } from '@kubeloop/workqueue';
import { Backoff } from './internal/backoff.js';
import type { ListWatcher } from './list-watch.js';

/** Receives what the reflector learns. Its methods must not throw (a throw is reported and costs a relist). */
export interface ReflectorSink<T extends KubeObject> {
  /** The complete current state (after a list, or a streaming list's end). */
  replace(objects: T[], resourceVersion: string): void;
  /** One change from the watch (the object as received; the sink prepares it). */
  apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T): void;
  /**
   * Transform (and freeze) one listed object as soon as its page arrives, so
   * that work overlaps the wait for the next page. `replace` then gets
   * prepared objects. Default: objects are passed as received.
   */
  prepare?(object: T): T;
}

/** What a reflector is doing. */
export type ReflectorState = 'idle' | 'listing' | 'watching' | 'backoff' | 'stopped';

/** What a reflector has done so far (informer metrics and readiness read it). */
export interface ReflectorStats {
  /** Completed lists, the first included. */
  lists: number;
  /** Lists after the first (410s, unexpected errors). */
  relists: number;
  /** 410 Gone / Expired answers. */
  gone: number;
  /** Watches opened after the first. */
  watchRestarts: number;
  /** Errors seen (each was retried). */
  errors: number;
  /** Deadlines that passed (list pages, watch openings, silent watches); counted in `errors` too. */
  timeouts: number;
  /** Duration of the last list, ms. */
  lastListMs: number;
  /** Objects received in the last list. */
  lastListSize: number;
  /** When the last event, bookmark or list arrived, epoch ms; 0 before any. With bookmarks on, a healthy watch moves it about once a minute even when nothing changes. */
  lastEventAt: number;
  /** The last resourceVersion seen. */
  resourceVersion: string;
  /** The last error, if any: a `ClientError` the API answered with, or a `CacheError` (`Timeout`, `ContinueLoop`, `WatchClosed`). */
  lastError: unknown;
  /** When `lastError` was seen, epoch ms; 0 before any. */
  lastErrorAt: number;
  /** Objects left out because they had no usable key (see `CacheError` `InvalidObject`); each was reported. */
  invalidObjects: number;
  /** Whether the initial state came from a streaming list. */
  usedWatchList: boolean;
  /**
   * Since when, epoch ms, the reflector has not been receiving from the API
   * server: set when a list or watch fails, and when a (re-)watch is asked
   * for and has not opened yet (an answer whose headers or error body
   * stall counts from the moment it was asked for); a watch abandoned at its
   * idle deadline counts from the last thing it delivered. 0 while a watch
   * is open. Readiness reads it: a cache that has been cut off for long is
   * stale even though it once synced.
   */
  disconnectedSince: number;
  /** What it is doing now. */
  state: ReflectorState;
  /**
   * The last list or watch failed because the API server does not serve the
   * kind (`NoKindMatch`, or a 404 for the collection: its CRD is not
   * installed, or was deleted). Cleared when a list succeeds or a watch opens.
   */
  notServed: boolean;
  /**
   * With a shard filter: `honoured` while the server filters (nothing out of
   * range has come back), `ignored` once something out of range came back
   * (the server lacks the gate: filtering here only), `off` when the server
   * is not asked (no filter, `controller-owner`, or `serverSide: false`).
   */
  shardServer: 'off' | 'honoured' | 'ignored';
  /** Objects and events dropped here because they were out of the shard's ranges. */
  shardDropped: number;
  /**
   * ADDED, MODIFIED and DELETED events received on watches after the initial
   * state (a streaming list's initial events are not counted), those then
   * dropped as out of the shard's ranges included: what the API server sent.
   */
  watchEvents: number;
}

/** Options for {@link Reflector}. Every field is optional; numbers must be positive. */
export interface ReflectorOptions {
  /** List page size. Default: 500. */
  readonly pageSize?: number;
  /**
   * Deadline of one list page, headers and body, ms. A page that has not
   * fully arrived by then is abandoned: a `Timeout` error, backoff, and the
   * list starts again. Default: 60 000.
   */
  readonly listTimeoutMs?: number;
  /** Server-side watch timeout range, seconds; each watch draws from it. Default: [300, 600]. */
  readonly watchTimeoutSeconds?: readonly [number, number];
  /**
   * Client-side idle deadline of a watch, ms: a watch that goes this long
   * without an event or a bookmark, or whose opening (headers, or the body
   * of an error answer) takes this long, is abandoned with a `Timeout` error,
   * backed off and re-opened from the last resourceVersion. Independent of
   * the server's `timeoutSeconds`, so a silently dead connection is noticed
   * within minutes, not at the end of a 5–10 minute watch.
   *
   * Sized from the API server's bookmarks (the reflector always asks for
   * them): it sends one about once a minute, but only once its watch cache
   * has caught up with the resourceVersion the watch started from, so on a
   * quiet kind the first one can take two intervals (measured on envtest,
   * kube-apiserver 1.37: first bookmark 121 s after the watch opened, then
   * every 60 s). The default, two and a half bookmark intervals, never cuts
   * a healthy quiet watch. Raise it for servers that send no bookmarks (some
   * aggregated APIs): a quiet watch there is re-opened, cheaply, each time
   * it passes. Default: 150 000.
   */
  readonly watchIdleTimeoutMs?: number;
  /**
   * Most pages one list may take. A list that has not ended by then (a
   * server that hands out a new continue token on every page) is abandoned
   * with a `ListTooLarge` error, backed off and started again.
   * Default: 10 000 (pages of 500 objects hold `maxListObjects` in 2 000).
   */
  readonly maxListPages?: number;
  /**
   * Most objects one list (paginated or streamed) may gather before it is
   * abandoned the same way, so a list that never ends cannot fill the memory. Default: 1 000 000
   * (more than six times the 150 000 pods Kubernetes supports per cluster).
   */
  readonly maxListObjects?: number;
  /**
   * Take the initial state (and each relist) from a streaming list
   * (WatchList), falling back to a paginated LIST for good once the server
   * refuses it. `false`: always LIST. Default: true.
   */
  readonly useWatchList?: boolean;
  /** First retry delay, ms. Default: 800. */
  readonly backoffInitialMs?: number;
  /** Longest retry delay, ms. Default: 30 000. */
  readonly backoffMaxMs?: number;
  /**
   * Told of every error the reflector retries, except that a kind that is
   * not served is told once per outage, not at every retry. Default: none.
   * A throw from it is ignored.
   */
  readonly onError?: (err: unknown, phase: 'list' | 'watch') => void;
  /** Told when the kind stops being served (`stats.notServed` becomes true) and when it is served again. Default: none. A throw from it is ignored. */
  readonly onServedChange?: (served: boolean) => void;
  /** Told when the initial state is in the sink. */
  readonly onSynced?: () => void;
}

const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';
/** The longest Retry-After honoured, ms: a server asking for more gets asked again after a minute. */
const MAX_RETRY_AFTER_MS = 60_000;
/**
 * The reflector's deadlines sit this far past the same deadline handed to
 * the client (watch open and idle), so the client's more precise
 * `ClientTimeout` shows when it fires; the reflector's covers what the client
 * does not (an error answer's body, a ListWatcher of one's own).
 */
const BACKSTOP_MS = 1000;

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) throw new CacheError('InvalidOptions', `reflector option ${name} must be a positive number (got ${String(value)})`);
  return value;
}

/**
 * The numbers of reflector options with their defaults filled in; throws
 * CacheError `InvalidOptions` for a non-positive or non-finite one. Not
 * exported from the package: informers check their options with it.
 */
export function checkReflectorOptions(options: ReflectorOptions = {}): {
  pageSize: number;
  listTimeoutMs: number;
  watchIdleTimeoutMs: number;
  watchTimeoutSeconds: readonly [number, number];
  backoffInitialMs: number;
  backoffMaxMs: number;
  maxListPages: number;
  maxListObjects: number;
} {
  const [min, max] = options.watchTimeoutSeconds ?? [300, 600];
  const watchTimeoutSeconds = [positive('watchTimeoutSeconds[0]', min, 300), positive('watchTimeoutSeconds[1]', max, 600)] as const;
  if (watchTimeoutSeconds[1] < watchTimeoutSeconds[0]) throw new CacheError('InvalidOptions', `reflector option watchTimeoutSeconds must be [min, max] (got [${min}, ${max}])`);
  return {
    pageSize: Math.max(1, Math.floor(positive('pageSize', options.pageSize, 500))),
    listTimeoutMs: positive('listTimeoutMs', options.listTimeoutMs, 60_000),
    watchIdleTimeoutMs: positive('watchIdleTimeoutMs', options.watchIdleTimeoutMs, 150_000),
    watchTimeoutSeconds,
    backoffInitialMs: positive('backoffInitialMs', options.backoffInitialMs, 800),
    backoffMaxMs: positive('backoffMaxMs', options.backoffMaxMs, 30_000),
    maxListPages: Math.floor(positive('maxListPages', options.maxListPages, 10_000)),
    maxListObjects: Math.floor(positive('maxListObjects', options.maxListObjects, 1_000_000)),
  };
}

/** The stats of a reflector that has done nothing yet. Not exported from the package: informers use it before their reflectors exist. */
export function initialReflectorStats(): ReflectorStats {
  return {
    lists: 0,
    relists: 0,
    gone: 0,
    watchRestarts: 0,
    errors: 0,
    timeouts: 0,
    lastListMs: 0,
    lastListSize: 0,
    lastEventAt: 0,
    resourceVersion: '',
    lastError: undefined,
    lastErrorAt: 0,
    invalidObjects: 0,
    usedWatchList: false,
    disconnectedSince: 0,
    state: 'idle',
    notServed: false,
    shardServer: 'off',
    shardDropped: 0,
    watchEvents: 0,
  };
}

/** A deadline for one request or stream, tied to the reflector's stop signal. */
interface Attempt {
  readonly signal: AbortSignal;
  /** Start the deadline again (a watch event arrived). */
  refresh(): void;
  /** Clear the timer and detach from the stop signal. */
  done(): void;
  /** Whether the deadline (not a stop) ended it. */
  timedOut(): boolean;
}

/**
 * Lists and watches through a {@link ListWatcher} into a {@link ReflectorSink}.
 * Informers make one per source; use it directly to feed a store of your own.
 *
 * @example
 * ```ts
 * const store = new Map<string, ConfigMap>();
 * const reflector = new Reflector(clientListWatcher(client, ConfigMap, { namespace: 'default' }), {
 *   replace: (objects) => { store.clear(); for (const o of objects) store.set(o.metadata!.name!, o); },
 *   apply: (type, o) => (type === 'DELETED' ? store.delete(o.metadata!.name!) : store.set(o.metadata!.name!, o)),
 * }, { onError: (err, phase) => console.warn(phase, err) });
 * void reflector.run();
 * // later
 * await reflector.stop();
 * ```
 */
export class Reflector<T extends KubeObject> {
  readonly stats: ReflectorStats = initialReflectorStats();
  private readonly controller = new AbortController();
  private readonly backoff: Backoff;
  private readonly pageSize: number;
  private readonly listTimeoutMs: number;
  private readonly watchIdleTimeoutMs: number;
  private readonly watchTimeoutSeconds: readonly [number, number];
  private readonly maxListPages: number;
  private readonly maxListObjects: number;
  private running: Promise<void> | undefined;
  private watches = 0;
  private watchListRefused = false;
  private synced = false;
  /** Set by `rescope()`: the current request is abandoned and the list starts again. */
  private rescopePending = false;
  private rescopeSignal = new AbortController();

  /** Throws CacheError `InvalidOptions` for a non-positive or non-finite number. */
  constructor(
    private readonly lw: ListWatcher<T>,
    private readonly sink: ReflectorSink<T>,
    private readonly options: ReflectorOptions = {},
  ) {
    const o = checkReflectorOptions(options);
    this.pageSize = o.pageSize;
    this.listTimeoutMs = o.listTimeoutMs;
    this.watchIdleTimeoutMs = o.watchIdleTimeoutMs;
    this.watchTimeoutSeconds = o.watchTimeoutSeconds;
    this.maxListPages = o.maxListPages;
    this.maxListObjects = o.maxListObjects;
    this.backoff = new Backoff(o.backoffInitialMs, o.backoffMaxMs);
    lw.attach?.(this.stats);
  }

  /** Start the loop (idempotent). Resolves when stopped; never rejects. */
  run(): Promise<void> {
    const unsubscribe = this.running ? undefined : this.lw.subscribe?.(() => this.rescope());
    this.running ??= this.loop().finally(() => {
      unsubscribe?.();
      this.stats.state = 'stopped';
    });
    return this.running;
  }

  /**
   * Relist now (the list-watch's `subscribe` calls it when its scope
   * changes: a shard's ranges): the list or watch in progress is abandoned,
   * not counted as an error.
   */
  rescope(): void {
    this.rescopePending = true;
    this.rescopeSignal.abort(new CacheError('Stopped', 'the scope of the list-watch changed'));
  }

  /** Stop listing and watching; resolves when the loop has ended. */
  async stop(): Promise<void> {
    this.controller.abort(new CacheError('Stopped', 'the reflector was stopped'));
    this.stats.state = 'stopped';
    await this.running;
  }

  get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  private async loop(): Promise<void> {
    let needList = true;
    let relisting = false;
    while (!this.stopped) {
      try {
        if (this.rescopePending) {
          this.rescopePending = false;
          this.rescopeSignal = new AbortController();
          needList = true;
        }
        if (needList && this.lw.coversNothing?.() === true) {
          // Nothing to hold: an empty store, synced, until the scope changes.
          this.sink.replace([], this.stats.resourceVersion);
          this.markSynced();
          this.stats.state = 'watching';
          this.stats.disconnectedSince = 0;
          await delay(2 ** 31 - 1, AbortSignal.any([this.controller.signal, this.rescopeSignal.signal]));
          continue;
        }
        if (needList) {
          this.stats.state = 'listing';
          const streamed = this.options.useWatchList !== false && !this.watchListRefused;
          const outcome = streamed ? await this.streamingList(relisting) : await this.list(relisting);
          if (outcome === 'stopped') return;
          if (outcome === 'interrupted') continue;
          if (outcome === 'failed') {
            await this.pause();
            continue;
          }
          relisting = true;
          needList = outcome === 'relist';
          // A 410 relists at once; any other error (retried or relisted) waits out the backoff first.
          if (outcome === 'retry' || (needList && !isGone(this.stats.lastError))) await this.pause();
          if (streamed || needList) continue; // a streaming list's watch already ran; go round
        }
        this.stats.state = 'watching';
        const outcome = await this.watch();
        if (outcome === 'interrupted') continue;
        // A kind that went away starts from a list when it is back: its objects went with it.
        if (outcome === 'relist' || this.stats.notServed) needList = true;
        if (outcome === 'retry' || (outcome === 'relist' && !isGone(this.stats.lastError))) await this.pause();
      } catch (err) {
        // Only a sink that throws gets here: report it, and start over from a list.
        this.fail(err, needList ? 'list' : 'watch');
        needList = true;
        await this.pause();
      }
    }
  }

  private markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    this.options.onSynced?.();
  }

  private async pause(): Promise<void> {
    if (this.stopped) return;
    this.stats.state = 'backoff';
    const err = this.stats.lastError as { retryAfterSeconds?: unknown } | undefined;
    const ra = typeof err === 'object' && err !== null ? err.retryAfterSeconds : undefined;
    const retryAfterMs = typeof ra === 'number' && Number.isFinite(ra) && ra > 0 ? Math.min(ra * 1000, MAX_RETRY_AFTER_MS) : 0;
    await delay(Math.max(retryAfterMs, this.backoff.next()), this.controller.signal);
  }

  /**
   * Count and report a failure; out of contact since `since` (default: now)
   * unless already. A kind that is not served is reported when it stops
   * being served, not again at each retry while it stays so.
   */
  private fail(err: unknown, phase: 'list' | 'watch', since?: number): void {
    if (this.stopped) return;
    const now = Date.now();
    if (this.stats.disconnectedSince === 0) this.stats.disconnectedSince = since ?? now;
    this.stats.errors++;
    if (err instanceof CacheError && err.reason === 'Timeout') this.stats.timeouts++;
    this.stats.lastError = err;
    this.stats.lastErrorAt = now;
    if (isNotServed(err)) {
      if (this.stats.notServed) return;
      this.stats.notServed = true;
      this.tell(err, phase);
      this.servedChange(false);
      return;
    }
    this.tell(err, phase);
  }

  /** The kind answered: served (again). */
  private served(): void {
    if (!this.stats.notServed) return;
    this.stats.notServed = false;
    this.servedChange(true);
  }

  private servedChange(served: boolean): void {
    try {
      this.options.onServedChange?.(served);
    } catch {
      /* an observer that throws must not stop the reflector */
    }
  }

  private tell(err: unknown, phase: 'list' | 'watch'): void {
    try {
      this.options.onError?.(err, phase);
    } catch {
      /* an observer that throws must not stop the reflector */
    }
  }

  /** Whether `object` has a usable key and resourceVersion; if not, it is counted and reported, and the caller drops it. */
  private usable(object: unknown, phase: 'list' | 'watch', where: string): object is T {
    const why = malformed(object);
    if (why === undefined) return true;
    if (this.stopped) return false;
    this.stats.invalidObjects++;
    this.stats.lastError = new CacheError('InvalidObject', `${where}: an object the API server sent was left out of the cache: ${why}`);
    this.stats.lastErrorAt = Date.now();
    this.tell(this.stats.lastError, phase);
    return false;
  }

  private attempt(ms: number, what: () => string): Attempt {
    const parent = this.controller.signal;
    const ctrl = new AbortController();
    let timedOut = false;
    const rescope = this.rescopeSignal.signal;
    const onStop = (): void => ctrl.abort(parent.aborted ? parent.reason : rescope.reason);
    if (parent.aborted || rescope.aborted) onStop();
    else {
      parent.addEventListener('abort', onStop, { once: true });
      rescope.addEventListener('abort', onStop, { once: true });
    }
    const timer = setTimeout(() => {
      timedOut = true;
      ctrl.abort(new CacheError('Timeout', what()));
    }, ms);
    return {
      signal: ctrl.signal,
      refresh: () => void timer.refresh(),
      done: () => {
        clearTimeout(timer);
        parent.removeEventListener('abort', onStop);
        rescope.removeEventListener('abort', onStop);
      },
      timedOut: () => timedOut,
    };
  }

  /** The error to record for a failed call: the deadline's, when it was the deadline. */
  private blame(attempt: Attempt, err: unknown): unknown {
    if (!attempt.timedOut()) return err;
    const reason = attempt.signal.reason as CacheError;
    return new CacheError('Timeout', reason.message, { cause: err });
  }

  private async list(relist: boolean): Promise<'ok' | 'failed' | 'stopped' | 'interrupted'> {
    const started = performance.now();
    const items: T[] = [];
    const tokens = new Set<string>();
    let resourceVersion = '';
    let cont: string | undefined;
    let pages = 0;
    do {
      pages++;
      const page = pages;
      const attempt = this.attempt(this.listTimeoutMs, () => `list page ${page}: no complete answer within ${this.listTimeoutMs} ms`);
      let result: ObjectList<T>;
      try {
        result = await this.lw.list({ limit: this.pageSize, ...(cont ? { continue: cont } : {}), signal: attempt.signal });
      } catch (err) {
        if (this.stopped) return 'stopped';
        if (this.rescopePending) return 'interrupted';
        // An expired continue token among them: the list starts again from scratch.
        this.fail(this.blame(attempt, err), 'list');
        return 'failed';
      } finally {
        attempt.done();
      }
      if (this.stopped) return 'stopped';
      if (this.rescopePending) return 'interrupted';
      const got: unknown = (result as { items?: unknown } | null)?.items ?? [];
      if (!Array.isArray(got)) {
        this.fail(new CacheError('InvalidResponse', `list page ${page}: the answer has no items array`), 'list');
        return 'failed';
      }
      const prepare = this.sink.prepare?.bind(this.sink);
      for (const item of got as unknown[]) {
        if (this.usable(item, 'list', `list page ${page}`)) items.push(prepare ? prepare(item) : item);
      }
      const next = result.metadata?.continue || undefined;
      if (next !== undefined && (page >= this.maxListPages || items.length >= this.maxListObjects)) {
        const what = page >= this.maxListPages ? `${page} pages (maxListPages)` : `${items.length} objects (maxListObjects ${this.maxListObjects})`;
        this.fail(new CacheError('ListTooLarge', `list page ${page}: the list has not ended after ${what}; abandoned, starting again after a pause`), 'list');
        return 'failed';
      }
      if (next !== undefined) {
        if (tokens.has(next)) {
          this.fail(new CacheError('ContinueLoop', `list page ${page}: the server sent continue token ${JSON.stringify(next.slice(0, 80))} a second time; starting the list again after a pause`), 'list');
          return 'failed';
        }
        tokens.add(next);
      }
      cont = next;
      resourceVersion = result.metadata?.resourceVersion ?? resourceVersion;
    } while (cont);
    this.stats.lists++;
    if (relist) this.stats.relists++;
    this.stats.lastListMs = performance.now() - started;
    this.stats.lastListSize = items.length;
    this.stats.lastEventAt = Date.now();
    this.stats.resourceVersion = resourceVersion;
    this.served();
    this.sink.replace(items, resourceVersion);
    this.markSynced();
    return 'ok';
  }

  private watchOptions(attempt: Attempt, extra: { resourceVersion: string; sendInitialEvents?: boolean }): Parameters<ListWatcher<T>['watch']>[0] {
    const [min, max] = this.watchTimeoutSeconds;
    return {
      ...extra,
      timeoutSeconds: Math.round(min + Math.random() * (max - min)),
      idleTimeoutMs: this.watchIdleTimeoutMs,
      signal: attempt.signal,
    };
  }

  private watchAttempt(): Attempt {
    const ms = this.watchIdleTimeoutMs + BACKSTOP_MS;
    return this.attempt(ms, () => `watch: no answer, event or bookmark within ${ms} ms`);
  }

  /** Open a watch from the last resourceVersion and apply its events until it ends. */
  private async watch(): Promise<'rewatch' | 'relist' | 'retry' | 'interrupted'> {
    if (this.watches++ > 0) this.stats.watchRestarts++;
    const opened = Date.now();
    // Not receiving until the watch opens: an answer that stalls counts from now.
    if (this.stats.disconnectedSince === 0) this.stats.disconnectedSince = opened;
    const attempt = this.watchAttempt();
    try {
      let events: AsyncIterableIterator<WatchEvent<T>>;
      try {
        events = await this.lw.watch(this.watchOptions(attempt, { resourceVersion: this.stats.resourceVersion }));
      } catch (err) {
        if (this.stopped) return 'rewatch';
        if (this.rescopePending) return 'interrupted';
        return this.watchFailed(this.blame(attempt, err));
      }
      attempt.refresh();
      let received = 0;
      let heard = Date.now();
      this.stats.disconnectedSince = 0; // the watch is open: in contact again
      this.served();
      try {
        for await (const event of events) {
          if (this.stopped || this.rescopePending) break;
          attempt.refresh();
          heard = Date.now();
          received++;
          const verdict = this.handle(event, heard);
          if (verdict) return verdict;
        }
      } catch (err) {
        if (this.stopped) return 'rewatch';
        if (this.rescopePending) return 'interrupted';
        // A stream that went silent stopped delivering when it last delivered, not when its deadline passed.
        return this.watchFailed(this.blame(attempt, err), heard);
      }
      if (this.stopped) return 'rewatch';
      if (this.rescopePending) return 'interrupted';
      // A normal close. One that came at once with nothing in it is suspicious:
      // back off rather than spin.
      if (received === 0 && Date.now() - opened < 1000) {
        this.fail(new CacheError('WatchClosed', 'the watch closed at once with no events'), 'watch');
        return 'retry';
      }
      if (Date.now() - opened > 60_000) this.backoff.reset();
      return 'rewatch';
    } finally {
      attempt.done();
    }
  }

  private watchFailed(err: unknown, since?: number): 'relist' | 'retry' {
    this.fail(err, 'watch', since);
    if (isGone(err)) {
      this.stats.gone++;
      return 'relist';
    }
    return 'retry';
  }

  /** Apply one watch event, heard at `at` (ms); a non-undefined answer ends the watch. */
  private handle(event: WatchEvent<T>, at: number): 'relist' | 'retry' | undefined {
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED': {
        this.stats.lastEventAt = at;
        this.stats.watchEvents++;
        if (!this.usable(event.object, 'watch', `watch ${event.type} event`)) return undefined;
        const rv = event.object.metadata?.resourceVersion;
        if (rv) this.stats.resourceVersion = rv;
        this.sink.apply(event.type, event.object);
        return undefined;
      }
      case 'BOOKMARK': {
        this.stats.lastEventAt = at;
        const rv = event.object.metadata?.resourceVersion;
        if (rv) this.stats.resourceVersion = rv;
        return undefined;
      }
      case 'ERROR': {
        const err = watchEventError(event);
        this.fail(err, 'watch');
        if (isGone(err)) this.stats.gone++;
        // 410: relist at once; an unexpected server error inside the stream: relist after a pause, as client-go does.
        return 'relist';
      }
    }
  }

  /**
   * Initial state from a streaming list: ADDED events up to the
   * initial-events-end bookmark, swapped into the sink in one step, then the
   * same stream goes on as a normal watch.
   */
  private async streamingList(relist: boolean): Promise<'ok' | 'failed' | 'stopped' | 'relist' | 'retry' | 'interrupted'> {
    const started = performance.now();
    const attempt = this.watchAttempt();
    try {
      let events: AsyncIterableIterator<WatchEvent<T>>;
      try {
        events = await this.lw.watch(this.watchOptions(attempt, { resourceVersion: '', sendInitialEvents: true }));
      } catch (err) {
        if (this.stopped) return 'stopped';
        if (this.rescopePending) return 'interrupted';
        const blamed = this.blame(attempt, err);
        this.fail(blamed, 'list');
        if (isClientError(blamed) && (blamed.code === 400 || blamed.code === 403 || blamed.code === 422 || blamed.code === 501)) {
          // The server does not do streaming lists (or refuses them here): LIST from now on.
          this.watchListRefused = true;
          attempt.done();
          return this.list(relist);
        }
        return 'failed';
      }
      attempt.refresh();
      this.served();
      const initial = new Map<string, T>();
      let done = false;
      try {
        for await (const event of events) {
          if (this.stopped) return 'stopped';
          if (this.rescopePending) return 'interrupted';
          attempt.refresh();
          if (!done) {
            const m = event.object.metadata;
            if ((event.type === 'ADDED' || event.type === 'MODIFIED' || event.type === 'DELETED') && !this.usable(event.object, 'list', `streaming list ${event.type} event`)) continue;
            if (event.type === 'ADDED' || event.type === 'MODIFIED') {
              initial.set(`${m?.namespace ?? ''}/${m?.name ?? ''}`, this.sink.prepare ? this.sink.prepare(event.object) : event.object);
              if (initial.size > this.maxListObjects) {
                // A stream that never reaches its end bookmark must not fill the memory either.
                this.fail(new CacheError('ListTooLarge', `streaming list: no initial-events-end bookmark after ${initial.size} objects (maxListObjects ${this.maxListObjects}); abandoned, starting again after a pause`), 'list');
                return 'failed';
              }
              continue;
            }
            if (event.type === 'DELETED') {
              initial.delete(`${m?.namespace ?? ''}/${m?.name ?? ''}`);
              continue;
            }
            if (event.type === 'BOOKMARK' && m?.annotations?.[INITIAL_EVENTS_END] === 'true') {
              done = true;
              this.stats.lists++;
              if (relist) this.stats.relists++;
              this.stats.usedWatchList = true;
              this.stats.lastListMs = performance.now() - started;
              this.stats.lastListSize = initial.size;
              this.stats.lastEventAt = Date.now();
              this.stats.resourceVersion = m.resourceVersion ?? '';
              this.stats.disconnectedSince = 0;
              this.sink.replace([...initial.values()], this.stats.resourceVersion);
              initial.clear();
              this.markSynced();
              this.stats.state = 'watching';
              continue;
            }
          }
          const verdict = this.handle(event, Date.now());
          if (verdict === 'relist') return done ? 'relist' : 'failed';
        }
      } catch (err) {
        if (this.stopped) return 'stopped';
        if (this.rescopePending) return 'interrupted';
        const blamed = this.blame(attempt, err);
        this.fail(blamed, 'watch');
        if (isGone(blamed)) {
          this.stats.gone++;
          return done ? 'relist' : 'failed';
        }
        return done ? 'retry' : 'failed';
      }
      if (this.stopped) return 'stopped';
      if (this.rescopePending) return 'interrupted';
      return done ? 'ok' : 'failed';
    } finally {
      attempt.done();
    }
  }
}

/**
 * Whether a list or watch error says the API server does not serve the kind:
 * the mapper found no such kind (`NoKindMatch`), or the collection's path
 * answered 404 (a list or watch of a served kind never does, even in a
 * namespace that does not exist).
 *
 * @example
 * ```ts
 * const info = cache.informerInfo({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' });
 * if (info && isNotServed(info.lastError)) console.log('install the HardDisk CRD');
 * ```
 */
export function isNotServed(err: unknown): boolean {
  return isNoKindMatch(err) || (isClientError(err) && err.code === 404);
}

/**
 * Why an object from the server cannot be stored, or undefined when it can:
 * the store keys objects by `namespace/name` and compares resourceVersions
 * as strings, so both must be what the API promises.
 */
function malformed(object: unknown): string | undefined {
  if (typeof object !== 'object' || object === null || Array.isArray(object)) return `it is ${object === null ? 'null' : Array.isArray(object) ? 'an array' : typeof object}, not an object`;
  const metadata = (object as { metadata?: unknown }).metadata;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) return 'it has no metadata object';
  const { name, namespace, resourceVersion } = metadata as { name?: unknown; namespace?: unknown; resourceVersion?: unknown };
  if (typeof name !== 'string' || name === '') return `metadata.name is ${JSON.stringify(name) ?? 'undefined'}, not a non-empty string`;
  const shown = JSON.stringify(name.slice(0, 80));
  if (name.includes('/')) return `metadata.name ${shown} contains "/"`;
  if (namespace !== undefined && (typeof namespace !== 'string' || namespace.includes('/'))) return `${shown}: metadata.namespace is ${JSON.stringify(namespace)}, not a name`;
  if (resourceVersion !== undefined && typeof resourceVersion !== 'string') return `${shown}: metadata.resourceVersion is ${JSON.stringify(resourceVersion)}, not a string`;
  return undefined;
}
