/**
 * Where to connect and how to authenticate, loaded the way kubectl and
 * controller-runtime do it, without loading `@kubernetes/client-node`: a
 * kubeconfig file (or a KUBECONFIG list, merged), the in-cluster service
 * account, or `~/.kube/config`, resolved for one context into a
 * {@link RestConfig} (client-go's `rest.Config`).
 */
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { ClientError } from './errors.js';
import { mergeKubeconfigs, parseKubeconfig, readKubeconfig } from './internal/kubeconfig-file.js';
import type { FileCluster, FileExec, FileUser, MergedKubeconfig } from './internal/kubeconfig-file.js';
import { checkKubeconfigPolicy, enforceKubeconfigPolicy } from './kubeconfig-policy.js';
import type { KubeconfigPolicy } from './kubeconfig-policy.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { existsSync, readFileSync, statSync } = process.getBuiltinModule('node:fs');

/**
 * An exec credential plugin (kubeconfig `users[].user.exec`): a command that
 * prints an `ExecCredential` (a token, or a client certificate and key),
 * cached until its `expirationTimestamp`.
 *
 * @example
 * ```ts
 * const exec: ExecConfig = { apiVersion: 'client.authentication.k8s.io/v1', command: 'aws', args: ['eks', 'get-token', '--cluster-name', 'prod'] };
 * ```
 */
export interface ExecConfig {
  /** `client.authentication.k8s.io/v1` or `/v1beta1`. Default: v1beta1 (as client-go, when a kubeconfig leaves it out). */
  readonly apiVersion?: string;
  /** The program: a name looked up on PATH, or a path (relative paths with a `/` are resolved against the kubeconfig's folder). */
  readonly command: string;
  /** Default: none. */
  readonly args?: readonly string[];
  /** Added to this process's environment for the plugin. Default: none. */
  readonly env?: readonly { readonly name: string; readonly value: string }[];
  /** Shown when the command is not found. */
  readonly installHint?: string;
  /** Pass the cluster (server, CA) to the plugin in `KUBERNETES_EXEC_INFO`. Default: false. */
  readonly provideClusterInfo?: boolean;
  /** `Never`, `IfAvailable` or `Always`; kubeloop never has a terminal to offer, so `Always` is an error. Default: `IfAvailable`. */
  readonly interactiveMode?: string;
}

/**
 * TLS settings of a {@link RestConfig}. `*Data` fields hold PEM text; file
 * fields hold absolute paths, read when a transport is made.
 *
 * @example
 * ```ts
 * const tls: TLSConfig = { caFile: '/etc/kubernetes/ca.crt', certFile: '/etc/me.crt', keyFile: '/etc/me.key' };
 * ```
 */
export interface TLSConfig {
  /** CA bundle (PEM) trusted for the server. Default: Node's built-in roots. */
  readonly caData?: string;
  /** A file holding the CA bundle (PEM), read when the transport is made. */
  readonly caFile?: string;
  /** Client certificate (PEM). */
  readonly certData?: string;
  /** A file holding the client certificate (PEM). */
  readonly certFile?: string;
  /** Client key (PEM). */
  readonly keyData?: string;
  /** A file holding the client key (PEM). */
  readonly keyFile?: string;
  /** Do not check the server's certificate. Default: false. */
  readonly insecureSkipTLSVerify?: boolean;
  /** Name to check the server's certificate against (SNI). Default: the server URL's host. */
  readonly serverName?: string;
}

/**
 * How requests authenticate, besides a client certificate. At most one of
 * token / tokenFile / basic / exec / authProvider is used, in that order.
 *
 * @example
 * ```ts
 * const auth: AuthConfig = { tokenFile: '/var/run/secrets/tokens/operator' };
 * ```
 */
export interface AuthConfig {
  /** A bearer token. */
  readonly token?: string;
  /** A file holding a bearer token, re-read every minute (projected service-account tokens rotate). */
  readonly tokenFile?: string;
  /** Basic auth: the user name. */
  readonly username?: string;
  /** Basic auth: the password. */
  readonly password?: string;
  /** An exec credential plugin. */
  readonly exec?: ExecConfig;
  /**
   * A legacy auth provider: `oidc` is done here (the `id-token` until it
   * expires, then a refresh-token grant at `idp-issuer-url`); `gcp` and
   * `azure` by `@kubernetes/client-node`, loaded only then.
   */
  readonly authProvider?: { readonly name: string; readonly config: Readonly<Record<string, string>> };
}

/**
 * Impersonation headers (`Impersonate-User`, `-Uid`, `-Group`, `-Extra-*`).
 *
 * @example
 * ```ts
 * const impersonate: ImpersonationConfig = { user: 'jane', groups: ['team-a'] };
 * ```
 */
export interface ImpersonationConfig {
  /** `Impersonate-User`. */
  readonly user?: string;
  /** `Impersonate-Uid`. */
  readonly uid?: string;
  /** `Impersonate-Group`, one header each. */
  readonly groups?: readonly string[];
  /** `Impersonate-Extra-<key>`, one header per value. */
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/**
 * Everything needed to talk to one API server as one user: client-go's
 * `rest.Config`. Made by {@link loadKubeConfig} or {@link loadInClusterConfig},
 * or written by hand (`{ server: 'http://127.0.0.1:8001' }` reaches a
 * `kubectl proxy`). Accepted wherever a KubeConfig is (`createClient`,
 * `createTransport`), as is a `@kubernetes/client-node` KubeConfig.
 *
 * @example
 * ```ts
 * const config: RestConfig = { server: 'https://10.0.0.1:6443', tls: { caFile: '/etc/ca.crt' }, auth: { tokenFile: '/var/run/token' } };
 * const client = createClient({ kubeConfig: config });
 * ```
 */
export interface RestConfig {
  /** Base URL of the API server: `https://host:port` or `http://host:port`. */
  readonly server: string;
  /** Where this came from, for messages (kubeconfig files and context, or the service-account folder). Default: `server`. */
  readonly source?: string;
  /** The kubeconfig context it was resolved from. */
  readonly context?: string;
  /** The context's default namespace (or the pod's, in cluster). */
  readonly namespace?: string;
  readonly tls?: TLSConfig;
  readonly auth?: AuthConfig;
  readonly impersonate?: ImpersonationConfig;
  /**
   * `http://` or `https://` proxy for every request (kubeconfig `proxy-url`;
   * https servers are reached through a CONNECT tunnel). Default: none.
   * Unlike client-go, `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` are not
   * read: set this instead.
   */
  readonly proxyUrl?: string;
  /**
   * Refuse to connect when the server's host name resolves (at connect time,
   * on every new connection) to a link-local or cloud metadata address
   * (169.254.0.0/16, fe80::/10, fd00:ec2::254, 100.100.100.200): the request
   * fails with ClientError `PolicyRefused` and nothing is sent. A host written
   * as an address is checked once, by {@link kubeConfigFromText}'s policy.
   * `kubeConfigFromText` sets this unless `policy.allowMetadataServer`, so a
   * Secret cannot reach a metadata service through a DNS name it controls.
   * Default: false.
   */
  readonly refuseMetadataAddresses?: boolean;
}

/**
 * A config {@link createTransport} and `createClient` accept: a
 * {@link RestConfig}, or a `@kubernetes/client-node` KubeConfig (its current
 * context).
 *
 * @example
 * ```ts
 * const a: KubeConfigLike = loadKubeConfig();
 * const b: KubeConfigLike = env.kubeConfig; // client-node's KubeConfig, from envtest
 * ```
 */
export type KubeConfigLike = RestConfig | KubeConfig;

/**
 * Options for {@link loadKubeConfig}.
 *
 * @example
 * ```ts
 * const options: LoadKubeConfigOptions = { path: `${process.env.HOME}/.kube/kind.yaml`, context: 'kind-dev' };
 * ```
 */
export interface LoadKubeConfigOptions {
  /** A kubeconfig file (kubectl's `--kubeconfig`): used alone, and it must exist. Default: none (KUBECONFIG, in-cluster, then `~/.kube/config`). */
  readonly path?: string;
  /** The context to use (kubectl's `--context`). Default: the kubeconfig's `current-context`. */
  readonly context?: string;
  /** Environment to read KUBECONFIG, KUBERNETES_SERVICE_HOST/PORT and HOME from. Default: `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Folder of the in-cluster service account. Default: `/var/run/secrets/kubernetes.io/serviceaccount`. */
  readonly serviceAccountDir?: string;
}

/** The in-cluster service account folder every pod gets. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * Load a config the way controller-runtime's `config.GetConfig()` does, in
 * this order: `path` if given; the files of `KUBECONFIG` (a `:`-separated
 * list, merged: the first file to define a cluster, user or context wins it,
 * the first `current-context` wins; files that do not exist are skipped);
 * the in-cluster service account when `KUBERNETES_SERVICE_HOST` is set;
 * `~/.kube/config`. Relative paths in a file are relative to that file.
 * Files named in the config (CA, certificates, keys, token files) must exist.
 *
 * Nothing found is an error (never a silent `http://localhost:8080`), and so
 * is a malformed file (the message names it and the field), a missing
 * context, cluster or user, or a server that is not an http(s) URL: all
 * ClientError `InvalidConfig`.
 *
 * @example
 * ```ts
 * const config = loadKubeConfig();                                  // as kubectl would
 * const other = loadKubeConfig({ path: './kind.yaml', context: 'kind-dev' });
 * const client = createClient({ kubeConfig: config, fieldOwner: 'my-operator' });
 * ```
 */
export function loadKubeConfig(pathOrOptions?: string | LoadKubeConfigOptions): RestConfig {
  const options: LoadKubeConfigOptions = typeof pathOrOptions === 'string' ? { path: pathOrOptions } : (pathOrOptions ?? {});
  const env = options.env ?? process.env;
  if (options.path) return resolveContext(mergeKubeconfigs([readKubeconfig(options.path)]), options.context);
  const list = env['KUBECONFIG'];
  if (list) {
    const files = [...new Set(list.split(delimiter).filter((f) => f !== ''))];
    const present = files.filter((f) => existsSync(f));
    if (present.length === 0) {
      throw new ClientError('InvalidConfig', `KUBECONFIG=${list} names no file that exists`);
    }
    return resolveContext(mergeKubeconfigs(present.map(readKubeconfig)), options.context);
  }
  if (env['KUBERNETES_SERVICE_HOST']) return loadInClusterConfig(options);
  const home = env['HOME'] || homedir();
  const def = join(home, '.kube', 'config');
  if (existsSync(def)) return resolveContext(mergeKubeconfigs([readKubeconfig(def)]), options.context);
  throw new ClientError(
    'InvalidConfig',
    `no kubeconfig found: KUBECONFIG is not set, ${def} does not exist, and this is not a pod (KUBERNETES_SERVICE_HOST is not set). ` +
      'Point KUBECONFIG at a kubeconfig file, pass one to loadKubeConfig({ path }), or run in a cluster.',
  );
}

/**
 * Options of {@link kubeConfigFromText}.
 *
 * @example
 * ```ts
 * const options: KubeConfigFromTextOptions = { source: 'Secret fleet-system/eu-1 key kubeconfig', policy: { allowExec: { commands: ['aws'] } } };
 * ```
 */
export interface KubeConfigFromTextOptions {
  /** The context to use. Default: the kubeconfig's `current-context`. */
  readonly context?: string;
  /** Where the text came from, for messages (`Secret fleet-system/eu-1 key kubeconfig`). Default: `kubeconfig text`. */
  readonly source?: string;
  /**
   * What the kubeconfig may make this process do beyond reaching a server
   * with the credentials it embeds (see {@link KubeconfigPolicy}), or
   * `'trusted'` for text you wrote yourself: everything a kubeconfig file
   * may do, relative paths resolved against `source`. Default: `{}`, the
   * strict policy (no exec plugin, auth provider, file, proxy, insecure TLS,
   * host server or metadata address).
   */
  readonly policy?: KubeconfigPolicy | 'trusted';
  /**
   * This process's own API server (a fleet passes its host's): a kubeconfig
   * naming it is refused unless `policy.allowHostServer`. Default: none
   * (the in-cluster names and `KUBERNETES_SERVICE_HOST` are still refused).
   */
  readonly hostServer?: string | URL;
}

/**
 * A `RestConfig` from a kubeconfig's text, as Cluster API and fleet tools
 * keep them in Secrets: the same parser and checks as {@link loadKubeConfig}.
 * Such text is untrusted by default: whoever wrote the Secret chooses every
 * field, so unless `policy` allows it, a kubeconfig naming an exec plugin,
 * an auth provider, a local file (token, certificate, key, CA), a proxy,
 * `insecure-skip-tls-verify`, this process's own API server or a metadata
 * address is refused before any file is looked at and before any request
 * (see {@link KubeconfigPolicy}); a server name that resolves to a metadata
 * address is refused when connecting (`refuseMetadataAddresses`). What it embeds (a token, client
 * certificate and key data, CA data, basic auth, impersonation) is used.
 *
 * @throws {@link ClientError} `PolicyRefused` for what the policy does not allow (`field` names it); `InvalidConfig` for text that is not a kubeconfig (the message names `source` and the field), a missing context, cluster or user, or a server that is not an http(s) URL.
 * @example
 * ```ts
 * const secret = await client.get(Secret, { namespace: 'fleet-system', name: 'eu-1' });
 * const config = kubeConfigFromText(Buffer.from(secret.data!['kubeconfig']!, 'base64').toString('utf8'), { source: 'Secret fleet-system/eu-1' });
 * ```
 */
export function kubeConfigFromText(text: string, options: KubeConfigFromTextOptions = {}): RestConfig {
  if (typeof text !== 'string') throw new ClientError('InvalidConfig', `kubeConfigFromText needs the kubeconfig's YAML text; got ${typeof text}`);
  const policy = options.policy === undefined ? {} : options.policy;
  if (policy !== 'trusted') checkKubeconfigPolicy(policy, 'kubeConfigFromText');
  const source = options.source ?? 'kubeconfig text';
  let hostServer: URL | undefined;
  if (options.hostServer !== undefined) {
    try {
      hostServer = new URL(options.hostServer);
    } catch (cause) {
      throw new ClientError('InvalidOptions', `kubeConfigFromText: hostServer ${JSON.stringify(String(options.hostServer))} is not a URL`, { cause });
    }
  }
  const parsed = mergeKubeconfigs([parseKubeconfig(text, source, policy === 'trusted')]);
  if (policy === 'trusted') return resolveContext(parsed, options.context);
  const config = resolveContext(parsed, options.context, (selected, server) =>
    enforceKubeconfigPolicy(policy, { source, ...selected, hostServer, env: process.env }, server),
  );
  // The URL was checked as written; a name is checked again on every connection, after DNS.
  return policy.allowMetadataServer ? config : { ...config, refuseMetadataAddresses: true };
}

/**
 * The config of a pod's service account: `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`,
 * the CA and token files of the service-account folder (the token is re-read
 * every minute, as projected tokens rotate), and the pod's namespace.
 *
 * @example
 * ```ts
 * const config = loadInClusterConfig();
 * const client = createClient({ kubeConfig: config });
 * ```
 */
export function loadInClusterConfig(options: Pick<LoadKubeConfigOptions, 'env' | 'serviceAccountDir'> = {}): RestConfig {
  const env = options.env ?? process.env;
  const host = env['KUBERNETES_SERVICE_HOST'];
  const port = env['KUBERNETES_SERVICE_PORT'];
  if (!host || !port) {
    throw new ClientError('InvalidConfig', 'in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (is this a pod?)');
  }
  const dir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const tokenFile = join(dir, 'token');
  const caFile = join(dir, 'ca.crt');
  for (const f of [tokenFile, caFile]) {
    if (!existsSync(f)) throw new ClientError('InvalidConfig', `in-cluster config: ${f} does not exist (is a service account token mounted? automountServiceAccountToken may be false)`);
  }
  let namespace: string | undefined;
  try {
    namespace = readFileSync(join(dir, 'namespace'), 'utf8').trim() || undefined;
  } catch {
    namespace = undefined;
  }
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  checkServer(server, `in-cluster config (${dir})`);
  return {
    server,
    source: `in-cluster service account (${dir})`,
    ...(namespace ? { namespace } : {}),
    tls: { caFile },
    auth: { tokenFile },
  };
}

function checkServer(server: string | undefined, where: string): string {
  if (!server) throw new ClientError('InvalidConfig', `${where}: the cluster has no server`);
  let url: URL;
  try {
    url = new URL(server);
  } catch (cause) {
    throw new ClientError('InvalidConfig', `${where}: server ${JSON.stringify(server)} is not a URL`, { cause });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ClientError('InvalidConfig', `${where}: server ${JSON.stringify(server)} must be an http:// or https:// URL`);
  }
  return server;
}

function decode(data: string | undefined, where: string): string | undefined {
  if (data === undefined || data === '') return undefined;
  const text = Buffer.from(data, 'base64').toString('utf8');
  if (!text.includes('-----BEGIN')) throw new ClientError('InvalidConfig', `${where} is not base64-encoded PEM`);
  return text;
}

function mustExist(file: string | undefined, where: string): string | undefined {
  if (file === undefined) return undefined;
  let ok = false;
  try {
    ok = statSync(file).isFile();
  } catch {
    ok = false;
  }
  if (!ok) throw new ClientError('InvalidConfig', `${where}: ${file} does not exist or is not a file`);
  return file;
}

function execConfig(e: FileExec, where: string): ExecConfig {
  if (!e.command) throw new ClientError('InvalidConfig', `${where}.exec has no command`);
  return {
    command: e.command,
    ...(e.apiVersion ? { apiVersion: e.apiVersion } : {}),
    ...(e.args ? { args: e.args } : {}),
    ...(e.env ? { env: e.env } : {}),
    ...(e.installHint ? { installHint: e.installHint } : {}),
    ...(e.provideClusterInfo ? { provideClusterInfo: true } : {}),
    ...(e.interactiveMode ? { interactiveMode: e.interactiveMode } : {}),
  };
}

/** The chosen context's cluster and user, for a policy to check before anything is read or sent. */
type SelectionCheck = (selected: { clusterName: string; cluster: FileCluster; userName: string | undefined; user: FileUser }, server: URL) => void;

function resolveContext(kc: MergedKubeconfig, override: string | undefined, check?: SelectionCheck): RestConfig {
  const files = kc.files.join(delimiter);
  const name = override ?? kc.currentContext;
  if (!name) throw new ClientError('InvalidConfig', `kubeconfig ${files} has no current-context (set one, or pass a context)`);
  const ctx = kc.contexts.get(name);
  if (!ctx) throw new ClientError('InvalidConfig', `kubeconfig ${files}: context ${JSON.stringify(name)} is not defined`);
  const clusterName = ctx.value.cluster;
  if (!clusterName) throw new ClientError('InvalidConfig', `kubeconfig ${ctx.file}: context ${JSON.stringify(name)} names no cluster`);
  const cluster = kc.clusters.get(clusterName);
  if (!cluster) throw new ClientError('InvalidConfig', `kubeconfig ${files}: cluster ${JSON.stringify(clusterName)} of context ${JSON.stringify(name)} is not defined`);
  const userName = ctx.value.user;
  const user = userName ? kc.users.get(userName) : undefined;
  if (userName && !user) throw new ClientError('InvalidConfig', `kubeconfig ${files}: user ${JSON.stringify(userName)} of context ${JSON.stringify(name)} is not defined`);
  const cw = `kubeconfig ${cluster.file}: cluster ${JSON.stringify(clusterName)}`;
  const uw = user ? `kubeconfig ${user.file}: user ${JSON.stringify(userName)}` : '';
  const c = cluster.value;
  const u = user?.value ?? {};
  const server = checkServer(c.server, cw);
  check?.({ clusterName, cluster: c, userName, user: u }, new URL(server));

  const tls: TLSConfig = {
    ...optional('caData', decode(c.certificateAuthorityData, `${cw}: certificate-authority-data`)),
    ...optional('caFile', c.certificateAuthorityData ? undefined : mustExist(c.certificateAuthority, `${cw}: certificate-authority`)),
    ...optional('certData', decode(u.clientCertificateData, `${uw}: client-certificate-data`)),
    ...optional('certFile', u.clientCertificateData ? undefined : mustExist(u.clientCertificate, `${uw}: client-certificate`)),
    ...optional('keyData', decode(u.clientKeyData, `${uw}: client-key-data`)),
    ...optional('keyFile', u.clientKeyData ? undefined : mustExist(u.clientKey, `${uw}: client-key`)),
    ...(c.insecureSkipTlsVerify ? { insecureSkipTLSVerify: true } : {}),
    ...optional('serverName', c.tlsServerName),
  };
  const hasCert = Boolean(tls.certData ?? tls.certFile);
  const hasKey = Boolean(tls.keyData ?? tls.keyFile);
  if (hasCert !== hasKey) throw new ClientError('InvalidConfig', `${uw}: a client certificate needs a client key and a key needs a certificate`);

  const auth: AuthConfig = {
    ...optional('token', u.token),
    ...optional('tokenFile', u.token ? undefined : mustExist(u.tokenFile, `${uw}: tokenFile`)),
    ...optional('username', u.username),
    ...optional('password', u.password),
    ...(u.exec ? { exec: execConfig(u.exec, uw) } : {}),
    ...(u.authProvider ? { authProvider: u.authProvider } : {}),
  };
  const impersonate: ImpersonationConfig = {
    ...optional('user', u.as),
    ...optional('uid', u.asUid),
    ...(u.asGroups?.length ? { groups: u.asGroups } : {}),
    ...(u.asUserExtra && Object.keys(u.asUserExtra).length > 0 ? { extra: u.asUserExtra } : {}),
  };
  if (c.proxyUrl) {
    let proxy: URL;
    try {
      proxy = new URL(c.proxyUrl);
    } catch (cause) {
      throw new ClientError('InvalidConfig', `${cw}: proxy-url ${JSON.stringify(c.proxyUrl)} is not a URL`, { cause });
    }
    if (proxy.protocol !== 'http:' && proxy.protocol !== 'https:') {
      throw new ClientError('InvalidConfig', `${cw}: proxy-url ${JSON.stringify(c.proxyUrl)}: only http:// and https:// proxies are supported`);
    }
  }
  return {
    server,
    source: `kubeconfig ${files} (context ${JSON.stringify(name)})`,
    context: name,
    ...optional('namespace', ctx.value.namespace),
    tls,
    auth,
    ...(Object.keys(impersonate).length > 0 ? { impersonate } : {}),
    ...optional('proxyUrl', c.proxyUrl),
  };
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined || value === '' ? {} : { [key]: value }) as { [P in K]?: string };
}
