/**
 * The HTTP transport every kubeloop request goes through: one keep-alive
 * agent per client, TLS and auth from a `@kubernetes/client-node` KubeConfig
 * (KUBECONFIG merging, in-cluster service accounts with token re-read, exec
 * and OIDC plugins, impersonation), client-side rate limiting, timeouts, and
 * Retry-After honoured on 429 and 5xx ("storage is (re)initializing").
 * Bodies are bytes and strings: no model classes, no per-object
 * deserialisation on hot paths.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { RequestOptions } from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { ClientError } from './errors.js';
import { TokenBucket, sleep } from './internal/rate-limiter.js';

/** Query parameters; `undefined` values are left out. */
export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

/** One request. */
export interface TransportRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Absolute path, e.g. `/api/v1/namespaces/default/pods`. */
  readonly path: string;
  readonly query?: Query;
  /** Default: `application/json`. */
  readonly accept?: string;
  /** Default when there is a body: `application/json`. */
  readonly contentType?: string;
  readonly body?: string;
  readonly signal?: AbortSignal;
  /** Overrides the transport's `timeoutMs` for this request (0: none). */
  readonly timeoutMs?: number;
}

/** A buffered response. */
export interface TransportResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** Called after every request (for `rest_client_requests_total` and logs). */
export interface RequestInfo {
  readonly method: string;
  readonly host: string;
  readonly path: string;
  /** HTTP status, or `'<error>'` when none was had. */
  readonly code: number | '<error>';
  readonly durationMs: number;
}

/** Options for {@link createTransport}. */
export interface TransportOptions {
  /** Sustained requests per second. Default: 20 (controller-runtime's). 0 turns rate limiting off. */
  readonly qps?: number;
  /** Requests allowed at once above `qps`. Default: 30. */
  readonly burst?: number;
  /** Timeout of a non-streaming request, ms. Default: 30 000. 0: none. */
  readonly timeoutMs?: number;
  /** Retries of an answer with Retry-After (429, 5xx). Default: 10, as client-go. */
  readonly maxRetries?: number;
  /** User-Agent header. Default: `kubeloop/<version> (node <version>)`. */
  readonly userAgent?: string;
  /** Observer of every finished request. Default: none. */
  readonly onRequest?: (info: RequestInfo) => void;
}

/**
 * Sends requests to one API server.
 *
 * @example
 * ```ts
 * const transport = createTransport(kubeConfig);
 * const res = await transport.request({ method: 'GET', path: '/version' });
 * console.log(JSON.parse(res.body).gitVersion);
 * ```
 */
export interface Transport {
  /** The API server's base URL. */
  readonly server: URL;
  /** Send a request and buffer the answer. Rejects only when there is no answer (ClientError Network/Aborted/ClientTimeout). */
  request(req: TransportRequest): Promise<TransportResponse>;
  /** Send a request and hand back the streaming answer (watches). The caller consumes or destroys it. */
  stream(req: TransportRequest): Promise<IncomingMessage>;
  /** Close idle keep-alive connections. */
  close(): void;
}

const VERSION = '0.1.0';

function encodeQuery(query: Query | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.append(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : '';
}

function retryAfter(headers: IncomingHttpHeaders): number | undefined {
  const value = headers['retry-after'];
  if (typeof value !== 'string') return undefined;
  const seconds = Number.parseInt(value, 10);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

/**
 * Create a transport for the current context of a KubeConfig.
 *
 * @example
 * ```ts
 * const kc = new KubeConfig();
 * kc.loadFromDefault();
 * const transport = createTransport(kc, { qps: 50, burst: 100 });
 * ```
 */
export function createTransport(kubeConfig: KubeConfig, options: TransportOptions = {}): Transport {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new ClientError('InvalidConfig', 'the kubeconfig has no current cluster (check current-context)');
  let server: URL;
  try {
    server = new URL(cluster.server);
  } catch (cause) {
    throw new ClientError('InvalidConfig', `the cluster server ${JSON.stringify(cluster.server)} is not a URL`, { cause });
  }
  return new HttpTransport(kubeConfig, server, options);
}

class HttpTransport implements Transport {
  private agent: HttpAgent | HttpsAgent | undefined;
  private agentReady: Promise<void> | undefined;
  private readonly limiter: TokenBucket | undefined;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly userAgent: string;
  private readonly https: boolean;
  /** Users with header-based auth (token, exec, OIDC, token files) need fresh headers per request. */
  private readonly headerAuth: boolean;

  constructor(
    private readonly kc: KubeConfig,
    readonly server: URL,
    private readonly options: TransportOptions,
  ) {
    const qps = options.qps ?? 20;
    this.limiter = qps > 0 ? new TokenBucket(qps, Math.max(1, options.burst ?? 30)) : undefined;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxRetries = options.maxRetries ?? 10;
    this.userAgent = options.userAgent ?? `kubeloop/${VERSION} (node ${process.version})`;
    this.https = server.protocol === 'https:';
    const user = kc.getCurrentUser();
    this.headerAuth = Boolean(user && (user.token || user.authProvider || user.exec || user.username || user.impersonateUser));
  }

  private ensureAgent(): Promise<void> {
    this.agentReady ??= (async () => {
      const tls: RequestOptions = {};
      try {
        await this.kc.applyToHTTPSOptions(tls);
      } catch (cause) {
        this.agentReady = undefined;
        throw new ClientError('InvalidConfig', `cannot use the kubeconfig's credentials: ${String(cause)}`, { cause });
      }
      const common = { keepAlive: true, maxSockets: 64, scheduling: 'lifo' as const };
      this.agent = this.https
        ? new HttpsAgent({
            ...common,
            ca: tls.ca,
            cert: tls.cert,
            key: tls.key,
            ...(tls.pfx ? { pfx: tls.pfx, passphrase: tls.passphrase } : {}),
            rejectUnauthorized: tls.rejectUnauthorized ?? true,
            ...(tls.servername ? { servername: tls.servername } : {}),
          })
        : new HttpAgent(common);
    })();
    return this.agentReady;
  }

  private async headers(req: TransportRequest): Promise<Record<string, string>> {
    const headers: Record<string, string> = { accept: req.accept ?? 'application/json', 'user-agent': this.userAgent };
    if (req.body !== undefined) {
      headers['content-type'] = req.contentType ?? 'application/json';
      // Node frames a DELETE body only when told its length (DELETE is not chunked by default).
      headers['content-length'] = String(Buffer.byteLength(req.body));
    }
    if (this.headerAuth) {
      const opts: RequestOptions = {};
      await this.kc.applyToHTTPSOptions(opts);
      for (const [k, v] of Object.entries(opts.headers ?? {})) if (typeof v === 'string') headers[k.toLowerCase()] = v;
    }
    return headers;
  }

  async request(req: TransportRequest): Promise<TransportResponse> {
    for (let attempt = 0; ; attempt++) {
      const res = await this.once(req, false);
      // Read with for-await: no listeners stay on the response (a pooled
      // keep-alive socket would otherwise keep the last body alive).
      const chunks: Buffer[] = [];
      try {
        for await (const chunk of res) chunks.push(chunk as Buffer);
      } catch (cause) {
        throw this.networkError(req, cause);
      }
      const body = Buffer.concat(chunks).toString('utf8');
      chunks.length = 0;
      const status = res.statusCode ?? 0;
      const wait = retryAfter(res.headers);
      if (wait !== undefined && (status === 429 || status >= 500) && attempt < this.maxRetries) {
        await sleep(Math.min(wait, 60) * 1000, req.signal).catch((cause: unknown) => {
          throw new ClientError('Aborted', `${req.method} ${req.path}: aborted while waiting to retry`, { cause });
        });
        continue;
      }
      return { status, headers: res.headers, body };
    }
  }

  stream(req: TransportRequest): Promise<IncomingMessage> {
    return this.once(req, true);
  }

  private async once(req: TransportRequest, streaming: boolean): Promise<IncomingMessage> {
    await this.ensureAgent();
    if (this.limiter) {
      await this.limiter.take(req.signal).catch((cause: unknown) => {
        throw new ClientError('Aborted', `${req.method} ${req.path}: aborted while rate limited`, { cause });
      });
    }
    const headers = await this.headers(req);
    const url = new URL(req.path + encodeQuery(req.query), this.server);
    const timeoutMs = req.timeoutMs ?? (streaming ? 0 : this.timeoutMs);
    const started = performance.now();
    const report = (code: number | '<error>'): void =>
      this.options.onRequest?.({ method: req.method, host: this.server.host, path: req.path, code, durationMs: performance.now() - started });
    return new Promise<IncomingMessage>((resolve, reject) => {
      const fn = this.https ? httpsRequest : httpRequest;
      const r = fn(url, { method: req.method, headers, agent: this.agent, ...(req.signal ? { signal: req.signal } : {}) }, (res) => {
        if (timer) clearTimeout(timer);
        report(res.statusCode ?? 0);
        resolve(res);
      });
      let timer: NodeJS.Timeout | undefined;
      if (timeoutMs > 0) {
        timer = setTimeout(() => {
          r.destroy(new ClientError('ClientTimeout', `${req.method} ${req.path}: no answer within ${timeoutMs} ms`));
        }, timeoutMs);
      }
      r.on('error', (cause) => {
        if (timer) clearTimeout(timer);
        report('<error>');
        if (cause instanceof ClientError) reject(cause);
        else if (req.signal?.aborted) reject(new ClientError('Aborted', `${req.method} ${req.path}: aborted`, { cause: req.signal.reason }));
        else reject(this.networkError(req, cause));
      });
      if (req.body !== undefined) r.write(req.body);
      r.end();
    });
  }

  private networkError(req: TransportRequest, cause: unknown): ClientError {
    const message = cause instanceof Error ? cause.message : String(cause);
    return new ClientError('Network', `${req.method} ${req.path}: ${message}`, { cause });
  }

  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
    this.agentReady = undefined;
  }
}

/** Load a KubeConfig the way kubectl does (KUBECONFIG merge, ~/.kube/config, in-cluster), with a typed error. */
export function loadKubeConfig(path?: string): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (path) kc.loadFromFile(path);
    else kc.loadFromDefault();
  } catch (cause) {
    throw new ClientError('InvalidConfig', `cannot load kubeconfig${path ? ` ${path}` : ''}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
  if (!kc.getCurrentCluster()) {
    throw new ClientError('InvalidConfig', `kubeconfig${path ? ` ${path}` : ''} has no current cluster (current-context: ${JSON.stringify(kc.getCurrentContext())})`);
  }
  return kc;
}
