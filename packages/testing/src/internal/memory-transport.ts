/**
 * The client's `Transport` served in memory by the fake's core: no sockets,
 * the same bytes a real server would send (JSON bodies, JSON-lines watch
 * streams), so the client parses exactly what it parses over HTTP.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { ClientError } from '@kubeloop/client';
import type { Query, Transport, TransportRequest, TransportResponse } from '@kubeloop/client';
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

  constructor(status: number, headers: Record<string, string>, req: { method: string; path: string }, private readonly onGone: () => void) {
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

export interface MemoryTransportOptions {
  readonly userAgent: string;
  readonly isClosed: () => boolean;
}

/** A Transport over the fake's core. */
export function memoryTransport(api: FakeApi, options: MemoryTransportOptions): Transport {
  const open = new Set<FakeResponse>();
  const call = async (req: TransportRequest): Promise<CoreResponse> => {
    if (req.signal?.aborted) throw new ClientError('Aborted', `${req.method} ${req.path}: aborted`, { cause: req.signal.reason });
    if (options.isClosed()) throw new ClientError('Network', `${req.method} ${req.path}: the fake API server is closed`);
    // Answer on a later turn of the event loop, as a server would.
    await new Promise<void>((resolve) => setImmediate(resolve));
    const core: CoreRequest = {
      method: req.method,
      path: req.path,
      query: toSearchParams(req.query),
      accept: req.accept ?? 'application/json',
      contentType: req.body === undefined ? undefined : (req.contentType ?? 'application/json'),
      userAgent: options.userAgent,
      body: req.body,
    };
    let res: CoreResponse;
    try {
      res = await api.handle(core);
    } catch (err) {
      if (err instanceof NetworkFault) throw new ClientError('Network', `${req.method} ${req.path}: ${err.message}`, { cause: err });
      throw err;
    }
    if (req.signal?.aborted) {
      if (res.kind === 'watch') res.close();
      throw new ClientError('Aborted', `${req.method} ${req.path}: aborted`, { cause: req.signal.reason });
    }
    return res;
  };
  return {
    server: new URL('http://fake-api-server.invalid/'),
    async request(req: TransportRequest): Promise<TransportResponse> {
      const res = await call(req);
      if (res.kind === 'buffered') return { status: res.status, headers: res.headers, body: res.body };
      // a watch asked for without streaming: collect what is there now and end
      const lines: string[] = [];
      res.start(
        (line) => lines.push(line),
        () => undefined,
      );
      res.close();
      return { status: 200, headers: res.headers, body: lines.map((l) => `${l}\n`).join('') };
    },
    async stream(req: TransportRequest): Promise<IncomingMessage> {
      const res = await call(req);
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
    close(): void {
      for (const r of [...open]) r.destroy();
    },
  };
}
