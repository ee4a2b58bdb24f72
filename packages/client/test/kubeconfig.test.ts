/**
 * loadKubeConfig and loadInClusterConfig against real files (merge order of a
 * KUBECONFIG list, relative paths, missing and malformed files), and the
 * credentials they give against the real API server: client certificates,
 * bearer tokens and token files (real TokenRequest tokens), an exec plugin
 * (a tiny script), impersonation, the in-cluster service account, a bad
 * token and an untrusted client certificate (401 that isUnauthorized knows),
 * an auth provider handed to @kubernetes/client-node (gcp), loaded only then,
 * and oidc (a loopback issuer refreshing an expired ID token).
 */
import { spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigMap } from '@kubeloop/scheme';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, createTransport, isInvalidConfig, isUnauthorized, kubeConfigFromText, loadKubeConfig } from '../src/index.js';
import { loadInClusterConfig } from '../src/internal-api.js';
import type { ClientError, RestConfig, Transport } from '../src/index.js';
import type { ExecConfig } from '../src/internal-api.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { selfSigned } from './support.js';

let dir: string;
let admin: RestConfig;
let adminT: Transport;
let ns: string;

const b64 = (s: string): string => Buffer.from(s).toString('base64');

function thrown(fn: () => unknown): ClientError {
  try {
    fn();
  } catch (e) {
    expect(isInvalidConfig(e), `expected InvalidConfig, got ${String(e)}`).toBe(true);
    return e as ClientError;
  }
  throw new Error('expected an error');
}

async function who(config: RestConfig): Promise<{ username: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> }> {
  const t = createTransport(config);
  try {
    const res = await t.request({ method: 'POST', path: '/apis/authentication.k8s.io/v1/selfsubjectreviews', body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }) });
    expect(res.status, res.body).toBe(201);
    return (JSON.parse(res.body) as { status: { userInfo: { username: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } } }).status.userInfo;
  } finally {
    t.close();
  }
}

/** A real service-account token from the TokenRequest API. */
async function serviceAccountToken(name: string, expirationSeconds = 3600): Promise<string> {
  await adminT.request({ method: 'POST', path: `/api/v1/namespaces/${ns}/serviceaccounts`, body: JSON.stringify({ metadata: { name } }) });
  const res = await adminT.request({
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/serviceaccounts/${name}/token`,
    body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds } }),
  });
  expect(res.status, res.body).toBe(201);
  return (JSON.parse(res.body) as { status: { token: string } }).status.token;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubeloop-kubeconfig-'));
  admin = loadKubeConfig(testKubeconfigPath());
  adminT = createTransport(admin);
  ns = uniqueName('kc');
  const res = await adminT.request({ method: 'POST', path: '/api/v1/namespaces', body: JSON.stringify({ metadata: { name: ns } }) });
  expect(res.status).toBe(201);
});
afterAll(async () => {
  await adminT.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns}` });
  adminT.close();
});

/** A kubeconfig YAML with one context per entry. */
function kubeconfig(parts: { current?: string; clusters?: Record<string, Record<string, unknown>>; users?: Record<string, Record<string, unknown>>; contexts?: Record<string, Record<string, unknown>> }): string {
  const list = (m: Record<string, Record<string, unknown>> | undefined, key: string): unknown[] => Object.entries(m ?? {}).map(([name, body]) => ({ name, [key]: body }));
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    ...(parts.current ? { 'current-context': parts.current } : {}),
    clusters: list(parts.clusters, 'cluster'),
    users: list(parts.users, 'user'),
    contexts: list(parts.contexts, 'context'),
  });
}

describe('loadKubeConfig: files', () => {
  it('reads the envtest admin kubeconfig (inline data) and talks to the server with it, without client-node', async () => {
    expect(admin.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(admin.tls?.caData).toContain('BEGIN CERTIFICATE');
    expect(admin.source).toContain(testKubeconfigPath());
    expect((await who(admin)).username).toBe('admin');
  });

  it('merges a KUBECONFIG list: the first file to name a cluster, user or context wins it, the first current-context wins; missing files are skipped', async () => {
    const a = join(dir, 'merge-a.yaml');
    const b = join(dir, 'merge-b.yaml');
    await writeFile(
      a,
      kubeconfig({
        current: 'ctx-a',
        clusters: { shared: { server: admin.server, 'certificate-authority-data': b64(admin.tls!.caData!) } },
        contexts: { 'ctx-a': { cluster: 'shared', user: 'from-b', namespace: 'from-a' } },
      }),
    );
    await writeFile(
      b,
      kubeconfig({
        current: 'ctx-b',
        clusters: { shared: { server: 'https://127.0.0.1:1' } }, // loses to a's
        users: { 'from-b': { 'client-certificate-data': b64(admin.tls!.certData!), 'client-key-data': b64(admin.tls!.keyData!) } },
        contexts: { 'ctx-a': { cluster: 'nowhere', user: 'nobody' }, 'ctx-b': { cluster: 'shared', user: 'from-b', namespace: 'from-b' } },
      }),
    );
    const env = { KUBECONFIG: [join(dir, 'missing.yaml'), a, b, a].join(':') };
    const merged = loadKubeConfig({ env });
    expect(merged.server).toBe(admin.server);
    expect(merged.context).toBe('ctx-a');
    expect(merged.namespace).toBe('from-a');
    expect(merged.source).toContain(`${a}:${b}`);
    expect((await who(merged)).username).toBe('admin'); // cluster from a, user from b

    const other = loadKubeConfig({ env: { KUBECONFIG: `${b}:${a}` } });
    expect(other.context).toBe('ctx-b');
    expect(other.namespace).toBe('from-b');
    expect(other.server).toBe('https://127.0.0.1:1');
    expect(loadKubeConfig({ env, context: 'ctx-b' }).namespace).toBe('from-b');

    expect(thrown(() => loadKubeConfig({ env: { KUBECONFIG: join(dir, 'nope-1.yaml') } })).message).toContain('names no file that exists');
    expect(thrown(() => loadKubeConfig({ env, context: 'ctx-z' })).message).toContain('context "ctx-z" is not defined');
  });

  it('resolves relative paths against the file that holds them, not the working directory', async () => {
    const sub = join(dir, 'relative', 'certs');
    await mkdir(sub, { recursive: true });
    await writeFile(join(sub, 'ca.crt'), admin.tls!.caData!);
    await writeFile(join(sub, 'admin.crt'), admin.tls!.certData!);
    await writeFile(join(sub, 'admin.key'), admin.tls!.keyData!);
    const file = join(dir, 'relative', 'config');
    await writeFile(
      file,
      kubeconfig({
        current: 'x',
        clusters: { c: { server: admin.server, 'certificate-authority': 'certs/ca.crt' } },
        users: { u: { 'client-certificate': './certs/admin.crt', 'client-key': 'certs/admin.key' } },
        contexts: { x: { cluster: 'c', user: 'u' } },
      }),
    );
    const config = loadKubeConfig(file);
    expect(config.tls).toMatchObject({ caFile: join(sub, 'ca.crt'), certFile: join(sub, 'admin.crt'), keyFile: join(sub, 'admin.key') });
    expect((await who(config)).username).toBe('admin');
  });

  it('insecure-skip-tls-verify connects without a CA; without it and without a CA the server is not trusted', async () => {
    const file = join(dir, 'insecure.yaml');
    const users = { u: { 'client-certificate-data': b64(admin.tls!.certData!), 'client-key-data': b64(admin.tls!.keyData!) } };
    await writeFile(file, kubeconfig({ current: 'x', clusters: { c: { server: admin.server, 'insecure-skip-tls-verify': true } }, users, contexts: { x: { cluster: 'c', user: 'u' } } }));
    const config = loadKubeConfig(file);
    expect(config.tls?.insecureSkipTLSVerify).toBe(true);
    expect((await who(config)).username).toBe('admin');
    const t = createTransport({ ...config, tls: { ...config.tls, insecureSkipTLSVerify: false } });
    const err = await t.request({ method: 'GET', path: '/version' }).catch((e: unknown) => e);
    expect((err as ClientError).reason).toBe('TLS');
    t.close();
  });

  it('a missing file, or a missing file it names, is an InvalidConfig error naming the file and the field', async () => {
    expect(thrown(() => loadKubeConfig(join(dir, 'absent.yaml'))).message).toBe(`kubeconfig ${join(dir, 'absent.yaml')} does not exist`);
    const file = join(dir, 'dangling.yaml');
    await writeFile(
      file,
      kubeconfig({ current: 'x', clusters: { c: { server: admin.server, 'certificate-authority': 'gone/ca.crt' } }, users: { u: {} }, contexts: { x: { cluster: 'c', user: 'u' } } }),
    );
    const err = thrown(() => loadKubeConfig(file));
    expect(err.message).toContain(file);
    expect(err.message).toContain('certificate-authority');
    expect(err.message).toContain(join(dir, 'gone', 'ca.crt'));

    const noToken = join(dir, 'no-token.yaml');
    await writeFile(noToken, kubeconfig({ current: 'x', clusters: { c: { server: admin.server } }, users: { u: { tokenFile: 'token-that-is-not-there' } }, contexts: { x: { cluster: 'c', user: 'u' } } }));
    expect(thrown(() => loadKubeConfig(noToken)).message).toMatch(/tokenFile: .*token-that-is-not-there does not exist/);
    // and a RestConfig naming a token file that is gone fails when the transport is made, not silently without auth
    expect(thrown(() => createTransport({ server: admin.server, auth: { tokenFile: join(dir, 'gone-token') } })).message).toContain('cannot read the token file');
  });

  it('a malformed file is an InvalidConfig error naming the file (and the field when the YAML parses)', async () => {
    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, 'clusters: [nope: {');
    const yamlErr = thrown(() => loadKubeConfig(bad));
    expect(yamlErr.message).toContain(`kubeconfig ${bad} is not valid YAML`);

    const wrong = join(dir, 'wrong.yaml');
    await writeFile(wrong, 'apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: [1, 2]\n');
    expect(thrown(() => loadKubeConfig(wrong)).message).toBe(`kubeconfig ${wrong}: clusters[0] ("c").cluster.server: expected a string, got a list`);

    const notUrl = join(dir, 'not-url.yaml');
    await writeFile(notUrl, kubeconfig({ current: 'x', clusters: { c: { server: 'ftp://example' } }, contexts: { x: { cluster: 'c' } } }));
    expect(thrown(() => loadKubeConfig(notUrl)).message).toContain('must be an http:// or https:// URL');

    const empty = join(dir, 'empty.yaml');
    await writeFile(empty, '');
    expect(thrown(() => loadKubeConfig(empty)).message).toContain(`kubeconfig ${empty} has no current-context`);
  });

  it('no kubeconfig at all is a clear error, never a silent http://localhost:8080; ~/.kube/config is found through HOME', async () => {
    const home = await mkdtemp(join(tmpdir(), 'kubeloop-home-'));
    const err = thrown(() => loadKubeConfig({ env: { HOME: home } }));
    expect(err.message).toContain('no kubeconfig found');
    expect(err.message).toContain(join(home, '.kube', 'config'));
    expect(() => createClient({ kubeConfig: loadKubeConfig({ env: { HOME: home } }) })).toThrow(/no kubeconfig found/);

    await mkdir(join(home, '.kube'));
    await writeFile(join(home, '.kube', 'config'), await readFile(testKubeconfigPath(), 'utf8'));
    expect(loadKubeConfig({ env: { HOME: home } }).server).toBe(admin.server);
  });
});

describe('kubeConfigFromText', () => {
  it("reads a kubeconfig's text (as kept in a Secret) with the same parser: it talks to the server; bad text names its source", async () => {
    const config = kubeConfigFromText(await readFile(testKubeconfigPath(), 'utf8'), { source: 'Secret fleet/eu-1 key kubeconfig' });
    expect(config.server).toBe(admin.server);
    expect((await who(config)).username).toBe('admin');
    expect(thrown(() => kubeConfigFromText('clusters: [nope: {', { source: 'Secret fleet/eu-1 key kubeconfig' })).message).toContain('kubeconfig Secret fleet/eu-1 key kubeconfig is not valid YAML');
    expect(thrown(() => kubeConfigFromText('')).message).toContain('has no current-context');
    expect(thrown(() => kubeConfigFromText(undefined as never)).message).toContain("needs the kubeconfig's YAML text");
  });
});

describe('credentials against the real API server', () => {
  it('a bearer token (TokenRequest) authenticates; a bad token is a 401 that isUnauthorized recognises', async () => {
    const token = await serviceAccountToken('reader');
    expect((await who({ server: admin.server, tls: { caData: admin.tls!.caData! }, auth: { token } })).username).toBe(`system:serviceaccount:${ns}:reader`);

    const client = createClient({ kubeConfig: { server: admin.server, tls: { caData: admin.tls!.caData! }, auth: { token: 'not-a-token' } } });
    const err = await client.get(ConfigMap, { namespace: ns, name: 'x' }).catch((e: unknown) => e);
    expect(isUnauthorized(err)).toBe(true);
    expect((err as ClientError).code).toBe(401);
    client.transport.close();
  });

  it('an untrusted (or expired) client certificate is a 401 that isUnauthorized recognises', async () => {
    const { certPem, keyPem } = selfSigned('intruder');
    const client = createClient({ kubeConfig: { server: admin.server, tls: { caData: admin.tls!.caData!, certData: certPem, keyData: keyPem } } });
    const err = await client.get(ConfigMap, { namespace: ns, name: 'x' }).catch((e: unknown) => e);
    expect(isUnauthorized(err), String(err)).toBe(true);
    client.transport.close();
  });

  it('a token file is read when the transport is made and again after a 401 (rotation)', async () => {
    const tokenFile = join(dir, 'rotating-token');
    await writeFile(tokenFile, 'stale-token\n');
    const t = createTransport({ server: admin.server, tls: { caData: admin.tls!.caData! }, auth: { tokenFile } });
    expect((await t.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps` })).status).toBe(401);
    await writeFile(tokenFile, `${await serviceAccountToken('rotated')}\n`);
    const res = await t.request({ method: 'POST', path: '/apis/authentication.k8s.io/v1/selfsubjectreviews', body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }) });
    expect((JSON.parse(res.body) as { status: { userInfo: { username: string } } }).status.userInfo.username).toBe(`system:serviceaccount:${ns}:rotated`);
    t.close();
  });

  it('impersonation headers (as, as-uid, as-groups, as-user-extra) reach the server', async () => {
    const file = join(dir, 'impersonate.yaml');
    await writeFile(
      file,
      kubeconfig({
        current: 'x',
        clusters: { c: { server: admin.server, 'certificate-authority-data': b64(admin.tls!.caData!) } },
        users: { u: { 'client-certificate-data': b64(admin.tls!.certData!), 'client-key-data': b64(admin.tls!.keyData!), as: 'jane', 'as-uid': 'uid-42', 'as-groups': ['team-a', 'team-b'], 'as-user-extra': { 'example.com/reason': ['testing', 'kubeloop'] } } },
        contexts: { x: { cluster: 'c', user: 'u' } },
      }),
    );
    const user = await who(loadKubeConfig(file));
    expect(user).toMatchObject({ username: 'jane', uid: 'uid-42', extra: { 'example.com/reason': ['testing', 'kubeloop'] } });
    expect(user.groups).toEqual(expect.arrayContaining(['team-a', 'team-b']));
  });

  it('the in-cluster service account: host/port from the environment, CA and token files (a real TokenRequest token), namespace', async () => {
    const sa = join(dir, 'serviceaccount');
    await mkdir(sa);
    await writeFile(join(sa, 'token'), await serviceAccountToken('in-cluster'));
    await writeFile(join(sa, 'ca.crt'), admin.tls!.caData!);
    await writeFile(join(sa, 'namespace'), ns);
    const url = new URL(admin.server);
    const env = { KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port, HOME: dir };
    const config = loadKubeConfig({ env, serviceAccountDir: sa }); // no KUBECONFIG: in-cluster comes before ~/.kube/config
    expect(config).toMatchObject({ server: admin.server, namespace: ns, tls: { caFile: join(sa, 'ca.crt') }, auth: { tokenFile: join(sa, 'token') } });
    expect((await who(config)).username).toBe(`system:serviceaccount:${ns}:in-cluster`);
    expect(loadInClusterConfig({ env, serviceAccountDir: sa }).server).toBe(admin.server);
    expect(thrown(() => loadInClusterConfig({ env, serviceAccountDir: join(dir, 'no-sa') })).message).toContain('does not exist');
    expect(thrown(() => loadInClusterConfig({ env: {} })).message).toContain('KUBERNETES_SERVICE_HOST');
  });
});

describe('exec credential plugins', () => {
  /** A tiny plugin: prints an ExecCredential with the token in TOKEN_FILE, counts its runs in COUNT_FILE, checks KUBERNETES_EXEC_INFO. */
  async function plugin(): Promise<string> {
    const path = join(dir, 'plugin.mjs');
    await writeFile(
      path,
      `#!${process.execPath}
import { appendFileSync, readFileSync } from 'node:fs';
const info = JSON.parse(process.env.KUBERNETES_EXEC_INFO);
appendFileSync(process.env.COUNT_FILE, JSON.stringify(info) + '\\n');
if (process.env.FAIL) { process.stderr.write('plugin: ' + process.env.FAIL); process.exit(3); }
if (process.env.GARBAGE) { process.stdout.write('this is not json'); process.exit(0); }
const status = process.env.CERT ? { clientCertificateData: process.env.CERT, clientKeyData: process.env.KEY } : { token: readFileSync(process.env.TOKEN_FILE, 'utf8').trim() };
if (process.env.EXPIRES) status.expirationTimestamp = process.env.EXPIRES;
process.stdout.write(JSON.stringify({ apiVersion: info.apiVersion, kind: 'ExecCredential', status }));
`,
    );
    await chmod(path, 0o755);
    return path;
  }

  async function runs(countFile: string): Promise<{ apiVersion: string; spec: { interactive: boolean; cluster?: { server: string } } }[]> {
    return (await readFile(countFile, 'utf8').catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { apiVersion: string; spec: { interactive: boolean; cluster?: { server: string } } });
  }

  it('runs the command, uses its token, and caches it until expirationTimestamp', async () => {
    const command = await plugin();
    const tokenFile = join(dir, 'exec-token');
    await writeFile(tokenFile, await serviceAccountToken('exec-user'));
    const countFile = join(dir, 'exec-count-1');
    const file = join(dir, 'exec.yaml');
    await writeFile(
      file,
      kubeconfig({
        current: 'x',
        clusters: { c: { server: admin.server, 'certificate-authority-data': b64(admin.tls!.caData!) } },
        users: {
          u: {
            exec: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: `./${command.split('/').pop()!}`, // relative to the kubeconfig's folder
              interactiveMode: 'Never',
              provideClusterInfo: true,
              env: [
                { name: 'TOKEN_FILE', value: tokenFile },
                { name: 'COUNT_FILE', value: countFile },
                { name: 'EXPIRES', value: new Date(Date.now() + 3_600_000).toISOString() },
              ],
            },
          },
        },
        contexts: { x: { cluster: 'c', user: 'u' } },
      }),
    );
    const t = createTransport(loadKubeConfig(file));
    const answers = await Promise.all([1, 2, 3].map(() => t.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/serviceaccounts/exec-user` })));
    expect(answers.map((a) => a.status)).toEqual([403, 403, 403]); // authenticated as the service account (which has no RBAC), not 401
    await t.request({ method: 'GET', path: '/version' });
    const seen = await runs(countFile);
    expect(seen).toHaveLength(1); // one run, shared by concurrent requests and cached
    expect(seen[0]).toMatchObject({ apiVersion: 'client.authentication.k8s.io/v1', spec: { interactive: false, cluster: { server: admin.server } } });
    // a fork shares the cached credential
    const fork = t.fork();
    await fork.request({ method: 'GET', path: '/version' });
    expect(await runs(countFile)).toHaveLength(1);
    t.close();
    fork.close();
  });

  it('an expired credential runs the plugin again', async () => {
    const command = await plugin();
    const tokenFile = join(dir, 'exec-token');
    const countFile = join(dir, 'exec-count-2');
    const t = createTransport({
      server: admin.server,
      tls: { caData: admin.tls!.caData! },
      auth: {
        exec: {
          command,
          env: [
            { name: 'TOKEN_FILE', value: tokenFile },
            { name: 'COUNT_FILE', value: countFile },
            { name: 'EXPIRES', value: new Date(Date.now() - 1000).toISOString() }, // already expired when handed out
          ],
        },
      },
    });
    await t.request({ method: 'GET', path: '/version' });
    await t.request({ method: 'GET', path: '/version' });
    const seen = await runs(countFile);
    expect(seen).toHaveLength(2);
    expect(seen[0]!.apiVersion).toBe('client.authentication.k8s.io/v1beta1'); // the default when a config leaves it out
    t.close();
  });

  it('a plugin that hands out a client certificate: the TLS handshake presents it (a loopback server that requires one)', async () => {
    const command = await plugin();
    const client = selfSigned('exec-client');
    const serverCert = selfSigned('localhost');
    const server = createHttpsServer({ cert: serverCert.certPem, key: serverCert.keyPem, ca: client.certPem, requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      res.end(JSON.stringify({ cn: peer.subject.CN }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const t = createTransport({
        server: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
        tls: { caData: serverCert.certPem, serverName: 'localhost' },
        auth: { exec: { command, env: [{ name: 'COUNT_FILE', value: join(dir, 'exec-count-cert') }, { name: 'CERT', value: client.certPem }, { name: 'KEY', value: client.keyPem }] } },
      });
      const res = await t.request({ method: 'GET', path: '/whoami' });
      expect(JSON.parse(res.body)).toEqual({ cn: 'exec-client' });
      t.close();
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('a plugin that is missing, fails or prints garbage is an InvalidConfig error saying so (with the install hint and stderr)', async () => {
    const command = await plugin();
    const countFile = join(dir, 'exec-count-3');
    const make = (exec: ExecConfig): Transport => createTransport({ server: admin.server, tls: { caData: admin.tls!.caData! }, auth: { exec } });
    const expectError = async (t: Transport, text: string): Promise<void> => {
      const err = await t.request({ method: 'GET', path: '/version' }).catch((e: unknown) => e);
      expect(isInvalidConfig(err), String(err)).toBe(true);
      expect((err as Error).message).toContain(text);
      t.close();
    };
    await expectError(make({ command: 'kubeloop-no-such-plugin', installHint: 'Install it with: brew install kubeloop-plugin' }), 'command not found. Install it with: brew install kubeloop-plugin');
    await expectError(make({ command, env: [{ name: 'COUNT_FILE', value: countFile }, { name: 'FAIL', value: 'token expired, log in again' }] }), 'exited with 3: plugin: token expired, log in again');
    await expectError(make({ command, env: [{ name: 'COUNT_FILE', value: countFile }, { name: 'GARBAGE', value: '1' }] }), 'not JSON');
    expect(() => make({ command, interactiveMode: 'Always' })).toThrow(/needs an interactive terminal/);
  });
});

describe('auth providers kubeloop does not implement', () => {
  it('loads @kubernetes/client-node only when a kubeconfig names one (gcp), and uses its token', async () => {
    // An access token valid for an hour: client-node's gcp provider sends it as the bearer token without running its command
    const gcp = join(dir, 'gcp.yaml');
    await writeFile(
      gcp,
      kubeconfig({
        current: 'x',
        clusters: { c: { server: admin.server, 'certificate-authority-data': b64(admin.tls!.caData!) } },
        users: { u: { 'auth-provider': { name: 'gcp', config: { 'access-token': 'ya29.not-a-real-token', expiry: new Date(Date.now() + 3600_000).toISOString() } } } },
        contexts: { x: { cluster: 'c', user: 'u' } },
      }),
    );
    // A child process records every module it loads: a plain kubeconfig loads no client-node; an oidc one loads it.
    const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    const script = `
      import { registerHooks } from 'node:module';
      const loaded = [];
      registerHooks({ resolve(s, c, next) { const r = next(s, c); if (r.url.includes('client-node')) loaded.push(r.url); return r; } });
      const { createTransport, loadKubeConfig } = await import(${JSON.stringify(dist)});
      const plain = createTransport(loadKubeConfig(process.argv[1]));
      const a = (await plain.request({ method: 'GET', path: '/version' })).status;
      const before = loaded.length;
      const viaGcp = createTransport(loadKubeConfig(process.argv[2]));
      const b = (await viaGcp.request({ method: 'GET', path: '/api/v1/namespaces' })).status;
      console.log(JSON.stringify({ a, before, b, after: loaded.length }));
      plain.close(); viaGcp.close();
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, testKubeconfigPath(), gcp], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as { a: number; before: number; b: number; after: number };
    expect(out.a).toBe(200);
    expect(out.before).toBe(0); // nothing of client-node for a plain kubeconfig
    expect(out.after).toBeGreaterThan(0); // loaded for the gcp one
    expect(out.b).toBe(401); // the server knows no such token: it was sent and refused
  });
});

describe('the oidc auth provider (done here, not by client-node)', () => {
  const jwt = (exp: number, who: string): string => [b64('{"alg":"none"}'), Buffer.from(JSON.stringify({ exp, sub: who })).toString('base64url'), 'sig'].join('.');

  it('sends the id-token while valid; an expired one is refreshed at the issuer (discovery, refresh grant), the new token sent, a 401 refreshes again', async () => {
    const now = Math.floor(Date.now() / 1000);
    const idpCert = selfSigned('localhost');
    // A loopback issuer: discovery and a token endpoint that hands out a fresh token per refresh.
    const grants: URLSearchParams[] = [];
    const idp = createHttpsServer({ cert: idpCert.certPem, key: idpCert.keyPem }, (req, res) => {
      const base = `https://localhost:${(idp.address() as AddressInfo).port}`;
      if (req.method === 'GET' && req.url === '/issuer/.well-known/openid-configuration') {
        res.end(JSON.stringify({ issuer: `${base}/issuer`, token_endpoint: `${base}/issuer/token` }));
        return;
      }
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        grants.push(form);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ id_token: jwt(now + 3600, `refreshed-${grants.length}`), refresh_token: `refresh-${grants.length + 1}` }));
      });
    });
    // A loopback API server that records the bearer tokens and refuses the second one (401), as a server would a revoked token.
    const apiCert = selfSigned('localhost');
    const bearers: string[] = [];
    const api = createHttpsServer({ cert: apiCert.certPem, key: apiCert.keyPem }, (req, res) => {
      bearers.push(String(req.headers.authorization));
      res.writeHead(bearers.length === 2 ? 401 : 200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    await Promise.all([idp, api].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
    try {
      const issuer = `https://localhost:${(idp.address() as AddressInfo).port}/issuer`;
      const config = (idToken: string): RestConfig => kubeConfigFromText(
        kubeconfig({
          current: 'x',
          clusters: { c: { server: `https://127.0.0.1:${(api.address() as AddressInfo).port}`, 'certificate-authority-data': b64(apiCert.certPem), 'tls-server-name': 'localhost' } },
          users: { u: { 'auth-provider': { name: 'oidc', config: { 'id-token': idToken, 'refresh-token': 'refresh-1', 'client-id': 'kubeloop', 'client-secret': 's3cret', 'idp-issuer-url': issuer, 'idp-certificate-authority-data': b64(idpCert.certPem) } } } },
          contexts: { x: { cluster: 'c', user: 'u' } },
        }),
        { policy: { allowAuthProviders: ['oidc'] } },
      );
      // A valid token: sent as it is, no refresh.
      const valid = jwt(now + 3600, 'valid');
      const t1 = createTransport(config(valid));
      expect((await t1.request({ method: 'GET', path: '/version' })).status).toBe(200);
      expect(bearers).toEqual([`Bearer ${valid}`]);
      expect(grants).toHaveLength(0);
      t1.close();
      // An expired one: refreshed (client-node 2.0.1 fails here with '"server" must be an instance of URL').
      const t2 = createTransport(config(jwt(now - 60, 'expired')));
      expect((await t2.request({ method: 'GET', path: '/version' })).status).toBe(401); // the server refuses the refreshed token once
      expect(grants.map((g) => Object.fromEntries(g))).toEqual([{ grant_type: 'refresh_token', refresh_token: 'refresh-1', client_id: 'kubeloop', client_secret: 's3cret' }]);
      expect(bearers[1]).toBe(`Bearer ${jwt(now + 3600, 'refreshed-1')}`);
      // After the 401 the next request refreshes again, with the refresh token the issuer handed back.
      expect((await t2.request({ method: 'GET', path: '/version' })).status).toBe(200);
      expect(grants[1]!.get('refresh_token')).toBe('refresh-2');
      expect(bearers[2]).toBe(`Bearer ${jwt(now + 3600, 'refreshed-2')}`);
      t2.close();
      // No refresh token and an expired id-token: a clear error, no request.
      const stale = kubeConfigFromText(
        kubeconfig({ current: 'x', clusters: { c: { server: `https://127.0.0.1:${(api.address() as AddressInfo).port}` } }, users: { u: { 'auth-provider': { name: 'oidc', config: { 'id-token': jwt(now - 60, 'old'), 'client-id': 'kubeloop', 'idp-issuer-url': issuer } } } }, contexts: { x: { cluster: 'c', user: 'u' } } }),
        { policy: { allowAuthProviders: ['oidc'] } },
      );
      const t3 = createTransport(stale);
      await expect(t3.request({ method: 'GET', path: '/version' })).rejects.toThrow(/id-token has expired and cannot be refreshed/);
      t3.close();
      expect(bearers).toHaveLength(3);
    } finally {
      for (const s of [idp, api]) {
        s.closeAllConnections();
        await new Promise((r) => s.close(r));
      }
    }
  });
});
