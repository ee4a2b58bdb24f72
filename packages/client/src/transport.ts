/**
 * The HTTP transport every kubeloop request goes through: TLS and auth from a
 * {@link RestConfig} or a `@kubernetes/client-node` KubeConfig, two agents
 * (a socket-capped keep-alive pool for ordinary requests, an uncapped one for
 * watches, so open watches never starve a GET or a lease renewal), optional
 * client-side rate limiting (off by default: the server's API Priority and
 * Fairness limits, and 429/Retry-After is honoured), one deadline over every
 * phase of a request, a size limit on buffered answers, and typed errors.
 * Bodies are bytes and strings: no model classes, no per-object
 * deserialisation on hot paths.
 */
import { parseWarningHeader } from './warnings.js';
import type { ApiWarning } from './warnings.js';
import './internal/node-version.js';
import type { Agent as HttpAgent, ClientRequest, IncomingHttpHeaders, IncomingMessage, RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { urlToHttpOptions } from 'node:url';
import { currentFence, fencedError } from './fence.js';
import type { WriteFence } from './fence.js';
import { currentTracer } from './tracing.js';
import type { RequestSpan } from './tracing.js';
import { ClientError, isClientError } from './errors.js';
import { METADATA_LOOKUP_CODE, metadataRefusingLookup } from './kubeconfig-policy.js';
import { Credentials } from './internal/credentials.js';
import { requireOwn } from './internal/own-require.js';
import type * as Hpagent from 'hpagent';
import type { AuthState, TlsMaterial } from './internal/credentials.js';
import { sleep, TokenBucket } from '@kubeloop/workqueue';
import type { KubeConfigLike, RestConfig } from './kubeconfig.js';

// node:http through getBuiltinModule, not `import { ... } from 'node:http'`: an ES import of a
// builtin reads every export to build its namespace, and node:http's lazy WebSocket, CloseEvent
// and MessageEvent getters then load undici (Node's fetch), about 8 MiB of RSS an operator never
// uses (docs/benchmarks.md, Memory). node:https has no such getters.
const { Agent: HttpAgentClass, request: httpRequest } = process.getBuiltinModule('node:http');

/** Query parameters; `undefined` values are left out. */
export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

/** One request. */
export interface TransportRequest {
  /** The HTTP method. */
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Absolute path, e.g. `/api/v1/namespaces/default/pods`; sent after the server URL's own path when it has one (a proxy's `/k8s/clusters/c-1`). */
  readonly path: string;
  /** Query parameters. Default: none. */
  readonly query?: Query;
  /** Default: `application/json`. */
  readonly accept?: string;
  /** Default when there is a body: `application/json`. */
  readonly contentType?: string;
  /** The request body, already serialized. Default: none. */
  readonly body?: string;
  /** Aborts the request (and a stream's body). Default: none. */
  readonly signal?: AbortSignal;
  /**
   * Deadline of this request, ms, overriding the transport's `timeoutMs`
   * (0: none). For `request()` it covers each attempt whole: waiting for the
   * rate limiter and credentials, connecting, TLS, the response headers and
   * the whole body. For `stream()` it covers everything up to the response
   * headers (default there: none; the body is the watch's to time).
   */
  readonly timeoutMs?: number;
}

/** A buffered response. */
export interface TransportResponse {
  /** The HTTP status code. */
  readonly status: number;
  /** The response headers, as Node's `http` gives them. */
  readonly headers: IncomingHttpHeaders;
  /** The whole body, decoded as UTF-8. */
  readonly body: string;
}

/** Called after every request (for `rest_client_requests_total` and logs). */
export interface RequestInfo {
  /** The HTTP method. */
  readonly method: string;
  /** The server's `host:port`. */
  readonly host: string;
  /** The request's path (no query). */
  readonly path: string;
  /** HTTP status, or `'<error>'` when none was had. */
  readonly code: number | '<error>';
  /** From sending the request to the end of its response (or its failure). */
  readonly durationMs: number;
}

/**
 * Options for {@link createTransport} and {@link Transport.fork}.
 *
 * @example
 * ```ts
 * // opt in to client-side rate limiting (off by default)
 * const options: TransportOptions = { qps: 50, burst: 100, timeoutMs: 10_000 };
 * ```
 */
export interface TransportOptions {
  /**
   * Client-side rate limit, requests per second (watches included). Default:
   * 0, off, as controller-runtime since v0.21: the API server's Priority and
   * Fairness does the limiting, and its 429 answers' Retry-After is honoured
   * with or without a client-side limit.
   */
  readonly qps?: number;
  /** Requests allowed at once above `qps` when `qps` is set. Default: `ceil(1.5 × qps)` (controller-runtime's former 20 / 30 ratio). */
  readonly burst?: number;
  /**
   * Deadline of a non-streaming request, ms: each attempt, whole (rate-limiter
   * wait, credentials, connect, TLS, response headers and the entire body), so
   * an answer that stalls halfway still fails. Default: 30 000. 0: none.
   * Streams (watches) have no deadline here: give them an idle timeout.
   */
  readonly timeoutMs?: number;
  /** Retries of an answer with Retry-After (429, 5xx). Default: 10, as client-go. */
  readonly maxRetries?: number;
  /**
   * Largest buffered answer, bytes. A bigger one fails with ClientError
   * `ResponseTooLarge` and the connection is closed, so a runaway answer
   * cannot exhaust memory. Default: 128 MiB: lists are read in pages of 500,
   * and 500 objects at etcd's default 1.5 MiB object limit are far beyond
   * what a real page holds (500 Pods are 5–10 MiB), while the parsed JSON of
   * a 128 MiB answer already takes around half a gigabyte of heap.
   */
  readonly maxResponseBytes?: number;
  /**
   * Connections open at once for non-streaming requests (more wait for a free
   * one). Watches use a separate pool with no cap, so they never take these.
   * Default: 64.
   */
  readonly maxSockets?: number;
  /** User-Agent header. Default: `kubeloop/<version> (node <version>)`. */
  readonly userAgent?: string;
  /** Observer of every finished request. Default: none. */
  readonly onRequest?: (info: RequestInfo) => void;
  /**
   * Told of every `Warning` header the API server answers with (a
   * deprecated API version, an unknown field under `fieldValidation=Warn`,
   * an admission webhook's warning), once per warning per answer. The
   * manager logs each distinct text once and counts all of them
   * (`kubeloop_client_warnings_total`). Default: none.
   */
  readonly onWarning?: (warning: ApiWarning) => void;
  /**
   * Turn an answer that carries a warning into a `ClientError` `Warning`
   * (as `kubectl --warnings-as-errors`). A write the server warned about
   * has still been done. Default: false.
   */
  readonly warningsAsErrors?: boolean;
}

/**
 * Sends requests to one API server.
 *
 * @example
 * ```ts
 * const transport = createTransport(loadKubeConfig());
 * const res = await transport.request({ method: 'GET', path: '/version' });
 * console.log(JSON.parse(res.body).gitVersion);
 * const leaderElection = transport.fork({ qps: 0, timeoutMs: 5_000 }); // own sockets and limiter
 * ```
 */
export interface Transport {
  /** The API server's base URL. */
  readonly server: URL;
  /** The config this transport was made from (a client-node KubeConfig is turned into one). */
  readonly config: RestConfig;
  /** The options in force (defaults filled in). */
  readonly options: Readonly<Required<Omit<TransportOptions, 'onRequest' | 'onWarning' | 'warningsAsErrors'>>> & Pick<TransportOptions, 'onRequest' | 'onWarning' | 'warningsAsErrors'>;
  /**
   * Send a request and buffer the answer. Resolves with any HTTP answer (the
   * caller turns non-2xx into errors); rejects only when there is no whole
   * answer: ClientError `Network`, `TLS`, `Aborted`, `ClientTimeout`,
   * `ResponseTooLarge`, or `InvalidConfig` for credentials that cannot be had.
   */
  request(req: TransportRequest): Promise<TransportResponse>;
  /** Send a request and hand back the streaming answer (watches), over the uncapped streaming pool. The caller consumes or destroys it. */
  stream(req: TransportRequest): Promise<IncomingMessage>;
  /**
   * A transport to the same server with the same credentials (an exec
   * plugin's credential is shared) but its own connections and rate limiter:
   * for leader election and the event recorder, so their requests never queue
   * behind the rest. `options` override this transport's.
   */
  fork(options?: TransportOptions): Transport;
  /** Close every connection of this transport (not of its forks). */
  close(): void;
}

const VERSION = '0.1.0';
const MiB = 1024 * 1024;

function encodeQuery(query: Query | undefined): string {
  if (!query) return '';
  let params: URLSearchParams | undefined; // made only for a value to send: most reads pass `{ resourceVersion: undefined }`
  for (const k of Object.keys(query)) {
    const v = query[k];
    if (v !== undefined) (params ??= new URLSearchParams()).append(k, String(v));
  }
  return params ? `?${params.toString()}` : '';
}

/** The Retry-After of an answer, seconds (delta-seconds only, as the API server sends). */
export function retryAfterSeconds(headers: IncomingHttpHeaders): number | undefined {
  const value = headers['retry-after'];
  if (typeof value !== 'string') return undefined;
  const seconds = Number.parseInt(value, 10);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!(typeof value === 'number' && value >= 0 && !Number.isNaN(value))) throw new ClientError('InvalidRequest', `transport option ${name} must be a number >= 0, got ${String(value)}`);
  return value;
}

function resolveOptions(options: TransportOptions): Transport['options'] {
  const qps = nonNegative('qps', options.qps, 0);
  return {
    qps,
    burst: Math.max(1, nonNegative('burst', options.burst, Math.ceil(qps * 1.5))),
    timeoutMs: nonNegative('timeoutMs', options.timeoutMs, 30_000),
    maxRetries: nonNegative('maxRetries', options.maxRetries, 10),
    maxResponseBytes: nonNegative('maxResponseBytes', options.maxResponseBytes, 128 * MiB),
    maxSockets: Math.max(1, nonNegative('maxSockets', options.maxSockets, 64)),
    userAgent: options.userAgent ?? `kubeloop/${VERSION} (node ${process.version})`,
    ...(options.warningsAsErrors ? { warningsAsErrors: true } : {}),
    ...(options.onRequest ? { onRequest: options.onRequest } : {}),
    ...(options.onWarning ? { onWarning: options.onWarning } : {}),
  };
}

/**
 * Create a transport for a {@link RestConfig} (from {@link loadKubeConfig})
 * or the current context of a `@kubernetes/client-node` KubeConfig. Files the
 * config names (CA, client certificate and key, token file) are read now: a
 * missing one is ClientError `InvalidConfig` naming it. Nothing is sent yet.
 *
 * @example
 * ```ts
 * const transport = createTransport(loadKubeConfig());              // no client-side rate limit
 * const limited = createTransport(loadKubeConfig(), { qps: 50, burst: 100 });
 * ```
 */
export function createTransport(kubeConfig: KubeConfigLike, options: TransportOptions = {}): Transport {
  if (kubeConfig === undefined || kubeConfig === null) {
    throw new ClientError('InvalidConfig', 'createTransport needs a kubeConfig: loadKubeConfig() finds one as kubectl does');
  }
  return new HttpTransport(new Credentials(kubeConfig), resolveOptions(options), options);
}

type AnyAgent = HttpAgent | HttpsAgent;

/** Map a socket or TLS error to the ClientError that says what to check. */
function connectionError(what: string, source: string, cause: unknown): ClientError {
  const err = cause as NodeJS.ErrnoException & { reason?: string };
  const code = err?.code ?? '';
  const message = err instanceof Error ? err.message : String(cause);
  if (/^(CERT_|UNABLE_TO_|SELF_SIGNED_CERT|DEPTH_ZERO_SELF_SIGNED|ERR_TLS_CERT_ALTNAME_INVALID|HOSTNAME_MISMATCH)/.test(code)) {
    const hint =
      code === 'ERR_TLS_CERT_ALTNAME_INVALID'
        ? "the server's certificate is for another name: check the server URL, or set tls-server-name to a name the certificate holds"
        : code === 'CERT_HAS_EXPIRED'
          ? "the server's certificate has expired (or this machine's clock is wrong)"
          : "the server's certificate is not signed by the CA this config trusts: check certificate-authority / certificate-authority-data (or the in-cluster ca.crt) is the cluster's CA";
    return new ClientError('TLS', `${what}: TLS handshake failed (${code}: ${message}): ${hint} (${source})`, { cause });
  }
  if (/WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG|UNKNOWN_PROTOCOL|HTTP_REQUEST/.test(code) || /wrong version number|packet length too long/.test(message)) {
    return new ClientError('TLS', `${what}: TLS handshake failed (${code || message}): the server does not speak TLS there; is the server URL https:// where it should be http://? (${source})`, { cause });
  }
  if (/ALERT_(BAD_CERTIFICATE|CERTIFICATE_REQUIRED|UNKNOWN_CA|CERTIFICATE_EXPIRED|CERTIFICATE_UNKNOWN)/.test(code)) {
    return new ClientError('TLS', `${what}: the server refused this client's certificate during the TLS handshake (${code}): check client-certificate / client-key and their expiry (${source})`, { cause });
  }
  if (code === METADATA_LOOKUP_CODE) {
    return new ClientError(
      'PolicyRefused',
      `${what}: ${message}: refused by the kubeconfig policy, nothing was sent (to allow it: policy.allowMetadataServer) (${source})`,
      { cause, field: 'server' },
    );
  }
  if (/^ERR_OSSL|^ERR_SSL|^ERR_TLS/.test(code) || code === 'EPROTO') {
    return new ClientError('TLS', `${what}: TLS failed (${code}: ${message}): check the client certificate and key belong together and are PEM, and the CA (${source})`, { cause });
  }
  return new ClientError('Network', `${what}: ${message}`, { cause });
}

/** Reject with the attempt's ClientError when it aborts first. */
function race<T>(p: Promise<T>, attempt: Attempt): Promise<T> {
  if (attempt.reason) return Promise.reject(attempt.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(attempt.reason!);
    attempt.onAbort(onAbort);
    p.then(
      (v) => {
        attempt.offAbort(onAbort);
        resolve(v);
      },
      (e: unknown) => {
        attempt.offAbort(onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/**
 * One attempt's deadline and cancellation: it aborts with ClientError
 * `ClientTimeout` when `timeoutMs` passes, or `Aborted` when the caller's
 * signal fires. Not an AbortController: one callback slot (each phase of a
 * request sets its own and clears it) costs a request far less than an
 * EventTarget; a real AbortSignal is made only for the rate limiter.
 */
class Attempt {
  /** Why the attempt was aborted; undefined while it runs. */
  reason: ClientError | undefined;
  private timer: NodeJS.Timeout | undefined;
  private listener: (() => void) | undefined;
  private controller: AbortController | undefined;
  private readonly onCallerAbort: (() => void) | undefined;
  private readonly onFenceRevoked: (() => void) | undefined;

  constructor(
    private readonly req: TransportRequest,
    timeoutMs: number,
    /** A write's fence: its revocation aborts the attempt with ClientError `Fenced`. */
    private readonly fence?: WriteFence,
  ) {
    if (fence) {
      this.onFenceRevoked = (): void => this.abort(fencedError(`${req.method} ${req.path}`, fence.revoked() ?? 'its write fence was revoked'));
      if (fence.signal.aborted) this.onFenceRevoked();
      else fence.signal.addEventListener('abort', this.onFenceRevoked, { once: true });
    }
    if (timeoutMs > 0) {
      this.timer = setTimeout(() => {
        this.abort(new ClientError('ClientTimeout', `${req.method} ${req.path}: no answer within ${timeoutMs} ms (the deadline covers connecting, the headers and the whole body)`));
      }, timeoutMs);
    }
    const caller = req.signal;
    if (caller) {
      this.onCallerAbort = (): void => this.abort(new ClientError('Aborted', `${req.method} ${req.path}: aborted`, { cause: caller.reason }));
      if (caller.aborted) this.onCallerAbort();
      else caller.addEventListener('abort', this.onCallerAbort, { once: true });
    }
  }

  private abort(reason: ClientError): void {
    if (this.reason) return;
    this.reason = reason;
    this.controller?.abort(reason);
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }

  /** Call `fn` once if the attempt aborts (one callback at a time: it replaces the last). */
  onAbort(fn: () => void): void {
    this.listener = fn;
  }

  offAbort(fn: () => void): void {
    if (this.listener === fn) this.listener = undefined;
  }

  /** An AbortSignal that follows this attempt (for the rate limiter), made when first asked for. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /** Stop the clock (the answer is whole, or a stream was handed over). */
  done(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.onCallerAbort) this.req.signal?.removeEventListener('abort', this.onCallerAbort);
    if (this.onFenceRevoked) this.fence?.signal.removeEventListener('abort', this.onFenceRevoked);
  }
}

/**
 * The path and query to send for `path`: under the server URL's own path (a
 * proxy's `https://host/k8s/clusters/c-1`), as `new URL` would serialise it.
 * A path of plain URL characters is taken as it is; any other goes through
 * `new URL` (percent-encoding, dot segments).
 */
function requestPath(prefix: string, pathAndQuery: string): string {
  if (/^\/[\w\-.~%!$&'()*+,;=:@/]*(\?[\w\-.~%!$&()*+,;=:@/?]*)?$/.test(pathAndQuery) && !/\/(?:\.|%2e){1,2}(?:[/?]|$)/i.test(pathAndQuery) && !pathAndQuery.startsWith('//')) {
    return prefix + pathAndQuery;
  }
  const url = new URL(`http://h${prefix}${pathAndQuery.startsWith('/') ? '' : '/'}${pathAndQuery}`);
  return url.pathname + url.search;
}

/**
 * An https agent of one transport serves one server with one TLS configuration (a new client
 * certificate gets new agents), so the name its socket pool is keyed by is the same for every
 * request: worked out once here. Node's https Agent otherwise builds it again from every TLS option,
 * the CA, certificate and key PEMs included (about 4 KB), two or three times per request, and looks
 * its pools up by that fresh string: 30-80 µs of CPU per request (8-20 %), with the shipped node
 * flags or without them (docs/benchmarks.md, "CPU per request").
 */
function withFixedName(agent: HttpsAgent, options: Parameters<HttpsAgent['getName']>[0]): HttpsAgent {
  const name = agent.getName(options);
  agent.getName = () => name;
  return agent;
}

interface Agents {
  readonly generation: number;
  readonly normal: AnyAgent;
  readonly streaming: AnyAgent;
}

class HttpTransport implements Transport {
  readonly server: URL;
  /** Where requests go, from the server URL (protocol, host, port, user info), for `request(options)`: no URL is parsed per request. */
  private readonly target: RequestOptions;
  /** The server URL's path without its trailing slash, put before every request's path. */
  private readonly prefix: string;
  // Credentials live in a #private field and the config behind a getter, so
  // logging or serialising a transport (or a client holding one) shows no token
  // and no private key (the agents hold the TLS options).
  readonly #credentials: Credentials;
  #agents: Agents | undefined;
  private readonly limiter: TokenBucket | undefined;
  private readonly https: boolean;

  constructor(
    credentials: Credentials,
    readonly options: Transport['options'],
    private readonly given: TransportOptions,
  ) {
    this.#credentials = credentials;
    this.server = credentials.server;
    this.https = this.server.protocol === 'https:';
    const { protocol, hostname, port, auth } = urlToHttpOptions(this.server);
    this.target = { protocol, hostname, ...(port !== undefined ? { port } : {}), ...(auth ? { auth } : {}) };
    this.prefix = this.server.pathname.replace(/\/+$/, '');
    this.limiter = options.qps > 0 ? new TokenBucket(options.qps, options.burst) : undefined;
  }

  get config(): RestConfig {
    return this.#credentials.config;
  }

  fork(options: TransportOptions = {}): Transport {
    const merged = { ...this.given, ...options };
    return new HttpTransport(this.#credentials, resolveOptions(merged), merged);
  }

  private agentsFor(auth: AuthState): Agents {
    const current = this.#agents;
    if (current && current.generation === auth.tlsGeneration) return current;
    const make = (maxSockets: number): AnyAgent => this.makeAgent(auth.tls, maxSockets);
    const next: Agents = { generation: auth.tlsGeneration, normal: make(this.options.maxSockets), streaming: make(Infinity) };
    this.#agents = next;
    if (current) {
      // A new client certificate: requests and watches in flight finish on the old
      // sockets; idle ones close now and busy ones as soon as they are freed.
      for (const agent of [current.normal, current.streaming]) {
        for (const list of Object.values(agent.freeSockets)) for (const socket of list ?? []) socket.destroy();
        agent.on('free', (socket: Socket) => socket.destroy());
      }
    }
    return next;
  }

  private makeAgent(tls: TlsMaterial, maxSockets: number): AnyAgent {
    const common = {
      keepAlive: true,
      maxSockets,
      scheduling: 'lifo' as const,
      ...(this.config.refuseMetadataAddresses ? { lookup: metadataRefusingLookup() } : {}),
    };
    const proxy = this.config.proxyUrl;
    // hpagent (a CONNECT-tunnelling agent) is loaded only when a config names a proxy.
    const { HttpProxyAgent, HttpsProxyAgent } = proxy ? (requireOwn('hpagent') as typeof Hpagent) : ({} as Partial<typeof Hpagent>);
    if (!this.https) return proxy && HttpProxyAgent ? new HttpProxyAgent({ ...common, proxy }) : new HttpAgentClass(common);
    const tlsOptions = {
      ...(tls.ca ? { ca: tls.ca } : {}),
      ...(tls.cert ? { cert: tls.cert } : {}),
      ...(tls.key ? { key: tls.key } : {}),
      rejectUnauthorized: tls.rejectUnauthorized,
      ...(tls.servername ? { servername: tls.servername } : {}),
    };
    const agent = proxy && HttpsProxyAgent ? new HttpsProxyAgent({ ...common, ...tlsOptions, proxy }) : new HttpsAgent({ ...common, ...tlsOptions });
    return withFixedName(agent, { ...this.target, host: this.target.hostname ?? 'localhost', ...tlsOptions });
  }

  async request(req: TransportRequest): Promise<TransportResponse> {
    const timeoutMs = req.timeoutMs ?? this.options.timeoutMs;
    // A write inside a fenced scope (runFenced) carries its fence: one store lookup per write, none per read.
    const fence = req.method === 'GET' ? undefined : currentFence();
    // Tracing off: one property read (docs/tracing.md, cost).
    const span = currentTracer()?.request({ method: req.method, path: req.path, watch: false, host: this.server.host });
    if (!span) return this.attempts(req, timeoutMs, fence, undefined);
    let retries = 0;
    try {
      const response = await this.attempts(req, timeoutMs, fence, span, () => retries++);
      span.end({ status: response.status, retries });
      return response;
    } catch (error) {
      span.end({ retries, error, ...(isClientError(error) && error.code !== undefined ? { status: error.code } : {}) });
      throw error;
    }
  }

  private async attempts(req: TransportRequest, timeoutMs: number, fence: WriteFence | undefined, span: RequestSpan | undefined, onRetry?: () => void): Promise<TransportResponse> {
    for (let attempt = 0; ; attempt++) {
      const deadline = new Attempt(req, timeoutMs, fence);
      let response: TransportResponse;
      try {
        const { res, auth } = await this.once(req, false, deadline, fence, span);
        response = { status: res.statusCode ?? 0, headers: res.headers, body: await this.readBody(req, res, deadline) };
        if (response.status === 401) this.#credentials.unauthorized(auth);
      } finally {
        deadline.done();
      }
      this.refuseWarned(req, response.status, response.headers);
      const wait = retryAfterSeconds(response.headers);
      if (wait !== undefined && (response.status === 429 || response.status >= 500) && attempt < this.options.maxRetries) {
        if (!(await sleep(Math.min(wait, 60) * 1000, req.signal))) {
          throw new ClientError('Aborted', `${req.method} ${req.path}: aborted while waiting to retry`, { cause: req.signal?.reason });
        }
        onRetry?.();
        continue;
      }
      return response;
    }
  }

  /**
   * Read a whole body within the attempt's deadline and the size limit. Every
   * listener it adds to the response is removed when it settles, however it
   * settles: no listener may stay on a response (a pooled keep-alive socket
   * would otherwise keep the last body alive).
   */
  private readBody(req: TransportRequest, res: IncomingMessage, attempt: Attempt): Promise<string> {
    const what = `${req.method} ${req.path}`;
    const max = this.options.maxResponseBytes;
    const declared = Number(res.headers['content-length']);
    if (max > 0 && Number.isFinite(declared) && declared > max) {
      res.destroy();
      return Promise.reject(new ClientError('ResponseTooLarge', `${what}: the answer is ${declared} bytes, more than maxResponseBytes (${max})`, { code: res.statusCode ?? 0 }));
    }
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const settle = (err: Error | undefined): void => {
        res.off('data', onData);
        res.off('end', onEnd);
        res.off('error', onError);
        res.off('close', onClose);
        attempt.offAbort(onAbort);
        if (err) reject(err);
        else if (attempt.reason) reject(attempt.reason);
        else resolve(Buffer.concat(chunks, size).toString('utf8'));
        chunks.length = 0;
      };
      const onData = (chunk: Buffer): void => {
        size += chunk.length;
        if (max > 0 && size > max) {
          settle(new ClientError('ResponseTooLarge', `${what}: the answer passed maxResponseBytes (${max}) and was cut off`, { code: res.statusCode ?? 0 }));
          res.destroy();
          return;
        }
        chunks.push(chunk);
      };
      const onEnd = (): void => settle(undefined);
      // The deadline or the caller's abort destroys the response with its reason; onError settles.
      const onAbort = (): void => void res.destroy(attempt.reason);
      const onError = (cause: Error): void => settle(attempt.reason ?? connectionError(`${what}: the answer was cut off`, this.#credentials.source, cause));
      const onClose = (): void => settle(attempt.reason ?? connectionError(`${what}: the answer was cut off`, this.#credentials.source, Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' })));
      res.on('data', onData);
      res.on('end', onEnd);
      res.on('error', onError);
      res.on('close', onClose);
      attempt.onAbort(onAbort);
      if (attempt.reason) onAbort();
      else if (res.destroyed) onClose();
    });
  }

  /** With `warningsAsErrors`, a successful answer that carries warnings is a ClientError `Warning`. */
  private refuseWarned(req: TransportRequest, status: number, headers: IncomingHttpHeaders): void {
    if (!this.options.warningsAsErrors || status < 200 || status >= 300) return;
    const warnings = parseWarningHeader(headers['warning']);
    if (warnings.length === 0) return;
    throw new ClientError('Warning', `${req.method} ${req.path}: the API server warned: ${warnings.map((w) => JSON.stringify(w.text)).join('; ')} (warningsAsErrors is on)`, { code: status });
  }

  async stream(req: TransportRequest): Promise<IncomingMessage> {
    const deadline = new Attempt(req, req.timeoutMs ?? 0);
    // A watch's span covers the request up to its answer's headers: the stream is the watch's to time.
    const span = currentTracer()?.request({ method: req.method, path: req.path, watch: true, host: this.server.host });
    try {
      const { res, auth } = await this.once(req, true, deadline, undefined, span);
      span?.end({ status: res.statusCode ?? 0, retries: 0 });
      if (res.statusCode === 401) this.#credentials.unauthorized(auth);
      try {
        this.refuseWarned(req, res.statusCode ?? 0, res.headers);
      } catch (err) {
        res.destroy();
        throw err;
      }
      return res;
    } catch (error) {
      span?.end({ retries: 0, error });
      throw error;
    } finally {
      // The caller's signal keeps working on the stream through watchEvents; the deadline ends at the headers.
      deadline.done();
    }
  }

  private async once(req: TransportRequest, streaming: boolean, attempt: Attempt, fence?: WriteFence, span?: RequestSpan): Promise<{ res: IncomingMessage; auth: AuthState }> {
    const what = `${req.method} ${req.path}`;
    if (attempt.reason) throw attempt.reason;
    const revoked = fence?.revoked();
    if (revoked !== undefined) throw fencedError(what, revoked);
    if (this.limiter) await this.limiter.take(attempt.signal).catch(() => Promise.reject(attempt.reason!));
    const auth = this.#credentials.current() ?? (await race(this.#credentials.get(), attempt));
    const agents = this.agentsFor(auth);
    const headers: Record<string, string | string[]> = { ...auth.headers, accept: req.accept ?? 'application/json', 'user-agent': this.options.userAgent };
    if (req.body !== undefined) {
      headers['content-type'] = req.contentType ?? 'application/json';
      // Node frames a DELETE body only when told its length (DELETE is not chunked by default).
      headers['content-length'] = String(Buffer.byteLength(req.body));
    }
    span?.inject(headers);
    const path = requestPath(this.prefix, req.path + encodeQuery(req.query));
    const started = performance.now();
    const report = (code: number | '<error>'): void =>
      this.options.onRequest?.({ method: req.method, host: this.server.host, path: req.path, code, durationMs: performance.now() - started });
    return new Promise((resolve, reject) => {
      const fn = this.https ? httpsRequest : httpRequest;
      let r: ClientRequest;
      let settled = false;
      const fail = (err: ClientError): void => {
        if (settled) return;
        settled = true;
        attempt.offAbort(onAbort);
        report('<error>');
        reject(err);
      };
      // Settle at once: a request still queued for a socket of a full pool emits no error until it gets one.
      const onAbort = (): void => {
        fail(attempt.reason!);
        r.destroy(attempt.reason);
      };
      try {
        r = fn({ ...this.target, path, method: req.method, headers, agent: streaming ? agents.streaming : agents.normal }, (res) => {
          if (settled) {
            res.destroy();
            return;
          }
          settled = true;
          attempt.offAbort(onAbort);
          report(res.statusCode ?? 0);
          if (this.options.onWarning && res.headers['warning'] !== undefined) {
            for (const w of parseWarningHeader(res.headers['warning'])) this.options.onWarning({ ...w, method: req.method, path: req.path });
          }
          resolve({ res, auth });
        });
      } catch (cause) {
        fail(connectionError(what, this.#credentials.source, cause));
        return;
      }
      attempt.onAbort(onAbort);
      r.on('error', (cause) => {
        if (cause instanceof ClientError) fail(cause);
        else if (attempt.reason) fail(attempt.reason);
        else fail(connectionError(what, this.#credentials.source, cause));
      });
      const send = (): void => {
        if (req.body !== undefined) r.write(req.body);
        r.end();
      };
      if (!fence) {
        send();
        return;
      }
      // A fenced write's bytes leave only once its socket is connected, right after the fence is checked
      // (nothing is written before end()): a process paused while connecting does not send it on resume.
      r.once('socket', (socket) => {
        const go = (): void => {
          const why = fence.revoked();
          if (why === undefined) return send();
          const err = fencedError(what, why);
          fail(err);
          r.destroy(err);
        };
        if (socket.connecting) socket.once(this.https ? 'secureConnect' : 'connect', go);
        else go();
      });
    });
  }

  close(): void {
    this.#agents?.normal.destroy();
    this.#agents?.streaming.destroy();
    this.#agents = undefined;
  }
}
