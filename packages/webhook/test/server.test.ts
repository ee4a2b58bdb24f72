/**
 * The webhook server over real loopback TLS: routing, the clear answers to
 * malformed, oversized, throwing and slow requests, raw-socket garbage,
 * read timeouts, certificate swaps, readiness and graceful shutdown.
 */
import { X509Certificate } from 'node:crypto';
import { Agent } from 'node:https';
import { connect as netConnect, createServer as createNetServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { conversionWebhook, createWebhookServer, defineConversion, isWebhookError, staticCertificate, validatingWebhook } from '../src/index.js';
import type { AdmissionReview, CertificateSource, ConversionReview, ServingCertificate, Webhook } from '../src/index.js';
import { admissionReview, call, runServer, testPki } from './support.js';
import type { RunningServer } from './support.js';

interface Thing extends KubeObject {
  spec?: { mode?: string; delayMs?: number };
}
const Thing = defineKind<Thing>({ group: 'test.kubeloop.dev', version: 'v1', kind: 'Thing' });
const ThingV2 = defineKind<Thing>({ group: 'test.kubeloop.dev', version: 'v2', kind: 'Thing' });

const pki = testPki();
const ca = pki.ca.certPem;

function thingReview(uid: string, spec: Thing['spec'] = {}): Record<string, unknown> {
  return admissionReview({
    uid,
    kind: { group: 'test.kubeloop.dev', version: 'v1', kind: 'Thing' },
    resource: { group: 'test.kubeloop.dev', version: 'v1', resource: 'things' },
    operation: 'CREATE',
    name: 't',
    userInfo: {},
    object: { apiVersion: 'test.kubeloop.dev/v1', kind: 'Thing', metadata: { name: 't' }, spec },
  });
}

const aborted: boolean[] = [];
const validator = validatingWebhook(Thing, {
  async validateCreate(thing, ctx) {
    if (thing.spec?.mode === 'throw') throw new Error('validator exploded');
    if (thing.spec?.mode === 'throw-string') throw 'a thrown string'; // eslint-disable-line @typescript-eslint/only-throw-error
    if (thing.spec?.mode === 'slow') {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, thing.spec?.delayMs ?? 5000);
        ctx.signal.addEventListener('abort', () => {
          aborted.push(true);
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return undefined;
  },
});
const conversion = conversionWebhook([defineConversion(ThingV2, [])]);

let s: RunningServer;
beforeAll(async () => {
  s = await runServer({ pki, maxBodyBytes: 64 * 1024, handlerTimeoutMs: 400, headersTimeoutMs: 500, requestTimeoutMs: 1500, handshakeTimeoutMs: 1000 });
  s.server.register(validator);
  s.server.register(conversion);
});
afterAll(async () => {
  await s.stop();
});

function responseOf(result: { json: unknown }): NonNullable<AdmissionReview['response']> {
  return (result.json as AdmissionReview).response!;
}

/** Open a TLS connection trusting the test CA. */
function tls(port: number): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca }, () => resolve(socket));
    socket.on('error', reject);
  });
}

/** Everything the server sends until it closes the connection, and how long that took. */
function untilClosed(socket: Socket, timeoutMs = 10_000): Promise<{ data: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    let data = '';
    const timer = setTimeout(() => reject(new Error(`the server did not close the connection within ${timeoutMs} ms; got ${JSON.stringify(data.slice(0, 200))}`)), timeoutMs);
    socket.on('data', (c: Buffer) => (data += c.toString('utf8')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ data, ms: Date.now() - started });
    });
  });
}

describe('routing', () => {
  it('answers a registered webhook over TLS', async () => {
    const res = await call(s.url, '/validate-test-kubeloop-dev-v1-thing', thingReview('u-ok'), { ca });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(responseOf(res)).toEqual({ uid: 'u-ok', allowed: true });
    expect(s.server.paths).toEqual(['/validate-test-kubeloop-dev-v1-thing', '/convert']);
  });

  it('answers 404 for unknown paths and 405 for other methods', async () => {
    const missing = await call(s.url, '/validate-nothing', thingReview('u'), { ca });
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ message: 'no webhook is registered at /validate-nothing' });
    const get = await call(s.url, '/convert', undefined, { ca, method: 'GET' });
    expect(get.status).toBe(405);
    expect(get.headers['allow']).toBe('POST');
  });

  it('refuses duplicate and malformed paths', () => {
    expect(() => s.server.register(validator)).toThrow(/already registered at \/validate-test-kubeloop-dev-v1-thing/);
    const bad: Webhook = { path: 'no-slash', handle: async () => ({ status: 200, body: {} }), failure: () => ({ status: 500, body: {} }) };
    expect(() => s.server.register(bad)).toThrow(/must start with "\/"/);
    expect(() => s.server.register({ path: '/x' } as never)).toThrow(/handle\(\) and failure\(\)/);
  });
});

describe('bad requests get a clear answer', () => {
  it('malformed JSON: an AdmissionReview denial with code 400, and 400 for a conversion', async () => {
    const admission = await call(s.url, '/validate-test-kubeloop-dev-v1-thing', '{"apiVersion": "admission.k8s.io/v1", ', { ca });
    expect(admission.status).toBe(200);
    expect(responseOf(admission)).toMatchObject({ uid: '', allowed: false, status: { status: 'Failure', code: 400 } });
    expect(responseOf(admission).status?.message).toMatch(/^the request body is not JSON: /);
    const convert = await call(s.url, '/convert', 'not json at all', { ca });
    expect(convert.status).toBe(400);
    expect((convert.json as ConversionReview).response?.result.message).toMatch(/not JSON/);
  });

  it('an empty body, and a content type that is not JSON', async () => {
    expect(responseOf(await call(s.url, '/validate-test-kubeloop-dev-v1-thing', '', { ca })).status).toMatchObject({ code: 400, message: 'the request body is empty' });
    const yaml = await call(s.url, '/validate-test-kubeloop-dev-v1-thing', 'a: 1', { ca, headers: { 'content-type': 'application/yaml' } });
    expect(responseOf(yaml).status).toMatchObject({ code: 415, message: 'content type "application/yaml" is not application/json' });
    const charset = await call(s.url, '/validate-test-kubeloop-dev-v1-thing', thingReview('u-cs'), { ca, headers: { 'content-type': 'application/json; charset=utf-8' } });
    expect(responseOf(charset).allowed).toBe(true);
  });

  it('a body over the limit, declared or streamed, is refused without reading it all', async () => {
    const declared = await call(s.url, '/validate-test-kubeloop-dev-v1-thing', Buffer.alloc(200 * 1024, 0x20), { ca });
    expect(responseOf(declared).status).toMatchObject({ code: 413, message: 'the request body (204800 bytes) is larger than the 65536 byte limit' });

    // Chunked, no content-length, and far more than the limit: the answer comes while the client is still sending.
    const socket = await tls(s.port);
    const closed = untilClosed(socket);
    socket.write('POST /convert HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    let sent = 0;
    while (!socket.destroyed && sent < 50 * 1024 * 1024) {
      const ok = socket.write(Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]));
      sent += chunk.length;
      if (!ok) await new Promise((r) => setTimeout(r, 5));
    }
    const { data } = await closed;
    expect(data).toMatch(/^HTTP\/1.1 413 /);
    expect(data).toMatch(/the request body is larger than the 65536 byte limit/);
    expect(sent).toBeLessThan(50 * 1024 * 1024);
  });

  it('a throwing handler: a denial with code 500 and the error, uid echoed', async () => {
    const res = await call(s.url, '/validate-test-kubeloop-dev-v1-thing', thingReview('u-throw', { mode: 'throw' }), { ca });
    expect(res.status).toBe(200);
    expect(responseOf(res)).toEqual({ uid: 'u-throw', allowed: false, status: { status: 'Failure', code: 500, message: 'the webhook handler failed: validator exploded' } });
    const str = await call(s.url, '/validate-test-kubeloop-dev-v1-thing', thingReview('u-throw2', { mode: 'throw-string' }), { ca });
    expect(responseOf(str).status?.message).toBe('the webhook handler failed: a thrown string');
  });

  it('a slow handler: a denial at the deadline, and its signal aborts', async () => {
    aborted.length = 0;
    const started = Date.now();
    const res = await call(s.url, '/validate-test-kubeloop-dev-v1-thing', thingReview('u-slow', { mode: 'slow' }), { ca });
    expect(Date.now() - started).toBeLessThan(4000);
    expect(responseOf(res)).toEqual({ uid: 'u-slow', allowed: false, status: { status: 'Failure', code: 500, message: 'the webhook handler did not answer within 400 ms' } });
    expect(aborted).toEqual([true]);
  });

  it('the deadline follows the API server\'s timeout parameter', async () => {
    const slow = await runServer({ pki, handlerTimeoutMs: 30_000 });
    try {
      slow.server.register(validator);
      const res = await call(slow.url, '/validate-test-kubeloop-dev-v1-thing?timeout=2s', thingReview('u-param', { mode: 'slow', delayMs: 10_000 }), { ca });
      expect(responseOf(res).status?.message).toBe('the webhook handler did not answer within 1000 ms');
      const fast = await call(slow.url, '/validate-test-kubeloop-dev-v1-thing?timeout=10s', thingReview('u-param2', { mode: 'slow', delayMs: 50 }), { ca });
      expect(responseOf(fast).allowed).toBe(true);
    } finally {
      await slow.stop();
    }
  });

  it('a handler may take longer than the request timeout (which covers receiving the request only)', async () => {
    const patient = await runServer({ pki, requestTimeoutMs: 1000, headersTimeoutMs: 500, handlerTimeoutMs: 10_000 });
    try {
      patient.server.register(validator);
      const res = await call(patient.url, '/validate-test-kubeloop-dev-v1-thing', thingReview('u-long', { mode: 'slow', delayMs: 2500 }), { ca });
      expect(responseOf(res)).toEqual({ uid: 'u-long', allowed: true });
    } finally {
      await patient.stop();
    }
  });

  it('an answer that cannot be serialised becomes a failure answer', async () => {
    const circular: Record<string, unknown> = {};
    circular['self'] = circular;
    const weird = await runServer({ pki });
    try {
      weird.server.register({
        path: '/weird',
        handle: async () => ({ status: 200, body: circular }),
        failure: (p) => ({ status: 200, body: { failed: p.message } }),
      });
      weird.server.register({
        path: '/bad-failure',
        handle: async () => {
          throw new Error('x');
        },
        failure: () => {
          throw new Error('failure() itself failed');
        },
      });
      const res = await call(weird.url, '/weird', {}, { ca });
      expect(res.json).toEqual({ failed: expect.stringMatching(/^the webhook answer cannot be serialised: /) as unknown });
      const bad = await call(weird.url, '/bad-failure', {}, { ca });
      expect(bad.status).toBe(500);
      expect(bad.json).toEqual({ message: 'the webhook handler failed: x' });
    } finally {
      await weird.stop();
    }
  });
});

describe('raw-socket garbage', () => {
  it('bytes that are not TLS: the connection is dropped', async () => {
    const socket = netConnect({ host: '127.0.0.1', port: s.port });
    await new Promise((r) => socket.once('connect', r));
    const closed = untilClosed(socket);
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n\x00\x01\x02 garbage');
    const { data } = await closed;
    expect(data).not.toMatch(/^HTTP/);
  });

  it('a TCP connection that never starts TLS is closed at the handshake timeout', async () => {
    const socket = netConnect({ host: '127.0.0.1', port: s.port });
    await new Promise((r) => socket.once('connect', r));
    const { ms } = await untilClosed(socket);
    expect(ms).toBeGreaterThanOrEqual(900);
  });

  it('TLS then garbage instead of HTTP: 400 and closed', async () => {
    const socket = await tls(s.port);
    const closed = untilClosed(socket);
    socket.write('\x16\x03\x01 this is not http\r\n\r\n');
    const { data } = await closed;
    expect(data).toMatch(/^HTTP\/1.1 400 Bad Request/);
    expect(data).toMatch(/malformed HTTP request/);
  });

  it('headers larger than the limit: 431', async () => {
    const socket = await tls(s.port);
    const closed = untilClosed(socket);
    socket.write(`POST /convert HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`);
    expect((await closed).data).toMatch(/^HTTP\/1.1 431 /);
  });

  it('headers that never end: closed after the headers timeout', async () => {
    const socket = await tls(s.port);
    const closed = untilClosed(socket);
    socket.write('POST /convert HTTP/1.1\r\nHost: x\r\n');
    const { data, ms } = await closed;
    expect(ms).toBeGreaterThanOrEqual(400);
    expect(data === '' || /^HTTP\/1.1 408 /.test(data)).toBe(true);
  });

  it('a body that never ends: closed after the request timeout', async () => {
    const socket = await tls(s.port);
    const closed = untilClosed(socket);
    socket.write('POST /convert HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"a":');
    const { ms } = await closed;
    expect(ms).toBeGreaterThanOrEqual(1000);
  });

  it('still serves after all of that', async () => {
    expect(responseOf(await call(s.url, '/validate-test-kubeloop-dev-v1-thing', thingReview('u-after'), { ca })).allowed).toBe(true);
  });
});

describe('lifecycle', () => {
  it('readyCheck fails before listening and after stop, and passes while serving', async () => {
    const server = createWebhookServer({ host: '127.0.0.1', port: 0, certificates: staticCertificate(pki.serving) });
    await expect(server.readyCheck()).rejects.toThrow(/not listening/);
    const ac = new AbortController();
    const done = server.start(ac.signal);
    await server.listening();
    await expect(server.readyCheck()).resolves.toBeUndefined();
    await expect(server.start(ac.signal)).rejects.toThrow(/already started/);
    ac.abort();
    await done;
    await expect(server.readyCheck()).rejects.toThrow(/not listening/);
  });

  it('lets a request in flight finish on stop, then refuses connections', async () => {
    const running = await runServer({ pki });
    let release!: () => void;
    running.server.register({
      path: '/hold',
      handle: () => new Promise((resolve) => (release = () => resolve({ status: 200, body: { held: true } }))),
      failure: (p) => ({ status: p.code, body: { message: p.message } }),
    });
    const inFlight = call(running.url, '/hold', {}, { ca });
    await new Promise((r) => setTimeout(r, 100));
    const stopped = running.stop();
    await new Promise((r) => setTimeout(r, 100));
    release();
    expect((await inFlight).json).toEqual({ held: true });
    await stopped;
    await expect(call(running.url, '/hold', {}, { ca })).rejects.toThrow(/ECONNREFUSED/);
  });

  it('fails to start with a clear reason: port in use, no certificate', async () => {
    const blocker = createNetServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const server = createWebhookServer({ host: '127.0.0.1', port, certificates: staticCertificate(pki.serving) });
      const err: unknown = await server.start(new AbortController().signal).catch((e: unknown) => e);
      expect(isWebhookError(err) && err.reason).toBe('ListenFailed');
      await expect(server.listening()).rejects.toThrow(/cannot listen on 127.0.0.1/);
    } finally {
      blocker.close();
    }
    const failing: CertificateSource = { start: () => Promise.reject(new Error('vault is sealed')) };
    const err: unknown = await createWebhookServer({ port: 0, certificates: failing }).start(new AbortController().signal).catch((e: unknown) => e);
    expect(isWebhookError(err) && err.reason).toBe('CertificateUnavailable');
    expect((err as Error).message).toBe('no serving certificate: vault is sealed');
    const other = testPki('other');
    expect(() => staticCertificate({ certPem: pki.serving.certPem, keyPem: other.serving.keyPem })).toThrow(/the key cannot serve the certificate/);
    expect(() => createWebhookServer({ certificates: staticCertificate(pki.serving), port: 70000 })).toThrow(/port must be an integer from 0 to 65535/);
    expect(() => createWebhookServer({} as never)).toThrow(/needs a certificate source/);
  });
});

describe('certificate swaps', () => {
  it('new connections get the new certificate, open ones keep working, an unusable one is ignored', async () => {
    let push!: (c: ServingCertificate) => void;
    const source: CertificateSource = {
      start: (_signal, update) => {
        push = update;
        return Promise.resolve(pki.serving);
      },
    };
    const running = await runServer({ pki, certificates: source });
    running.server.register(validator);
    const agent = new Agent({ keepAlive: true, maxSockets: 1, ca });
    try {
      const peer = async (): Promise<string> => {
        const socket = await tls(running.port);
        const serial = new X509Certificate(socket.getPeerCertificate(true).raw).serialNumber;
        socket.destroy();
        return serial;
      };
      const before = await peer();
      expect(responseOf(await call(running.url, '/validate-test-kubeloop-dev-v1-thing', thingReview('k1'), { ca, agent })).allowed).toBe(true);
      const renewed = pki.ca.issue({ commonName: 'renewed', usage: 'server', hosts: ['127.0.0.1'] });
      push(renewed);
      const after = await peer();
      expect(after).not.toBe(before);
      expect(after).toBe(new X509Certificate(renewed.certPem).serialNumber);
      // The kept-alive connection from before the swap still answers.
      expect(responseOf(await call(running.url, '/validate-test-kubeloop-dev-v1-thing', thingReview('k2'), { ca, agent })).allowed).toBe(true);
      push({ certPem: renewed.certPem, keyPem: testPki('x').serving.keyPem });
      expect(await peer()).toBe(after);
    } finally {
      agent.destroy();
      await running.stop();
    }
  });
});
