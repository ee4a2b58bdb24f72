/**
 * pino logging: one JSON line per event; Secret payloads and bearer tokens
 * never reach the output, however deep they sit; the per-reconcile child
 * logger of a real controller run carries the controller-runtime fields; the
 * level comes from options or the environment.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@kubeloop/client';
import { Lease, Secret } from '@kubeloop/scheme';
import { createLogger, createManager, Result } from '../../src/index.js';
import { testKubeConfig } from '../../../../test/support/env.js';
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
