/**
 * Credentials of a transport, from a RestConfig or a client-node KubeConfig:
 * the TLS material (read once, when the transport is made: a missing file is
 * an error then, naming it) and the per-request headers (a bearer token, a
 * token file re-read every minute, basic auth, an exec plugin's cached
 * credential, an oidc ID token, impersonation). Auth providers kubeloop does
 * not implement (gcp, azure) are delegated to `@kubernetes/client-node`,
 * imported only when a config names one.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { ClientError } from '../errors.js';
import type { ExecConfig, KubeConfigLike, RestConfig } from '../kubeconfig.js';
import { ExecCredentialSource } from './exec-credential.js';
import type { ExecResult } from './exec-credential.js';
import { OidcCredentialSource } from './oidc-credential.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { readFile, readFileSync } = process.getBuiltinModule('node:fs');

/** TLS options for an https agent. */
export interface TlsMaterial {
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly rejectUnauthorized: boolean;
  readonly servername?: string;
}

/** What one request authenticates with. */
export interface AuthState {
  readonly headers: Readonly<Record<string, string | string[]>>;
  /** Changes when an exec plugin hands out a new client certificate: agents made for an older one are replaced. */
  readonly tlsGeneration: number;
  readonly tls: TlsMaterial;
  /** The exec credential used, to drop it on a 401. */
  readonly exec?: ExecResult;
  /** The oidc ID token used, to refresh it after a 401. */
  readonly oidc?: string;
}

const TOKEN_FILE_REFRESH_MS = 60_000;

/** True for a `@kubernetes/client-node` KubeConfig (duck-typed: it is never imported here). */
export function isClientNodeKubeConfig(value: unknown): value is KubeConfig {
  return typeof value === 'object' && value !== null && typeof (value as { getCurrentCluster?: unknown }).getCurrentCluster === 'function';
}

function readPem(file: string | undefined, what: string, source: string): string | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch (cause) {
    throw new ClientError('InvalidConfig', `${source}: cannot read the ${what} ${file}: ${(cause as Error).message}`, { cause });
  }
}

function fromBase64(data: string | undefined): string | undefined {
  return data ? Buffer.from(data, 'base64').toString('utf8') : undefined;
}

/**
 * Turn a client-node KubeConfig's current context into a RestConfig. Its
 * `tokenFile` auth provider (what client-node's in-cluster loading makes) is
 * read as a token file; other auth providers stay with the KubeConfig.
 */
export function restConfigOf(kc: KubeConfig): { config: RestConfig; delegate: KubeConfig | undefined } {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new ClientError('InvalidConfig', 'the kubeconfig has no current cluster (check current-context)');
  const user = kc.getCurrentUser();
  const contextName = kc.getCurrentContext();
  // client-node's loadFromDefault() falls back to this when it found nothing at all.
  if (cluster.name === 'cluster' && cluster.server === 'http://localhost:8080' && user?.name === 'user' && contextName === 'loaded-context') {
    throw new ClientError(
      'InvalidConfig',
      'no kubeconfig found: the KubeConfig is client-node\'s empty default (http://localhost:8080), which means KUBECONFIG, ~/.kube/config and the in-cluster service account were all missing',
    );
  }
  const ctx = kc.getContextObject(contextName);
  const source = `kubeconfig (context ${JSON.stringify(contextName)})`;
  const provider = user?.authProvider as { name?: string; config?: Record<string, string> } | undefined;
  const tokenFile = provider?.name === 'tokenFile' ? provider.config?.['tokenFile'] : undefined;
  const delegate = provider && provider.name !== 'tokenFile' ? kc : undefined;
  const exec = user?.exec as (Omit<ExecConfig, 'command'> & { command?: string }) | undefined;
  if (exec && !exec.command) throw new ClientError('InvalidConfig', `${source}: user ${JSON.stringify(user?.name)} has an exec section without a command`);
  const tls = {
    ...(cluster.caData ? { caData: fromBase64(cluster.caData)! } : cluster.caFile ? { caFile: cluster.caFile } : {}),
    ...(user?.certData ? { certData: fromBase64(user.certData)! } : user?.certFile ? { certFile: user.certFile } : {}),
    ...(user?.keyData ? { keyData: fromBase64(user.keyData)! } : user?.keyFile ? { keyFile: user.keyFile } : {}),
    ...(cluster.skipTLSVerify ? { insecureSkipTLSVerify: true } : {}),
    ...(cluster.tlsServerName ? { serverName: cluster.tlsServerName } : {}),
  };
  const auth = {
    ...(user?.token ? { token: user.token } : {}),
    ...(tokenFile ? { tokenFile } : {}),
    ...(user?.username ? { username: user.username } : {}),
    ...(user?.password ? { password: user.password } : {}),
    ...(exec?.command ? { exec: exec as ExecConfig } : {}),
    ...(delegate && provider?.name ? { authProvider: { name: provider.name, config: provider.config ?? {} } } : {}),
  };
  const config: RestConfig = {
    server: cluster.server,
    source,
    context: contextName,
    ...(ctx?.namespace ? { namespace: ctx.namespace } : {}),
    tls,
    auth,
    ...(user?.impersonateUser ? { impersonate: { user: user.impersonateUser } } : {}),
    ...(cluster.proxyUrl ? { proxyUrl: cluster.proxyUrl } : {}),
  };
  return { config, delegate };
}

export class Credentials {
  readonly server: URL;
  readonly config: RestConfig;
  readonly source: string;
  private readonly staticTls: TlsMaterial;
  private readonly staticHeaders: Record<string, string | string[]>;
  private readonly exec: ExecCredentialSource | undefined;
  private delegate: KubeConfig | undefined;
  private delegateLoading: Promise<KubeConfig> | undefined;
  private readonly needsAuthProvider: boolean;
  private readonly oidc: OidcCredentialSource | undefined;
  private token: string | undefined;
  /** The token file in use (none when a token is given outright). */
  private readonly tokenFile: string | undefined;
  private tokenReadAt = 0;
  private tokenReading: Promise<void> | undefined;
  private tlsGeneration = 0;
  private execCert: ExecResult | undefined;
  private execTls: TlsMaterial | undefined;
  /** What {@link current} hands out, and the token it was made for. */
  private fixed: { readonly token: string | undefined; readonly state: AuthState } | undefined;

  constructor(input: KubeConfigLike) {
    let delegate: KubeConfig | undefined;
    let config: RestConfig;
    if (isClientNodeKubeConfig(input)) ({ config, delegate } = restConfigOf(input));
    else if (typeof input === 'object' && input !== null && typeof (input).server === 'string') config = input;
    else throw new ClientError('InvalidConfig', 'a kubeConfig is needed: a RestConfig (loadKubeConfig()) or a @kubernetes/client-node KubeConfig');
    this.config = config;
    this.delegate = delegate;
    const source = config.source ?? config.server;
    this.source = source;
    try {
      this.server = new URL(config.server);
    } catch (cause) {
      throw new ClientError('InvalidConfig', `${source}: server ${JSON.stringify(config.server)} is not a URL`, { cause });
    }
    if (this.server.protocol !== 'https:' && this.server.protocol !== 'http:') {
      throw new ClientError('InvalidConfig', `${source}: server ${JSON.stringify(config.server)} must be an http:// or https:// URL`);
    }
    const tls = config.tls ?? {};
    const auth = config.auth ?? {};
    this.staticTls = {
      ...(tls.caData ? { ca: tls.caData } : tls.caFile ? { ca: readPem(tls.caFile, 'CA file', source)! } : {}),
      ...(tls.certData ? { cert: tls.certData } : tls.certFile ? { cert: readPem(tls.certFile, 'client certificate', source)! } : {}),
      ...(tls.keyData ? { key: tls.keyData } : tls.keyFile ? { key: readPem(tls.keyFile, 'client key', source)! } : {}),
      rejectUnauthorized: !tls.insecureSkipTLSVerify,
      ...(tls.serverName ? { servername: tls.serverName } : {}),
    };
    if (Boolean(this.staticTls.cert) !== Boolean(this.staticTls.key)) {
      throw new ClientError('InvalidConfig', `${source}: a client certificate needs a client key and a key needs a certificate`);
    }
    this.staticHeaders = impersonationHeaders(config);
    this.tokenFile = auth.token ? undefined : auth.tokenFile;
    if (auth.token) this.token = auth.token;
    else if (auth.tokenFile) {
      this.token = readToken(auth.tokenFile, source);
      this.tokenReadAt = Date.now();
    } else if (auth.username !== undefined && auth.password !== undefined) {
      this.staticHeaders['authorization'] = `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
    }
    this.exec =
      !this.token && auth.exec
        ? new ExecCredentialSource(auth.exec, {
            server: config.server,
            ...(this.staticTls.ca ? { caData: this.staticTls.ca } : {}),
            ...(tls.insecureSkipTLSVerify ? { insecureSkipTLSVerify: true } : {}),
            ...(tls.serverName ? { serverName: tls.serverName } : {}),
            ...(config.proxyUrl ? { proxyUrl: config.proxyUrl } : {}),
          }, source)
        : undefined;
    const provider = !this.token && !this.exec ? auth.authProvider : undefined;
    // oidc is done here (client-node's fails every refresh); gcp and azure go to client-node.
    this.oidc = provider?.name === 'oidc' ? new OidcCredentialSource(provider.config, source) : undefined;
    if (this.oidc) this.delegate = undefined;
    this.needsAuthProvider = Boolean(provider) && !this.oidc;
  }

  /**
   * The headers and TLS material for the next request when nothing has to be
   * awaited for them (no exec plugin or auth provider, no token file due for
   * a re-read), else undefined: {@link get} then. The same object while the
   * token stays the same, so a request pays no promise and no copy for it.
   */
  current(): AuthState | undefined {
    if (this.exec || this.oidc || this.needsAuthProvider || (this.tokenFile && Date.now() - this.tokenReadAt > TOKEN_FILE_REFRESH_MS)) return undefined;
    if (!this.fixed || this.fixed.token !== this.token) {
      const headers: Record<string, string | string[]> = { ...this.staticHeaders };
      if (this.token) headers['authorization'] = `Bearer ${this.token}`;
      this.fixed = { token: this.token, state: { headers, tlsGeneration: this.tlsGeneration, tls: this.staticTls } };
    }
    return this.fixed.state;
  }

  /** The headers and TLS material for the next request. */
  async get(): Promise<AuthState> {
    const now = this.current();
    if (now) return now;
    const headers: Record<string, string | string[]> = { ...this.staticHeaders };
    let exec: ExecResult | undefined;
    let oidc: string | undefined;
    if (this.tokenFile && Date.now() - this.tokenReadAt > TOKEN_FILE_REFRESH_MS) await this.rereadToken(this.tokenFile);
    if (this.token) headers['authorization'] = `Bearer ${this.token}`;
    else if (this.exec) {
      exec = await this.exec.get();
      if (exec.token) headers['authorization'] = `Bearer ${exec.token}`;
      if (exec.cert && exec.key && exec !== this.execCert) {
        if (!this.execTls || this.execTls.cert !== exec.cert || this.execTls.key !== exec.key) {
          this.execTls = { ...this.staticTls, cert: exec.cert, key: exec.key };
          this.tlsGeneration++;
        }
        this.execCert = exec;
      }
    } else if (this.oidc) {
      oidc = await this.oidc.get();
      headers['authorization'] = `Bearer ${oidc}`;
    } else if (this.needsAuthProvider) {
      const kc = await this.authProvider();
      const opts: { headers?: Record<string, unknown> } = {};
      try {
        await kc.applyToHTTPSOptions(opts);
      } catch (cause) {
        throw new ClientError('InvalidConfig', `${this.source}: auth provider ${this.config.auth?.authProvider?.name}: ${(cause as Error).message}`, { cause });
      }
      for (const [k, v] of Object.entries(opts.headers ?? {})) if (typeof v === 'string') headers[k.toLowerCase()] = v;
    }
    return { headers, tlsGeneration: this.tlsGeneration, tls: this.execTls ?? this.staticTls, ...(exec ? { exec } : {}), ...(oidc ? { oidc } : {}) };
  }

  /** The server answered 401: drop a cached exec credential and re-read a token file on the next request. */
  unauthorized(state: AuthState): void {
    if (state.exec) this.exec?.invalidate(state.exec);
    if (state.oidc) this.oidc?.invalidate(state.oidc);
    if (this.tokenFile) this.tokenReadAt = 0;
  }

  private rereadToken(file: string): Promise<void> {
    this.tokenReading ??= new Promise<string>((resolve, reject) => readFile(file, 'utf8', (err, text) => (err ? reject(err) : resolve(text))))
      .then(
        (text) => {
          const t = text.trim();
          if (t) this.token = t;
        },
        () => undefined, // keep the last token, as client-go does, and try again next time
      )
      .finally(() => {
        this.tokenReadAt = Date.now();
        this.tokenReading = undefined;
      });
    return this.tokenReading;
  }

  private authProvider(): Promise<KubeConfig> {
    if (this.delegate) return Promise.resolve(this.delegate);
    this.delegateLoading ??= (async () => {
      const { KubeConfig: ClientNodeKubeConfig } = await import('@kubernetes/client-node');
      const c = this.config;
      const provider = c.auth!.authProvider!;
      const kc = new ClientNodeKubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'cluster', server: c.server, skipTLSVerify: Boolean(c.tls?.insecureSkipTLSVerify) }],
        users: [{ name: 'user', authProvider: { name: provider.name, config: { ...provider.config } } }],
        contexts: [{ name: 'context', cluster: 'cluster', user: 'user' }],
        currentContext: 'context',
      });
      this.delegate = kc;
      return kc;
    })();
    return this.delegateLoading;
  }
}

function readToken(file: string, source: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    throw new ClientError('InvalidConfig', `${source}: cannot read the token file ${file}: ${(cause as Error).message}`, { cause });
  }
  const token = text.trim();
  if (!token) throw new ClientError('InvalidConfig', `${source}: the token file ${file} is empty`);
  return token;
}

function impersonationHeaders(config: RestConfig): Record<string, string | string[]> {
  const h: Record<string, string | string[]> = {};
  const imp = config.impersonate;
  if (!imp) return h;
  if (imp.user) h['impersonate-user'] = imp.user;
  if (imp.uid) h['impersonate-uid'] = imp.uid;
  if (imp.groups?.length) h['impersonate-group'] = [...imp.groups];
  for (const [key, values] of Object.entries(imp.extra ?? {})) {
    // client-go escapes the key as a URL path segment so any key fits a header name.
    h[`impersonate-extra-${encodeURIComponent(key)}`] = [...values];
  }
  if (!imp.user && (imp.groups?.length || imp.uid || imp.extra)) {
    throw new ClientError('InvalidConfig', `${config.source ?? config.server}: impersonating groups, a uid or extra fields needs a user to impersonate too`);
  }
  return h;
}
