/**
 * Watch streams: the API server's chunked JSON-lines watch body as an async
 * iterator of typed events, parsed line by line as bytes arrive (never
 * buffering the body), with a typed error for a malformed line, a dropped
 * connection, an abort, or a stream that has gone silent.
 */
import type { IncomingMessage } from 'node:http';
import { parseJson } from '@kubeloop/scheme';
import { ClientError } from './errors.js';
import type { Status } from './errors.js';
import { retryAfterSeconds } from './transport.js';

/**
 * The type of a watch event, as the API server sends it.
 *
 * @example
 * ```ts
 * const changes: WatchEventType[] = ['ADDED', 'MODIFIED', 'DELETED'];
 * const relevant = (event: WatchEvent<unknown>): boolean => changes.includes(event.type);
 * ```
 */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/**
 * One event of a watch stream. For `ERROR` the object is the server's
 * `metav1.Status` (see {@link watchEventError}); for `BOOKMARK` it is an object
 * of the watched kind carrying only `metadata.resourceVersion` (and, for the
 * end of a streamed initial list, the `k8s.io/initial-events-end` annotation).
 *
 * @example
 * ```ts
 * const event: WatchEvent<ConfigMap> = { type: 'ADDED', object: configMap };
 * if (event.type === 'ERROR') throw watchEventError(event);
 * ```
 */
export interface WatchEvent<T> {
  readonly type: WatchEventType;
  readonly object: T;
}

/**
 * Options for {@link watchEvents}.
 *
 * @example
 * ```ts
 * // the server ends the watch at 300 s; notice a dead connection 30 s after that
 * const stop = new AbortController();
 * const options: WatchEventsOptions = { signal: stop.signal, idleTimeoutMs: 330_000 };
 * ```
 */
export interface WatchEventsOptions {
  /** Aborting ends the stream: the response is destroyed and a pending or later `next()` rejects with ClientError `Aborted`. Default: none. */
  readonly signal?: AbortSignal;
  /**
   * If no bytes arrive for this long while the consumer is waiting for an
   * event, the response is destroyed and the iterator throws ClientError
   * `ClientTimeout`, so a silently dead connection is noticed. Set it a little
   * past the watch's `timeoutSeconds` (client-go's reflector style). Time the
   * consumer spends on an event does not count. Default: none (0).
   */
  readonly idleTimeoutMs?: number;
  /**
   * Longest line (one event), bytes. A longer line fails the stream with
   * ClientError `ResponseTooLarge` and the response is destroyed: nothing is
   * buffered without bound. Default: 16 MiB. An event carries one object,
   * and the API server stores at most etcd's request limit per object
   * (1.5 MiB by default; clusters that raise it rarely pass 8 MiB), so 16 MiB
   * leaves room for the JSON form of any object a server accepts.
   */
  readonly maxLineBytes?: number;
  /**
   * For an error answer (non-2xx): how long its body (a Status) may take to
   * arrive. When it does not, the error is raised from the status code alone
   * and the response destroyed. Default: 30 000.
   */
  readonly errorBodyTimeoutMs?: number;
}

/** Default of {@link WatchEventsOptions.maxLineBytes}. */
const DEFAULT_MAX_LINE = 16 * 1024 * 1024;
/** Default of {@link WatchEventsOptions.errorBodyTimeoutMs}, and the longest wait for the body of a watch's error answer. */
export const DEFAULT_ERROR_BODY_TIMEOUT = 30_000;

/** Lines shown in a Decode error are cut to this many characters. */
const LINE_PREVIEW = 200;
/** Parsed events held before the socket is paused until the consumer catches up. */
const HIGH_WATER_EVENTS = 1024;
/** Bytes of an error answer (non-2xx) kept for its message. */
const MAX_ERROR_BODY = 1 << 20;

function preview(line: string): string {
  return JSON.stringify(line.length > LINE_PREVIEW ? `${line.slice(0, LINE_PREVIEW)}…` : line);
}

function isKnownType(type: unknown): type is WatchEventType {
  switch (type) {
    case 'ADDED':
    case 'MODIFIED':
    case 'DELETED':
    case 'BOOKMARK':
    case 'ERROR':
      return true;
    default:
      return false;
  }
}

/**
 * Parse one line of a watch stream. Throws ClientError `Decode` for anything
 * that is not a JSON `{ type, object }` with a known type and an object.
 *
 * @example
 * ```ts
 * const event = parseWatchLine<V1ConfigMap>('{"type":"ADDED","object":{"kind":"ConfigMap"}}');
 * event.type; // 'ADDED'
 * ```
 */
export function parseWatchLine<T>(line: string): WatchEvent<T> {
  let value: unknown;
  try {
    value = parseJson(line);
  } catch (cause) {
    throw new ClientError('Decode', `watch: a line is not JSON (${cause instanceof Error ? cause.message : String(cause)}): ${preview(line)}`, { cause });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ClientError('Decode', `watch: a line is not a watch event object: ${preview(line)}`);
  }
  const { type, object } = value as { type?: unknown; object?: unknown };
  if (!isKnownType(type)) {
    throw new ClientError('Decode', `watch: a line has ${type === undefined ? 'no type' : `an unknown type ${JSON.stringify(type)}`}: ${preview(line)}`);
  }
  if (typeof object !== 'object' || object === null || Array.isArray(object)) {
    throw new ClientError('Decode', `watch: a ${type} event has no object: ${preview(line)}`);
  }
  return value as WatchEvent<T>;
}

/**
 * The ClientError an `ERROR` watch event stands for: a 410 `Expired` Status
 * (a resourceVersion too old to watch from) gives a ClientError that `isGone`
 * recognises, so a reflector knows to relist. `path` names the watch in the
 * message (default `stream`).
 *
 * @example
 * ```ts
 * const res = await transport.stream({ method: 'GET', path: '/api/v1/pods', query: { watch: 'true' } });
 * for await (const event of watchEvents<V1Pod>(res)) {
 *   if (event.type === 'ERROR') throw watchEventError(event);
 * }
 * ```
 */
export function watchEventError(event: WatchEvent<unknown>, path = 'stream'): ClientError {
  const status = event.object as Status;
  const code = typeof status.code === 'number' ? status.code : 500;
  return ClientError.fromResponse('WATCH', path, code, JSON.stringify({ ...status, kind: 'Status' }));
}

/**
 * Read a watch response as an async iterator of events. The chunked JSON-lines
 * body is parsed as it arrives: lines split across chunks, several lines per
 * chunk, UTF-8 characters split across chunks, blank lines and a missing final
 * newline are all handled, and each line is parsed once.
 *
 * - Normal end of the body (the server's `timeoutSeconds`): the iterator completes.
 * - A malformed line: the events before it are delivered, then the iterator
 *   throws ClientError `Decode` naming the line, and the response is destroyed.
 * - The connection is reset or closed early: ClientError `Network`.
 * - A non-2xx answer: the ClientError its Status describes (e.g. 410 `Gone`).
 * - `break` / `return()`, or the `signal` aborting: the response is destroyed.
 * - `idleTimeoutMs` with no bytes: ClientError `ClientTimeout`.
 * - A line longer than `maxLineBytes` (16 MiB): ClientError `ResponseTooLarge`.
 * - An error answer's body is read within `errorBodyTimeoutMs` (30 s); the
 *   error keeps the answer's Retry-After (`retryAfterSeconds`).
 *
 * `ERROR` events are yielded, not thrown: the caller decides (see
 * {@link watchEventError}). Nothing here ever throws outside the iterator.
 *
 * @example
 * ```ts
 * const res = await transport.stream({
 *   method: 'GET',
 *   path: '/api/v1/namespaces/default/configmaps',
 *   query: { watch: 'true', resourceVersion: '812', allowWatchBookmarks: 'true', timeoutSeconds: 300 },
 * });
 * for await (const event of watchEvents<V1ConfigMap>(res, { idleTimeoutMs: 330_000 })) {
 *   if (event.type === 'ERROR') throw watchEventError(event);
 *   console.log(event.type, event.object.metadata?.name);
 * }
 * ```
 */
export function watchEvents<T>(response: IncomingMessage, options: WatchEventsOptions = {}): AsyncIterableIterator<WatchEvent<T>> {
  return new WatchIterator<T>(response, options);
}

type Settle<T> = {
  resolve: (result: IteratorResult<WatchEvent<T>, undefined>) => void;
  reject: (err: unknown) => void;
};

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

class WatchIterator<T> implements AsyncIterableIterator<WatchEvent<T>> {
  /** Pieces of the current line, not yet terminated by a newline (bytes: a newline byte never occurs inside a UTF-8 character). */
  private readonly carry: Buffer[] = [];
  private carryBytes = 0;
  private readonly maxLine: number;
  /** Parsed events not yet handed out, from `head` on (a cursor, so taking one is O(1)). */
  private queue: (WatchEvent<T> | undefined)[] = [];
  private head = 0;
  /** The error to throw once the queue is drained. */
  private failure: ClientError | undefined;
  /** No more events will be queued (the body ended, or the stream failed or was given up). */
  private finished = false;
  /** The iterator has thrown or completed: `next()` now returns done. */
  private closed = false;
  private stopped = false;
  private waiter: Settle<T> | undefined;
  private paused = false;
  /** For a non-2xx answer: its status and body (a Status, not events). */
  private readonly errorCode: number | undefined;
  private readonly errorBody: Buffer[] = [];
  private errorBodySize = 0;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly errorTimer: NodeJS.Timeout | undefined;
  private readonly method: string;
  private readonly path: string;
  private readonly what: string;
  private readonly onAbort: (() => void) | undefined;

  constructor(
    private readonly res: IncomingMessage,
    private readonly options: WatchEventsOptions,
  ) {
    const req = (res as { req?: { method?: string; path?: string } }).req;
    this.method = req?.method ?? 'GET';
    this.path = req?.path ?? '(watch)';
    this.what = `${this.method} ${this.path}`;
    const code = res.statusCode ?? 200;
    if (code < 200 || code > 299) this.errorCode = code;
    this.maxLine = options.maxLineBytes ?? DEFAULT_MAX_LINE;

    if (res.destroyed && !res.complete) {
      this.finish(new ClientError('Network', `${this.what}: the watch response was destroyed before it was read`));
      return;
    }
    res.on('data', this.onData);
    res.on('end', this.onEnd);
    res.on('error', this.onError);
    res.on('close', this.onClose);

    if (this.errorCode !== undefined) {
      this.errorTimer = setTimeout(this.onErrorBodyTimeout, options.errorBodyTimeoutMs ?? DEFAULT_ERROR_BODY_TIMEOUT);
      this.errorTimer.unref();
    }
    const idle = options.idleTimeoutMs ?? 0;
    if (idle > 0) {
      this.timer = setTimeout(this.onIdle, idle);
      this.timer.unref();
    }
    const signal = options.signal;
    if (signal) {
      if (signal.aborted) {
        this.abort(signal);
      } else {
        this.onAbort = (): void => this.abort(signal);
        signal.addEventListener('abort', this.onAbort, { once: true });
      }
    }
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<WatchEvent<T>, undefined>> {
    if (this.waiter) return Promise.reject(new ClientError('InvalidRequest', `${this.what}: next() called while another next() is pending`));
    if (this.head < this.queue.length) return Promise.resolve({ done: false, value: this.take() });
    if (this.closed) return Promise.resolve(DONE);
    if (this.finished) {
      this.closed = true;
      return this.failure ? Promise.reject(this.failure) : Promise.resolve(DONE);
    }
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.timer?.refresh(); // the idle clock runs while someone waits
      if (this.paused) {
        this.paused = false;
        this.res.resume();
      }
    });
  }

  return(): Promise<IteratorResult<WatchEvent<T>, undefined>> {
    this.closed = true;
    this.dropQueue();
    this.failure = undefined;
    this.finished = true;
    this.stop();
    this.settle();
    return Promise.resolve(DONE);
  }

  // --- stream events (arrow properties: bound once, no closure per event) ---

  private readonly onData = (chunk: Buffer | string): void => {
    if (this.finished) return;
    this.timer?.refresh();
    if (this.errorCode !== undefined) {
      if (this.errorBodySize < MAX_ERROR_BODY) this.errorBody.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
      this.errorBodySize += chunk.length;
      return;
    }
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    if (buf.length === 0) return;
    // Only the new bytes are scanned: the carried pieces hold no newline.
    let nl = buf.indexOf(NEWLINE);
    if (nl === -1) {
      this.keep(buf);
      return;
    }
    let line: string;
    if (this.carry.length > 0) {
      if (!this.keep(buf.subarray(0, nl))) return;
      line = Buffer.concat(this.carry, this.carryBytes).toString('utf8');
      this.carry.length = 0;
      this.carryBytes = 0;
    } else {
      if (nl > this.maxLine) return this.tooLong(nl);
      line = buf.toString('utf8', 0, nl);
    }
    if (!this.line(line)) return;
    let start = nl + 1;
    while ((nl = buf.indexOf(NEWLINE, start)) !== -1) {
      if (nl - start > this.maxLine) return this.tooLong(nl - start);
      if (!this.line(buf.toString('utf8', start, nl))) return;
      start = nl + 1;
    }
    if (start < buf.length && !this.keep(buf.subarray(start))) return;
    if (!this.paused && this.queue.length - this.head >= HIGH_WATER_EVENTS) {
      this.paused = true;
      this.res.pause();
    }
    this.settle();
  };

  private readonly onEnd = (): void => {
    if (this.finished) return;
    if (this.errorCode !== undefined) {
      this.finish(this.errorAnswer(''));
      return;
    }
    if (this.carry.length > 0) {
      const line = Buffer.concat(this.carry, this.carryBytes).toString('utf8');
      this.carry.length = 0;
      this.carryBytes = 0;
      if (!this.line(line)) return;
    }
    this.finish(undefined);
  };

  private readonly onError = (err: Error): void => {
    if (this.finished) return;
    this.finish(err instanceof ClientError ? err : new ClientError('Network', `${this.what}: watch stream failed: ${err.message}`, { cause: err }));
  };

  private readonly onClose = (): void => {
    if (this.finished) return;
    // closed with neither 'end' nor 'error': the body was cut short
    this.finish(new ClientError('Network', `${this.what}: watch connection closed before the stream ended`));
  };

  private readonly onErrorBodyTimeout = (): void => {
    if (this.finished) return;
    const timeout = this.options.errorBodyTimeoutMs ?? DEFAULT_ERROR_BODY_TIMEOUT;
    this.finish(this.errorAnswer(` (its body did not arrive within ${timeout} ms)`));
  };

  private readonly onIdle = (): void => {
    if (this.finished || !this.waiter) return; // the consumer is busy: its time does not count
    this.finish(new ClientError('ClientTimeout', `${this.what}: no data on the watch stream for ${this.options.idleTimeoutMs} ms`));
  };

  // --- helpers ---

  /** The error a non-2xx answer stands for, from its body so far, with its Retry-After. */
  private errorAnswer(note: string): ClientError {
    const body = Buffer.concat(this.errorBody).toString('utf8');
    const err = ClientError.fromResponse(this.method, this.path, this.errorCode!, body, retryAfterSeconds(this.res.headers));
    if (note) err.message += note;
    return err;
  }

  /** Carry part of an unfinished line; false (and the stream given up) when the line passes `maxLineBytes`. */
  private keep(piece: Buffer): boolean {
    this.carryBytes += piece.length;
    if (this.carryBytes > this.maxLine) {
      this.tooLong(this.carryBytes);
      return false;
    }
    this.carry.push(piece);
    return true;
  }

  private tooLong(bytes: number): void {
    this.finish(
      new ClientError('ResponseTooLarge', `${this.what}: a watch line passed maxLineBytes (${this.maxLine}): ${bytes} bytes without a newline`, { code: this.res.statusCode ?? 0 }),
    );
  }

  private take(): WatchEvent<T> {
    const value = this.queue[this.head]!;
    this.queue[this.head++] = undefined; // let it be collected
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    }
    if (this.paused && this.queue.length - this.head < HIGH_WATER_EVENTS / 2) {
      this.paused = false;
      this.res.resume();
    }
    return value;
  }

  private dropQueue(): void {
    this.queue = [];
    this.head = 0;
  }

  /** Parse and queue one line; false when it is malformed and the stream has been given up. */
  private line(line: string): boolean {
    if (line.length === 0) return true;
    if (line.charCodeAt(0) <= 32 && line.trim().length === 0) return true; // a blank line
    let event: WatchEvent<T>;
    try {
      event = parseWatchLine<T>(line);
    } catch (err) {
      this.finish(err as ClientError);
      return false;
    }
    this.queue.push(event);
    return true;
  }

  private abort(signal: AbortSignal): void {
    if (this.finished) return;
    this.dropQueue(); // the caller wants out now, not after the backlog
    this.finish(new ClientError('Aborted', `${this.what}: watch aborted`, { cause: signal.reason }));
  }

  /** No more events: record why (undefined for a normal end), release the response, wake the consumer. */
  private finish(failure: ClientError | undefined): void {
    if (this.finished) return;
    this.finished = true;
    this.failure = failure;
    this.carry.length = 0;
    this.carryBytes = 0;
    this.stop();
    this.settle();
  }

  /** Detach from the response and the signal; destroy the response unless its body was read to the end. */
  private stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.errorTimer) clearTimeout(this.errorTimer);
    if (this.onAbort) this.options.signal?.removeEventListener('abort', this.onAbort);
    this.res.off('data', this.onData);
    this.res.off('end', this.onEnd);
    this.res.off('close', this.onClose);
    this.res.off('error', this.onError);
    // a late socket error must never become an uncaught exception
    this.res.on('error', ignore);
    if (!this.res.destroyed && !this.res.complete) this.res.destroy();
  }

  /** Hand the waiting consumer its next result, if there is one now. */
  private settle(): void {
    const waiter = this.waiter;
    if (!waiter || (this.head >= this.queue.length && !this.finished)) return;
    this.waiter = undefined;
    this.next().then(waiter.resolve, waiter.reject);
  }
}

const NEWLINE = 0x0a;

/** Options of {@link readErrorBody}. */
interface ReadErrorBodyOptions {
  /** Deadline for the whole body, ms. */
  readonly timeoutMs: number;
  /** Bytes kept; the rest is not read. Default: 1 MiB. */
  readonly maxBytes?: number;
  /** Stops reading (with what arrived) when it aborts. Default: none. */
  readonly signal?: AbortSignal;
}

/**
 * Read the body of an error answer (a Status) within a deadline and a size
 * limit. Never rejects: on a deadline, a reset or the limit it resolves with
 * what arrived, and the response is destroyed. The status code carries the
 * meaning; the body only adds detail.
 */
export function readErrorBody(res: IncomingMessage, options: ReadErrorBodyOptions): Promise<string> {
  const max = options.maxBytes ?? MAX_ERROR_BODY;
  return new Promise((resolve) => {
    if (res.destroyed || res.readableEnded) {
      resolve('');
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (destroy: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      res.off('data', onData);
      res.off('end', onEnd);
      res.off('error', onEnd);
      res.off('close', onEnd);
      options.signal?.removeEventListener('abort', onAbort);
      res.on('error', ignore);
      if (destroy && !res.destroyed) res.destroy();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const onData = (chunk: Buffer | string): void => {
      const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      if (size + b.length > max) {
        chunks.push(b.subarray(0, max - size));
        size = max;
        finish(true);
        return;
      }
      chunks.push(b);
      size += b.length;
    };
    const onEnd = (): void => finish(false);
    const onAbort = (): void => finish(true);
    if (options.signal?.aborted) {
      // Settle at once: the caller gave up before the body was read.
      queueMicrotask(onAbort);
    }
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => finish(true), options.timeoutMs);
    timer.unref();
    res.on('data', onData);
    res.on('end', onEnd);
    res.on('error', onEnd);
    res.on('close', onEnd);
  });
}

function ignore(): void {
  /* swallow */
}
