/**
 * The reflector: keeps a set of objects in step with the API server by
 * list + watch, with client-go's semantics.
 *
 * - Paginated consistent list, then a watch from the list's resourceVersion
 *   with bookmarks and a server timeout drawn from 5–10 minutes; a
 *   client-side idle deadline a little past it notices a silently dead stream.
 * - A watch that ends normally is re-opened from the last resourceVersion: no
 *   relist. 410 Gone / Expired: relist, and the sink replaces its store (and
 *   emits deletes for objects that vanished meanwhile).
 * - Refused, reset, 429, 5xx: exponential backoff 800 ms → 30 s with jitter,
 *   reset after two healthy minutes; Retry-After honoured.
 * - Optionally the initial state comes from a streaming list (WatchList:
 *   `sendInitialEvents=true`, up to the `k8s.io/initial-events-end`
 *   bookmark), falling back to LIST when the server refuses it.
 * - It never stops silently: every error is reported and retried until
 *   `stop()`.
 */
import { isClientError, isGone, watchEventError } from '@kubeloop/client';
import type { WatchEvent } from '@kubeloop/client';
import type { KubeObject } from '@kubeloop/scheme';
import { sleep as delay } from '@kubeloop/workqueue';
import { Backoff } from './internal/backoff.js';
import type { ListWatcher } from './list-watch.js';

/** Receives what the reflector learns. */
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

/** What a reflector has done so far (informer metrics read it). */
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
  /** Duration of the last list, ms. */
  lastListMs: number;
  /** Objects received in the last list. */
  lastListSize: number;
  /** When the last event (or list) arrived, epoch ms; 0 before any. */
  lastEventAt: number;
  /** The last resourceVersion seen. */
  resourceVersion: string;
  /** The last error, if any. */
  lastError: unknown;
  /** Whether the initial state came from a streaming list. */
  usedWatchList: boolean;
  /**
   * When the reflector lost contact (a failed list or watch), epoch ms; 0
   * while it is watching or has not failed. Readiness reads it: a cache that
   * has been cut off for long is stale even though it once synced.
   */
  disconnectedSince: number;
}

/** Options for {@link Reflector}. Every field is optional. */
export interface ReflectorOptions {
  /** List page size. Default: 500. */
  readonly pageSize?: number;
  /** Server-side watch timeout range, seconds; each watch draws from it. Default: [300, 600]. */
  readonly watchTimeoutSeconds?: readonly [number, number];
  /** Client-side idle deadline past the server timeout, ms. Default: 30 000. */
  readonly idleGraceMs?: number;
  /** Use a streaming list (WatchList) for the initial state. Default: false. */
  readonly useWatchList?: boolean;
  /** First retry delay, ms. Default: 800. */
  readonly backoffInitialMs?: number;
  /** Longest retry delay, ms. Default: 30 000. */
  readonly backoffMaxMs?: number;
  /** Told of every error the reflector retries. Default: none. */
  readonly onError?: (err: unknown, phase: 'list' | 'watch') => void;
  /** Told when the initial state is in the sink. */
  readonly onSynced?: () => void;
}

const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

export class Reflector<T extends KubeObject> {
  readonly stats: ReflectorStats = {
    lists: 0,
    relists: 0,
    gone: 0,
    watchRestarts: 0,
    errors: 0,
    lastListMs: 0,
    lastListSize: 0,
    lastEventAt: 0,
    resourceVersion: '',
    lastError: undefined,
    usedWatchList: false,
    disconnectedSince: 0,
  };
  private readonly controller = new AbortController();
  private readonly backoff: Backoff;
  private running: Promise<void> | undefined;
  private watches = 0;
  private watchListRefused = false;

  constructor(
    private readonly lw: ListWatcher<T>,
    private readonly sink: ReflectorSink<T>,
    private readonly options: ReflectorOptions = {},
  ) {
    this.backoff = new Backoff(options.backoffInitialMs ?? 800, options.backoffMaxMs ?? 30_000);
  }

  /** Start the loop (idempotent). Resolves when stopped. */
  run(): Promise<void> {
    this.running ??= this.loop();
    return this.running;
  }

  /** Stop listing and watching; resolves when the loop has ended. */
  async stop(): Promise<void> {
    this.controller.abort();
    await this.running;
  }

  get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  private async loop(): Promise<void> {
    const signal = this.controller.signal;
    let needList = true;
    let relisting = false;
    while (!signal.aborted) {
      if (needList) {
        const streamed = this.options.useWatchList && !this.watchListRefused;
        const outcome = streamed ? await this.streamingList(relisting) : await this.list(relisting);
        if (outcome === 'stopped') return;
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
      const outcome = await this.watch();
      if (outcome === 'relist') needList = true;
      if (outcome === 'retry' || (outcome === 'relist' && !isGone(this.stats.lastError))) await this.pause();
    }
  }

  private synced = false;

  private markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    this.options.onSynced?.();
  }

  private async pause(): Promise<void> {
    const err = this.stats.lastError;
    const retryAfter = isClientError(err) ? err.retryAfterSeconds : undefined;
    const wait = retryAfter !== undefined ? Math.max(retryAfter * 1000, this.backoff.next()) : this.backoff.next();
    await delay(wait, this.controller.signal);
  }

  private fail(err: unknown, phase: 'list' | 'watch'): void {
    if (this.stopped) return;
    if (this.stats.disconnectedSince === 0) this.stats.disconnectedSince = Date.now();
    this.stats.errors++;
    this.stats.lastError = err;
    this.options.onError?.(err, phase);
  }

  private async list(relist: boolean): Promise<'ok' | 'failed' | 'stopped'> {
    const signal = this.controller.signal;
    const started = performance.now();
    const items: T[] = [];
    let resourceVersion = '';
    try {
      let cont: string | undefined;
      do {
        const page = await this.lw.list({ limit: this.options.pageSize ?? 500, ...(cont ? { continue: cont } : {}), signal });
        const prepare = this.sink.prepare?.bind(this.sink);
        for (const item of page.items) items.push(prepare ? prepare(item) : item);
        cont = page.metadata?.continue || undefined;
        resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      } while (cont);
    } catch (err) {
      if (signal.aborted) return 'stopped';
      // An expired continue token: start the list again from scratch.
      this.fail(err, 'list');
      return 'failed';
    }
    if (signal.aborted) return 'stopped';
    this.stats.lists++;
    if (relist) this.stats.relists++;
    this.stats.lastListMs = performance.now() - started;
    this.stats.lastListSize = items.length;
    this.stats.lastEventAt = Date.now();
    this.stats.resourceVersion = resourceVersion;
    this.sink.replace(items, resourceVersion);
    this.markSynced();
    return 'ok';
  }

  private timeouts(): { timeoutSeconds: number; idleTimeoutMs: number } {
    const [min, max] = this.options.watchTimeoutSeconds ?? [300, 600];
    const timeoutSeconds = Math.round(min + Math.random() * (max - min));
    return { timeoutSeconds, idleTimeoutMs: timeoutSeconds * 1000 + (this.options.idleGraceMs ?? 30_000) };
  }

  /** Open a watch from the last resourceVersion and apply its events until it ends. */
  private async watch(): Promise<'rewatch' | 'relist' | 'retry'> {
    const signal = this.controller.signal;
    if (this.watches++ > 0) this.stats.watchRestarts++;
    const opened = Date.now();
    let events: AsyncIterableIterator<WatchEvent<T>>;
    try {
      events = await this.lw.watch({ resourceVersion: this.stats.resourceVersion, ...this.timeouts(), signal });
    } catch (err) {
      return this.watchFailed(err);
    }
    let received = 0;
    this.stats.disconnectedSince = 0; // the watch is open: in contact again
    try {
      for await (const event of events) {
        if (signal.aborted) break;
        received++;
        const verdict = this.handle(event);
        if (verdict) return verdict;
      }
    } catch (err) {
      if (signal.aborted) return 'rewatch';
      return this.watchFailed(err);
    }
    if (signal.aborted) return 'rewatch';
    // A normal close. One that came at once with nothing in it is suspicious:
    // back off rather than spin.
    if (received === 0 && Date.now() - opened < 1000) {
      this.stats.lastError = new Error('the watch closed at once with no events');
      return 'retry';
    }
    if (Date.now() - opened > 60_000) this.backoff.reset();
    return 'rewatch';
  }

  private watchFailed(err: unknown): 'relist' | 'retry' {
    this.fail(err, 'watch');
    if (isGone(err)) {
      this.stats.gone++;
      return 'relist';
    }
    return 'retry';
  }

  /** Apply one watch event; a non-undefined answer ends the watch. */
  private handle(event: WatchEvent<T>): 'relist' | 'retry' | undefined {
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED': {
        this.stats.lastEventAt = Date.now();
        const rv = event.object.metadata?.resourceVersion;
        if (rv) this.stats.resourceVersion = rv;
        this.sink.apply(event.type, event.object);
        return undefined;
      }
      case 'BOOKMARK': {
        this.stats.lastEventAt = Date.now();
        const rv = event.object.metadata?.resourceVersion;
        if (rv) this.stats.resourceVersion = rv;
        return undefined;
      }
      case 'ERROR': {
        const err = watchEventError(event);
        this.fail(err, 'watch');
        if (isGone(err)) {
          this.stats.gone++;
          return 'relist';
        }
        // An unexpected server error inside the stream: relist after a pause, as client-go does.
        return 'relist';
      }
    }
  }

  /**
   * Initial state from a streaming list: ADDED events up to the
   * initial-events-end bookmark, swapped into the sink in one step, then the
   * same stream goes on as a normal watch.
   */
  private async streamingList(relist: boolean): Promise<'ok' | 'failed' | 'stopped' | 'relist' | 'retry'> {
    const signal = this.controller.signal;
    const started = performance.now();
    let events: AsyncIterableIterator<WatchEvent<T>>;
    try {
      events = await this.lw.watch({ resourceVersion: '', sendInitialEvents: true, ...this.timeouts(), signal });
    } catch (err) {
      if (signal.aborted) return 'stopped';
      this.fail(err, 'list');
      if (isClientError(err) && (err.code === 400 || err.code === 403 || err.code === 422 || err.code === 501)) {
        // The server does not do streaming lists (or refuses them here): LIST from now on.
        this.watchListRefused = true;
        return this.list(relist);
      }
      return 'failed';
    }
    const initial = new Map<string, T>();
    let done = false;
    try {
      for await (const event of events) {
        if (signal.aborted) return 'stopped';
        if (!done) {
          const m = event.object.metadata;
          if (event.type === 'ADDED' || event.type === 'MODIFIED') {
            initial.set(`${m?.namespace ?? ''}/${m?.name ?? ''}`, this.sink.prepare ? this.sink.prepare(event.object) : event.object);
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
            this.sink.replace([...initial.values()], this.stats.resourceVersion);
            initial.clear();
            this.markSynced();
            continue;
          }
        }
        const verdict = this.handle(event);
        if (verdict === 'relist') return done ? 'relist' : 'failed';
      }
    } catch (err) {
      if (signal.aborted) return 'stopped';
      this.fail(err, 'watch');
      if (isGone(err)) {
        this.stats.gone++;
        return done ? 'relist' : 'failed';
      }
      return done ? 'retry' : 'failed';
    }
    if (signal.aborted) return 'stopped';
    return done ? 'ok' : 'failed';
  }
}
