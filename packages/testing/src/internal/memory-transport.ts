/**
 * The client's `Transport` served in memory by the fake's core: no sockets,
 * the same bytes a real server would send (JSON bodies, JSON-lines watch
 * streams), so the client parses exactly what it parses over HTTP. Like the
 * HTTP transport it reports each request to `onRequest`, keeps `timeoutMs`
 * deadlines, retries answers with Retry-After (429, 5xx) up to `maxRetries`
 * and refuses bodies over `maxResponseBytes`; it does no rate limiting.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { ClientError } from '@kubeloop/client';
import type { Query, TransportRequest, TransportResponse } from '@kubeloop/client/internal';
import type { RestConfig, Transport, TransportOptions } from '@kubeloop/client';
import type { CoreRequest, CoreResponse, FakeApi } from './api.js';
import { NetworkFault } from './status.js';

function toSearchParams(query: Query | undefined): URLSearchParams {
  const params = new URLSearchParams();
  if (query) for (const [k, v] of Object.entries(query)) if (v !== undefined) params.append(k, String(v));
  return params;
}

/** A streaming answer shaped like the IncomingMessage the HTTP transport hands out. */
class FakeResponse extends Readable {
  statusCode: number;
  statusMessage = '';
  readonly headers: IncomingHttpHeaders;
  complete = false;
  readonly req: { method: string; path: string };

  constructor(
    status: number,
    headers: Record<string, string>,
    req: { method: string; path: string },
    private readonly onGone: () => void,
  ) {
    super();
    this.statusCode = status;
    this.headers = headers;
    this.req = req;
    this.once('end', () => {
      this.complete = true;
    });
  }

  override _read(): void {
    /* data is pushed as the fake produces it */
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.onGone();
    callback(err);
  }
}

function pathWithQuery(req: TransportRequest): string {
  const q = toSearchParams(req.query).toString();
  return q ? `${req.path}?${q}` : req.path;
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(typeof value === 'number' && value >= 0 && !Number.isNaN(value))) throw new ClientError('InvalidRequest', `transport option ${name} must be a number >= 0, got ${String(value)}`);
  return value;
}

/** The options in force, with the HTTP transport's defaults. */
function resolve(options: TransportOptions): Transport['options'] {
  const qps = nonNegative('qps', options.qps, 0);
  return {
    qps,
    burst: Math.max(1, nonNegative('burst', options.burst, Math.ceil(qps * 1.5))),
    timeoutMs: nonNegative('timeoutMs', options.timeoutMs, 30_000),
    maxRetries: nonNegative('maxRetries', options.maxRetries, 10),
    maxResponseBytes: nonNegative('maxResponseBytes', options.maxResponseBytes, 128 * 1024 * 1024),
    maxSockets: Math.max(1, nonNegative('maxSockets', options.maxSockets, 64)),
    userAgent: options.userAgent ?? 'kubeloop/0.1.0 (fake)',
    ...(options.onRequest ? { onRequest: options.onRequest } : {}),
  };
}

function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolveDelay, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolveDelay();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface MemoryTransportContext {
  readonly isClosed: () => boolean;
}

export const FAKE_SERVER = 'http://fake-api-server.invalid';

/** A Transport over the fake's core. */
export function memoryTransport(api: FakeApi, context: MemoryTransportContext, given: TransportOptions = {}): Transport {
  const options = resolve(given);
  const open = new Set<FakeResponse>();
  const config: RestConfig = { server: FAKE_SERVER, source: 'the kubeloop fake API server', namespace: 'default' };
  const server = new URL(FAKE_SERVER);

  /** One attempt: the core's answer, within the deadline, reported to onRequest. */
  const once = async (req: TransportRequest, timeoutMs: number): Promise<CoreResponse> => {
    const what = `${req.method} ${req.path}`;
    if (req.signal?.aborted) throw new ClientError('Aborted', `${what}: aborted`, { cause: req.signal.reason });
    if (context.isClosed()) throw new ClientError('Network', `${what}: the fake API server is closed`);
    const started = performance.now();
    const report = (code: number | '<error>'): void => options.onRequest?.({ method: req.method, host: server.host, path: req.path, code, durationMs: performance.now() - started });
    const core: CoreRequest = {
      method: req.method,
      path: req.path,
      query: toSearchParams(req.query),
      accept: req.accept ?? 'application/json',
      contentType: req.body === undefined ? undefined : (req.contentType ?? 'application/json'),
      userAgent: options.userAgent,
      body: req.body,
    };
    const answer = (async (): Promise<CoreResponse> => {
      // Answer on a later turn of the event loop, as a server would.
      await new Promise<void>((r) => setImmediate(r));
      return api.handle(core);
    })();
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const limits = new Promise<never>((_, reject) => {
      if (timeoutMs > 0) timer = setTimeout(() => reject(new ClientError('ClientTimeout', `${what}: no answer within ${timeoutMs} ms`)), timeoutMs);
      if (req.signal) {
        onAbort = (): void => reject(new ClientError('Aborted', `${what}: aborted`, { cause: req.signal!.reason }));
        req.signal.addEventListener('abort', onAbort, { once: true });
      }
    });
    try {
      const res = await Promise.race([answer, limits]);
      report(res.status);
      return res;
    } catch (err) {
      report('<error>');
      // a watch answered after the caller gave up must not stay open
      void answer.then((late) => (late.kind === 'watch' ? late.close() : undefined)).catch(() => undefined);
      if (err instanceof NetworkFault) throw new ClientError('Network', `${what}: ${err.message}`, { cause: err });
      throw err;
    } finally {
      if (timer) clearTimeout(timer);
      if (onAbort) req.signal?.removeEventListener('abort', onAbort);
    }
  };

  const transport: Transport = {
    server,
    config,
    options,
    async request(req: TransportRequest): Promise<TransportResponse> {
      for (let attempt = 0; ; attempt++) {
        const res = await once(req, req.timeoutMs ?? options.timeoutMs);
        let body: string;
        if (res.kind === 'buffered') body = res.body;
        else {
          // a watch asked for without streaming: what is there now, then the end
          const lines: string[] = [];
          res.start(
            (line) => lines.push(line),
            () => undefined,
          );
          res.close();
          body = lines.map((l) => `${l}\n`).join('');
        }
        if (Buffer.byteLength(body) > options.maxResponseBytes) {
          throw new ClientError('ResponseTooLarge', `${req.method} ${req.path}: the answer is larger than maxResponseBytes (${options.maxResponseBytes})`);
        }
        const retryAfter = Number.parseInt(res.headers['retry-after'] ?? '', 10);
        if (Number.isFinite(retryAfter) && retryAfter >= 0 && (res.status === 429 || res.status >= 500) && attempt < options.maxRetries) {
          await delay(Math.min(retryAfter, 60) * 1000, req.signal).catch((cause: unknown) => {
            throw new ClientError('Aborted', `${req.method} ${req.path}: aborted while waiting to retry`, { cause });
          });
          continue;
        }
        return { status: res.status, headers: res.headers, body };
      }
    },
    async stream(req: TransportRequest): Promise<IncomingMessage> {
      const res = await once(req, req.timeoutMs ?? 0);
      const info = { method: req.method, path: pathWithQuery(req) };
      if (res.kind === 'buffered') {
        const r = new FakeResponse(res.status, res.headers, info, () => undefined);
        r.push(res.body);
        r.push(null);
        return r as unknown as IncomingMessage;
      }
      let ended = false;
      const r = new FakeResponse(200, res.headers, info, () => {
        open.delete(r);
        res.close();
      });
      open.add(r);
      const onAbort = (): void => {
        r.destroy();
      };
      req.signal?.addEventListener('abort', onAbort, { once: true });
      res.start(
        (line) => {
          if (!ended) r.push(`${line}\n`);
        },
        () => {
          if (ended) return;
          ended = true;
          req.signal?.removeEventListener('abort', onAbort);
          open.delete(r);
          r.push(null);
        },
      );
      return r as unknown as IncomingMessage;
    },
    fork(more: TransportOptions = {}): Transport {
      return memoryTransport(api, context, { ...given, ...more });
    },
    close(): void {
      for (const r of [...open]) r.destroy();
    },
  };
  return transport;
}
