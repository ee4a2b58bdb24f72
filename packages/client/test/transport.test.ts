/**
 * The transport's own behaviour: Retry-After on 429 and 503, deadlines over
 * every phase (a loopback server that stalls mid-body or never answers),
 * size limits, rate limiting off by default and on with qps/burst, fork(),
 * typed TLS and configuration errors, the Node.js version check, the token
 * bucket, and 100 open watches against the real API server.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import diagnostics from 'node:diagnostics_channel';
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { startApiProxy } from '@kubeloop/envtest';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createClient, createTransport, isClientError, isNetworkError, isResponseTooLarge, isTLSError, loadKubeConfig } from '../src/index.js';
import type { ClientError, RestConfig } from '../src/index.js';
import type { RequestInfo } from '../src/internal-api.js';
import { assertNodeVersion } from '../src/internal/node-version.js';
import { testKubeConfig, testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { startConnectProxy } from '../../../test/support/net.js';
import { watchEvents } from '../src/watch.js';
import { otherCaPem } from './support.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

/** A local HTTP server answering from a script of responses (bad-input and retry tests). */
async function scripted(answers: { status: number; headers?: Record<string, string>; body?: string; hang?: boolean }[]): Promise<{ kc: KubeConfig; hits: () => number }> {
  let hits = 0;
  server = createServer((req, res) => {
    const a = answers[Math.min(hits, answers.length - 1)]!;
    hits++;
    if (a.hang) return;
    res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
    res.end(a.body ?? '{}');
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return { kc, hits: () => hits };
}

describe('transport', () => {
  it('talks to the real API server with the envtest admin certificate and reports each request', async () => {
    const seen: RequestInfo[] = [];
    const t = createTransport(testKubeConfig(), { onRequest: (i) => seen.push(i) });
    const res = await t.request({ method: 'GET', path: '/version' });
    expect(res.status).toBe(200);
    expect((JSON.parse(res.body) as { gitVersion: string }).gitVersion).toMatch(/^v1\./);
    expect(seen).toEqual([expect.objectContaining({ method: 'GET', path: '/version', code: 200 })]);
    t.close();
  });

  it('honours Retry-After on 429 and 503, then returns the answer', async () => {
    const { kc, hits } = await scripted([
      { status: 429, headers: { 'retry-after': '0' }, body: '{"kind":"Status","reason":"TooManyRequests","code":429}' },
      { status: 503, headers: { 'retry-after': '0' }, body: '{"kind":"Status","message":"storage is (re)initializing","code":503}' },
      { status: 200, body: '{"ok":true}' },
    ]);
    const res = await createTransport(kc).request({ method: 'GET', path: '/x' });
    expect(res.status).toBe(200);
    expect(hits()).toBe(3);
  });

  it('gives up after maxRetries and hands back the last answer', async () => {
    const { kc, hits } = await scripted([{ status: 429, headers: { 'retry-after': '0' } }]);
    const res = await createTransport(kc, { maxRetries: 2 }).request({ method: 'GET', path: '/x' });
    expect(res.status).toBe(429);
    expect(hits()).toBe(3);
  });

  it('does not retry a 5xx without Retry-After', async () => {
    const { kc, hits } = await scripted([{ status: 500 }, { status: 200 }]);
    expect((await createTransport(kc).request({ method: 'GET', path: '/x' })).status).toBe(500);
    expect(hits()).toBe(1);
  });

  it('times out a request with no answer, as a typed error', async () => {
    const { kc } = await scripted([{ status: 200, hang: true }]);
    const err = await createTransport(kc, { timeoutMs: 200 }).request({ method: 'GET', path: '/x' }).catch((e: unknown) => e);
    expect(isClientError(err) && err.reason).toBe('ClientTimeout');
  });

  it('a refused connection is a Network error; an abort is Aborted', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({ clusters: [{ name: 'c', server: 'http://127.0.0.1:1', skipTLSVerify: true }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
    const err = await createTransport(kc).request({ method: 'GET', path: '/x' }).catch((e: unknown) => e);
    expect(isClientError(err) && err.reason).toBe('Network');
    const { kc: slow } = await scripted([{ status: 200, hang: true }]);
    const ac = new AbortController();
    const pending = createTransport(slow).request({ method: 'GET', path: '/x', signal: ac.signal });
    ac.abort();
    const aborted = await pending.catch((e: unknown) => e);
    expect(isClientError(aborted) && aborted.reason).toBe('Aborted');
  });

  it('frames a DELETE body with its length, so the server reads it and the next request on the socket', async () => {
    const bodies: string[] = [];
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(`${req.method} ${req.headers['content-length'] ?? '-'} ${Buffer.concat(chunks).toString('utf8')}`);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as { port: number }).port}`, skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const t = createTransport(kc);
    const body = JSON.stringify({ kind: 'DeleteOptions', preconditions: { uid: 'ü' } });
    await t.request({ method: 'DELETE', path: '/x', body });
    await t.request({ method: 'GET', path: '/y' });
    expect(bodies).toEqual([`DELETE ${Buffer.byteLength(body)} ${body}`, 'GET - ']);
    t.close();
  });

  it('a malformed or empty kubeconfig is an InvalidConfig error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kc-'));
    await writeFile(join(dir, 'bad'), 'clusters: [nope: {');
    expect(() => loadKubeConfig(join(dir, 'bad'))).toThrow(expect.objectContaining({ reason: 'InvalidConfig' }) as Error);
    await writeFile(join(dir, 'empty'), 'apiVersion: v1\nkind: Config\n');
    expect(() => loadKubeConfig(join(dir, 'empty'))).toThrow(/no current-context/);
    expect(() => createTransport(new KubeConfig())).toThrow(expect.objectContaining({ reason: 'InvalidConfig' }) as Error);
  });
});


/** A loopback server whose handler the test sets; raw sockets for bytes no HTTP server would send. */
async function loopback(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; close: () => Promise<void> }> {
  const s = createServer(handler);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`,
    close: async () => {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    },
  };
}

async function errorOf(p: Promise<unknown>): Promise<ClientError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isClientError(err), `expected a ClientError, got ${String(err)}`).toBe(true);
  return err as ClientError;
}

describe('transport deadlines and limits (a loopback server that stalls or floods)', () => {
  it('a list whose headers and `{"items":[` arrive and then nothing fails with ClientTimeout (the deadline covers the body)', async () => {
    const srv = await loopback((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"kind":"ConfigMapList","items":[');
      // ... and never another byte
    });
    try {
      const t = createTransport({ server: srv.url }, { timeoutMs: 300 });
      const err = await errorOf(t.request({ method: 'GET', path: '/api/v1/configmaps' }));
      expect(err.reason).toBe('ClientTimeout');
      expect(err.message).toContain('no answer within 300 ms (the deadline covers connecting, the headers and the whole body)');
      t.close();
    } finally {
      await srv.close();
    }
  });

  it('a per-request timeoutMs overrides the transport default and covers a server that accepts but never answers', async () => {
    const sockets: Socket[] = [];
    const blackhole = createNetServer((s) => sockets.push(s)); // accepts TCP, says nothing
    await new Promise<void>((r) => blackhole.listen(0, '127.0.0.1', r));
    try {
      const t = createTransport({ server: `http://127.0.0.1:${(blackhole.address() as AddressInfo).port}` }, { timeoutMs: 0 });
      const err = await errorOf(t.request({ method: 'GET', path: '/apis/coordination.k8s.io/v1/leases', timeoutMs: 200 }));
      expect(err.reason).toBe('ClientTimeout');
      t.close();
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => blackhole.close(r));
    }
  });

  it('an answer larger than maxResponseBytes fails with ResponseTooLarge and the connection is closed, declared or streamed', async () => {
    let closed = 0;
    const srv = await loopback((req, res) => {
      res.on('close', () => closed++);
      if (req.url === '/declared') {
        res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) });
        res.write('x'.repeat(1024));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = 'y'.repeat(64 * 1024);
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump(); // endless
    });
    try {
      const t = createTransport({ server: srv.url }, { maxResponseBytes: 1024 * 1024 });
      const declared = await errorOf(t.request({ method: 'GET', path: '/declared' }));
      expect(declared.reason).toBe('ResponseTooLarge');
      expect(isResponseTooLarge(declared)).toBe(true);
      const streamed = await errorOf(t.request({ method: 'GET', path: '/endless' }));
      expect(streamed.reason).toBe('ResponseTooLarge');
      expect(streamed.message).toContain('maxResponseBytes (1048576)');
      await vi.waitFor(() => expect(closed).toBe(2));
      t.close();
    } finally {
      await srv.close();
    }
  });

  it('however a body read ends (whole, too large, timed out, aborted, cut off), no listener of the transport stays on the response', async () => {
    // A listener left on a response would keep its closure (the chunks read so far) alive for as long as the response is.
    const EVENTS = ['data', 'end', 'error', 'close', 'readable', 'aborted'] as const;
    const counts = (res: IncomingMessage): number[] => EVENTS.map((e) => res.listenerCount(e));
    const seen: { res: IncomingMessage; atResponse: number[] }[] = [];
    const onResponse = (message: unknown): void => {
      const { response } = message as { response: IncomingMessage };
      // Node's own listeners are on by the next microtask, the transport's not yet (it reads the body after its await).
      queueMicrotask(() => seen.push({ res: response, atResponse: counts(response) }));
    };
    const channel = diagnostics.channel('http.client.response.finish');
    channel.subscribe(onResponse);
    let aborter: AbortController | undefined;
    const srv = await loopback((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url === '/whole') res.end('{"kind":"Status"}');
      else if (req.url === '/endless') res.write('y'.repeat(2 * 1024 * 1024));
      else if (req.url === '/cut') res.write('{"items":[', () => setTimeout(() => res.socket?.destroy(), 20));
      else res.write('{"items":[', () => setTimeout(() => aborter?.abort(), 20)); // then nothing
    });
    try {
      // Only the stalled read has a short deadline: the others end their own way well within 30 s, however loaded the machine.
      const t = createTransport({ server: srv.url }, { maxResponseBytes: 1024 * 1024, timeoutMs: 30_000 });
      const real = createTransport(testKubeConfig());
      expect(JSON.parse((await real.request({ method: 'GET', path: '/api/v1/namespaces/default' })).body)).toMatchObject({ kind: 'Namespace' });
      expect((await t.request({ method: 'GET', path: '/whole' })).body).toBe('{"kind":"Status"}');
      expect((await errorOf(t.request({ method: 'GET', path: '/endless' }))).reason).toBe('ResponseTooLarge');
      expect((await errorOf(t.request({ method: 'GET', path: '/stall', timeoutMs: 300 }))).reason).toBe('ClientTimeout');
      aborter = new AbortController();
      expect((await errorOf(t.request({ method: 'GET', path: '/abort', signal: aborter.signal }))).reason).toBe('Aborted');
      const cut = await errorOf(t.request({ method: 'GET', path: '/cut' }));
      expect(cut.reason).toBe('Network');
      expect(cut.message).toContain('the answer was cut off');
      expect(seen).toHaveLength(6);
      for (const { res, atResponse } of seen) expect(counts(res)).toEqual(atResponse);
      t.close();
      real.close();
    } finally {
      channel.unsubscribe(onResponse);
      await srv.close();
    }
  });

  it('a server URL with a path (a proxy such as Rancher\'s https://host/k8s/clusters/c-1) keeps it before every request path', async () => {
    const api = await startApiProxy(testKubeConfig());
    const prefix = '/k8s/clusters/c-1';
    // In front of the real API server, as a multi-cluster proxy: only paths under the prefix, forwarded without it.
    const front = await loopback((req, res) => {
      if (!req.url?.startsWith(`${prefix}/`)) return void res.writeHead(404).end(`no cluster at ${req.url}`);
      const upstream = httpRequest(`${api.url}${req.url.slice(prefix.length)}`, { method: req.method, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      req.pipe(upstream);
    });
    try {
      for (const server of [`${front.url}${prefix}`, `${front.url}${prefix}/`]) {
        const client = createClient({ kubeConfig: { server } });
        expect((await client.get({ apiVersion: 'v1', kind: 'Namespace' }, { name: 'default' })).metadata?.name).toBe('default');
        const t = createTransport({ server });
        // a path with characters a URL escapes and a dot segment, resolved under the prefix as `new URL` does
        expect((await t.request({ method: 'GET', path: '/api/v1/namespaces/a b/../default', query: { limit: 1 } })).status).toBe(200);
        t.close();
      }
      expect(api.requests.map((r) => r.url)).toEqual(expect.arrayContaining(['/api/v1/namespaces/default', '/api/v1/namespaces/default?limit=1']));
      expect(api.requests.every((r) => !r.url.includes(prefix))).toBe(true);
    } finally {
      await front.close();
      await api.close();
    }
  });

  it('a request path reaches the server as `new URL` resolves it under the server path: `//`, dot segments, characters a URL escapes (generated paths)', async () => {
    // The transport sends a plain path as it is and resolves any other with `new URL` (dot segments
    // removed, characters escaped). What reaches the server must be the same either way; a path
    // starting with `//` must stay a path on the configured server, never name another host.
    const seen: string[] = [];
    const srv = await loopback((req, res) => {
      seen.push(req.url ?? '');
      res.end('{}');
    });
    const transports = new Map(['', '/p', '/p/', '/k8s/clusters/c-1'].map((prefix) => [prefix, createTransport({ server: `${srv.url}${prefix}` })]));
    const segment = fc.oneof(
      fc.constantFrom('', '.', '..', '%2e', '%2E%2e', '.%2e', 'a b', '\u00e4', '\u65e5', 'x?y=1', 'evil.example', '%41', '@', ':'),
      fc.stringMatching(/^[\w\-.~%!$&'()*+,;=:@]{0,6}$/),
    );
    try {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...transports.keys()), fc.array(segment, { maxLength: 5 }), async (prefix, segments) => {
          const path = `/${segments.join('/')}`;
          const before = seen.length;
          expect((await transports.get(prefix)!.request({ method: 'GET', path })).status).toBe(200);
          const url = new URL(`http://h${prefix.replace(/\/+$/, '')}${path}`);
          expect(seen.slice(before)).toEqual([url.pathname + url.search]);
        }),
        { numRuns: 300 },
      );
      // the cases the generator is after, pinned
      const pinned = transports.get('')!;
      for (const [path, reaches] of [
        ['//evil.example/api', '//evil.example/api'],
        ['//', '//'],
        ['/api//v1/../v1/./namespaces', '/api//v1/namespaces'],
      ] as const) {
        const before = seen.length;
        await pinned.request({ method: 'GET', path });
        expect(seen.slice(before)).toEqual([reaches]);
      }
    } finally {
      for (const t of transports.values()) t.close();
      await srv.close();
    }
  });

  it('client-side rate limiting is off by default: 100 requests are in flight at once', async () => {
    const waiting: ServerResponse[] = [];
    const srv = await loopback((_req, res) => {
      waiting.push(res);
      // answer nobody until all 100 are here at once: a 20 qps / burst 30 limiter would never get there
      if (waiting.length === 100) for (const r of waiting) r.end('{}');
    });
    try {
      const t = createTransport({ server: srv.url }, { maxSockets: 100 });
      expect(t.options.qps).toBe(0);
      const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => t.request({ method: 'GET', path: `/x/${i}` })));
      expect(answers.every((a) => a.status === 200)).toBe(true);
      t.close();
    } finally {
      await srv.close();
    }
  });

  it('qps/burst turn rate limiting on: burst requests go at once, the next waits for a token', async () => {
    let arrived = 0;
    const srv = await loopback((_req, res) => {
      arrived++;
      res.end('{}');
    });
    try {
      const t = createTransport({ server: srv.url }, { qps: 0.5, burst: 3 });
      expect(t.options).toMatchObject({ qps: 0.5, burst: 3 });
      await Promise.all([0, 1, 2].map(() => t.request({ method: 'GET', path: '/x' })));
      expect(arrived).toBe(3);
      // the fourth needs a token 2 s away; its own deadline (covering the limiter wait) ends it first
      const err = await errorOf(t.request({ method: 'GET', path: '/x', timeoutMs: 100 }));
      expect(err.reason).toBe('ClientTimeout');
      expect(arrived).toBe(3);
      t.close();
    } finally {
      await srv.close();
    }
  });

  it('fork() has its own sockets and limiter: a full parent pool does not hold up the fork', async () => {
    const held: ServerResponse[] = [];
    const srv = await loopback((req, res) => {
      if (req.url === '/hold') held.push(res);
      else res.end('{"ok":true}');
    });
    try {
      const parent = createTransport({ server: srv.url }, { maxSockets: 2, qps: 1000, burst: 1000 });
      const holding = [parent.request({ method: 'GET', path: '/hold' }), parent.request({ method: 'GET', path: '/hold' })];
      await vi.waitFor(() => expect(held).toHaveLength(2));
      const queued = parent.request({ method: 'GET', path: '/lease', timeoutMs: 300 });
      const fork = parent.fork({ timeoutMs: 5_000 });
      expect(fork.options).toMatchObject({ maxSockets: 2, qps: 1000, timeoutMs: 5_000 });
      expect(fork.server.href).toBe(parent.server.href);
      expect((await fork.request({ method: 'GET', path: '/lease' })).status).toBe(200);
      expect((await errorOf(queued)).reason).toBe('ClientTimeout'); // the parent's third request waited for a socket
      for (const r of held) r.end('{}');
      await Promise.all(holding);
      parent.close();
      fork.close();
    } finally {
      await srv.close();
    }
  });
});

describe('transport configuration mistakes', () => {
  it('client-node\'s empty default (nothing found: http://localhost:8080) is refused at construction', () => {
    const kc = new KubeConfig();
    kc.loadFromClusterAndUser({ name: 'cluster', server: 'http://localhost:8080', skipTLSVerify: false }, { name: 'user' });
    expect(() => createTransport(kc)).toThrow(/no kubeconfig found/);
    expect(() => createTransport(undefined as unknown as RestConfig)).toThrow(expect.objectContaining({ reason: 'InvalidConfig' }) as Error);
  });

  it('an http:// server (kubectl proxy) works, as a RestConfig and as a client-node KubeConfig without skipTLSVerify', async () => {
    const proxy = await startApiProxy(testKubeConfig());
    try {
      const viaRest = createTransport({ server: proxy.url });
      expect((await viaRest.request({ method: 'GET', path: '/version' })).status).toBe(200);
      viaRest.close();
      const kc = new KubeConfig();
      kc.loadFromOptions({ clusters: [{ name: 'p', server: proxy.url, skipTLSVerify: false }], users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'p', user: 'u' }], currentContext: 'x' });
      const viaKc = createTransport(kc);
      expect((await viaKc.request({ method: 'GET', path: '/version' })).status).toBe(200);
      viaKc.close();
    } finally {
      await proxy.close();
    }
  });

  it('a server certificate the config does not trust is ClientError TLS saying to check the CA', async () => {
    const real = loadKubeConfig(testKubeconfigPath());
    const wrongCa = createTransport({ ...real, tls: { ...real.tls, caData: otherCaPem() } });
    const err = await errorOf(wrongCa.request({ method: 'GET', path: '/version' }));
    expect(err.reason).toBe('TLS');
    expect(isTLSError(err) && isNetworkError(err)).toBe(true);
    expect(err.message).toContain('certificate-authority');
    wrongCa.close();
  });

  it('https:// to a plain-HTTP server is ClientError TLS asking whether the URL should be http://', async () => {
    const srv = await loopback((_req, res) => res.end('{}'));
    try {
      const t = createTransport({ server: srv.url.replace('http:', 'https:') });
      const err = await errorOf(t.request({ method: 'GET', path: '/version' }));
      expect(err.reason).toBe('TLS');
      expect(err.message).toContain('http://');
      t.close();
    } finally {
      await srv.close();
    }
  });

  it('proxy-url: requests tunnel through an HTTP CONNECT proxy to the real API server', async () => {
    const proxy = await startConnectProxy();
    try {
      const real = loadKubeConfig(testKubeconfigPath());
      const t = createTransport({ ...real, proxyUrl: proxy.url });
      expect((await t.request({ method: 'GET', path: '/version' })).status).toBe(200);
      expect(proxy.tunnels).toEqual([new URL(real.server).host]);
      t.close();
    } finally {
      await proxy.close();
    }
  });

  it('logging a transport or a client shows no token and no private key', async () => {
    const real = loadKubeConfig(testKubeconfigPath());
    const t = createTransport({ ...real, auth: { token: 'very-secret-token' } });
    await t.request({ method: 'GET', path: '/version' }); // agents made, TLS options inside them
    const client = createClient({ transport: t });
    for (const shown of [JSON.stringify(t), inspect(t, { depth: Infinity, showHidden: true }), inspect(client, { depth: Infinity, showHidden: true })]) {
      expect(shown).not.toContain('very-secret-token');
      expect(shown).not.toContain('PRIVATE KEY');
    }
    t.close();
  });

  it('option values are checked', () => {
    expect(() => createTransport({ server: 'http://127.0.0.1:1' }, { qps: -1 })).toThrow(/qps must be a number >= 0/);
  });
});

describe('Node.js version', () => {
  it('an older Node is a clear InvalidConfig error', () => {
    expect(() => assertNodeVersion('20.20.2')).toThrow(/needs Node\.js >= 22\.19; this is Node\.js 20\.20\.2/);
    expect(() => assertNodeVersion('22.18.0')).toThrow(expect.objectContaining({ reason: 'InvalidConfig' }) as Error);
    expect(() => assertNodeVersion('22.19.0')).not.toThrow();
    expect(() => assertNodeVersion('24.0.0')).not.toThrow();
  });

  // The machine image ships an older system Node (/usr/bin/node); importing the built package with it must say why, not crash.
  const oldNode = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => {
    const r = spawnSync(p, ['-p', 'process.versions.node'], { encoding: 'utf8' });
    if (r.status !== 0) return false;
    const [major = 0, minor = 0] = r.stdout.trim().split('.').map(Number);
    return major < 22 || (major === 22 && minor < 19);
  });
  it.skipIf(!oldNode)(`importing @kubeloop/client on an older Node (${oldNode ?? 'none found'}) fails with the sentence, not inside a dependency`, () => {
    const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    const r = spawnSync(oldNode!, ['--input-type=module', '-e', `await import(${JSON.stringify(dist)})`], { encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('kubeloop needs Node.js >= 22.19');
    expect(r.stderr).not.toContain('undici');
  });
});

describe('watches never starve other requests (the real API server)', () => {
  it('with 100 watches open, GETs and writes through the same transport complete, and the watches stay open', async () => {
    const kc = testKubeConfig();
    const t = createTransport(kc); // defaults: 64 sockets for ordinary requests, watches on their own pool
    const ns = uniqueName('starve');
    const created = await t.request({ method: 'POST', path: '/api/v1/namespaces', body: JSON.stringify({ metadata: { name: ns } }) });
    expect(created.status).toBe(201);
    const watches: IncomingMessage[] = [];
    try {
      for (let i = 0; i < 100; i++) {
        const res = await t.stream({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps`, query: { watch: 'true', timeoutSeconds: 300 } });
        expect(res.statusCode).toBe(200);
        watches.push(res);
      }
      // ordinary traffic while all 100 are open: reads, creates, a Lease write (what leader election sends)
      const work = [
        ...Array.from({ length: 20 }, () => t.request({ method: 'GET', path: `/api/v1/namespaces/${ns}/configmaps` })),
        ...Array.from({ length: 10 }, (_, i) =>
          t.request({ method: 'POST', path: `/api/v1/namespaces/${ns}/configmaps`, body: JSON.stringify({ metadata: { name: `cm-${i}` }, data: { starve: String(i) } }) }),
        ),
        t.request({ method: 'POST', path: `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, body: JSON.stringify({ metadata: { name: 'leader' }, spec: { holderIdentity: 'me', leaseDurationSeconds: 15 } }) }),
      ];
      const answers = await Promise.all(work);
      expect(answers.map((a) => a.status)).toEqual([...Array<number>(20).fill(200), ...Array<number>(11).fill(201)]);
      expect(watches.every((w) => !w.destroyed && !w.complete)).toBe(true);
      // and every watch is live: each one sees the ConfigMaps created above (read until the tenth ADDED)
      const seen = await Promise.all(
        watches.map(async (w) => {
          let added = 0;
          for await (const e of watchEvents(w)) if (e.type === 'ADDED' && ++added === 10) break;
          return added;
        }),
      );
      expect(seen.every((n) => n === 10)).toBe(true);
    } finally {
      for (const w of watches) w.destroy();
      await t.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns}` });
      t.close();
    }
  });
});
