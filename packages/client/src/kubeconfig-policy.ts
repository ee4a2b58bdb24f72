/**
 * What a kubeconfig read from the cluster (a fleet member's Secret, a URL in
 * a custom resource) may make this process do. Whoever can write such a
 * Secret usually has far less privilege than the operator reading it, so by
 * default nothing in it may become a command (exec plugins, auth-provider
 * `cmd-path`), a local file read (token, certificate, key, CA files), a
 * proxy, a TLS check skipped, or a request to the host's own API server or a
 * cloud metadata address. A {@link KubeconfigPolicy} allows more, one kind
 * of thing at a time, as Flux's `--insecure-kubeconfig-exec` and
 * Kubernetes 1.35's credential-plugin allowlist do.
 */
import type { BlockList, TcpSocketConnectOpts } from 'node:net';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { isAbsolute, relative, sep } from 'node:path';
import { ClientError } from './errors.js';
import type { FileCluster, FileUser } from './internal/kubeconfig-file.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { realpathSync } = process.getBuiltinModule('node:fs');

/**
 * What a kubeconfig from an untrusted source may use, beyond a server URL and
 * credentials it embeds (`token`, `client-certificate-data`,
 * `client-key-data`, `certificate-authority-data`, `username`/`password`,
 * impersonation). Every field is closed by default: `{}` is the strict
 * policy `kubeConfigFromText` and `kubeconfigSecretProvider` use unless told
 * otherwise. A kubeconfig asking for more is refused with a ClientError
 * `PolicyRefused` whose `field` names what it asked for.
 *
 * @example
 * ```ts
 * // Members on EKS: let `aws eks get-token` run, nothing else.
 * const policy: KubeconfigPolicy = { allowExec: { commands: ['aws'] } };
 * const text = Buffer.from(secret.data!['kubeconfig']!, 'base64').toString('utf8');
 * const config = kubeConfigFromText(text, { source: 'Secret fleet-system/eu-1 key kubeconfig', policy });
 * ```
 */
export interface KubeconfigPolicy {
  /**
   * Exec credential plugins (`users[].user.exec`), and auth-provider
   * `cmd-path`s, that may run: each entry is a bare program name (matches a
   * kubeconfig command of exactly that name, looked up on this process's
   * PATH) or an absolute path (matches exactly that path). A plugin runs as
   * this process's user with this process's environment plus the
   * kubeconfig's `env`. Default: none (every exec plugin refused).
   */
  readonly allowExec?: { readonly commands: readonly string[] };
  /**
   * Legacy auth providers (`users[].user.auth-provider`) by name: `oidc`,
   * `gcp`, `azure`. They run in `@kubernetes/client-node`: `oidc` sends the
   * kubeconfig's refresh token to its `idp-issuer-url`; a `cmd-path`
   * (gcp, azure) is a command and must also be in `allowExec.commands`
   * (client-node runs it through a shell, blocking the event loop while it
   * runs); `idp-certificate-authority` is a file and must be allowed by
   * `allowFiles`. Default: none.
   */
  readonly allowAuthProviders?: readonly string[];
  /**
   * Folders whose files a kubeconfig may name (`certificate-authority`,
   * `client-certificate`, `client-key`, `tokenFile`,
   * `idp-certificate-authority`): an absolute path that lies, after symbolic
   * links are followed, inside one of them. Relative paths are refused (text
   * has no folder to be relative to). Default: none (every file reference
   * refused, so a Secret cannot hand this process's service-account token or
   * its own credential files to a server of its choosing).
   */
  readonly allowFiles?: readonly string[];
  /** `proxy-url` (every request, with its credentials, goes through it). Default: false. */
  readonly allowProxy?: boolean;
  /** `insecure-skip-tls-verify: true` on an https:// server. Default: false. */
  readonly allowInsecureTLS?: boolean;
  /**
   * A server that is this process's own API server: the `hostServer` given
   * to `kubeConfigFromText` (a fleet gives its host's), the in-cluster
   * names (`kubernetes`, `kubernetes.default`, `kubernetes.default.svc`,
   * `kubernetes.default.svc.<domain>`) and `KUBERNETES_SERVICE_HOST`:
   * `KUBERNETES_SERVICE_PORT`; loopback addresses count as one host.
   * Default: false.
   */
  readonly allowHostServer?: boolean;
  /**
   * A server at a link-local or cloud metadata address: 169.254.0.0/16,
   * fe80::/10, fd00:ec2::254, 100.100.100.200, `metadata`,
   * `metadata.google.internal`, `metadata.goog`, `instance-data`,
   * `instance-data.ec2.internal`. Checked on the URL as written, and on
   * every connection after DNS (a name that resolves to such an address is
   * refused then, with nothing sent: see `RestConfig.refuseMetadataAddresses`).
   * Default: false.
   */
  readonly allowMetadataServer?: boolean;
}

/** The kubeconfig's cluster and user of the chosen context, as the policy sees them. */
export interface PolicySubject {
  readonly source: string;
  readonly clusterName: string;
  readonly cluster: FileCluster;
  readonly userName: string | undefined;
  readonly user: FileUser;
  /** This process's own API server, when known. */
  readonly hostServer: URL | undefined;
  readonly env: Readonly<Record<string, string | undefined>>;
}

const METADATA_NAMES = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

let metadataBlock: BlockList | undefined;
let loopbackBlock: BlockList | undefined;
/** node:net's BlockLists (made on first use: node:net only when a policy checks a server). */
function blocks(): { metadata: BlockList; loopback: BlockList } {
  if (!metadataBlock || !loopbackBlock) {
    const { BlockList: Blocks } = process.getBuiltinModule('node:net');
    metadataBlock = new Blocks();
    metadataBlock.addSubnet('169.254.0.0', 16, 'ipv4');
    metadataBlock.addSubnet('fe80::', 10, 'ipv6');
    metadataBlock.addAddress('fd00:ec2::254', 'ipv6');
    metadataBlock.addAddress('100.100.100.200', 'ipv4');
    loopbackBlock = new Blocks();
    loopbackBlock.addSubnet('127.0.0.0', 8, 'ipv4');
    loopbackBlock.addAddress('::1', 'ipv6');
  }
  return { metadata: metadataBlock, loopback: loopbackBlock };
}

/** A URL's host without IPv6 brackets or a trailing dot, lower case. */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
}

function ipKind(host: string): 'ipv4' | 'ipv6' | undefined {
  const { isIP } = process.getBuiltinModule('node:net');
  const v = isIP(host);
  return v === 4 ? 'ipv4' : v === 6 ? 'ipv6' : undefined;
}

/** True for a link-local or cloud metadata IP address (not a name). */
export function isMetadataAddress(address: string): boolean {
  const kind = ipKind(address);
  return kind !== undefined && blocks().metadata.check(address, kind);
}

/** The `code` of a connection refused because its name resolved to a metadata address. */
export const METADATA_LOOKUP_CODE = 'ERR_KUBELOOP_METADATA_ADDRESS';

type SocketLookup = NonNullable<TcpSocketConnectOpts['lookup']>;

/**
 * A `lookup` for sockets (net.connect's option) that resolves as
 * `dns.lookup` does and fails with code {@link METADATA_LOOKUP_CODE} when any
 * address is link-local or a cloud metadata address: the connection is never
 * opened. Used for configs with `refuseMetadataAddresses`.
 */
export function metadataRefusingLookup(): SocketLookup {
  const { lookup } = process.getBuiltinModule('node:dns');
  const guarded = (
    hostname: string,
    options: LookupOptions,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const bad = addresses.find((a) => isMetadataAddress(a.address));
      if (bad) {
        const refused: NodeJS.ErrnoException = new Error(`${hostname} resolves to the link-local or cloud metadata address ${bad.address}`);
        refused.code = METADATA_LOOKUP_CODE;
        return callback(refused, '', 0);
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  };
  return guarded;
}

function isMetadata(host: string): boolean {
  if (METADATA_NAMES.has(host)) return true;
  const kind = ipKind(host);
  return kind !== undefined && blocks().metadata.check(host, kind);
}

function isLoopback(host: string): boolean {
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const kind = ipKind(host);
  return kind !== undefined && blocks().loopback.check(host, kind);
}

function portOf(url: URL): string {
  return url.port || (url.protocol === 'https:' ? '443' : '80');
}

function sameServer(a: URL, b: URL): boolean {
  if (portOf(a) !== portOf(b)) return false;
  const ha = bareHost(a);
  const hb = bareHost(b);
  return ha === hb || (isLoopback(ha) && isLoopback(hb));
}

/** Why `server` is this process's own API server, or undefined. */
function hostServerReason(server: URL, subject: PolicySubject): string | undefined {
  const host = bareHost(server);
  if (host === 'kubernetes' || host === 'kubernetes.default' || host === 'kubernetes.default.svc' || host.startsWith('kubernetes.default.svc.')) {
    return `${host} is the in-cluster name of the API server this process runs in`;
  }
  if (subject.hostServer && sameServer(server, subject.hostServer)) return `this process's own API server, ${subject.hostServer.origin}`;
  const svcHost = subject.env['KUBERNETES_SERVICE_HOST'];
  const svcPort = subject.env['KUBERNETES_SERVICE_PORT'];
  if (svcHost && svcPort) {
    try {
      const inCluster = new URL(`https://${svcHost.includes(':') ? `[${svcHost}]` : svcHost}:${svcPort}`);
      if (sameServer(server, inCluster)) return `the API server this process runs in, KUBERNETES_SERVICE_HOST ${svcHost}`;
    } catch {
      // not a usable address: nothing to compare with
    }
  }
  return undefined;
}

function refuse(subject: PolicySubject, field: string, what: string, allow: string): never {
  throw new ClientError('PolicyRefused', `${subject.source}: ${field}: ${what} is not allowed in a kubeconfig read from the cluster (to allow it: ${allow})`, { field });
}

/** True when `file` (absolute) lies inside one of `folders`, as written and after symbolic links are followed. */
function inFolders(file: string, folders: readonly string[]): boolean {
  const real = (p: string): string => {
    try {
      return realpathSync(p);
    } catch {
      return p;
    }
  };
  const within = (base: string, target: string): boolean => {
    const rel = relative(base, target);
    return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
  };
  const target = real(file);
  return folders.some((folder) => isAbsolute(folder) && within(folder, file) && (within(folder, target) || within(real(folder), target)));
}

function commandAllowed(command: string, policy: KubeconfigPolicy): boolean {
  const allowed = policy.allowExec?.commands ?? [];
  return allowed.some((entry) => (isAbsolute(entry) ? command === entry : !command.includes('/') && !command.includes('\\') && command === entry));
}

/**
 * Throw a ClientError `PolicyRefused` naming the first field of the chosen
 * cluster and user that `policy` does not allow. Called before any file is
 * looked at and before any request.
 */
export function enforceKubeconfigPolicy(policy: KubeconfigPolicy, subject: PolicySubject, server: URL): void {
  const c = subject.cluster;
  const u = subject.user;
  const cf = `clusters[${JSON.stringify(subject.clusterName)}]`;
  const uf = `users[${JSON.stringify(subject.userName ?? '')}]`;
  const files = policy.allowFiles ?? [];
  const file = (field: string, path: string | undefined): void => {
    if (path === undefined || path === '') return;
    if (!isAbsolute(path)) refuse(subject, field, `the relative file path ${JSON.stringify(path)}`, 'none: name an absolute path inside a folder of policy.allowFiles, or embed the data');
    if (!inFolders(path, files)) {
      refuse(subject, field, `reading the local file ${path}`, files.length > 0 ? `put it inside one of policy.allowFiles (${files.join(', ')})` : 'policy.allowFiles, or embed the data in the kubeconfig (the *-data fields, token)');
    }
  };

  // Destinations first: a server that is the host or a metadata address is refused whatever else the kubeconfig holds.
  const host = bareHost(server);
  if (!policy.allowMetadataServer && isMetadata(host)) refuse(subject, `${cf}.server`, `the link-local or cloud metadata address ${host}`, 'policy.allowMetadataServer');
  if (!policy.allowHostServer) {
    const why = hostServerReason(server, subject);
    if (why) refuse(subject, `${cf}.server`, `the server ${server.origin} (${why})`, 'policy.allowHostServer');
  }
  if (c.proxyUrl && !policy.allowProxy) refuse(subject, `${cf}.proxy-url`, `the proxy ${JSON.stringify(c.proxyUrl)}`, 'policy.allowProxy');
  // On an http:// server there is no TLS check to skip (client-node writes the flag for those).
  if (c.insecureSkipTlsVerify && server.protocol === 'https:' && !policy.allowInsecureTLS) refuse(subject, `${cf}.insecure-skip-tls-verify`, 'skipping the TLS check of the server', 'policy.allowInsecureTLS');
  file(`${cf}.certificate-authority`, c.certificateAuthority);

  if (u.exec) {
    const command = u.exec.command ?? '';
    if (!commandAllowed(command, policy)) refuse(subject, `${uf}.exec.command`, `running the exec credential plugin ${JSON.stringify(command)}`, 'list it in policy.allowExec.commands');
  }
  if (u.authProvider) {
    const name = u.authProvider.name;
    if (!(policy.allowAuthProviders ?? []).includes(name)) refuse(subject, `${uf}.auth-provider`, `the auth provider ${JSON.stringify(name)}`, 'list it in policy.allowAuthProviders');
    const cmd = u.authProvider.config['cmd-path'];
    if (cmd && !commandAllowed(cmd, policy)) refuse(subject, `${uf}.auth-provider.config.cmd-path`, `running the command ${JSON.stringify(cmd)}`, 'list it in policy.allowExec.commands');
    file(`${uf}.auth-provider.config.idp-certificate-authority`, u.authProvider.config['idp-certificate-authority']);
  }
  file(`${uf}.client-certificate`, u.clientCertificate);
  file(`${uf}.client-key`, u.clientKey);
  file(`${uf}.tokenFile`, u.tokenFile);
}

/**
 * Throw a ClientError `InvalidOptions` naming the first field of `policy`
 * that has the wrong shape (a command list that is not a list of strings, a
 * relative folder in `allowFiles`...).
 */
export function checkKubeconfigPolicy(policy: unknown, where: string): asserts policy is KubeconfigPolicy {
  const bad = (field: string, want: string, got: unknown): never => {
    throw new ClientError('InvalidOptions', `${where}: policy${field ? `.${field}` : ''} must be ${want}; got ${JSON.stringify(got) ?? String(got)}`);
  };
  if (policy === null || typeof policy !== 'object' || Array.isArray(policy)) bad('', 'an object (a KubeconfigPolicy)', policy);
  const p = policy as Record<string, unknown>;
  const known = new Set(['allowExec', 'allowAuthProviders', 'allowFiles', 'allowProxy', 'allowInsecureTLS', 'allowHostServer', 'allowMetadataServer']);
  for (const key of Object.keys(p)) if (!known.has(key)) bad(key, `one of ${[...known].join(', ')} (not a field of KubeconfigPolicy)`, p[key]);
  const strings = (field: string, value: unknown, absolute = false): void => {
    if (value === undefined) return;
    if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v === '' || (absolute && !isAbsolute(v)))) {
      bad(field, absolute ? 'a list of absolute folder paths' : 'a list of non-empty strings', value);
    }
  };
  if (p['allowExec'] !== undefined) {
    const e = p['allowExec'];
    if (e === null || typeof e !== 'object' || !Array.isArray((e as { commands?: unknown }).commands)) bad('allowExec', '{ commands: [...] } (bare program names or absolute paths)', e);
    strings('allowExec.commands', (e as { commands: unknown }).commands);
  }
  strings('allowAuthProviders', p['allowAuthProviders']);
  strings('allowFiles', p['allowFiles'], true);
  for (const key of ['allowProxy', 'allowInsecureTLS', 'allowHostServer', 'allowMetadataServer']) {
    if (p[key] !== undefined && typeof p[key] !== 'boolean') bad(key, 'true or false', p[key]);
  }
}
