/**
 * pino logging: one JSON line per event; Secret payloads and bearer tokens
 * never reach the output, however deep they sit; a Secret created by real
 * `kubectl apply` (whose last-applied annotation repeats its data and its
 * plain stringData) logged in six shapes leaks nothing; errors are written
 * with their cause chain; the per-reconcile child logger of a real
 * controller run carries the controller-runtime fields; the level comes
 * from options or the environment.
 */
import { spawn } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@kubeloop/client';
import { Lease, Secret } from '@kubeloop/scheme';
import { createLogger, createManager, ManagerError, Result } from '../../src/index.js';
import { testKubeConfig } from '../../../../test/support/env.js';
import { kubectlOk } from '../../../../test/support/kubectl.js';
import { eventually, LogCapture, newNamespace, run, synced, testClient } from '../support.js';

const PASSWORD = 'hunter2';
const PASSWORD_B64 = Buffer.from(PASSWORD).toString('base64');
const TOKEN = 'abc123-very-secret-token';

function secretObject() {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db', namespace: 'prod' }, data: { password: PASSWORD }, stringData: { password: PASSWORD } };
}

function capture(level = 'trace') {
  const out = new LogCapture();
  return { out, log: createLogger({ level, destination: out }) };
}

function expectClean(text: string): void {
  expect(text).not.toContain(PASSWORD);
  expect(text).not.toContain(PASSWORD_B64);
  expect(text).not.toContain(TOKEN);
}

describe('createLogger', () => {
  it('writes one JSON line per event, with level, ISO time, pid, message and fields', () => {
    const { out, log } = capture('info');
    log.info({ controller: 'harddisk', n: 1 }, 'first');
    log.warn('second');
    log.child({ reconcileID: 'r1' }).error({ err: new Error('boom') }, 'third');
    const text = out.text();
    expect(text.endsWith('\n')).toBe(true);
    const lines = out.lines();
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({ level: 30, msg: 'first', controller: 'harddisk', n: 1, pid: process.pid });
    expect(String(lines[0]?.['time'])).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(lines[1]).toMatchObject({ level: 40, msg: 'second' });
    expect(lines[2]).toMatchObject({ level: 50, msg: 'third', reconcileID: 'r1', err: { message: 'boom', type: 'Error' } });
  });

  it('writes stdout synchronously: every line logged before process.exit() reaches a pipe', async () => {
    // A child logs 2,000 lines into a pipe it does not wait for, then exits at once.
    const script = [
      `const { createLogger } = await import(${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)});`,
      'const log = createLogger({ level: "info" });',
      'for (let i = 0; i < 2000; i++) log.info({ i, pad: "x".repeat(200) }, "line");',
      'log.info("last");',
      'process.exit(0);',
    ].join('\n');
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code).toBe(0);
    const lines = text.trimEnd().split('\n').map((l) => JSON.parse(l) as { msg: string });
    expect(lines).toHaveLength(2001);
    expect(lines.at(-1)?.msg).toBe('last');
  });

  it('never writes a Secret payload: the object itself, as a field, deeper, in a list, as a binding, on an error', () => {
    const { out, log } = capture();
    const secret = secretObject();
    log.info(secret, 'top level');
    log.info({ secret }, 'as a field');
    log.info({ event: { type: 'update', object: secret, old: secret } }, 'nested deeper');
    log.info({ list: { items: [secret, secret] } }, 'in a list');
    log.child({ secret }).info('as a binding');
    log.error({ err: Object.assign(new Error('write failed'), { object: secret }) }, 'on an error');
    expectClean(out.text());
    const lines = out.lines();
    expect(lines).toHaveLength(6);
    // the rest of the object is still there
    expect(lines[1]).toMatchObject({ secret: { kind: 'Secret', metadata: { name: 'db', namespace: 'prod' } } });
  });

  it('never writes a bearer token: headers (any case, any depth), token fields, kubeconfig users, messages', () => {
    const { out, log } = capture();
    log.info({ headers: { authorization: `Bearer ${TOKEN}` } }, 'headers');
    log.info({ request: { options: { headers: { Authorization: `Bearer ${TOKEN}` } } } }, 'deep, capitalised');
    log.info({ token: TOKEN }, 'token');
    log.info({ user: { token: TOKEN, bearerToken: TOKEN } }, 'user');
    log.info({ kubeconfig: { users: [{ name: 'admin', user: { token: TOKEN, 'client-key-data': TOKEN } }] } }, 'kubeconfig');
    log.warn({ err: new Error(`401 for request with Authorization: Bearer ${TOKEN}`) }, 'an error quoting the header');
    log.info(`calling with Bearer ${TOKEN}`);
    expectClean(out.text());
    const lines = out.lines();
    expect(lines).toHaveLength(7);
    expect(lines[0]).toMatchObject({ headers: { authorization: '[REDACTED]' } });
    expect(lines[2]).toMatchObject({ token: '[REDACTED]' });
    // what is not secret stays
    expect(lines[4]).toMatchObject({ kubeconfig: { users: [{ name: 'admin' }] } });
  });

  it('takes its level from the option, else KUBELOOP_LOG_LEVEL, else LOG_LEVEL, else info', () => {
    const saved = { k: process.env['KUBELOOP_LOG_LEVEL'], l: process.env['LOG_LEVEL'] };
    try {
      delete process.env['KUBELOOP_LOG_LEVEL'];
      delete process.env['LOG_LEVEL'];
      expect(createLogger({ destination: new LogCapture() }).level).toBe('info');
      process.env['LOG_LEVEL'] = 'error';
      expect(createLogger({ destination: new LogCapture() }).level).toBe('error');
      process.env['KUBELOOP_LOG_LEVEL'] = 'warn';
      const out = new LogCapture();
      const log = createLogger({ destination: out });
      expect(log.level).toBe('warn');
      log.info('dropped');
      log.warn('kept');
      expect(out.lines().map((l) => l['msg'])).toEqual(['kept']);
      expect(createLogger({ level: 'debug', destination: new LogCapture() }).level).toBe('debug');
    } finally {
      if (saved.k === undefined) delete process.env['KUBELOOP_LOG_LEVEL'];
      else process.env['KUBELOOP_LOG_LEVEL'] = saved.k;
      if (saved.l === undefined) delete process.env['LOG_LEVEL'];
      else process.env['LOG_LEVEL'] = saved.l;
    }
  });
});

/** Run kubectl against the shared control plane, `stdin` piped in. */
function kubectl(args: string[], stdin: string): Promise<string> {
  return kubectlOk(args, { stdin });
}

/** Freeze every object reachable from `value`, as the informer cache does (iteratively). */
function deepFreeze<T>(value: T): T {
  const stack: unknown[] = [value];
  for (let v = stack.pop(); v !== undefined; v = stack.pop()) {
    if (typeof v !== 'object' || v === null || Object.isFrozen(v)) continue;
    Object.freeze(v);
    stack.push(...(Object.values(v) as unknown[]));
  }
  return value;
}

describe('a Secret created by kubectl apply, logged in every shape', () => {
  const DATA_PLAIN = 'p4ssw0rd-from-data';
  const DATA_B64 = Buffer.from(DATA_PLAIN).toString('base64');
  const STRING_PLAIN = 'api-key-from-stringData-7f3a';
  const STRING_B64 = Buffer.from(STRING_PLAIN).toString('base64');
  const forbidden = [DATA_PLAIN, DATA_B64, STRING_PLAIN, STRING_B64];
  let client: Client;
  let ns: string;
  let secret: Secret;
  let list: unknown;

  beforeAll(async () => {
    client = testClient();
    ns = await newNamespace(client, 'redact');
    const manifest = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db-credentials', namespace: ns, labels: { app: 'db' } },
      type: 'Opaque',
      data: { password: DATA_B64 },
      stringData: { apiKey: STRING_PLAIN },
    };
    await kubectl(['apply', '-f', '-'], JSON.stringify(manifest));
    secret = deepFreeze(await client.get(Secret, { namespace: ns, name: 'db-credentials' }));
    list = deepFreeze(await client.list(Secret, { namespace: ns }));
  });
  afterAll(() => client.transport.close());

  it('the object as kubectl left it carries both values, in data and in the last-applied annotation', () => {
    const annotation = secret.metadata?.annotations?.['kubectl.kubernetes.io/last-applied-configuration'] ?? '';
    expect(annotation).toContain(DATA_B64);
    expect(annotation).toContain(STRING_PLAIN);
    expect(secret.data).toEqual({ password: DATA_B64, apiKey: STRING_B64 });
  });

  const shapes: [string, (log: ReturnType<typeof createLogger>) => void][] = [
    ['whole, as the merged object', (log) => log.info(secret, 'whole')],
    ['whole, as a field', (log) => log.info({ secret }, 'field')],
    ['nested in another object', (log) => log.info({ event: { type: 'MODIFIED', object: secret, old: { previous: secret } } }, 'nested')],
    ['inside a list (the SecretList read from the server, and an array)', (log) => log.info({ list, items: [{ note: 'x' }, secret] }, 'list')],
    ['its metadata alone', (log) => log.info({ metadata: secret.metadata }, 'metadata')],
    ['its annotations alone', (log) => log.info({ annotations: secret.metadata?.annotations }, 'annotations')],
    ['the annotation string alone', (log) => log.info({ applied: secret.metadata?.annotations?.['kubectl.kubernetes.io/last-applied-configuration'] }, 'string')],
    ['inside an error: a field of the error', (log) => log.error({ err: Object.assign(new Error('apply failed'), { object: secret }) }, 'error field')],
    ['inside an error: the cause', (log) => log.error({ err: new ManagerError('RunnableFailed', 'writer failed', { cause: new Error('apply failed', { cause: secret }) }) }, 'cause')],
    ['inside an error: a field of the cause', (log) => log.error(new Error('outer', { cause: Object.assign(new Error('inner'), { metadata: secret.metadata }) }), 'cause field')],
    ['as a child binding', (log) => log.child({ secret }).info('binding')],
  ];

  for (const [shape, write] of shapes) {
    it(`leaks nothing when logged ${shape}`, () => {
      const out = new LogCapture();
      const before = JSON.stringify(secret);
      write(createLogger({ level: 'info', destination: out }));
      const text = out.text();
      for (const value of forbidden) expect(text, `${shape}: ${value}`).not.toContain(value);
      // one line, still JSON, written (not withheld)
      const lines = out.lines();
      expect(lines).toHaveLength(1);
      expect(lines[0]?.['msg']).not.toMatch(/withheld/);
      // the caller's (frozen) object is untouched
      expect(JSON.stringify(secret)).toBe(before);
    });
  }

  it('keeps what is not secret: names, labels, the annotation key, the error chain', () => {
    const out = new LogCapture();
    const log = createLogger({ level: 'info', destination: out });
    log.info({ metadata: secret.metadata }, 'metadata');
    log.error({ err: new ManagerError('RunnableFailed', 'writer failed', { cause: new Error('apply failed', { cause: { code: 409, object: secret } }) }) }, 'cause');
    const [meta, cause] = out.lines();
    expect(meta).toMatchObject({ metadata: { name: 'db-credentials', namespace: ns, labels: { app: 'db' }, annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '[REDACTED]' } } });
    expect(cause).toMatchObject({
      err: { type: 'ManagerError', reason: 'RunnableFailed', message: 'writer failed', cause: { type: 'Error', message: 'apply failed', cause: { code: 409, object: { kind: 'Secret', data: '[REDACTED]', metadata: { name: 'db-credentials' } } } } },
    });
  });
});

describe('errors', () => {
  it('are written with their cause chain, cycles cut, without writing to the error (a frozen one logs fine)', () => {
    const out = new LogCapture();
    const log = createLogger({ level: 'info', destination: out });
    const inner = new Error('inner');
    const outer = new Error('outer', { cause: inner });
    Object.assign(inner, { cause: outer });
    log.error({ err: outer }, 'cycle');
    const frozen = Object.freeze(new Error('frozen', { cause: Object.freeze(new Error('frozen cause')) }));
    log.error({ err: frozen }, 'frozen');
    log.error(new AggregateError([new Error('a'), new Error('b')], 'both'), 'aggregate');
    const [cycle, cold, agg] = out.lines();
    expect(cycle).toMatchObject({ err: { message: 'outer', cause: { message: 'inner', cause: '[Circular]' } } });
    expect(cold).toMatchObject({ err: { message: 'frozen', cause: { message: 'frozen cause' } } });
    expect(agg).toMatchObject({ err: { type: 'AggregateError', aggregateErrors: [{ message: 'a' }, { message: 'b' }] } });
  });
});

describe('the logs of a real controller run', () => {
  let client: Client;
  let ns: string;
  beforeAll(async () => {
    client = testClient();
    ns = await newNamespace(client, 'logging');
  });
  afterAll(() => client.transport.close());
  const stops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  it('the per-reconcile child logger carries controller, controllerGroup, controllerKind, namespace, name and reconcileID', async () => {
    const out = new LogCapture();
    const manager = createManager({ kubeConfig: testKubeConfig(), namespaces: [ns], logger: createLogger({ level: 'info', destination: out }) });
    let calls = 0;
    manager
      .controller()
      .named('lease-watcher')
      .for(Lease)
      .complete((req, ctx) => {
        calls++;
        ctx.log.info({ step: 'inside' }, 'reconciling');
        if (req.name === 'fails' && calls < 10) throw new Error('not yet');
        return Result.done();
      });
    const r = run(manager);
    stops.push(r.stop);
    await synced(manager);
    await client.create({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l1', namespace: ns } });
    await client.create({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'fails', namespace: ns } });
    await eventually(() => out.lines().filter((l) => l['msg'] === 'reconcile failed; retrying with backoff'), (ls) => ls.length >= 1, 'a failed reconcile logged');
    await eventually(() => out.lines().filter((l) => l['msg'] === 'reconciling' && l['name'] === 'l1'), (ls) => ls.length >= 1, 'the reconcile of l1');
    const lines = out.lines();
    const inside = lines.find((l) => l['msg'] === 'reconciling' && l['name'] === 'l1')!;
    expect(inside).toMatchObject({
      controller: 'lease-watcher',
      controllerGroup: 'coordination.k8s.io',
      controllerKind: 'Lease',
      namespace: ns,
      name: 'l1',
      step: 'inside',
      level: 30,
    });
    expect(inside['reconcileID']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    // the failure is logged by the controller with the same fields, and the reconcile ID of that attempt
    const failed = lines.find((l) => l['msg'] === 'reconcile failed; retrying with backoff')!;
    expect(failed).toMatchObject({ controller: 'lease-watcher', controllerGroup: 'coordination.k8s.io', controllerKind: 'Lease', namespace: ns, name: 'fails', level: 50, err: { message: 'not yet' } });
    const attempt = lines.find((l) => l['msg'] === 'reconciling' && l['reconcileID'] === failed['reconcileID']);
    expect(attempt?.['name']).toBe('fails');
    // every reconcile has its own ID
    const ids = lines.filter((l) => l['msg'] === 'reconciling').map((l) => l['reconcileID']);
    expect(new Set(ids).size).toBe(ids.length);
    // and every line is a JSON object of its own (out.lines() parsed them all)
    expect(lines.length).toBeGreaterThan(3);
  });

  it('a Secret read and logged inside a reconcile does not reach the output', async () => {
    const out = new LogCapture();
    const manager = createManager({ kubeConfig: testKubeConfig(), namespaces: [ns], logger: createLogger({ level: 'debug', destination: out }) });
    let logged = 0;
    manager
      .controller()
      .for(Secret)
      .complete(async (req, ctx) => {
        const secret = await manager.client.get(Secret, { namespace: req.namespace!, name: req.name });
        ctx.log.info({ secret }, 'read the secret');
        ctx.log.debug({ observed: { object: secret } }, 'deeper');
        logged++;
        return Result.done();
      });
    const r = run(manager);
    stops.push(r.stop);
    await synced(manager);
    await client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db', namespace: ns }, stringData: { password: PASSWORD } });
    await eventually(() => logged, (n) => n >= 1, 'the secret reconciled');
    await r.stop();
    const text = out.text();
    expect(text).toContain('read the secret');
    expectClean(text);
  });
});
