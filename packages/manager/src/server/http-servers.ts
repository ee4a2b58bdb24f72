/**
 * The health probe server (/healthz, /readyz) and the metrics server
 * (/metrics): nothing a client sends can throw out of a handler, and every
 * connection is bounded in time, header size and number. The number is
 * shared fairly: at the cap, a newcomer takes the place of the oldest
 * connection of the client (address) holding the most, so slow or flooding
 * clients cannot starve a kubelet's probes. The metrics server
 * can serve HTTPS (a certificate source that may rotate) and ask every caller
 * for a bearer token allowed to `get` the path (TokenReview and
 * SubjectAccessReview), as controller-runtime's secure metrics do.
 */
import type { InspectAnswer, InspectRequest } from './inspect.js';
import type { Profiler } from './profiles.js';
import { OPENMETRICS_CONTENT_TYPE, openMetricsText, prefersOpenMetrics } from '../metrics/openmetrics.js';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Registry } from 'prom-client';
import { checkServingCertificate } from '@kubeloop/webhook';
import type { CertificateSource, ServingCertificate } from '@kubeloop/webhook';
import { describeError, ManagerError } from '../errors.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { isIPv4, isIPv6 } = process.getBuiltinModule('node:net');

// Not `import { createServer } from 'node:http'`: an ES import of node:http builds its namespace
// from every export, and its lazy WebSocket getters load undici, about 8 MiB of RSS (see
// @kubeloop/client's transport).
const { createServer } = process.getBuiltinModule('node:http');

type Server = HttpServer | HttpsServer;

/** A named check: resolve to pass (a string says more: `[+]leader-election ok: warm standby`), throw (or reject) to fail with a reason. */
export type HealthCheck = () => void | string | Promise<void | string>;

/** Limits of one server; every field has a default ({@link DEFAULT_SERVER_LIMITS}). */
export interface ServerLimits {
  /** Time a client has to send the request line and headers, counted from the connection or the previous request. Default: 5 000 ms. */
  readonly headersTimeoutMs: number;
  /** Time a client has to send a whole request, body included. Default: 10 000 ms. */
  readonly requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open after an answer. Default: 5 000 ms. */
  readonly keepAliveTimeoutMs: number;
  /** A socket with no traffic either way for this long is destroyed. Default: 30 000 ms. */
  readonly idleTimeoutMs: number;
  /** Largest request line plus headers, in bytes; more is answered 431. Default: 8 192. */
  readonly maxHeaderSize: number;
  /**
   * Connections open at once. At the cap a new connection is not refused:
   * the oldest connection of the client address holding the most is closed
   * to make room (one with no request in progress first; any of its
   * connections when that client holds them all), so a flood or a slowloris
   * from one address costs that address, never a probe from another. Only
   * when the newcomer's own address holds the most and every one of its
   * connections is busy is the newcomer closed. Default: 128.
   */
  readonly maxConnections: number;
  /** Longest a health check or a metrics collection may take before it is answered as failed (500). Default: 10 000 ms. */
  readonly handlerTimeoutMs: number;
}

/** The limits the manager's servers run with. */
export const DEFAULT_SERVER_LIMITS: ServerLimits = Object.freeze({
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 30_000,
  maxHeaderSize: 8_192,
  maxConnections: 128,
  handlerTimeoutMs: 10_000,
});

/** Options of {@link startHealthServer} and {@link startMetricsServer}. */
export interface ServerOptions {
  /** Override some limits. Default: {@link DEFAULT_SERVER_LIMITS}. */
  readonly limits?: Partial<ServerLimits>;
  /** Errors of the listening socket after start (an `accept` failing with EMFILE, say), and rotated certificates that cannot serve. Default: `process.emitWarning`. */
  readonly onError?: (err: Error) => void;
  /**
   * Serve HTTPS with certificates from this source (`watchCertificateFiles`,
   * `managedCertificates` or `staticCertificate` of `@kubeloop/webhook`); a
   * replacement is used for new connections, one that cannot serve is
   * reported to `onError` and the current one kept. Default: plain HTTP.
   */
  readonly tls?: { readonly certificates: CertificateSource; readonly minVersion?: 'TLSv1.2' | 'TLSv1.3' };
  /**
   * Decide whether a request may be served before it is routed (a
   * `TokenAuthorizer` of `@kubeloop/webhook` fits): anything but 200 is the
   * answer, with the reason as its body. Default: every request is served.
   */
  readonly authorize?: (request: { readonly authorization?: string | undefined; readonly path: string; readonly verb: string }) => Promise<{ readonly status: number; readonly reason: string }>;
  /**
   * Metrics server only: the handler of `/inspect` and the paths below it
   * (`GET`, `HEAD` and `POST`), after `authorize`; its answer is JSON. It is
   * told whether the request was authorized. Default: none (404).
   */
  readonly inspect?: (request: InspectRequest) => Promise<InspectAnswer>;
  /** Serve the profile endpoints (`/debug/profile/...`) on the metrics server, after `authorize`. Default: none (404). */
  readonly profiler?: Profiler;
  /**
   * Metrics server only: answer a scraper whose `Accept` prefers OpenMetrics
   * (Prometheus does) in OpenMetrics 1.0.0, exemplars included; others get
   * the registry's own format. The manager sets it while tracing is on.
   * Default: false (always the registry's format).
   */
  readonly openMetrics?: boolean;
}

/** A running server. */
export interface RunningServer {
  /** `http://host:port` (`https://` with `tls`) it listens on (IPv6 hosts in brackets). */
  readonly url: string;
  /** Stop listening and close every connection. */
  readonly close: () => Promise<void>;
}

const BIND_FORMS = 'want host:port (127.0.0.1:8081, localhost:8081), :port for every interface (:8081), or [ipv6]:port ([::1]:8081, [::]:8081), with a port from 0 to 65535 (0 picks a free one)';
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?)*$/i;

/**
 * Parse a bind address: `host:port`, `:port` (every interface, IPv4 and IPv6;
 * `host` is then undefined), `[ipv6]:port`.
 *
 * @throws ManagerError `InvalidOptions` naming the accepted forms.
 * @example
 * ```ts
 * parseBindAddress('[::1]:8081'); // { host: '::1', port: 8081 }
 * ```
 */
export function parseBindAddress(address: string): { host: string | undefined; port: number } {
  const bad = (): ManagerError => new ManagerError('InvalidOptions', `bind address ${JSON.stringify(address)} is not valid: ${BIND_FORMS}`);
  const i = address.lastIndexOf(':');
  if (i < 0) throw bad();
  const portText = address.slice(i + 1);
  if (!/^\d{1,5}$/.test(portText)) throw bad();
  const port = Number(portText);
  if (port > 65535) throw bad();
  const hostText = address.slice(0, i);
  if (hostText === '') return { host: undefined, port };
  if (hostText.startsWith('[') && hostText.endsWith(']')) {
    const v6 = hostText.slice(1, -1);
    if (isIPv6(v6)) return { host: v6, port };
    throw bad();
  }
  if (isIPv4(hostText) || (HOSTNAME.test(hostText) && !/^[\d.]+$/.test(hostText))) return { host: hostText, port };
  throw bad();
}

function limitsOf(options: ServerOptions): ServerLimits {
  const limits = { ...DEFAULT_SERVER_LIMITS, ...options.limits };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isFinite(value) || value <= 0) throw new ManagerError('InvalidOptions', `server limit ${name} must be a positive number, got ${String(value)}`);
  }
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) throw new ManagerError('InvalidOptions', 'server limit headersTimeoutMs must not exceed requestTimeoutMs');
  return limits;
}

/**
 * An HTTP server (HTTPS with `tls`) whose handler can never throw and whose
 * connections are bounded.
 */
function boundedServer(limits: ServerLimits, handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>, tls?: { certificate: ServingCertificate; minVersion: 'TLSv1.2' | 'TLSv1.3' }): Server {
  const options = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    maxHeaderSize: limits.maxHeaderSize,
    // How often expired headers/request timeouts are enforced (Node's default is 30 s).
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4))),
  };
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    // handle() is async, so whatever it throws arrives here as a rejection.
    handle(req, res).catch((err: unknown) => answer(res, 500, `internal error: ${describe(err)}\n`));
  };
  let server: Server;
  if (tls) {
    const https = createHttpsServer({ ...options, cert: tls.certificate.certPem, key: tls.certificate.keyPem, minVersion: tls.minVersion, handshakeTimeout: limits.headersTimeoutMs }, listener);
    // A failed handshake (plain HTTP, an unknown CA on a client that checks, a stalled hello) only closes that socket.
    https.on('tlsClientError', (_err, socket) => socket.destroy());
    server = https;
  } else {
    server = createServer(options, listener);
  }
  const guard = new ConnectionGuard(limits.maxConnections);
  server.on('connection', (socket: Socket) => guard.admit(socket));
  server.on('request', (req: IncomingMessage, res: ServerResponse) => guard.busy(req.socket, res));
  server.setTimeout(limits.idleTimeoutMs);
  // Malformed requests (bad request targets, invalid methods, headers over
  // maxHeaderSize, timeouts) never reach the handler: Node answers them 400,
  // 431 or 408 and closes the socket, which is what we want.
  return server;
}

interface Tracked {
  readonly socket: Socket;
  readonly client: string;
  /** Requests in progress on it. */
  busy: number;
}

/**
 * Shares `cap` connections fairly among client addresses: at the cap a
 * newcomer evicts the oldest connection of the address that holds the most.
 * Connections are keyed by remote address and port, which a TLS socket
 * shares with the TCP socket under it, so requests over HTTPS mark the right
 * entry busy.
 */
class ConnectionGuard {
  /** In arrival order (a Map iterates in insertion order): the first of a client's is its oldest. */
  private readonly open = new Map<string, Tracked>();
  private readonly perClient = new Map<string, number>();

  constructor(private readonly cap: number) {}

  admit(socket: Socket): void {
    const client = socket.remoteAddress ?? '';
    const key = `${client}|${socket.remotePort ?? ''}`;
    if (this.open.size >= this.cap) {
      const victim = this.victim(client);
      if (victim === undefined) {
        socket.destroy();
        return;
      }
      const evicted = this.open.get(victim);
      this.forget(victim);
      evicted?.socket.destroy();
    }
    this.open.set(key, { socket, client, busy: 0 });
    this.perClient.set(client, (this.perClient.get(client) ?? 0) + 1);
    // Only this socket's own entry: a later connection may reuse the address and port.
    socket.once('close', () => {
      if (this.open.get(key)?.socket === socket) this.forget(key);
    });
  }

  busy(socket: Socket, res: ServerResponse): void {
    const entry = this.open.get(`${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`);
    if (!entry) return;
    entry.busy++;
    res.once('close', () => entry.busy--);
  }

  /** The connection to close for a newcomer from `client`, or undefined to close the newcomer. */
  private victim(client: string): string | undefined {
    let heaviest = client;
    let most = (this.perClient.get(client) ?? 0) + 1;
    for (const [c, n] of this.perClient) {
      if (n > most) {
        heaviest = c;
        most = n;
      }
    }
    let oldestOfHeaviest: string | undefined;
    for (const [key, entry] of this.open) {
      if (entry.client !== heaviest) continue;
      if (entry.busy === 0) return key;
      oldestOfHeaviest ??= key;
    }
    // Every connection of the heaviest client is busy: another client's flood still gives way; our own does not.
    return heaviest === client ? undefined : oldestOfHeaviest;
  }

  private forget(key: string): void {
    const entry = this.open.get(key);
    if (!entry) return;
    this.open.delete(key);
    const n = (this.perClient.get(entry.client) ?? 1) - 1;
    if (n <= 0) this.perClient.delete(entry.client);
    else this.perClient.set(entry.client, n);
  }
}

function describe(err: unknown): string {
  try {
    return describeError(err);
  } catch {
    return 'unknown error';
  }
}

/** Answer once; if that is no longer possible, drop the connection. Never throws. */
function answer(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8', extra: Readonly<Record<string, string>> = {}): void {
  try {
    if (res.headersSent || res.destroyed) {
      res.destroy();
      return;
    }
    res.writeHead(status, { 'content-type': contentType, 'x-content-type-options': 'nosniff', 'cache-control': 'no-store', ...extra }).end(body);
  } catch {
    res.destroy();
  }
}

/** The path segments and query of a request target; undefined when it is not one this server can read. */
function parseTarget(target: string | undefined): { segments: string[]; query: URLSearchParams } | undefined {
  if (target === undefined || target.length === 0) return undefined;
  let pathAndQuery: string;
  if (target.startsWith('/')) {
    pathAndQuery = target;
  } else {
    // absolute-form (`GET http://host/healthz`); URL.parse returns null rather than throwing
    const url = URL.parse(target);
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return undefined;
    pathAndQuery = `${url.pathname}${url.search}`;
  }
  const q = pathAndQuery.indexOf('?');
  const rawPath = q < 0 ? pathAndQuery : pathAndQuery.slice(0, q);
  const segments: string[] = [];
  for (const raw of rawPath.split('/')) {
    if (raw === '') continue;
    try {
      segments.push(decodeURIComponent(raw));
    } catch {
      return undefined;
    }
  }
  // URLSearchParams never throws: malformed escapes are kept as they are.
  return { segments, query: new URLSearchParams(q < 0 ? '' : pathAndQuery.slice(q + 1)) };
}

/** Resolve with `work`, or reject after `ms`; the timer never keeps the process alive. */
function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

function readOnly(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method === 'GET' || req.method === 'HEAD') return true;
  answer(res, 405, 'method not allowed\n', undefined, { allow: 'GET, HEAD' });
  return false;
}

async function listen(server: Server, address: string, options: ServerOptions, lifetime?: AbortController): Promise<RunningServer> {
  const { host, port } = parseBindAddress(address);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const ready = (): void => {
      server.off('error', reject);
      resolve();
    };
    if (host === undefined) server.listen(port, ready);
    else server.listen(port, host, ready);
  });
  // Without a listener, an error of the listening socket (accept() failing
  // with EMFILE, say) would be thrown as an uncaught exception.
  server.on('error', reporter(options));
  const a = server.address();
  const scheme = options.tls ? 'https' : 'http';
  const url = a !== null && typeof a === 'object' ? `${scheme}://${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}` : `${scheme}://${address}`;
  return {
    url,
    close: () => {
      lifetime?.abort();
      return closeServer(server);
    },
  };
}

function reporter(options: ServerOptions): (err: Error) => void {
  const onError = options.onError ?? ((err: Error) => process.emitWarning(err));
  return (err) => {
    try {
      onError(err);
    } catch {
      /* a reporter that throws must not take the process with it */
    }
  };
}

/**
 * The first certificate of `options.tls`, and the source kept running until
 * `lifetime` aborts: replacements go to `swap` once the server exists.
 */
async function firstCertificate(options: ServerOptions, lifetime: AbortController, swap: (next: ServingCertificate) => void): Promise<{ certificate: ServingCertificate; minVersion: 'TLSv1.2' | 'TLSv1.3' } | undefined> {
  if (!options.tls) return undefined;
  if (typeof options.tls.certificates?.start !== 'function') throw new ManagerError('InvalidOptions', 'tls.certificates must be a certificate source (watchCertificateFiles, managedCertificates or staticCertificate of @kubeloop/webhook)');
  let certificate: ServingCertificate;
  try {
    certificate = await options.tls.certificates.start(lifetime.signal, swap);
    checkServingCertificate(certificate, 'the metrics serving certificate');
  } catch (cause) {
    lifetime.abort();
    throw new ManagerError('InvalidOptions', `no serving certificate for the metrics server: ${describe(cause)}`, { cause });
  }
  return { certificate, minVersion: options.tls.minVersion ?? 'TLSv1.2' };
}

/** The verb a SubjectAccessReview of a non-resource URL names for an HTTP method (HEAD reads as get, as the API server's). */
function verbOf(method: string | undefined): string {
  return method === undefined || method === 'HEAD' ? 'get' : method.toLowerCase();
}

/**
 * Runs each check at most once at a time: a probe arriving while a check is
 * still running waits for that same run, so a check that hangs costs one
 * pending call, not one per request.
 */
class CheckRunner {
  private readonly running = new Map<HealthCheck, Promise<void | string>>();

  constructor(private readonly timeoutMs: number) {}

  run(check: HealthCheck): Promise<void | string> {
    let run = this.running.get(check);
    if (!run) {
      run = new Promise<void | string>((resolve) => resolve(check())).finally(() => this.running.delete(check));
      this.running.set(check, run);
    }
    return withDeadline(run, this.timeoutMs, 'check');
  }
}

async function runChecks(runner: CheckRunner, checks: ReadonlyMap<string, HealthCheck>, exclude: ReadonlySet<string>): Promise<{ ok: boolean; lines: string[] }> {
  const results = await Promise.all(
    [...checks].map(async ([name, check]): Promise<[boolean, string]> => {
      if (exclude.has(name)) return [true, `[+]${name} excluded: ok`];
      try {
        const detail = await runner.run(check);
        return [true, `[+]${name} ok${typeof detail === 'string' && detail !== '' ? `: ${detail}` : ''}`];
      } catch (err) {
        return [false, `[-]${name} failed: ${describe(err)}`];
      }
    }),
  );
  return { ok: results.every(([ok]) => ok), lines: results.map(([, line]) => line) };
}

/**
 * Start the probe server: `/healthz` and `/readyz` run every check of their
 * set (`/healthz/<name>` one check, `?exclude=<name>` skips one, `?verbose`
 * lists them), answering 200 or 500.
 *
 * @example
 * ```ts
 * const probes = await startHealthServer('127.0.0.1:8081', new Map([['ping', () => {}]]), new Map());
 * await probes.close();
 * ```
 */
export async function startHealthServer(address: string, healthz: ReadonlyMap<string, HealthCheck>, readyz: ReadonlyMap<string, HealthCheck>, options: ServerOptions = {}): Promise<RunningServer> {
  const limits = limitsOf(options);
  const runner = new CheckRunner(limits.handlerTimeoutMs);
  const server = boundedServer(limits, async (req, res) => {
    const target = parseTarget(req.url);
    if (!target) return answer(res, 400, 'bad request target\n');
    if (!readOnly(req, res)) return;
    const [endpoint, sub, ...rest] = target.segments;
    const set = endpoint === 'healthz' ? healthz : endpoint === 'readyz' ? readyz : undefined;
    if (!set || rest.length > 0) return answer(res, 404, 'not found\n');
    const checks = sub === undefined ? set : new Map([...set].filter(([n]) => n === sub));
    if (sub !== undefined && checks.size === 0) return answer(res, 404, `no check named ${JSON.stringify(sub.slice(0, 100))}\n`);
    const { ok, lines } = await runChecks(runner, checks, new Set(target.query.getAll('exclude')));
    const verbose = target.query.has('verbose') || !ok;
    const body = verbose ? `${lines.join('\n')}\n${endpoint} check ${ok ? 'passed' : 'failed'}\n` : 'ok';
    answer(res, ok ? 200 : 500, body);
  });
  return listen(server, address, options);
}

/**
 * Start the metrics server: `/metrics` in the registry's exposition format;
 * a collection that fails or outlives `handlerTimeoutMs` is answered 500.
 * With `tls` it serves HTTPS; with `authorize` every request is decided
 * before it is routed (401, 403 and 500 answers carry the reason).
 *
 * @throws ManagerError `InvalidOptions` when the address, a limit or the first certificate is unusable.
 * @example
 * ```ts
 * const metrics = await startMetricsServer('127.0.0.1:8443', new Registry(), {
 *   tls: { certificates: watchCertificateFiles({ certFile: '/certs/tls.crt', keyFile: '/certs/tls.key' }) },
 *   authorize: (request) => createTokenAuthorizer({ client }).authorize(request),
 * });
 * await metrics.close();
 * ```
 */
export async function startMetricsServer(address: string, registry: Registry, options: ServerOptions = {}): Promise<RunningServer> {
  const limits = limitsOf(options);
  parseBindAddress(address);
  const lifetime = new AbortController();
  const report = reporter(options);
  // The server, once made: rotations before that only change `current`.
  const made: { server?: Server } = {};
  let current: ServingCertificate | undefined;
  const swap = (next: ServingCertificate): void => {
    if (current && next.certPem === current.certPem && next.keyPem === current.keyPem) return;
    try {
      checkServingCertificate(next, 'the new metrics serving certificate');
      (made.server as HttpsServer | undefined)?.setSecureContext({ cert: next.certPem, key: next.keyPem, minVersion: options.tls?.minVersion ?? 'TLSv1.2' });
      current = next;
    } catch (err) {
      report(new Error(`keeping the current metrics serving certificate: ${describe(err)}`));
    }
  };
  const first = await firstCertificate(options, lifetime, swap);
  // A replacement may have arrived with (or right after) the first certificate.
  const tls = first && { ...first, certificate: current ?? first.certificate };
  current = tls?.certificate;
  const authorize = options.authorize;
  const server = boundedServer(limits, async (req, res) => {
    const target = parseTarget(req.url);
    if (!target) return answer(res, 400, 'bad request target\n');
    if (authorize) {
      const path = `/${target.segments.map(encodeURIComponent).join('/')}`;
      let decision: { readonly status: number; readonly reason: string };
      try {
        decision = await withDeadline(authorize({ authorization: req.headers.authorization, path, verb: verbOf(req.method) }), limits.handlerTimeoutMs, 'authorization');
      } catch (err) {
        decision = { status: 500, reason: `authorization failed: ${describe(err)}` };
      }
      if (decision.status !== 200) {
        return answer(res, decision.status >= 400 && decision.status < 600 ? decision.status : 500, `${decision.reason}\n`, undefined, decision.status === 401 ? { 'www-authenticate': 'Bearer' } : {});
      }
    }
    const inspect = options.inspect;
    if (inspect && target.segments[0] === 'inspect') {
      let r: InspectAnswer;
      try {
        r = await withDeadline(inspect({ method: req.method ?? 'GET', segments: target.segments, authorized: authorize !== undefined }), limits.handlerTimeoutMs, 'inspect');
      } catch (err) {
        return answer(res, 500, `inspect failed: ${describe(err)}\n`);
      }
      return answer(res, r.status, req.method === 'HEAD' ? '' : r.body, 'application/json', r.headers);
    }
    if (!readOnly(req, res)) return;
    if (options.profiler) {
      const path = `/${target.segments.join('/')}`;
      if (options.profiler.serves(path)) return options.profiler.handle(path, target.query, req, res);
    }
    if (target.segments.length !== 1 || target.segments[0] !== 'metrics') return answer(res, 404, 'not found\n');
    const om = options.openMetrics === true && registry.contentType !== OPENMETRICS_CONTENT_TYPE && prefersOpenMetrics(req.headers.accept);
    let text: string;
    try {
      // registry.metrics() called inside the promise, so a synchronous throw is a rejection too
      text = await withDeadline(new Promise<string>((resolve) => resolve(om ? openMetricsText(registry) : registry.metrics())), limits.handlerTimeoutMs, 'metrics collection');
    } catch (err) {
      return answer(res, 500, `metrics collection failed: ${describe(err)}\n`);
    }
    answer(res, 200, text, om ? OPENMETRICS_CONTENT_TYPE : registry.contentType);
  }, tls);
  made.server = server;
  try {
    return await listen(server, address, options, lifetime);
  } catch (err) {
    lifetime.abort();
    throw err;
  }
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
