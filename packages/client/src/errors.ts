/**
 * The error family of `@kubeloop/client`: every failure is a `ClientError`
 * with a discriminated `reason`. Errors the API server answered carry its
 * Status (code, reason, message, details); the guards below read either.
 */

/** A `metav1.Status` as the API server sends it. */
export interface Status {
  readonly kind?: 'Status';
  readonly apiVersion?: string;
  readonly status?: 'Success' | 'Failure';
  readonly message?: string;
  readonly reason?: string;
  readonly code?: number;
  readonly details?: {
    readonly name?: string;
    readonly group?: string;
    readonly kind?: string;
    readonly uid?: string;
    readonly causes?: readonly { readonly reason?: string; readonly message?: string; readonly field?: string }[];
    readonly retryAfterSeconds?: number;
  };
}

/** Why a client call failed. */
export type ClientErrorReason =
  // answered by the server (metav1.StatusReason), or derived from the HTTP code
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'Forbidden'
  | 'Unauthorized'
  | 'Gone'
  | 'Expired'
  | 'TooManyRequests'
  | 'BadRequest'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'UnsupportedMediaType'
  | 'RequestEntityTooLarge'
  | 'ServerTimeout'
  | 'Timeout'
  | 'InternalError'
  | 'ServiceUnavailable'
  | 'Unknown'
  // raised on this side
  /** The request could not be sent or the connection failed (refused, reset, DNS). */
  | 'Network'
  /**
   * The TLS handshake failed: the server's certificate is not trusted by the
   * kubeconfig's CA (or names another host), or the client certificate or key
   * cannot be used. The message says which and what to check.
   */
  | 'TLS'
  /** An answer or one watch line was larger than the transport's `maxResponseBytes` / the watch's `maxLineBytes`. */
  | 'ResponseTooLarge'
  /** The caller's AbortSignal fired. */
  | 'Aborted'
  /** The request timed out on the client (`timeoutMs`). */
  | 'ClientTimeout'
  /** A response or watch line that is not what the API promises (not JSON, wrong shape). */
  | 'Decode'
  /** Bad input caught before any request: missing name, namespace on a cluster-scoped kind, unknown kind. */
  | 'InvalidRequest'
  /** The kubeconfig cannot be used (missing, malformed, no current cluster, a credential file or plugin that fails), or Node.js is too old. */
  | 'InvalidConfig'
  /**
   * A kubeconfig read from an untrusted source (a Secret) asks for something
   * its `KubeconfigPolicy` does not allow: an exec plugin, an auth provider,
   * a local file, a proxy, skipping TLS checks, the host's own API server or
   * a metadata address. `field` names it; the message says how to allow it.
   */
  | 'PolicyRefused'
  /** An option of `createClient` has the wrong shape or value; the message names the option and what it expects. */
  | 'InvalidOptions'
  /**
   * A cached read of a kind the cache has no informer for, from a cache told
   * not to start one on a read (`startInformersOnRead: false`): the message
   * names the kind and the ways to cache it.
   */
  | 'NotCached'
  /** The API server answered with a Warning header and the transport was told to refuse those (`warningsAsErrors`). */
  | 'Warning'
  /**
   * A write made under a revoked write fence (`runFenced`): not sent, or cut
   * in flight (a sharded reconcile whose bucket moved on, leader-only work
   * after its term ended). The message says why the fence was revoked.
   */
  | 'Fenced';

const BRAND = Symbol.for('@kubeloop/client/ClientError');

const REASON_BY_CODE: Record<number, ClientErrorReason> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Gone',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'ServerTimeout',
};

const KNOWN_REASONS = new Set<string>([...Object.values(REASON_BY_CODE), 'AlreadyExists', 'Expired', 'Timeout', 'ServerTimeout', 'Unknown']);

/**
 * A failed client call.
 *
 * @example
 * ```ts
 * try {
 *   await client.get(ConfigMap, { namespace: 'default', name: 'missing' });
 * } catch (err) {
 *   if (isNotFound(err)) return undefined;
 *   throw err;
 * }
 * ```
 */
export class ClientError extends Error {
  override readonly name = 'ClientError';
  readonly reason: ClientErrorReason;
  /** HTTP status, or 0 when no response was had. */
  readonly code: number;
  /** The server's Status, when it sent one. */
  readonly status: Status | undefined;
  /** Seconds the server asked us to wait (Retry-After or details.retryAfterSeconds). */
  readonly retryAfterSeconds: number | undefined;
  /** For `PolicyRefused`: the kubeconfig field refused (`users["eu-1"].exec.command`, `clusters["eu-1"].proxy-url`...). */
  readonly field: string | undefined;
  readonly [BRAND] = true;

  constructor(
    reason: ClientErrorReason,
    message: string,
    options: { code?: number; status?: Status; cause?: unknown; retryAfterSeconds?: number; field?: string } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
    this.code = options.code ?? 0;
    this.status = options.status;
    this.retryAfterSeconds = options.retryAfterSeconds ?? options.status?.details?.retryAfterSeconds;
    this.field = options.field;
  }

  /** Build the error for a non-2xx answer, reading a Status body when there is one. */
  static fromResponse(method: string, path: string, code: number, body: string, retryAfterSeconds?: number): ClientError {
    let status: Status | undefined;
    try {
      const parsed = JSON.parse(body) as Status;
      if (parsed && parsed.kind === 'Status') status = parsed;
    } catch {
      /* not JSON: keep the text in the message */
    }
    const serverReason = status?.reason;
    const reason: ClientErrorReason =
      serverReason && KNOWN_REASONS.has(serverReason) ? (serverReason as ClientErrorReason) : (REASON_BY_CODE[code] ?? 'Unknown');
    const detail = status?.message ?? body.slice(0, 500).trim();
    return new ClientError(reason, `${method} ${path}: ${code} ${reason}${detail ? `: ${detail}` : ''}`, {
      code,
      ...(status ? { status } : {}),
      ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
    });
  }
}

/** True for any {@link ClientError}, even one from another copy of this package. */
export function isClientError(value: unknown): value is ClientError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

const is =
  (...reasons: ClientErrorReason[]) =>
  (value: unknown): value is ClientError =>
    isClientError(value) && reasons.includes(value.reason);

/** 404, or a Status with reason NotFound. */
export const isNotFound = is('NotFound');
/** 409 AlreadyExists (a create of a name that exists). */
export const isAlreadyExists = is('AlreadyExists');
/** 409 Conflict (a stale resourceVersion, or a server-side apply conflict). */
export const isConflict = is('Conflict');
/** 410 Gone or reason Expired (a resourceVersion too old to list or watch from). */
export const isGone = is('Gone', 'Expired');
/** 403 Forbidden (RBAC). */
export const isForbidden = is('Forbidden');
/** 401 Unauthorized. */
export const isUnauthorized = is('Unauthorized');
/** 422 Invalid (validation failed). */
export const isInvalid = is('Invalid');
/** 429 TooManyRequests (API priority and fairness, or a rate limit). */
export const isTooManyRequests = is('TooManyRequests');
/** 504, or reason ServerTimeout / Timeout. */
export const isTimeout = is('ServerTimeout', 'Timeout', 'ClientTimeout');
/** 500 InternalError or 503 ServiceUnavailable. */
export const isServerError = is('InternalError', 'ServiceUnavailable');
/** No response at all: connection refused, reset, TLS failure (`Network` or `TLS`). */
export const isNetworkError = is('Network', 'TLS');
/** The TLS handshake failed (untrusted or mismatched server certificate, unusable client certificate). */
export const isTLSError = is('TLS');
/** An answer or a watch line passed its size limit. */
export const isResponseTooLarge = is('ResponseTooLarge');
/**
 * A write refused or cut because its write fence was revoked (a sharded
 * reconcile whose bucket moved on, leader-only work after its term ended).
 *
 * @example
 * ```ts
 * try { await client.update(disk); } catch (err) { if (isFenced(err)) return; throw err; }
 * ```
 */
export const isFenced = is('Fenced');
/** The kubeconfig (or the runtime) cannot be used: see the message for the file or setting. */
export const isInvalidConfig = is('InvalidConfig');
/**
 * A kubeconfig from the cluster asked for something its `KubeconfigPolicy`
 * does not allow (`field` names it).
 *
 * @example
 * ```ts
 * try {
 *   kubeConfigFromText(Buffer.from(secret.data['kubeconfig']!, 'base64').toString('utf8'), { source: 'Secret fleet-system/eu-1 key kubeconfig' });
 * } catch (err) {
 *   if (isPolicyRefused(err)) console.error(`refused ${err.field}: ${err.message}`);
 * }
 * ```
 */
export const isPolicyRefused = is('PolicyRefused');
