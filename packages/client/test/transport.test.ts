/**
 * The transport's own behaviour: Retry-After on 429 and 503, timeouts,
 * network errors, kubeconfig errors, and the token bucket.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { createTransport, isClientError, loadKubeConfig } from '../src/index.js';
import type { RequestInfo } from '../src/index.js';
import { TokenBucket } from '../src/internal/rate-limiter.js';
import { testKubeConfig } from '../../../test/support/env.js';

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
    expect(() => loadKubeConfig(join(dir, 'empty'))).toThrow(/no current cluster/);
    expect(() => createTransport(new KubeConfig())).toThrow(expect.objectContaining({ reason: 'InvalidConfig' }) as Error);
  });
});

describe('token bucket', () => {
  it('allows a burst, then one token per 1/qps seconds', async () => {
    let now = 0;
    const bucket = new TokenBucket(10, 3, () => now);
    for (let i = 0; i < 3; i++) await bucket.take();
    let granted = false;
    const next = bucket.take().then(() => {
      granted = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(granted).toBe(false); // no time has passed on the bucket's clock
    now += 100; // one token's worth
    await next;
    expect(granted).toBe(true);
  });

  it('an abort while waiting rejects', async () => {
    const bucket = new TokenBucket(1, 1, () => 0);
    await bucket.take();
    const ac = new AbortController();
    const waiting = bucket.take(ac.signal);
    ac.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
  });
});
