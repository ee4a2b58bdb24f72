/**
 * Authentication and authorization of HTTP callers by bearer token, as the
 * API server's delegated auth (and controller-runtime's secure metrics
 * filter) does: a TokenReview says who the token belongs to, a
 * SubjectAccessReview whether that user may `get` the non-resource URL
 * (`/metrics`). Decisions are cached by a hash of the token with a TTL;
 * concurrent checks of one token share one review. A secure metrics server
 * answers 401 without a valid token, 403 without permission, and serves
 * with both.
 */
import type { Client } from '@kubeloop/client';
import { describeError } from './errors.js';
import { silentLogger } from './logger.js';
import type { WebhookLogger } from './logger.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { createHash } = process.getBuiltinModule('node:crypto');

/** Options for {@link createTokenAuthorizer}. Only `client` is required. */
export interface TokenAuthorizerOptions {
  /** A client allowed to create TokenReviews and SubjectAccessReviews (ClusterRole rules on `authentication.k8s.io/tokenreviews` and `authorization.k8s.io/subjectaccessreviews`, verb `create`). */
  readonly client: Client;
  /** Audiences the token must be for. Default: none (the API server's own audiences). */
  readonly audiences?: readonly string[];
  /** How long an allow, a deny or an unauthenticated answer is reused, in ms. Errors are never cached. Default: 10 000 (the API server's delegated auth default). */
  readonly cacheTtlMs?: number;
  /** At most this many decisions are cached; the oldest go first. Default: 1024. */
  readonly maxCacheEntries?: number;
  /** How long a review may take, in ms. Default: 10 000. */
  readonly reviewTimeoutMs?: number;
  /** Where failed reviews are logged (never the token). Default: silent. */
  readonly log?: WebhookLogger;
}

/** The request attributes to authorize. */
export interface TokenAuthorizationRequest {
  /** The `Authorization` header as received (`Bearer <token>`), if any. */
  readonly authorization?: string | undefined;
  /** The non-resource URL path. Default: `/metrics`. */
  readonly path?: string;
  /** The verb: the HTTP method lower-cased (`get`). Default: `get`. */
  readonly verb?: string;
}

/** What to answer: 200 to serve, 401 without a valid token, 403 without permission, 500 when a review failed. */
export interface TokenAuthorizationDecision {
  readonly status: 200 | 401 | 403 | 500;
  /** Why, for a log line or the response body. Never holds the token. */
  readonly reason: string;
  /** The authenticated user, when known. */
  readonly user?: string;
}

/** Authorizes callers by bearer token. */
export interface TokenAuthorizer {
  /**
   * Decide whether the caller may `verb` the non-resource `path`. Never
   * rejects: a failed review is a 500 decision (not cached).
   *
   * @example
   * ```ts
   * http.createServer(async (req, res) => {
   *   const decision = await authorizer.authorize({ authorization: req.headers.authorization, path: '/metrics', verb: 'get' });
   *   if (decision.status !== 200) return void res.writeHead(decision.status).end(decision.reason);
   *   res.end('ok');
   * });
   * ```
   */
  authorize(request: TokenAuthorizationRequest, signal?: AbortSignal): Promise<TokenAuthorizationDecision>;
}

interface TokenReviewStatus {
  readonly authenticated?: boolean;
  readonly error?: string;
  readonly audiences?: readonly string[];
  readonly user?: { readonly username?: string; readonly uid?: string; readonly groups?: readonly string[]; readonly extra?: Readonly<Record<string, readonly string[]>> };
}

interface CacheEntry {
  readonly expires: number;
  readonly decision: TokenAuthorizationDecision;
}

/**
 * Create a token authorizer over the API server's TokenReview and
 * SubjectAccessReview APIs.
 *
 * @example
 * ```ts
 * import { createTokenAuthorizer } from '@kubeloop/webhook';
 *
 * const authorizer = createTokenAuthorizer({ client });
 * http.createServer(async (req, res) => {
 *   const decision = await authorizer.authorize({ authorization: req.headers.authorization, path: '/metrics', verb: 'get' });
 *   if (decision.status !== 200) return void res.writeHead(decision.status, { 'content-type': 'text/plain' }).end(`${decision.reason}\n`);
 *   res.end(await registry.metrics());
 * });
 * ```
 */
export function createTokenAuthorizer(options: TokenAuthorizerOptions): TokenAuthorizer {
  const { client } = options;
  const ttl = options.cacheTtlMs ?? 10_000;
  const maxEntries = options.maxCacheEntries ?? 1024;
  const timeoutMs = options.reviewTimeoutMs ?? 10_000;
  const log = options.log ?? silentLogger;
  const cache = new Map<string, CacheEntry>();
  const pending = new Map<string, Promise<TokenAuthorizationDecision>>();

  function remember(key: string, decision: TokenAuthorizationDecision): void {
    if (decision.status === 500 || ttl <= 0) return;
    cache.delete(key);
    cache.set(key, { expires: Date.now() + ttl, decision });
    while (cache.size > maxEntries) cache.delete(cache.keys().next().value!);
  }

  async function review(token: string, path: string, verb: string, signal: AbortSignal): Promise<TokenAuthorizationDecision> {
    let status: TokenReviewStatus | undefined;
    try {
      const tr = await client.create<{ apiVersion: string; kind: string; spec: object; status?: TokenReviewStatus }>(
        {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: { token, ...(options.audiences?.length ? { audiences: options.audiences } : {}) },
        },
        { signal },
      );
      status = tr.status;
    } catch (err) {
      log.error({ err: describeError(err) }, 'TokenReview failed');
      return { status: 500, reason: `the token could not be reviewed: ${describeError(err)}` };
    }
    if (!status?.authenticated || !status.user?.username) {
      return { status: 401, reason: `Unauthorized: ${status?.error ? status.error : 'the token is not valid'}` };
    }
    const user = status.user;
    const username = user.username!;
    let allowed = false;
    let reason = '';
    try {
      const sar = await client.create<{ apiVersion: string; kind: string; spec: object; status?: { allowed?: boolean; denied?: boolean; reason?: string; evaluationError?: string } }>(
        {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: username,
            ...(user.uid ? { uid: user.uid } : {}),
            ...(user.groups ? { groups: user.groups } : {}),
            ...(user.extra ? { extra: user.extra } : {}),
            nonResourceAttributes: { path, verb },
          },
        },
        { signal },
      );
      allowed = sar.status?.allowed === true;
      reason = sar.status?.reason ?? sar.status?.evaluationError ?? '';
    } catch (err) {
      log.error({ err: describeError(err), user: username }, 'SubjectAccessReview failed');
      return { status: 500, reason: `access could not be reviewed: ${describeError(err)}`, user: username };
    }
    if (!allowed) {
      return { status: 403, reason: `Forbidden: user "${username}" cannot ${verb} path "${path}"${reason ? ` (${reason})` : ''}`, user: username };
    }
    return { status: 200, reason: `user "${username}" may ${verb} path "${path}"`, user: username };
  }

  return {
    async authorize(request: TokenAuthorizationRequest, signal?: AbortSignal): Promise<TokenAuthorizationDecision> {
      const header = request.authorization ?? '';
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!match) return { status: 401, reason: header ? 'Unauthorized: the Authorization header is not "Bearer <token>"' : 'Unauthorized: no bearer token' };
      const token = match[1]!;
      const path = request.path ?? '/metrics';
      const verb = (request.verb ?? 'get').toLowerCase();
      const key = `${createHash('sha256').update(token).digest('base64')} ${verb} ${path}`;
      const hit = cache.get(key);
      if (hit && hit.expires > Date.now()) return hit.decision;
      if (hit) cache.delete(key);
      let shared = pending.get(key);
      if (!shared) {
        // One review per token at a time, with its own deadline: a caller giving up does not cancel the others.
        shared = review(token, path, verb, AbortSignal.timeout(timeoutMs))
          .then((decision) => {
            remember(key, decision);
            return decision;
          })
          .finally(() => pending.delete(key));
        pending.set(key, shared);
      }
      if (!signal) return shared;
      if (signal.aborted) return { status: 500, reason: 'the authorization check was cancelled' };
      return Promise.race([
        shared,
        new Promise<TokenAuthorizationDecision>((resolve) =>
          signal.addEventListener('abort', () => resolve({ status: 500, reason: 'the authorization check was cancelled' }), { once: true }),
        ),
      ]);
    },
  };
}
