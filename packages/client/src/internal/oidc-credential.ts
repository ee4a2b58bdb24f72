/**
 * The `oidc` auth provider, as client-go's plugin does it: the kubeconfig's
 * `id-token` is sent as the bearer token until it expires; then, with a
 * `refresh-token`, the issuer's discovery document names the token
 * endpoint and a refresh-token grant gets a new ID token (kept in memory).
 * Done here rather than by `@kubernetes/client-node`, whose oidc provider
 * (through 2.0.1) hands openid-client a string where it needs a URL and
 * fails every refresh with `"server" must be an instance of URL`.
 */
import { ClientError } from '../errors.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { readFileSync } = process.getBuiltinModule('node:fs');

/** Seconds before `exp` that a token counts as expired (golang.org/x/oauth2's expiryDelta). */
const EXPIRY_SKEW_S = 10;
const TIMEOUT_MS = 30_000;
const MAX_BODY = 1 << 20;

/** The `exp` claim of a JWT, in seconds, or undefined when it has none or is not a JWT. */
function expiryOf(jwt: string): number | undefined {
  const payload = jwt.split('.')[1];
  if (!payload) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? exp : undefined;
  } catch {
    return undefined;
  }
}

export class OidcCredentialSource {
  private idToken: string | undefined;
  private refreshToken: string | undefined;
  private inflight: Promise<string> | undefined;
  private readonly ca: string | undefined;

  constructor(
    private readonly config: Readonly<Record<string, string>>,
    private readonly where: string,
  ) {
    this.idToken = config['id-token'] || undefined;
    this.refreshToken = config['refresh-token'] || undefined;
    const caData = config['idp-certificate-authority-data'];
    const caFile = config['idp-certificate-authority'];
    if (caData) this.ca = Buffer.from(caData, 'base64').toString('utf8');
    else if (caFile) {
      try {
        this.ca = readFileSync(caFile, 'utf8');
      } catch (cause) {
        throw new ClientError('InvalidConfig', `${where}: oidc idp-certificate-authority ${caFile} cannot be read: ${(cause as Error).message}`, { cause });
      }
    }
    if (!this.idToken && !this.refreshToken) throw new ClientError('InvalidConfig', `${where}: the oidc auth provider has neither an id-token nor a refresh-token`);
  }

  /** The ID token to send, refreshed first when it has expired. */
  get(): Promise<string> {
    const token = this.idToken;
    if (token) {
      const exp = expiryOf(token);
      if (exp === undefined || Date.now() / 1000 < exp - EXPIRY_SKEW_S) return Promise.resolve(token);
    }
    this.inflight ??= this.refresh().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  /** The server answered 401 to `token`: refresh before the next request (when there is a refresh token). */
  invalidate(token: string): void {
    if (this.idToken === token && this.refreshToken) this.idToken = undefined;
  }

  private async refresh(): Promise<string> {
    const c = this.config;
    const issuer = c['idp-issuer-url'];
    const clientId = c['client-id'];
    if (!this.refreshToken || !issuer || !clientId) {
      throw new ClientError('InvalidConfig', `${this.where}: the oidc id-token has expired and cannot be refreshed (a refresh needs refresh-token, idp-issuer-url and client-id): log in again`);
    }
    let base: URL;
    try {
      base = new URL(issuer);
    } catch (cause) {
      throw new ClientError('InvalidConfig', `${this.where}: oidc idp-issuer-url ${JSON.stringify(issuer)} is not a URL`, { cause });
    }
    const discovery = new URL(`${base.href.replace(/\/+$/, '')}/.well-known/openid-configuration`);
    const doc = await this.call('GET', discovery, undefined);
    const tokenEndpoint = (doc as { token_endpoint?: unknown }).token_endpoint;
    if (typeof tokenEndpoint !== 'string') throw new ClientError('InvalidConfig', `${this.where}: the oidc issuer's discovery document (${discovery.href}) has no token_endpoint`);
    let endpoint: URL;
    try {
      endpoint = new URL(tokenEndpoint);
    } catch (cause) {
      throw new ClientError('InvalidConfig', `${this.where}: the oidc issuer's token_endpoint ${JSON.stringify(tokenEndpoint)} is not a URL`, { cause });
    }
    const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: this.refreshToken, client_id: clientId });
    if (c['client-secret']) form.set('client_secret', c['client-secret']);
    const answer = (await this.call('POST', endpoint, form.toString())) as { id_token?: unknown; refresh_token?: unknown };
    if (typeof answer.id_token !== 'string' || answer.id_token === '') {
      throw new ClientError('InvalidConfig', `${this.where}: the oidc token endpoint answered the refresh without an id_token`);
    }
    this.idToken = answer.id_token;
    if (typeof answer.refresh_token === 'string' && answer.refresh_token !== '') this.refreshToken = answer.refresh_token;
    return answer.id_token;
  }

  /** One request to the issuer, JSON back; bounded in time and size. Error bodies are not quoted (the issuer's answer stays out of messages). */
  private call(method: 'GET' | 'POST', url: URL, body: string | undefined): Promise<unknown> {
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      return Promise.reject(new ClientError('InvalidConfig', `${this.where}: oidc: ${url.href} is not an http(s) URL`));
    }
    const request = url.protocol === 'https:' ? process.getBuiltinModule('node:https').request : process.getBuiltinModule('node:http').request;
    return new Promise((resolve, reject) => {
      const fail = (why: string, cause?: unknown): void => reject(new ClientError('InvalidConfig', `${this.where}: oidc ${method} ${url.origin}${url.pathname}: ${why}`, cause === undefined ? {} : { cause }));
      const req = request(
        url,
        {
          method,
          timeout: TIMEOUT_MS,
          headers: { accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) }) },
          ...(this.ca ? { ca: this.ca } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_BODY) {
              res.destroy();
              fail(`the answer is larger than ${MAX_BODY} bytes`);
            } else chunks.push(chunk);
          });
          res.on('error', (err) => fail(err.message, err));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            if (status < 200 || status > 299) return fail(`answered ${status}`);
            try {
              resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
            } catch (cause) {
              fail('the answer is not JSON', cause);
            }
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_MS / 1000} s`)));
      req.on('error', (err) => fail(err.message, err));
      req.end(body);
    });
  }
}
