/**
 * A recording, fault-injecting HTTP proxy in front of an API server, for
 * tests: clients talk plain HTTP to loopback, the proxy forwards over TLS with
 * the target KubeConfig's credentials. It records every request (so tests can
 * count them exactly) and can refuse connections, reset them, black-hole them
 * or delay them, which is how kubeloop's fault tests provoke real network
 * failures against a real API server.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import type { AgentOptions } from 'node:https';
import type { Socket } from 'node:net';
import { Writable } from 'node:stream';
import { KubeConfig } from '@kubernetes/client-node';
import { EnvtestError } from './errors.js';

/** One request seen by the proxy. */
export interface RecordedRequest {
  readonly method: string;
  /** Path and query, as sent (`/apis/apps/v1?timeout=32s`). */
  readonly url: string;
  /** Path without the query. */
  readonly path: string;
  readonly accept: string | undefined;
  /** Upstream status, once known; 0 if the proxy failed or dropped it. */
  status: number;
  readonly at: number;
}

/** Options for {@link startApiProxy}. */
export interface ApiProxyOptions {
  /** Port to listen on. Default: a free one. */
  readonly port?: number;
}

/** A running proxy. */
export interface ApiProxy extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** A KubeConfig that points at the proxy (no credentials needed). */
  readonly kubeConfig: KubeConfig;
  /** Every request so far, oldest first. */
  readonly requests: readonly RecordedRequest[];
  /** Requests matching `filter` (all by default). */
  count(filter?: (r: RecordedRequest) => boolean): number;
  /** Forget recorded requests. */
  clearRequests(): void;
  /** Stop listening: new connections are refused; open ones are reset. */
  refuse(): Promise<void>;
  /** Listen again on the same port. */
  accept(): Promise<void>;
  /** Reset (destroy) every open client connection, including watch streams. */
  resetConnections(): void;
  /** Accept connections but never answer or forward, and stall streams in flight (a silently dead network). */
  blackhole(on: boolean): void;
  /** Hold each new request this long before forwarding it; one whose client resets the connection meanwhile is dropped (status 0). */
  delay(ms: number): void;
  /**
   * Stall every watch stream, open and opened from now on, while `on`: its
   * headers pass, its events wait (a watch that fell silent), while every
   * other request is answered: an informer stuck behind the API server.
   * Events held pass on, in order, when turned off.
   */
  stallWatches(on: boolean): void;
  /**
   * Hold every event of the watches opened from now on this long before
   * passing it on, in order (lists and other answers are not held): an
   * informer that lags behind the API server, as under load. 0: off.
   */
  delayWatchEvents(ms: number): void;
  /** Stop the proxy. */
  close(): Promise<void>;
}

/**
 * Start a proxy in front of the cluster `target` points at.
 *
 * @example
 * ```ts
 * const proxy = await startApiProxy(env.kubeConfig);
 * const core = proxy.kubeConfig.makeApiClient(CoreV1Api);
 * await core.listNamespace();
 * expect(proxy.count((r) => r.path === '/api/v1/namespaces')).toBe(1);
 * ```
 */
export async function startApiProxy(target: KubeConfig, options: ApiProxyOptions = {}): Promise<ApiProxy> {
  const cluster = target.getCurrentCluster();
  if (!cluster) throw new EnvtestError('InvalidOptions', 'startApiProxy: the target kubeconfig has no current cluster');
  const upstream = new URL(cluster.server);
  const tls: AgentOptions = { keepAlive: true };
  await target.applyToHTTPSOptions(tls);
  const agent = new Agent(tls);
  const authHeader = (tls as { headers?: Record<string, string> }).headers?.['Authorization'];

  const recorded: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  /** Responses being forwarded (watch streams): a black hole stops them too. */
  const flows = new Set<{ up: IncomingMessage; down: Writable; watch: boolean }>();
  let blackholed = false;
  let watchesStalled = false;
  let delayMs = 0;
  let watchDelayMs = 0;

  const forward = (req: IncomingMessage, res: ServerResponse, record: RecordedRequest): void => {
    const fn = upstream.protocol === 'https:' ? httpsRequest : httpRequest;
    const headers = { ...req.headers, host: upstream.host };
    if (authHeader) headers['authorization'] = authHeader;
    const up = fn(
      { protocol: upstream.protocol, hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent: upstream.protocol === 'https:' ? agent : undefined },
      (upRes) => {
        record.status = upRes.statusCode ?? 0;
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        // A watch's headers come before any event: pass them on at once.
        res.flushHeaders();
        const isWatch = /[?&]watch=(true|1)(&|$)/.test(req.url ?? '');
        const flow = { up: upRes, down: isWatch && watchDelayMs > 0 ? delayed(res, watchDelayMs) : (res as Writable), watch: isWatch };
        flows.add(flow);
        upRes.on('close', () => flows.delete(flow));
        if (blackholed || (isWatch && watchesStalled)) upRes.pause();
        else upRes.pipe(flow.down);
        upRes.on('error', () => res.destroy());
      },
    );
    up.on('error', () => {
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end('kubeloop test proxy: upstream failed');
      } else {
        res.destroy();
      }
    });
    res.on('close', () => up.destroy());
    req.pipe(up);
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '/';
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      url,
      path: url.split('?')[0] ?? url,
      accept: req.headers.accept,
      status: 0,
      at: Date.now(),
    };
    recorded.push(record);
    if (blackholed) return; // never answer
    if (delayMs > 0) {
      // A request its client gave up on while held (the connection reset) is dropped, never forwarded: what
      // a slow link had not yet delivered when the connection was reset never reaches the server.
      setTimeout(() => {
        if (req.destroyed || res.destroyed || req.socket.destroyed) return;
        forward(req, res, record);
      }, delayMs);
    } else {
      forward(req, res, record);
    }
  };

  let server: Server = createServer(handler);
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  };
  server.on('connection', track);
  const listen = (s: Server, port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => resolve((s.address() as { port: number }).port));
    });
  const port = await listen(server, options.port ?? 0);
  const url = `http://127.0.0.1:${port}`;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    // Plain HTTP on loopback; client-node insists on skipTLSVerify for http:// servers.
    clusters: [{ name: 'proxy', server: url, skipTLSVerify: true }],
    users: [{ name: 'proxy' }],
    contexts: [{ name: 'proxy', cluster: 'proxy', user: 'proxy', namespace: 'default' }],
    currentContext: 'proxy',
  });

  const resetConnections = (): void => {
    for (const s of sockets) s.resetAndDestroy();
    sockets.clear();
  };
  let listening = true;
  const stopListening = async (): Promise<void> => {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    resetConnections();
    await closed;
  };

  const proxy: ApiProxy = {
    url,
    kubeConfig: kc,
    requests: recorded,
    count: (filter) => (filter ? recorded.filter(filter).length : recorded.length),
    clearRequests: () => {
      recorded.length = 0;
    },
    refuse: stopListening,
    accept: async () => {
      if (listening) return;
      server = createServer(handler);
      server.on('connection', track);
      await listen(server, port);
      listening = true;
    },
    resetConnections,
    blackhole: (on) => {
      blackholed = on;
      for (const { up, down, watch } of flows) {
        if (on) {
          up.unpipe(down);
          up.pause();
        } else if (!(watch && watchesStalled)) {
          up.pipe(down);
        }
      }
    },
    stallWatches: (on) => {
      watchesStalled = on;
      for (const { up, down, watch } of flows) {
        if (!watch) continue;
        if (on) {
          up.unpipe(down);
          up.pause();
        } else if (!blackholed) {
          up.pipe(down);
        }
      }
    },
    delay: (ms) => {
      delayMs = ms;
    },
    delayWatchEvents: (ms) => {
      watchDelayMs = ms;
    },
    close: async () => {
      await stopListening();
      agent.destroy();
    },
    [Symbol.asyncDispose]: () => proxy.close(),
  };
  return proxy;
}

/** A stream that writes each chunk to `res` `ms` after it arrives, in order, and ends `res` as late. */
function delayed(res: ServerResponse, ms: number): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      setTimeout(() => {
        if (!res.destroyed) res.write(chunk);
      }, ms).unref();
      done();
    },
    final(done) {
      setTimeout(() => {
        res.end();
        done();
      }, ms).unref();
    },
  });
}
