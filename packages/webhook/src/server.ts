/**
 * The webhook server: HTTPS, routing by path to registered webhooks, and
 * hardened so that nothing a client sends can crash, hang or leak it: a body
 * size limit, header / request / handshake timeouts, a deadline on every
 * handler, and a clear answer for malformed, oversized, failing or slow
 * requests. The serving certificate can change at any time; new connections
 * get the new one, connections already open keep theirs.
 */
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:tls';
import { parseJson, stringifyJson } from '@kubeloop/scheme';
import { checkServingCertificate } from './certificates.js';
import type { CertificateSource, ServingCertificate } from './certificates.js';
import { describeError, isWebhookError, WebhookError } from './errors.js';
import { readBody } from './internal/body.js';
import { answerAttributes, reviewAttributes, withFields } from './internal/trace-attributes.js';
import { currentTracer } from '@kubeloop/client/internal';
import type { SpanHandle } from '@kubeloop/client/internal';
import { parseGoDuration } from './internal/duration.js';
import { silentLogger } from './logger.js';
import type { WebhookLogger } from './logger.js';
import { noWebhookMetrics } from './metrics.js';
import type { WebhookMetrics } from './metrics.js';
import type { Webhook, WebhookAnswer, WebhookProblem } from './webhook.js';

/** Options for {@link createWebhookServer}. Only `certificates` is required. */
export interface WebhookServerOptions {
  /** Where the serving certificate comes from: `staticCertificate`, `watchCertificateFiles` or `managedCertificates`. */
  readonly certificates: CertificateSource;
  /** The address to listen on. Default: every interface (as controller-runtime's webhook server). */
  readonly host?: string;
  /** The port; `0` picks a free one (see {@link WebhookServer.listening}). Default: 9443 (controller-runtime's). */
  readonly port?: number;
  /**
   * The largest request body accepted, in bytes. Default: 7 MiB: an
   * AdmissionReview carries the object and the old object, each up to the
   * API server's 3 MiB request limit.
   */
  readonly maxBodyBytes?: number;
  /**
   * The most a handler may take, in ms. The API server sends its own
   * deadline as the `timeout` query parameter (the webhook's
   * `timeoutSeconds`, default 10 s); the handler then gets one second less
   * (at most half of it when shorter), so the API server receives a clear
   * failure instead of timing out itself. Default: 30 000 (the largest
   * `timeoutSeconds` the API server allows).
   */
  readonly handlerTimeoutMs?: number;
  /** Time allowed to receive the request headers, in ms. Default: 10 000. */
  readonly headersTimeoutMs?: number;
  /** Time allowed to receive the whole request (headers and body), in ms. Default: 30 000. */
  readonly requestTimeoutMs?: number;
  /**
   * How long an idle keep-alive connection stays open, in ms. Default:
   * 120 000: longer than the API server's 90 s idle timeout, so the client
   * always closes first and never sends a request on a connection this side
   * is closing (which would fail that admission).
   */
  readonly keepAliveTimeoutMs?: number;
  /** Time allowed for a TLS handshake, in ms. Default: 10 000. */
  readonly handshakeTimeoutMs?: number;
  /** On stop, how long requests in flight may take to finish before connections are cut, in ms. Default: 10 000. */
  readonly shutdownTimeoutMs?: number;
  /** The oldest TLS version accepted. Default: `'TLSv1.2'`. */
  readonly minTlsVersion?: 'TLSv1.2' | 'TLSv1.3';
  /** Where request counts, latencies and failures go. Default: nowhere (see `prometheusWebhookMetrics`). */
  readonly metrics?: WebhookMetrics;
  /** Where the server logs. Default: silent. A pino logger fits. */
  readonly log?: WebhookLogger;
}

/** The address the server listens on. */
export interface WebhookServerAddress {
  readonly host: string;
  readonly port: number;
  /** `https://<host>:<port>` (IPv6 in brackets). */
  readonly url: string;
}

/**
 * An HTTPS webhook server: a manager runnable (`start(signal)`) that every
 * replica runs (it needs no leader election), with a readiness check.
 *
 * @example
 * ```ts
 * const server = createWebhookServer({ certificates: watchCertificateFiles({ certFile: '/certs/tls.crt', keyFile: '/certs/tls.key' }) });
 * server.register(validatingWebhook(HardDisk, hardDiskValidator(new StorageClassCatalog())));
 * const ac = new AbortController();
 * const running = server.start(ac.signal);
 * await server.listening();
 * await server.readyCheck(); // resolves: TLS answers on the port
 * ac.abort();
 * await running;
 * ```
 */
export interface WebhookServer {
  /** Serve `webhook` at its path. Allowed before and after start. Throws `InvalidOptions` for a path already taken. */
  register(webhook: Webhook): void;
  /** The registered paths. */
  readonly paths: readonly string[];
  /**
   * Get the first certificate, listen, and serve until `signal` aborts; then
   * stop accepting, let requests in flight finish (within
   * `shutdownTimeoutMs`) and resolve. Rejects with `CertificateUnavailable`
   * or `ListenFailed` when it cannot start. Once per server.
   */
  start(signal: AbortSignal): Promise<void>;
  /** Resolves with the address once listening; rejects if the start fails. */
  listening(): Promise<WebhookServerAddress>;
  /**
   * A readiness check (the manager's `HealthCheck` shape): resolves when the
   * server is listening and completes a TLS handshake on its own port, else
   * rejects with a reason.
   */
  readyCheck(): Promise<void>;
}

const DEFAULTS = {
  port: 9443,
  maxBodyBytes: 7 * 1024 * 1024,
  handlerTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 120_000,
  handshakeTimeoutMs: 10_000,
  shutdownTimeoutMs: 10_000,
} as const;

/**
 * Create a webhook server; nothing listens until `start`.
 *
 * @throws {@link WebhookError} `InvalidOptions` for a missing certificate source or a bad number.
 *
 * @example
 * ```ts
 * import { createWebhookServer, managedCertificates, mutatingWebhook, validatingWebhook } from '@kubeloop/webhook';
 *
 * const server = createWebhookServer({
 *   certificates: managedCertificates({ client, secret: { namespace: 'system', name: 'webhook-certs' }, hosts: ['webhook.system.svc'], validatingWebhookConfigurations: ['harddisk'] }),
 * });
 * server.register(validatingWebhook(HardDisk, { validateCreate: (disk) => (disk.spec?.size ? undefined : [fieldError.required('spec.size')]) }));
 * server.register(mutatingWebhook(HardDisk, (disk) => { if (disk.spec) disk.spec.storageClass ??= 'standard'; }));
 * manager.add(server, { needLeaderElection: false });
 * manager.addReadyzCheck('webhook', () => server.readyCheck());
 * ```
 */
export function createWebhookServer(options: WebhookServerOptions): WebhookServer {
  if (!options?.certificates || typeof options.certificates.start !== 'function') {
    throw new WebhookError('InvalidOptions', 'createWebhookServer needs a certificate source (certificates)');
  }
  const positive = (name: keyof typeof DEFAULTS): number => {
    const value = (options as unknown as Record<string, unknown>)[name] ?? DEFAULTS[name];
    const min = name === 'port' ? 0 : 1;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || (name === 'port' && value > 65535)) {
      throw new WebhookError('InvalidOptions', `${name} must be an integer ${name === 'port' ? 'from 0 to 65535' : '>= 1'}, got ${JSON.stringify(value) ?? typeof value}`);
    }
    return value;
  };
  const settings: Settings = {
    port: positive('port'),
    maxBodyBytes: positive('maxBodyBytes'),
    handlerTimeoutMs: positive('handlerTimeoutMs'),
    headersTimeoutMs: positive('headersTimeoutMs'),
    requestTimeoutMs: positive('requestTimeoutMs'),
    keepAliveTimeoutMs: positive('keepAliveTimeoutMs'),
    handshakeTimeoutMs: positive('handshakeTimeoutMs'),
    shutdownTimeoutMs: positive('shutdownTimeoutMs'),
  };
  return new HttpsWebhookServer(options, settings);
}

type Settings = Record<keyof typeof DEFAULTS, number>;

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined); // a failed start is reported by start(); listening() callers see it too
  return { promise, resolve, reject };
}

function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase();
}

/** The handler's share of the API server's deadline: a second less, or half when that is shorter. */
function handlerBudget(timeoutParam: string | null, cap: number): number {
  const apiServerMs = parseGoDuration(timeoutParam);
  if (apiServerMs === undefined) return cap;
  return Math.max(1, Math.min(cap, Math.max(apiServerMs - 1000, apiServerMs / 2)));
}

const TIMED_OUT = Symbol('timed out');

class HttpsWebhookServer implements WebhookServer {
  private readonly hooks = new Map<string, Webhook>();
  private readonly log: WebhookLogger;
  private readonly metrics: WebhookMetrics;
  private readonly address = deferred<WebhookServerAddress>();
  private bound: WebhookServerAddress | undefined;
  private started = false;
  private inFlight = 0;
  private readonly drained = new Set<() => void>();
  private current: ServingCertificate | undefined;
  private server: Server | undefined;

  constructor(
    private readonly options: WebhookServerOptions,
    private readonly settings: Settings,
  ) {
    this.log = options.log ?? silentLogger;
    this.metrics = options.metrics ?? noWebhookMetrics;
  }

  get paths(): readonly string[] {
    return [...this.hooks.keys()];
  }

  register(webhook: Webhook): void {
    if (!webhook || typeof webhook.path !== 'string' || typeof webhook.handle !== 'function' || typeof webhook.failure !== 'function') {
      throw new WebhookError('InvalidOptions', 'register needs a webhook with a path, handle() and failure()');
    }
    if (!webhook.path.startsWith('/') || /[\s?#]/.test(webhook.path)) {
      throw new WebhookError('InvalidOptions', `webhook path ${JSON.stringify(webhook.path)} must start with "/" and hold no spaces, "?" or "#"`);
    }
    if (this.hooks.has(webhook.path)) throw new WebhookError('InvalidOptions', `a webhook is already registered at ${webhook.path}`);
    this.hooks.set(webhook.path, webhook);
  }

  listening(): Promise<WebhookServerAddress> {
    return this.address.promise;
  }

  async readyCheck(): Promise<void> {
    const bound = this.bound;
    if (!bound) throw new WebhookError('InvalidState', 'the webhook server is not listening');
    const host = ['', '0.0.0.0', '::'].includes(bound.host) ? '127.0.0.1' : bound.host;
    await new Promise<void>((resolve, reject) => {
      const socket = connect({ host, port: bound.port, rejectUnauthorized: false, timeout: 2000 });
      socket.once('secureConnect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('timeout', () => {
        socket.destroy();
        reject(new WebhookError('InvalidState', `the webhook server at ${bound.url} did not complete a TLS handshake within 2 s`));
      });
      socket.once('error', (cause: Error) => reject(new WebhookError('InvalidState', `the webhook server at ${bound.url} does not answer TLS: ${cause.message}`, { cause })));
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    if (this.started) throw new WebhookError('InvalidState', 'the webhook server was already started');
    this.started = true;
    const lifetime = new AbortController();
    const stopSources = (): void => lifetime.abort(signal.reason);
    signal.addEventListener('abort', stopSources, { once: true });
    let server: Server | undefined;
    try {
      const first = await this.firstCertificate(lifetime.signal);
      if (signal.aborted) return;
      server = this.createHttpsServer(first);
      const bound = await this.listen(server);
      this.bound = bound;
      this.address.resolve(bound);
      this.log.info({ url: bound.url, paths: this.paths }, 'webhook server listening');
      if (!signal.aborted) await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    } catch (err) {
      this.address.reject(err);
      throw err;
    } finally {
      signal.removeEventListener('abort', stopSources);
      lifetime.abort();
      if (server) await this.shutdown(server);
      this.bound = undefined;
    }
  }

  private async firstCertificate(signal: AbortSignal): Promise<ServingCertificate> {
    let first: ServingCertificate;
    try {
      first = await this.options.certificates.start(signal, (next) => this.swap(next));
    } catch (cause) {
      if (isWebhookError(cause)) throw cause;
      throw new WebhookError('CertificateUnavailable', `no serving certificate: ${describeError(cause)}`, { cause });
    }
    checkServingCertificate(first);
    this.current = first;
    return first;
  }

  /** Install a new certificate for new connections; keep the old one when the new one cannot serve. */
  private swap(next: ServingCertificate): void {
    if (this.current && next.certPem === this.current.certPem && next.keyPem === this.current.keyPem) return;
    try {
      checkServingCertificate(next, 'the new serving certificate');
    } catch (err) {
      this.log.error({ err: describeError(err) }, 'keeping the current serving certificate: the new one cannot be used');
      return;
    }
    this.current = next;
    // setSecureContext replaces the context given to new connections only; a
    // handshake under way keeps the context its socket was created with.
    this.server?.setSecureContext({ cert: next.certPem, key: next.keyPem, minVersion: this.options.minTlsVersion ?? 'TLSv1.2' });
    this.log.info({}, 'serving certificate reloaded');
  }

  private createHttpsServer(first: ServingCertificate): Server {
    const s = this.settings;
    const server = createServer(
      {
        cert: first.certPem,
        key: first.keyPem,
        minVersion: this.options.minTlsVersion ?? 'TLSv1.2',
        handshakeTimeout: s.handshakeTimeoutMs,
        requestTimeout: s.requestTimeoutMs,
        headersTimeout: Math.min(s.headersTimeoutMs, s.requestTimeoutMs),
        keepAliveTimeout: s.keepAliveTimeoutMs,
        // Node checks header/request timeouts on this period (30 s by default, which would stretch a 10 s timeout to 40 s).
        connectionsCheckingInterval: Math.min(1000, s.headersTimeoutMs),
      },
      (req, res) => void this.serve(req, res),
    );
    server.keepAliveTimeout = s.keepAliveTimeoutMs;
    server.on('secureConnection', (socket: Socket) => this.log.debug({ remote: socket.remoteAddress, port: socket.remotePort }, 'TLS connection'));
    server.on('tlsClientError', (err, socket) => {
      this.log.debug({ err: err.message, remote: socket.remoteAddress }, 'TLS handshake failed');
      socket.destroy();
    });
    server.on('clientError', (err: Error & { code?: string }, socket: Socket) => {
      this.log.debug({ err: err.message, code: err.code, remote: socket.remoteAddress }, 'malformed HTTP request');
      if (socket.writable && !socket.destroyed) {
        const status = err.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout' : '400 Bad Request';
        const body = `${JSON.stringify({ message: `malformed HTTP request: ${err.message}` })}\n`;
        socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      }
      socket.destroy();
    });
    server.on('error', (err) => this.log.error({ err: err.message }, 'webhook server error'));
    this.server = server;
    return server;
  }

  private listen(server: Server): Promise<WebhookServerAddress> {
    return new Promise((resolve, reject) => {
      const onError = (cause: Error): void => {
        reject(new WebhookError('ListenFailed', `the webhook server cannot listen on ${this.options.host ?? '*'}:${this.settings.port}: ${cause.message}`, { cause }));
      };
      server.once('error', onError);
      server.listen(this.settings.port, this.options.host, () => {
        server.off('error', onError);
        const info = server.address() as AddressInfo;
        const host = this.options.host ?? info.address;
        const shown = host.includes(':') ? `[${host}]` : host;
        resolve({ host, port: info.port, url: `https://${shown}:${info.port}` });
      });
    });
  }

  private async shutdown(server: Server): Promise<void> {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    if (this.inFlight > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.settings.shutdownTimeoutMs);
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.drained.add(done);
      });
    }
    server.closeAllConnections();
    await closed;
    this.server = undefined;
    this.log.info({}, 'webhook server stopped');
  }

  // --- requests --------------------------------------------------------------

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'https://webhook.invalid');
    } catch {
      this.reply(res, { status: 400, body: { message: 'malformed request URL' } });
      return;
    }
    const hook = this.hooks.get(url.pathname);
    if (!hook) {
      this.reply(res, { status: 404, body: { message: `no webhook is registered at ${url.pathname}` } });
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      this.reply(res, { status: 405, body: { message: `webhooks answer POST only, not ${req.method ?? '?'}` } });
      return;
    }
    // Tracing off: one property read per request. On: a server span continuing the API server's traceparent.
    const tracer = currentTracer();
    if (!tracer) return this.serveHook(hook, req, res, url, undefined);
    return tracer.inSpan(`webhook ${hook.path}`, { kind: 'server', carrier: req.headers, attributes: { 'url.path': hook.path, 'http.request.method': 'POST' } }, (span) => this.serveHook(hook, req, res, url, span));
  }

  private async serveHook(hook: Webhook, req: IncomingMessage, res: ServerResponse, url: URL, span: SpanHandle | undefined): Promise<void> {
    const startedAt = process.hrtime.bigint();
    this.inFlight++;
    this.metrics.requestStarted(hook.path);
    let status = 499; // the client went away before an answer
    try {
      const answer = await this.answer(hook, req, url, span);
      if (answer) {
        status = this.reply(res, answer, hook);
        if (span) span.setAttributes({ 'http.response.status_code': status, ...answerAttributes(answer) });
        if (answer.unread) discardRest(req);
        if (answer.problem) this.metrics.requestFailed(hook.path, answer.problem);
      } else {
        req.socket.destroy();
      }
    } catch (err) {
      // answer() catches everything it can; this is the last line.
      this.log.error({ err: describeError(err), webhook: hook.path }, 'webhook request failed');
      status = this.reply(res, { status: 500, body: { message: 'internal error' } });
    } finally {
      this.metrics.requestFinished(hook.path, status, Number(process.hrtime.bigint() - startedAt) / 1e9);
      if (--this.inFlight === 0) for (const done of this.drained) done();
    }
  }

  /** The answer for one request; undefined when the client went away. */
  private async answer(hook: Webhook, req: IncomingMessage, url: URL, span?: SpanHandle): Promise<(WebhookAnswer & { unread?: boolean }) | undefined> {
    const fail = (problem: WebhookProblem, unread = false): WebhookAnswer & { unread?: boolean } => ({ ...this.failure(hook, problem), unread });
    const contentType = mediaType(req.headers['content-type']);
    if (contentType !== 'application/json') {
      return fail({ reason: 'UnsupportedMediaType', code: 415, message: `content type ${JSON.stringify(req.headers['content-type'] ?? '')} is not application/json` }, true);
    }
    const max = this.settings.maxBodyBytes;
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > max) {
      return fail({ reason: 'TooLarge', code: 413, message: `the request body (${declared} bytes) is larger than the ${max} byte limit` }, true);
    }
    let raw: Buffer | 'too-large';
    try {
      raw = await readBody(req, max);
    } catch (err) {
      this.log.debug({ err: describeError(err), webhook: hook.path }, 'request body not received');
      return undefined;
    }
    if (raw === 'too-large') return fail({ reason: 'TooLarge', code: 413, message: `the request body is larger than the ${max} byte limit` }, true);
    if (raw.length === 0) return fail({ reason: 'MalformedRequest', code: 400, message: 'the request body is empty' });
    let body: unknown;
    try {
      body = parseJson(raw.toString('utf8'));
    } catch (err) {
      return fail({ reason: 'MalformedRequest', code: 400, message: `the request body is not JSON: ${describeError(err)}` });
    }

    if (span) span.setAttributes(reviewAttributes(body));
    const log = span ? withFields(this.log, { trace_id: span.traceId, span_id: span.spanId }) : this.log;
    const budget = handlerBudget(url.searchParams.get('timeout'), this.settings.handlerTimeoutMs);
    const ac = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<typeof TIMED_OUT>((resolve) => {
      timer = setTimeout(() => {
        ac.abort(new WebhookError('Aborted', `the webhook handler deadline of ${Math.round(budget)} ms passed`));
        resolve(TIMED_OUT);
      }, budget);
    });
    try {
      const result = await Promise.race([hook.handle(body, { signal: ac.signal, log }), deadline]);
      if (result === TIMED_OUT) {
        this.log.warn({ webhook: hook.path, budgetMs: Math.round(budget) }, 'webhook handler timed out');
        return fail({ reason: 'Timeout', code: 500, message: `the webhook handler did not answer within ${Math.round(budget)} ms`, body });
      }
      return result;
    } catch (err) {
      this.log.error({ webhook: hook.path, err: describeError(err) }, 'webhook handler failed');
      return fail({ reason: 'HandlerError', code: 500, message: `the webhook handler failed: ${describeError(err)}`, body });
    } finally {
      clearTimeout(timer);
    }
  }

  private failure(hook: Webhook, problem: WebhookProblem): WebhookAnswer {
    try {
      return { ...hook.failure(problem), problem: problem.reason };
    } catch (err) {
      this.log.error({ webhook: hook.path, err: describeError(err) }, 'webhook failure answer failed');
      return { status: problem.code, body: { message: problem.message }, problem: problem.reason };
    }
  }

  /** Write an answer; returns the status written. */
  private reply(res: ServerResponse, answer: WebhookAnswer, hook?: Webhook): number {
    let status = answer.status;
    let payload: string;
    try {
      payload = stringifyJson(answer.body);
      if (payload === undefined) throw new TypeError('the answer is not a JSON value');
    } catch (err) {
      const fallback = hook
        ? this.failure(hook, { reason: 'HandlerError', code: 500, message: `the webhook answer cannot be serialised: ${describeError(err)}` })
        : { status: 500, body: { message: 'the answer cannot be serialised' } };
      status = fallback.status;
      payload = JSON.stringify(fallback.body) ?? '{}';
    }
    if (res.headersSent || res.destroyed) return status;
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
    res.end(payload);
    return status;
  }
}

/**
 * After an early answer (the body was refused before it was read), let the
 * rest of the body drain and be dropped, so the client reads the answer
 * instead of a connection reset; cut the connection if the body has not
 * ended within two seconds (the answer has long been delivered by then).
 */
function discardRest(req: IncomingMessage): void {
  if (req.complete || req.destroyed) return;
  const timer = setTimeout(() => req.socket.destroy(), 2000);
  timer.unref();
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  req.on('data', () => undefined);
  req.resume();
}
