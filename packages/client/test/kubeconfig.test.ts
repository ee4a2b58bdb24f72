/**
 * loadKubeConfig and loadInClusterConfig against real files (merge order of a
 * KUBECONFIG list, relative paths, missing and malformed files), and the
 * credentials they give against the real API server: client certificates,
 * bearer tokens and token files (real TokenRequest tokens), an exec plugin
 * (a tiny script), impersonation, the in-cluster service account, a bad
 * token and an untrusted client certificate (401 that isUnauthorized knows),
 * and an auth provider handed to @kubernetes/client-node, loaded only then.
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
  it('loads @kubernetes/client-node only when a kubeconfig names one (oidc), and uses its token', async () => {
    // header.payload.signature with an exp an hour away: client-node's oidc provider sends it as the bearer token
    const jwt = [b64('{"alg":"none"}'), b64(JSON.stringify({ exp: Math.floor(Date.now() / 1000) + 3600 })), 'sig'].join('.');
    const oidc = join(dir, 'oidc.yaml');
    await writeFile(
      oidc,
      kubeconfig({
        current: 'x',
        clusters: { c: { server: admin.server, 'certificate-authority-data': b64(admin.tls!.caData!) } },
        users: { u: { 'auth-provider': { name: 'oidc', config: { 'id-token': jwt, 'client-id': 'kubeloop', 'idp-issuer-url': 'https://127.0.0.1:1' } } } },
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
      const viaOidc = createTransport(loadKubeConfig(process.argv[2]));
      const b = (await viaOidc.request({ method: 'GET', path: '/api/v1/namespaces' })).status;
      console.log(JSON.stringify({ a, before, b, after: loaded.length }));
      plain.close(); viaOidc.close();
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, testKubeconfigPath(), oidc], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as { a: number; before: number; b: number; after: number };
    expect(out.a).toBe(200);
    expect(out.before).toBe(0); // nothing of client-node for a plain kubeconfig
    expect(out.after).toBeGreaterThan(0); // loaded for the oidc one
    expect(out.b).toBe(401); // the server knows no OIDC issuer: the token was sent and refused
  });
});
