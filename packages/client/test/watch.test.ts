/**
 * watchEvents against the real API server (event sequence, bookmarks, the
 * normal end at timeoutSeconds, 410 from a compacted etcd, a reset
 * connection, a silent stream), and against a local HTTP server that writes
 * crafted chunks (split lines and characters, malformed lines: bad input a
 * real server never sends on purpose).
 */
import { createServer, get as httpGet } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import type { KubeConfig, V1ConfigMap } from '@kubernetes/client-node';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ConfigMap } from '@kubeloop/scheme';
import { createDynamicRESTMapper } from '@kubeloop/mapper';
import { createClient } from '../src/client.js';
import type { Client } from '../src/client.js';
import { transportDiscovery } from '../src/discovery.js';
import { isClientError, isGone, isTooManyRequests } from '../src/errors.js';
import type { ClientError } from '../src/errors.js';
import { createTransport } from '../src/transport.js';
import type { Transport } from '../src/transport.js';
import { parseWatchLine, watchEventError, watchEvents } from '../src/watch.js';
import type { WatchEvent } from '../src/watch.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';

// Nothing in this file may end up as an uncaught exception or unhandled rejection.
const stray: unknown[] = [];
const onStray = (err: unknown): void => {
  stray.push(err);
};
beforeAll(() => {
  process.on('uncaughtException', onStray);
  process.on('unhandledRejection', onStray);
});
afterAll(() => {
  process.off('uncaughtException', onStray);
  process.off('unhandledRejection', onStray);
  expect(stray).toEqual([]);
});

/** Drain an iterator: the events, and the error it threw (if any). */
async function collect<T>(it: AsyncIterable<WatchEvent<T>>, until?: (e: WatchEvent<T>) => boolean): Promise<{ events: WatchEvent<T>[]; error: unknown }> {
  const events: WatchEvent<T>[] = [];
  try {
    for await (const e of it) {
      events.push(e);
      if (until?.(e)) break;
    }
  } catch (error) {
    return { events, error };
  }
  return { events, error: undefined };
}

function expectClientError(err: unknown, reason: ClientError['reason']): ClientError {
  expect(isClientError(err), `expected a ClientError, got ${String(err)}`).toBe(true);
  expect((err as ClientError).reason).toBe(reason);
  return err as ClientError;
}

const ev = (type: string, name: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ type, object: { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name }, ...extra } });

describe('watchEvents on the real API server', () => {
  let kc: KubeConfig;
  let transport: Transport;
  let core: CoreV1Api;
  let ns: string;
  const path = (): string => `/api/v1/namespaces/${ns}/configmaps`;

  beforeAll(async () => {
    kc = testKubeConfig();
    transport = createTransport(kc);
    core = kc.makeApiClient(CoreV1Api);
    ns = uniqueName('watch');
    await core.createNamespace({ body: { metadata: { name: ns } } });
  });
  afterAll(async () => {
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    transport.close();
  });

  async function listRV(): Promise<string> {
    const res = await transport.request({ method: 'GET', path: path() });
    expect(res.status).toBe(200);
    return (JSON.parse(res.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  }

  it('sees ADDED, MODIFIED, DELETED from a list resourceVersion, a BOOKMARK before the timeout, then ends normally at timeoutSeconds', async () => {
    const resourceVersion = await listRV();
    const started = Date.now();
    const res = await transport.stream({
      method: 'GET',
      path: path(),
      query: { watch: 'true', resourceVersion, allowWatchBookmarks: 'true', timeoutSeconds: 5 },
    });
    expect(res.statusCode).toBe(200);
    const events = watchEvents<V1ConfigMap>(res, { idleTimeoutMs: 10_000 });

    const name = uniqueName('cm');
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name }, data: { v: '1' } } });
    await core.patchNamespacedConfigMap({ namespace: ns, name, body: [{ op: 'replace', path: '/data/v', value: '2' }] });
    await core.deleteNamespacedConfigMap({ namespace: ns, name });

    const { events: seen, error } = await collect(events);
    const elapsed = Date.now() - started;
    expect(error).toBeUndefined();

    const changes = seen.filter((e) => e.type !== 'BOOKMARK');
    expect(changes.map((e) => [e.type, e.object.metadata?.name, e.object.data?.['v']])).toEqual([
      ['ADDED', name, '1'],
      ['MODIFIED', name, '2'],
      ['DELETED', name, '2'],
    ]);
    // resourceVersions increase along the stream; timestamps stay strings, as on the wire
    const rvs = changes.map((e) => Number(e.object.metadata?.resourceVersion));
    expect(rvs).toEqual([...rvs].sort((a, b) => a - b));
    expect(typeof changes[0]!.object.metadata?.creationTimestamp).toBe('string');

    // The watch cache sends a bookmark ~2 s before the watch's deadline once it has moved past the start RV.
    const bookmarks = seen.filter((e) => e.type === 'BOOKMARK');
    expect(bookmarks.length).toBeGreaterThanOrEqual(1);
    const bookmark = bookmarks[0]!;
    expect(bookmark.object.kind).toBe('ConfigMap');
    expect(Number(bookmark.object.metadata?.resourceVersion)).toBeGreaterThanOrEqual(rvs[2]!);
    expect(seen.indexOf(bookmark)).toBeGreaterThan(seen.indexOf(changes[2]!));

    // normal end: the server closed the body at timeoutSeconds, the iterator completed
    expect(elapsed).toBeGreaterThanOrEqual(4_500);
    expect(elapsed).toBeLessThan(9_000);
    expect(res.complete).toBe(true);
  });

  it('streams the initial state with sendInitialEvents and marks its end with the k8s.io/initial-events-end BOOKMARK', async () => {
    const names = [uniqueName('init'), uniqueName('init')];
    for (const name of names) await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } });
    const res = await transport.stream({
      method: 'GET',
      path: path(),
      query: { watch: 'true', sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan', resourceVersion: '', allowWatchBookmarks: 'true', timeoutSeconds: 30 },
    });
    const started = Date.now();
    const { events, error } = await collect(watchEvents<V1ConfigMap>(res), (e) => e.type === 'BOOKMARK');
    expect(error).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(30_000); // prompt, not the periodic bookmark (a minute), however loaded the machine
    const added = events.filter((e) => e.type === 'ADDED').map((e) => e.object.metadata?.name);
    expect(added).toEqual(expect.arrayContaining(names));
    const last = events.at(-1)!;
    expect(last.type).toBe('BOOKMARK');
    expect(last.object.metadata?.annotations).toEqual({ 'k8s.io/initial-events-end': 'true' });
    expect(Number(last.object.metadata?.resourceVersion)).toBeGreaterThan(0);
    // break destroyed the live response
    expect(res.destroyed).toBe(true);
  });

  // A resourceVersion from before a write, still inside the watch cache's window (the whole suite shares one
  // control plane, so "1" may have left the window long ago): the write is replayed, not a 410.
  it('with the watch cache on, a resourceVersion from before a write is replayed from the cache, not 410', async () => {
    const name = uniqueName('old');
    const before = await listRV();
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } });
    const res = await transport.stream({ method: 'GET', path: path(), query: { watch: 'true', resourceVersion: before, timeoutSeconds: 2 } });
    expect(res.statusCode).toBe(200);
    const { events, error } = await collect(watchEvents<V1ConfigMap>(res));
    expect(error).toBeUndefined();
    expect(events.some((e) => e.type === 'ERROR')).toBe(false);
    expect(events.filter((e) => e.type === 'ADDED').map((e) => e.object.metadata?.name)).toContain(name);
  });

  it('a connection reset mid-stream is ClientError Network, after the events already received', async () => {
    const proxy = await startApiProxy(kc);
    const viaProxy = createTransport(proxy.kubeConfig);
    try {
      const resourceVersion = await listRV();
      const res = await viaProxy.stream({ method: 'GET', path: path(), query: { watch: 'true', resourceVersion, timeoutSeconds: 60 } });
      const it = watchEvents<V1ConfigMap>(res);
      const name = uniqueName('reset');
      await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } });
      const first = await it.next();
      expect(first.done).toBe(false);
      expect(first.value).toMatchObject({ type: 'ADDED', object: { metadata: { name } } });

      const pending = it.next();
      proxy.resetConnections();
      const err = await pending.then(
        () => undefined,
        (e: unknown) => e,
      );
      expectClientError(err, 'Network');
      expect((await it.next()).done).toBe(true); // stays finished
    } finally {
      viaProxy.close();
      await proxy.close();
    }
  });

  it('a watch that goes silent is ClientError ClientTimeout after idleTimeoutMs, and the response is destroyed', async () => {
    const resourceVersion = await listRV();
    const res = await transport.stream({ method: 'GET', path: path(), query: { watch: 'true', resourceVersion, timeoutSeconds: 60 } });
    const started = Date.now();
    const { events, error } = await collect(watchEvents<V1ConfigMap>(res, { idleTimeoutMs: 700 }));
    expect(events).toEqual([]);
    expectClientError(error, 'ClientTimeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(650);
    expect(res.destroyed).toBe(true);
  });

  it('an aborted signal destroys the live response and rejects the pending next() with Aborted', async () => {
    const resourceVersion = await listRV();
    const controller = new AbortController();
    const res = await transport.stream({ method: 'GET', path: path(), query: { watch: 'true', resourceVersion, timeoutSeconds: 60 } });
    const it = watchEvents<V1ConfigMap>(res, { signal: controller.signal });
    const pending = it.next();
    setTimeout(() => controller.abort(new Error('shutting down')), 100);
    const err = await pending.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(expectClientError(err, 'Aborted').cause).toEqual(new Error('shutting down'));
    expect(res.destroyed).toBe(true);
  });

  it('a non-2xx answer is the ClientError its Status describes', async () => {
    const res = await transport.stream({ method: 'GET', path: `/api/v1/namespaces/${ns}/nosuchresources`, query: { watch: 'true' } });
    expect(res.statusCode).toBe(404);
    const { events, error } = await collect(watchEvents(res));
    expect(events).toEqual([]);
    expect(expectClientError(error, 'NotFound').code).toBe(404);
  });
});

describe.skipIf(inject('existingCluster'))('410 Expired from a compacted etcd (watch cache off)', () => {
  // The shared control plane keeps its watch cache on and its etcd uncompacted
  // (other tests page through lists), so this one runs its own, with watches
  // served straight from etcd.
  const env = createEnvironment({ apiServerFlags: { 'watch-cache': 'false' } });
  beforeAll(async () => {
    await env.start();
  });
  afterAll(async () => {
    await env.stop();
  });

  it('a watch from a compacted resourceVersion gets HTTP 200 and one ERROR event with a 410 Expired Status, then the stream ends', async () => {
    const core = env.kubeConfig.makeApiClient(CoreV1Api);
    const transport = createTransport(env.kubeConfig);
    try {
      const created = await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'old' }, data: { v: '0' } } });
      for (let i = 1; i <= 3; i++) await core.replaceNamespacedConfigMap({ namespace: 'default', name: 'old', body: { metadata: { name: 'old' }, data: { v: String(i) } } });
      // compact etcd at its current revision (what --etcd-compaction-interval does every 5 minutes in a real cluster)
      const etcd = env.etcdUrl!;
      const range = (await (await fetch(`${etcd}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from('/').toString('base64') }) })).json()) as { header: { revision: string } };
      const compacted = await fetch(`${etcd}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision: range.header.revision, physical: true }) });
      expect(compacted.status).toBe(200);

      const res = await transport.stream({
        method: 'GET',
        path: '/api/v1/namespaces/default/configmaps',
        query: { watch: 'true', resourceVersion: created.metadata!.resourceVersion!, allowWatchBookmarks: 'true', timeoutSeconds: 10 },
      });
      expect(res.statusCode).toBe(200);
      const { events, error } = await collect(watchEvents<unknown>(res));
      expect(error).toBeUndefined();
      expect(events).toHaveLength(1);
      const event = events[0]!;
      expect(event.type).toBe('ERROR');
      expect(event.object).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'Expired', code: 410 });
      const err = watchEventError(event, '/api/v1/namespaces/default/configmaps');
      expect(err.reason).toBe('Expired');
      expect(err.code).toBe(410);
      expect(isGone(err)).toBe(true);
      expect(err.message).toContain('too old');
    } finally {
      transport.close();
    }
  });
});

describe('watchEvents on crafted streams', () => {
  let server: Server;
  let base: string;
  let respond: (req: IncomingMessage, res: ServerResponse) => void | Promise<void> = () => undefined;

  beforeAll(async () => {
    server = createServer((req, res) => {
      void Promise.resolve(respond(req, res)).catch(() => res.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** Serve `chunks` one write at a time, `gapMs` apart, then end (or leave the response open). */
  function serve(chunks: readonly (string | Buffer)[], options: { gapMs?: number; end?: 'end' | 'reset' | 'hang'; status?: number; headers?: Record<string, string> } = {}): void {
    respond = async (_req, res) => {
      res.writeHead(options.status ?? 200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked', ...options.headers });
      res.flushHeaders();
      for (const chunk of chunks) {
        await delay(options.gapMs ?? 5);
        if (res.destroyed) return;
        res.write(chunk);
      }
      await delay(options.gapMs ?? 5);
      if (options.end === 'reset') res.socket?.resetAndDestroy();
      else if (options.end !== 'hang') res.end();
    };
  }

  function open(): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => httpGet(`${base}/watch`, { agent: false }, resolve).on('error', reject));
  }

  /** Open, count the chunks that really arrived apart, and collect the events. */
  async function run<T = { metadata: { name: string } }>(options: Parameters<typeof watchEvents>[1] = {}): Promise<{ events: WatchEvent<T>[]; error: unknown; chunks: number; res: IncomingMessage }> {
    const res = await open();
    let chunks = 0;
    res.on('data', () => chunks++);
    const { events, error } = await collect(watchEvents<T>(res, options));
    return { events, error, chunks, res };
  }

  const names = (events: WatchEvent<{ metadata: { name: string } }>[]): string[] => events.map((e) => `${e.type}:${e.object.metadata.name}`);

  it('parses several lines per chunk, blank lines and a last line without a newline', async () => {
    serve([`${ev('ADDED', 'a')}\n\n${ev('MODIFIED', 'a')}\n  \n`, `${ev('DELETED', 'a')}\n${ev('BOOKMARK', '')}`]);
    const { events, error } = await run();
    expect(error).toBeUndefined();
    expect(names(events)).toEqual(['ADDED:a', 'MODIFIED:a', 'DELETED:a', 'BOOKMARK:']);
  });

  it('reassembles lines and multi-byte UTF-8 characters split at every byte boundary', async () => {
    const body = Buffer.from(`${ev('ADDED', 'grüße-€', { data: { emoji: '😀 ✓ 日本' } })}\n${ev('MODIFIED', 'zwei-😀')}\n`, 'utf8');
    for (let at = 1; at < body.length; at++) {
      serve([body.subarray(0, at), body.subarray(at)], { gapMs: 2 });
      const { events, error, chunks } = await run<{ metadata: { name: string }; data?: { emoji: string } }>();
      expect(error, `split at byte ${at}`).toBeUndefined();
      expect(chunks, `split at byte ${at} arrived in two chunks`).toBe(2);
      expect(events.map((e) => e.object.metadata.name)).toEqual(['grüße-€', 'zwei-😀']);
      expect(events[0]!.object.data?.emoji).toBe('😀 ✓ 日本');
    }
  });

  it('reassembles a stream sent one byte per chunk', async () => {
    const body = Buffer.from(`${ev('ADDED', 'ä-1')}\n${ev('ADDED', '€-2')}\n`, 'utf8');
    serve(
      Array.from(body, (_, i) => body.subarray(i, i + 1)),
      { gapMs: 1 },
    );
    const { events, error, chunks } = await run();
    expect(error).toBeUndefined();
    expect(chunks).toBeGreaterThan(20);
    expect(names(events)).toEqual(['ADDED:ä-1', 'ADDED:€-2']);
  });

  it('parses a 4 MiB object spread over many chunks', async () => {
    const big = 'x'.repeat(4 << 20);
    const line = Buffer.from(`${ev('ADDED', 'big', { data: { big } })}\n${ev('DELETED', 'big')}\n`);
    const parts: Buffer[] = [];
    for (let i = 0; i < line.length; i += 64 << 10) parts.push(line.subarray(i, i + (64 << 10)));
    serve(parts, { gapMs: 0 });
    const { events, error } = await run<{ metadata: { name: string }; data?: { big: string } }>();
    expect(error).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
    expect(events[0]!.object.data?.big.length).toBe(4 << 20);
  });

  it('keeps order through backpressure when the consumer is slower than the stream', async () => {
    const lines = Array.from({ length: 5000 }, (_, i) => `${ev('MODIFIED', `n${i}`)}\n`);
    serve([lines.join('')], { gapMs: 0 });
    const res = await open();
    const seen: string[] = [];
    for await (const e of watchEvents<{ metadata: { name: string } }>(res)) {
      seen.push(e.object.metadata.name);
      if (seen.length % 500 === 0) await delay(5);
    }
    expect(seen).toHaveLength(5000);
    expect(seen[4999]).toBe('n4999');
    expect(seen.every((n, i) => n === `n${i}`)).toBe(true);
  });

  it('a line that is not JSON: the earlier events arrive, then ClientError Decode naming the line start; later lines are not read', async () => {
    const garbage = `<html>${'g'.repeat(400)}TAIL</html>`;
    serve([`${ev('ADDED', 'a')}\n${ev('MODIFIED', 'a')}\n${garbage.slice(0, 100)}`, `${garbage.slice(100)}\n${ev('DELETED', 'a')}\n`]);
    const { events, error, res } = await run();
    expect(names(events)).toEqual(['ADDED:a', 'MODIFIED:a']);
    const err = expectClientError(error, 'Decode');
    expect(err.message).toContain(garbage.slice(0, 200));
    expect(err.message).not.toContain('TAIL');
    expect(err.cause).toBeInstanceOf(SyntaxError);
    expect(res.destroyed).toBe(true);
  });

  it('a JSON line that is not a watch event (unknown type) is ClientError Decode', async () => {
    serve([`${ev('ADDED', 'a')}\n{"type":"SNAPSHOT","object":{}}\n`]);
    const { events, error } = await run();
    expect(names(events)).toEqual(['ADDED:a']);
    expect(expectClientError(error, 'Decode').message).toContain('unknown type "SNAPSHOT"');
  });

  it('a connection reset mid-stream is ClientError Network after the events received', async () => {
    serve([`${ev('ADDED', 'a')}\n${ev('MODIFIED', 'a')}\n{"type":"DEL`], { end: 'reset' });
    const { events, error } = await run();
    expect(names(events)).toEqual(['ADDED:a', 'MODIFIED:a']);
    expectClientError(error, 'Network');
  });

  it('a silent stream is ClientError ClientTimeout; time the consumer spends on events does not count', async () => {
    serve([`${ev('ADDED', 'a')}\n`], { end: 'hang' });
    const silent = await run({ idleTimeoutMs: 150 });
    expect(names(silent.events)).toEqual(['ADDED:a']);
    expectClientError(silent.error, 'ClientTimeout');
    expect(silent.res.destroyed).toBe(true);

    serve([`${ev('ADDED', 'a')}\n${ev('ADDED', 'b')}\n${ev('ADDED', 'c')}\n`], { gapMs: 20 });
    const res = await open();
    const seen: string[] = [];
    for await (const e of watchEvents<{ metadata: { name: string } }>(res, { idleTimeoutMs: 100 })) {
      seen.push(e.object.metadata.name);
      await delay(250); // a slow handler, not a dead stream
    }
    expect(seen).toEqual(['a', 'b', 'c']);
  });

  it('break ends the stream: the response is destroyed and the server sees the connection close', async () => {
    let closedEarly: (finished: boolean) => void = () => undefined;
    const serverSaw = new Promise<boolean>((resolve) => (closedEarly = resolve));
    respond = async (_req, res) => {
      res.on('close', () => closedEarly(res.writableFinished));
      res.writeHead(200, { 'content-type': 'application/json' });
      for (let i = 0; !res.destroyed && i < 10_000; i++) {
        res.write(`${ev('MODIFIED', `n${i}`)}\n`);
        await delay(2);
      }
      res.end();
    };
    const res = await open();
    const { events } = await collect(watchEvents<{ metadata: { name: string } }>(res), (e) => e.object.metadata.name === 'n3');
    expect(events).toHaveLength(4);
    expect(res.destroyed).toBe(true);
    expect(await serverSaw).toBe(false); // closed by the client before the server finished
  });

  it('an already-aborted signal fails the first next() with Aborted', async () => {
    serve([`${ev('ADDED', 'a')}\n`], { end: 'hang' });
    const res = await open();
    const { events, error } = await collect(watchEvents(res, { signal: AbortSignal.abort() }));
    expect(events).toEqual([]);
    expectClientError(error, 'Aborted');
    expect(res.destroyed).toBe(true);
  });

  it('a non-2xx answer with a Status body is a ClientError with its reason', async () => {
    serve([JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410, message: 'too old resource version: 1 (42)' })], { status: 410 });
    const { error } = await run();
    const err = expectClientError(error, 'Expired');
    expect(err.code).toBe(410);
    expect(isGone(err)).toBe(true);
  });

  it('an endless line passes maxLineBytes: ClientError ResponseTooLarge, the response destroyed, nothing buffered past the limit', async () => {
    let sent = 0;
    respond = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`${ev('ADDED', 'a')}\n{"type":"ADDED","object":{"data":"`);
      const chunk = 'z'.repeat(64 * 1024);
      while (!res.destroyed && sent < 64 * 1024 * 1024) {
        if (!res.write(chunk)) await new Promise((r) => res.once('drain', r).once('close', r));
        sent += chunk.length;
      }
      res.end();
    };
    const { events, error, res } = await run({ maxLineBytes: 1024 * 1024 });
    expect(names(events)).toEqual(['ADDED:a']);
    const err = expectClientError(error, 'ResponseTooLarge');
    expect(err.message).toContain('maxLineBytes (1048576)');
    expect(res.destroyed).toBe(true);
    expect(sent).toBeLessThan(64 * 1024 * 1024); // the server was cut off, not read to the end
  });

  it('a long line inside one chunk is held to maxLineBytes too', async () => {
    serve([`${ev('ADDED', 'a')}\n${ev('ADDED', 'b', { data: { big: 'q'.repeat(4096) } })}\n`]);
    const { events, error } = await run({ maxLineBytes: 1024 });
    expect(names(events)).toEqual(['ADDED:a']);
    expectClientError(error, 'ResponseTooLarge');
  });

  it('an error answer whose body never comes fails after errorBodyTimeoutMs, from its status code, keeping Retry-After', async () => {
    respond = (_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json', 'retry-after': '3' });
      res.write('{"kind":"Status","co');
      // ... and nothing more
    };
    const { error, res } = await run({ errorBodyTimeoutMs: 200 });
    const err = expectClientError(error, 'InternalError');
    expect(err.code).toBe(500);
    expect(err.retryAfterSeconds).toBe(3);
    expect(err.message).toContain('did not arrive within 200 ms');
    expect(res.destroyed).toBe(true);
  });

  it('a 429 answer keeps its Retry-After on the error', async () => {
    serve([JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'TooManyRequests', code: 429, message: 'too many requests' })], { status: 429, headers: { 'retry-after': '7' } });
    const { error } = await run();
    const err = expectClientError(error, 'TooManyRequests');
    expect(err.retryAfterSeconds).toBe(7);
  });
});

describe('client.watch on a crafted server (kinds mapped by the real API server)', () => {
  let server: Server;
  let respond: (req: IncomingMessage, res: ServerResponse) => void = () => undefined;
  let client: Client;

  beforeAll(async () => {
    server = createServer((req, res) => respond(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const real = createTransport(testKubeConfig());
    const mapper = createDynamicRESTMapper(transportDiscovery(real));
    client = createClient({ kubeConfig: { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }, mapper, transportOptions: { timeoutMs: 300 } });
  });
  afterAll(async () => {
    client.transport.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('a watch answered 429 (API Priority and Fairness) rejects with TooManyRequests carrying Retry-After for the reflector', async () => {
    respond = (_req, res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '5' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'TooManyRequests', code: 429, message: 'the server has received too many requests', details: {} }));
    };
    const err = await client.watch(ConfigMap, { namespace: 'default' }).catch((e: unknown) => e);
    expect(isTooManyRequests(err)).toBe(true);
    expect((err as ClientError).retryAfterSeconds).toBe(5);
  });

  it('a re-watch answered with 500 headers and no body rejects within the deadline instead of hanging', async () => {
    respond = (_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.flushHeaders();
    };
    const err = await client.watch(ConfigMap, { namespace: 'default', resourceVersion: '1' }).catch((e: unknown) => e);
    expect(expectClientError(err, 'InternalError').code).toBe(500);
  });
});

describe('parseWatchLine', () => {
  it('returns the event of a well-formed line', () => {
    expect(parseWatchLine('{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}')).toEqual({
      type: 'ERROR',
      object: { kind: 'Status', code: 410, reason: 'Expired' },
    });
  });

  it.each([
    ['not JSON', '{"type":"ADDED",', 'not JSON'],
    ['an array', '[1,2]', 'not a watch event'],
    ['a string', '"ADDED"', 'not a watch event'],
    ['no type', '{"object":{}}', 'no type'],
    ['an unknown type', '{"type":"added","object":{}}', 'unknown type "added"'],
    ['no object', '{"type":"ADDED"}', 'no object'],
    ['a null object', '{"type":"DELETED","object":null}', 'no object'],
  ])('rejects %s with ClientError Decode', (_what, line, message) => {
    let err: unknown;
    try {
      parseWatchLine(line);
    } catch (e) {
      err = e;
    }
    expect(expectClientError(err, 'Decode').message).toContain(message);
    expect((err as ClientError).message).toContain(JSON.stringify(line));
  });

  it('cuts the line shown in the error to 200 characters', () => {
    const line = `${'a'.repeat(200)}BEYOND`;
    expect(() => parseWatchLine(line)).toThrow(`${'a'.repeat(200)}…`);
    expect(() => parseWatchLine(line)).not.toThrow('BEYOND');
  });
});
