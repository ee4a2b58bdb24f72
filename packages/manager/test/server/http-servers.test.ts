/**
 * The probe and metrics servers survive any bytes a client sends: bad request
 * targets, invalid methods, header floods, partial requests held open
 * (slowloris), garbage and random bytes, collections and checks that fail or
 * hang, clients that leave early, more connections than the cap. Each is sent
 * over a raw socket to a real server in this process; after each, nothing was
 * thrown out of a handler and `/healthz` still answers 200. Bind addresses:
 * every accepted form, junk refused with a typed error, IPv6 loopback.
 */
import { connect, createServer as createNetServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { Counter, Gauge, Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isManagerError } from '../../src/index.js';
import { DEFAULT_SERVER_LIMITS, parseBindAddress, startHealthServer, startMetricsServer } from '../../src/server/http-servers.js';
import type { HealthCheck, RunningServer } from '../../src/server/http-servers.js';

/** What a raw exchange saw: the first status code, whether the server closed the socket, and when. */
interface Exchange {
  readonly status: number | undefined;
  readonly text: string;
  readonly closedByServer: boolean;
  readonly ms: number;
}

function portOf(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port) };
}

/**
 * Write `bytes` on a fresh connection and collect what comes back until the
 * server closes it or `waitMs` passes (then we close it). `trickle` writes
 * more bytes every `trickleMs` for as long as the socket is open.
 */
function exchange(url: string, bytes: string | Uint8Array, options: { waitMs?: number; end?: boolean; trickle?: string; trickleMs?: number } = {}): Promise<Exchange> {
  const { host, port } = portOf(url);
  const waitMs = options.waitMs ?? 3_000;
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(port, host);
    const chunks: Buffer[] = [];
    let settled = false;
    let trickle: NodeJS.Timeout | undefined;
    const done = (closedByServer: boolean): void => {
      if (settled) return;
      settled = true;
      clearInterval(trickle);
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ status: m ? Number(m[1]) : undefined, text, closedByServer, ms: Date.now() - started });
    };
    const timer = setTimeout(() => done(false), waitMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => undefined);
    socket.on('close', () => done(true));
    socket.on('connect', () => {
      socket.write(bytes);
      if (options.end) socket.end();
      if (options.trickle !== undefined) {
        const piece = options.trickle;
        trickle = setInterval(() => {
          if (!socket.destroyed) socket.write(piece);
        }, options.trickleMs ?? 250);
      }
    });
  });
}

const request = (target: string, method = 'GET', headers = ''): string => `${method} ${target} HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n${headers}\r\n`;

async function status(url: string): Promise<number> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  await res.text();
  return res.status;
}

/** Errors that escaped a handler (the process would have died without vitest's own handlers). */
const escaped: unknown[] = [];
const record = (err: unknown): void => {
  escaped.push(err);
};
beforeAll(() => {
  process.on('uncaughtException', record);
  process.on('unhandledRejection', record);
});
afterAll(() => {
  process.off('uncaughtException', record);
  process.off('unhandledRejection', record);
});
afterEach(() => {
  expect(escaped.splice(0).map(String)).toEqual([]);
});

const ok: HealthCheck = () => undefined;

/** Whether this machine has an IPv6 loopback to bind (containers without one skip that test). */
const ipv6 = await new Promise<boolean>((resolve) => {
  const probe = createNetServer();
  probe.once('error', () => resolve(false));
  probe.listen(0, '::1', () => probe.close(() => resolve(true)));
});

describe('the probe and metrics servers under hostile input (default limits)', () => {
  let health: RunningServer;
  let metrics: RunningServer;
  const registry = new Registry();
  new Counter({ name: 'fuzz_requests_total', help: 'a counter', registers: [registry] }).inc();

  beforeAll(async () => {
    health = await startHealthServer('127.0.0.1:0', new Map([['ping', ok]]), new Map([['ready', ok]]));
    metrics = await startMetricsServer('127.0.0.1:0', registry);
  });
  afterAll(async () => {
    await health.close();
    await metrics.close();
  });
  afterEach(async () => {
    expect(await status(`${health.url}/healthz`)).toBe(200);
    expect(await status(`${metrics.url}/metrics`)).toBe(200);
  });

  it('answers bad request targets with 400 (or 404), never a throw', async () => {
    const cases: [string, number][] = [
      ['http://[/', 400],
      ['http://[::1/healthz', 400],
      ['//', 404],
      ['///healthz', 200],
      ['%', 400],
      ['/%', 400],
      ['/healthz/%zz', 400],
      ['/healthz/%E0%A4%A', 400],
      ['*', 400],
      ['mailto:x@y', 400],
      ['file:///etc/passwd', 400],
      ['http://probe/healthz?verbose', 200],
      ['HTTP://probe/readyz', 200],
      ['/healthz?exclude=%&verbose=%zz', 200],
      ['/healthz/ping/', 200],
      ['/healthz/nope', 404],
      ['/healthz/ping/extra', 404],
    ];
    for (const [target, want] of cases) {
      const got = await exchange(health.url, request(target));
      expect({ target, status: got.status }).toEqual({ target, status: want });
    }
    for (const target of ['http://[/', '//', '/metrics/%zz', '*']) {
      const got = await exchange(metrics.url, request(target));
      expect({ target, status: got.status }).toEqual({ target, status: target === '//' ? 404 : 400 });
    }
    expect((await exchange(metrics.url, request('http://probe/metrics'))).status).toBe(200);
  });

  it('answers absurdly long request targets 431 and closes', async () => {
    for (const target of [`/healthz/${'a'.repeat(DEFAULT_SERVER_LIMITS.maxHeaderSize + 1)}`, `/${'%41'.repeat(100_000)}`, `/healthz?${'x'.repeat(1 << 20)}`]) {
      const got = await exchange(health.url, request(target));
      expect(got.status).toBe(431);
      expect(got.closedByServer).toBe(true);
    }
    const near = await exchange(health.url, request(`/healthz?${'x'.repeat(DEFAULT_SERVER_LIMITS.maxHeaderSize - 200)}`));
    expect(near.status).toBe(200);
  });

  it('answers invalid methods 400 and methods other than GET and HEAD 405', async () => {
    for (const method of ['FOO', 'G\0ET', 'get', 'GET\t', '', '\u00ff\u00fe']) {
      const got = await exchange(health.url, request('/healthz', method));
      expect({ method, status: got.status }).toEqual({ method, status: 400 });
    }
    for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']) {
      const got = await exchange(health.url, request('/healthz', method, 'Content-Length: 0\r\n'));
      expect({ method, status: got.status }).toEqual({ method, status: 405 });
      expect(got.text.toLowerCase()).toContain('allow: get, head');
    }
    const head = await exchange(health.url, request('/readyz', 'HEAD'));
    expect(head.status).toBe(200);
    // CONNECT is not served: the socket is closed without an answer
    const tunnel = await exchange(health.url, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(tunnel.closedByServer).toBe(true);
  });

  it('answers header floods 431 and closes: one huge header, thousands of small ones, endless folded lines', async () => {
    const huge = await exchange(health.url, request('/healthz', 'GET', `X-Flood: ${'a'.repeat(17 * 1024)}\r\n`));
    expect(huge.status).toBe(431);
    const many = await exchange(health.url, request('/healthz', 'GET', Array.from({ length: 3_000 }, (_, i) => `X-${i}: v\r\n`).join('')));
    expect(many.status).toBe(431);
    const over = await exchange(health.url, request('/healthz', 'GET', `X-Flood: ${'a'.repeat(DEFAULT_SERVER_LIMITS.maxHeaderSize)}\r\n`));
    expect(over.status).toBe(431);
    // never-ending headers, sent as fast as the socket takes them
    const endless = await exchange(health.url, `GET /healthz HTTP/1.1\r\nHost: probe\r\n`, { trickle: `X-More: ${'b'.repeat(1024)}\r\n`, trickleMs: 1, waitMs: 5_000 });
    expect(endless.status).toBe(431);
    expect(endless.closedByServer).toBe(true);
  });

  it('closes partial requests held open (slowloris) within its timeouts, and answers others meanwhile', async () => {
    const bound = DEFAULT_SERVER_LIMITS.headersTimeoutMs + 1_000 + 3_000; // timeout + check interval + slack
    const slow = [
      // headers trickled one byte at a time, forever
      ...Array.from({ length: 10 }, () => exchange(health.url, 'GET /healthz HTTP/1.1\r\nHost: probe\r\nX-Slow: ', { trickle: 'a', trickleMs: 200, waitMs: bound + 5_000 })),
      // a connection that never says anything
      ...Array.from({ length: 5 }, () => exchange(health.url, '', { waitMs: bound + 5_000 })),
      // metrics server: half a request line
      ...Array.from({ length: 5 }, () => exchange(metrics.url, 'GET /metr', { waitMs: bound + 5_000 })),
    ];
    // a body trickled after complete headers is bounded by the request timeout
    const body = exchange(health.url, 'GET /healthz HTTP/1.1\r\nHost: probe\r\nContent-Length: 1000000\r\n\r\n', {
      trickle: 'x',
      trickleMs: 200,
      waitMs: DEFAULT_SERVER_LIMITS.requestTimeoutMs + 10_000,
    });
    await sleep(500);
    for (let i = 0; i < 5; i++) {
      expect(await status(`${health.url}/healthz`)).toBe(200);
      expect(await status(`${metrics.url}/metrics`)).toBe(200);
      await sleep(200);
    }
    for (const got of await Promise.all(slow)) {
      expect(got.closedByServer).toBe(true);
      expect(got.ms).toBeLessThan(bound);
    }
    const trickled = await body;
    expect(trickled.status).toBe(200); // the probe itself is answered at once
    expect(trickled.closedByServer).toBe(true);
    expect(trickled.ms).toBeLessThan(DEFAULT_SERVER_LIMITS.requestTimeoutMs + 4_000);
  });

  it('survives garbage: TLS and HTTP/2 prefaces, bad framing, smuggling attempts, control bytes', async () => {
    const garbage: (string | Uint8Array)[] = [
      new Uint8Array([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]),
      'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
      '\0\0\0\0\r\n\r\n',
      '\r\n\r\n\r\n',
      'GET / HTTP/9.9\r\nHost: probe\r\n\r\n',
      'GET /healthz\r\n\r\n',
      'GET /healthz HTTP/1.1\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: probe\r\nContent-Length: -1\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: probe\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
      'GET /healthz HTTP/1.1\r\nHost: probe\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nboom\r\n',
      'GET /healthz HTTP/1.1\r\nHost: probe\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: probe\r\nNo colon here\r\n\r\n',
      'GET /healthz HTTP/1.1\r\nHost: probe\r\n folded: line\r\n\r\n',
      'GET /healthz HTTP/1.1\nHost: probe\n\n',
      'GET http://[/ HTTP/1.1\r\nHost: probe\r\n\r\n',
      `GET /healthz HTTP/1.1\r\nHost: probe\r\n\r\n${'GET http://[/ HTTP/1.1\r\nHost: probe\r\n\r\n'.repeat(20)}`,
      'GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
      Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256)),
    ];
    for (const bytes of garbage) {
      for (const url of [health.url, metrics.url]) {
        const got = await exchange(url, bytes, { end: true, waitMs: 2_000 });
        // whatever the answer, it is an HTTP answer or a closed socket, never a dead process
        if (got.status !== undefined) expect(got.status).toBeGreaterThanOrEqual(200);
      }
    }
  });

  it('survives random bytes and random request targets (fast-check)', async () => {
    // strings over the characters that make URL parsers work hardest, besides anything at all
    const urlish = fc
      .tuple(fc.constantFrom('', '/', '//', 'http://', 'http://[', '\\\\'), fc.string({ unit: fc.constantFrom('/', '[', ']', ':', '%', '@', '?', '#', '\\', '.', 'h', 't', 'p', 's', '1', 'f', 'z'), maxLength: 24 }))
      .map(([scheme, rest]) => scheme + rest);
    const target = fc.oneof(urlish, fc.string({ maxLength: 64 }), fc.string({ unit: 'binary', maxLength: 64 }), fc.webUrl(), fc.webPath());
    const requestish = fc
      .tuple(fc.constantFrom('GET', 'HEAD', 'POST', 'BREW'), target, fc.array(fc.tuple(fc.string({ maxLength: 16 }), fc.string({ maxLength: 64 })), { maxLength: 8 }))
      .map(([m, t, hs]) => Buffer.from(`${m} ${t} HTTP/1.1\r\nHost: probe\r\n${hs.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`, 'latin1'));
    const bytes = fc.oneof(fc.uint8Array({ minLength: 1, maxLength: 2048 }), requestish);
    await fc.assert(
      fc.asyncProperty(bytes, fc.boolean(), async (b, toMetrics) => {
        await exchange(toMetrics ? metrics.url : health.url, b, { end: true, waitMs: 1_000 });
        expect(escaped).toEqual([]);
      }),
      { numRuns: 300, interruptAfterTimeLimit: 30_000 },
    );
  });
});

describe('checks and collections that fail or hang', () => {
  const limits = { handlerTimeoutMs: 300 };
  const servers: RunningServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
  });

  it('/metrics answers 500 when a collection throws, rejects with a non-Error, or hangs', async () => {
    for (const collect of [
      () => {
        throw new Error('collector exploded');
      },
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- a non-Error reason (String() of it throws) is the point
      () => Promise.reject(Object.create(null) as object),
      () => new Promise<void>(() => undefined),
    ]) {
      const registry = new Registry();
      new Gauge({ name: 'broken', help: 'a broken gauge', registers: [registry], collect });
      const s = await startMetricsServer('127.0.0.1:0', registry, { limits });
      servers.push(s);
      const res = await fetch(`${s.url}/metrics`);
      expect(res.status).toBe(500);
      expect(await res.text()).toMatch(/^metrics collection failed: /);
    }
  });

  it('a check that hangs fails the probe after the handler timeout; a probe flood runs it once; a client that leaves early harms nothing', async () => {
    let calls = 0;
    const hang: HealthCheck = () => {
      calls++;
      return new Promise(() => undefined);
    };
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- a non-Error reason (String() of it throws) is the point
    const weird: HealthCheck = () => Promise.reject(Object.create(null) as object);
    const s = await startHealthServer('127.0.0.1:0', new Map([['ping', ok], ['weird', weird]]), new Map([['stuck', hang]]), { limits });
    servers.push(s);
    const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(`${s.url}/readyz`).then(async (r) => [r.status, await r.text()] as const)));
    for (const [code, text] of answers) {
      expect(code).toBe(500);
      expect(text).toContain('[-]stuck failed: check timed out after 300 ms');
    }
    expect(calls).toBe(1);
    const weirdAnswer = await fetch(`${s.url}/healthz?verbose`);
    expect(weirdAnswer.status).toBe(500);
    expect(await weirdAnswer.text()).toContain('[+]ping ok');
    expect((await fetch(`${s.url}/healthz/ping`)).status).toBe(200);
    // the client hangs up before the answer is written
    const left = await exchange(s.url, 'GET /readyz HTTP/1.1\r\nHost: probe\r\n\r\n', { waitMs: 50 });
    expect(left.closedByServer).toBe(false);
    await sleep(limits.handlerTimeoutMs + 200);
    expect((await fetch(`${s.url}/healthz/ping`)).status).toBe(200);
  });

  it('at maxConnections a newcomer takes the place of the oldest idle connection; it is closed only when every connection is busy', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const s = await startHealthServer('127.0.0.1:0', new Map([['ping', ok]]), new Map([['slow', () => gate]]), { limits: { maxConnections: 4 } });
    servers.push(s);
    const { host, port } = portOf(s.url);
    const open = (): Promise<ReturnType<typeof connect>> =>
      new Promise((resolve) => {
        const socket = connect(port, host, () => resolve(socket));
        socket.on('error', () => undefined);
      });
    const held = await Promise.all(Array.from({ length: 4 }, open));
    await sleep(100);
    // Four idle connections: the newcomer is served, the oldest idle one closed for it.
    expect((await exchange(s.url, request('/healthz'))).status).toBe(200);
    expect(held[0]!.destroyed || held[0]!.readableEnded).toBe(true);
    for (const socket of held) socket.destroy();
    await sleep(100);
    // Four connections each waiting for a check: nothing to evict, the newcomer is closed.
    const busy = Array.from({ length: 4 }, () => exchange(s.url, request('/readyz'), { waitMs: 5_000 }));
    await sleep(200);
    const refused = await exchange(s.url, request('/healthz'), { waitMs: 1_000 });
    expect(refused.status).toBeUndefined();
    expect(refused.closedByServer).toBe(true);
    release();
    expect((await Promise.all(busy)).map((e) => e.status)).toEqual([200, 200, 200, 200]);
  });
});

/** A TCP connection from another loopback address (another client, as far as the server can tell). */
function connectFrom(localAddress: string, url: string): ReturnType<typeof connect> {
  const { host, port } = portOf(url);
  const socket = connect({ host, port, localAddress });
  socket.on('error', () => undefined);
  return socket;
}

describe('probes under abuse from another client (kubelet probes: a new connection each, 1 s timeout)', () => {
  const ATTACKER = '127.0.0.2';
  const servers: RunningServer[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
  });
  /** 15 probes, 200 ms apart, each answered 200 within 1 s or failed. */
  async function probe(url: string): Promise<number> {
    let passed = 0;
    for (let i = 0; i < 15; i++) {
      const got = await exchange(url, request('/healthz'), { waitMs: 1_000 });
      if (got.status === 200) passed++;
      await sleep(200);
    }
    return passed;
  }

  it.each(['probe', 'metrics'] as const)('200 slow connections (slowloris) do not refuse the %s server', async (which) => {
    const s = which === 'probe' ? await startHealthServer('127.0.0.1:0', new Map([['ping', ok]]), new Map()) : await startMetricsServer('127.0.0.1:0', new Registry());
    servers.push(s);
    const path = which === 'probe' ? '/healthz' : '/metrics';
    const slow = Array.from({ length: 200 }, () => {
      const socket = connectFrom(ATTACKER, s.url);
      socket.on('connect', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nX-Slow: `));
      const tick = setInterval(() => socket.destroyed || socket.write('a'), 500);
      socket.on('close', () => clearInterval(tick));
      return socket;
    });
    await sleep(300);
    let passed = 0;
    for (let i = 0; i < 15; i++) {
      if ((await exchange(s.url, request(path), { waitMs: 1_000 })).status === 200) passed++;
      await sleep(100);
    }
    for (const socket of slow) socket.destroy();
    process.stderr.write(`[abuse] ${which} server, 200 slow connections: ${passed}/15 probes answered\n`);
    expect(passed).toBe(15);
  });

  it('a reconnecting flood of 300 connections does not refuse probes', async () => {
    const s = await startHealthServer('127.0.0.1:0', new Map([['ping', ok]]), new Map());
    servers.push(s);
    let stopped = false;
    let opened = 0;
    const flood = (i: number): void => {
      if (stopped) return;
      const socket = connectFrom(ATTACKER, s.url);
      opened++;
      // Half hold their connection silently, half ask for /healthz over and over; each reconnects at once when closed.
      socket.on('connect', () => {
        if (i % 2 === 0) socket.write(request('/healthz'));
      });
      socket.on('close', () => setImmediate(() => flood(i)));
    };
    for (let i = 0; i < 300; i++) flood(i);
    await sleep(300);
    const passed = await probe(s.url);
    stopped = true;
    process.stderr.write(`[abuse] probe server, reconnecting flood of 300 (${opened} connections opened): ${passed}/15 probes answered\n`);
    expect(passed).toBe(15);
  });
});

describe('bind addresses', () => {
  it('parses host:port, :port, [::1]:port and [::]:port', () => {
    expect(parseBindAddress('127.0.0.1:8081')).toEqual({ host: '127.0.0.1', port: 8081 });
    expect(parseBindAddress('localhost:0')).toEqual({ host: 'localhost', port: 0 });
    expect(parseBindAddress('metrics.example.com:65535')).toEqual({ host: 'metrics.example.com', port: 65535 });
    expect(parseBindAddress(':8080')).toEqual({ host: undefined, port: 8080 });
    expect(parseBindAddress('[::1]:8081')).toEqual({ host: '::1', port: 8081 });
    expect(parseBindAddress('[::]:0')).toEqual({ host: '::', port: 0 });
    expect(parseBindAddress('0.0.0.0:9')).toEqual({ host: '0.0.0.0', port: 9 });
  });

  it('refuses junk with a ManagerError naming the accepted forms', () => {
    const junk = ['', '8081', 'localhost', ':', ':65536', ':99999', ':-1', ':80a', ':0x50', ':+80', ': 80', ' :80', 'http://x:80', '::1:8080', '[::1]', '[::1]8080', '[zz]:80', '[127.0.0.1]:80', 'a b:80', '999.1.1.1:80', '1.2.3.4.5:80', 'host_name:80', '-x:80', '*:80', '[::1]:80:80'];
    for (const address of junk) {
      let thrown: unknown;
      try {
        parseBindAddress(address);
      } catch (err) {
        thrown = err;
      }
      expect(isManagerError(thrown), address).toBe(true);
      expect(thrown).toMatchObject({ reason: 'InvalidOptions' });
      expect((thrown as Error).message).toContain(JSON.stringify(address));
      expect((thrown as Error).message).toContain('host:port');
      expect((thrown as Error).message).toContain(':port for every interface');
      expect((thrown as Error).message).toContain('[ipv6]:port');
    }
  });

  it('starting on a junk address or a port in use rejects (typed for junk), leaving nothing listening', async () => {
    await expect(startHealthServer('nonsense', new Map(), new Map())).rejects.toMatchObject({ name: 'ManagerError', reason: 'InvalidOptions' });
    const first = await startMetricsServer('127.0.0.1:0', new Registry());
    try {
      await expect(startMetricsServer(`127.0.0.1:${portOf(first.url).port}`, new Registry())).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      await first.close();
    }
    await expect(startHealthServer('127.0.0.1:0', new Map(), new Map(), { limits: { headersTimeoutMs: 0 } })).rejects.toMatchObject({ reason: 'InvalidOptions' });
  });

  it(':port listens on every interface', async () => {
    const s = await startHealthServer(':0', new Map([['ping', ok]]), new Map());
    try {
      expect(await status(`http://127.0.0.1:${portOf(s.url).port}/healthz`)).toBe(200);
      // IPv6 too, as Go's ":port" does
      if (ipv6) expect(await status(`http://[::1]:${portOf(s.url).port}/healthz`)).toBe(200);
    } finally {
      await s.close();
    }
  });

  it.skipIf(!ipv6)('[::1]:port and [::]:port listen on IPv6 and answer there', async () => {
    const loopback = await startHealthServer('[::1]:0', new Map([['ping', ok]]), new Map());
    try {
      expect(loopback.url).toMatch(/^http:\/\/\[::1\]:\d+$/);
      expect(await status(`${loopback.url}/healthz`)).toBe(200);
      const got = await exchange(loopback.url, request('http://[/'));
      expect(got.status).toBe(400);
    } finally {
      await loopback.close();
    }
    const any = await startMetricsServer('[::]:0', new Registry());
    try {
      expect(any.url).toMatch(/^http:\/\/\[::\]:\d+$/);
      const { port } = portOf(any.url);
      expect(await status(`http://[::1]:${port}/metrics`)).toBe(200);
    } finally {
      await any.close();
    }
  });
});
