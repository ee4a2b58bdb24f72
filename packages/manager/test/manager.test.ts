/**
 * The manager's lifecycle against the real API server: one start, no
 * additions after stop, a failing runnable stops everything, leader-only work waits for
 * leadership (a Lease held by someone else), the graceful shutdown timeout,
 * and the HTTP servers (/metrics, /healthz, /readyz).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { ConfigMap, Lease } from '@kubeloop/scheme';
import { formatMicroTime } from '@kubeloop/leaderelection';
import { isManagerError, ManagerError, Result } from '../src/index.js';
import { uniqueName } from '../../../test/support/env.js';
import { eventually, newNamespace, probe, run, synced, testClient, testManager } from './support.js';

let client: Client;
let ns: string;

// Nothing here may end up as an unhandled rejection.
const stray: unknown[] = [];
const onStray = (err: unknown): void => void stray.push(err);
beforeAll(async () => {
  process.on('unhandledRejection', onStray);
  client = testClient();
  ns = await newNamespace(client, 'manager');
});
afterAll(() => {
  process.off('unhandledRejection', onStray);
  client.transport.close();
  expect(stray).toEqual([]);
});

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (err: unknown) => err,
  );
}

function reasonOf(err: unknown): string {
  return isManagerError(err) ? err.reason : `not a ManagerError: ${String(err)}`;
}

describe('start', () => {
  it('a manager starts once: a second start rejects, the first keeps running', async () => {
    const m = testManager(ns);
    const p = probe();
    m.add(p.runnable);
    const r = run(m);
    await eventually(() => p.state.started, (n) => n === 1, 'the runnable');
    expect(reasonOf(await rejection(m.start()))).toBe('InvalidRegistration');
    expect(p.state).toEqual({ started: 1, stopped: 0 });
    await r.stop();
    expect(p.state).toEqual({ started: 1, stopped: 1 });
  });

  it('nothing can be added once the manager has stopped (adding after start is lifecycle.test.ts)', async () => {
    const m = testManager(ns);
    const r = run(m);
    await r.stop();
    const thrown = (fn: () => unknown): unknown => {
      try {
        fn();
      } catch (err) {
        return err;
      }
      return undefined;
    };
    expect(reasonOf(thrown(() => m.add(async () => undefined)))).toBe('InvalidRegistration');
    expect(reasonOf(thrown(() => m.controller().for(ConfigMap).complete(() => Result.done())))).toBe('InvalidRegistration');
    expect(m.controllers()).toEqual([]);
  });

  it('an already aborted signal: start returns at once, having started nothing', async () => {
    const m = testManager(ns, { gracefulShutdownTimeoutMs: 5000 });
    const follower = probe();
    const leader = probe();
    m.add(follower.runnable, { needLeaderElection: false });
    m.add(leader.runnable);
    const t0 = performance.now();
    await m.start(AbortSignal.abort());
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(follower.state.started).toBe(0);
    expect(leader.state.started).toBe(0);
  });
});

describe('a failing runnable', () => {
  it.each([
    ['rejects', (): Promise<void> => sleep(200).then(() => Promise.reject(new Error('disk on fire')))],
    [
      'throws synchronously',
      (): Promise<void> => {
        throw new Error('disk on fire');
      },
    ],
  ])('that %s: start() rejects with RunnableFailed and everything else stops', async (_, failing) => {
    const m = testManager(ns, { healthProbeBindAddress: '127.0.0.1:0', metricsBindAddress: '127.0.0.1:0' });
    const other = probe();
    const leaderOnly = probe();
    let reconcilerStopped = false;
    m.add(other.runnable, { needLeaderElection: false });
    m.add(leaderOnly.runnable);
    m.controller()
      .for(ConfigMap)
      .complete(() => Result.done());
    m.add(async (signal) => {
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      reconcilerStopped = true;
    });
    m.add(failing);
    const started = Date.now();
    const err = await rejection(m.start());
    expect(reasonOf(err)).toBe('RunnableFailed');
    expect((err as ManagerError).message).toContain('disk on fire');
    expect(Date.now() - started).toBeLessThan(10_000);
    // everything else was told to stop, and did, before start() settled
    expect(other.state).toEqual({ started: 1, stopped: 1 });
    expect(leaderOnly.state.stopped).toBe(leaderOnly.state.started);
    expect(reconcilerStopped).toBe(true);
    expect(m.isLeader()).toBe(false);
    // the servers are closed
    await expect(fetch(`${m.healthUrl}/healthz`)).rejects.toThrow();
    await expect(fetch(`${m.metricsUrl}/metrics`)).rejects.toThrow();
  });

  it('a ManagerError thrown by a runnable is passed through as it is', async () => {
    const m = testManager(ns);
    m.add(async () => {
      await sleep(50);
      throw new ManagerError('CacheSync', 'custom runnable gave up');
    });
    const err = await rejection(m.start());
    expect(reasonOf(err)).toBe('CacheSync');
    expect((err as Error).message).toBe('custom runnable gave up');
  });

  it('a runnable that returns on its own is not a failure', async () => {
    const m = testManager(ns);
    const p = probe();
    m.add(async () => undefined);
    m.add(p.runnable);
    const r = run(m);
    await sleep(200);
    expect(p.state).toEqual({ started: 1, stopped: 0 });
    await r.stop();
  });
});

describe('leader election', () => {
  it('with the Lease held by another identity, non-leader runnables run and leader-only ones (controllers included) wait', async () => {
    const lease = uniqueName('held');
    const now = Date.now();
    await client.create({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: lease, namespace: ns },
      spec: { holderIdentity: 'someone-else', leaseDurationSeconds: 60, acquireTime: formatMicroTime(now), renewTime: formatMicroTime(now), leaseTransitions: 0 },
    });
    const m = testManager(ns, {
      leaderElection: { name: lease, namespace: ns, identity: 'me', leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 200 },
    });
    const follower = probe();
    const leader = probe();
    const reconciled: string[] = [];
    m.add(follower.runnable, { needLeaderElection: false });
    m.add(leader.runnable);
    m.controller()
      .for(ConfigMap)
      .complete((req) => {
        reconciled.push(req.name);
        return Result.done();
      });
    const r = run(m);
    await eventually(() => follower.state.started, (n) => n === 1, 'the non-leader runnable');
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: uniqueName('while-waiting'), namespace: ns } });
    // several retry periods, well past our own lease duration: the other holder's 60 s lease is still valid
    await sleep(2500);
    expect(leader.state.started).toBe(0);
    expect(reconciled).toEqual([]);
    expect(m.isLeader()).toBe(false);
    expect(m.controllers()[0]?.started).toBe(false);
    const held = await client.get(Lease, { namespace: ns, name: lease });
    expect(held.spec?.holderIdentity).toBe('someone-else');

    // the other holder lets go: we take over, and only now does leader-only work start
    await client.patch(Lease, { namespace: ns, name: lease }, mergePatch({ spec: { holderIdentity: '' } }));
    await eventually(() => leader.state.started, (n) => n === 1, 'the leader-only runnable after takeover', 10_000);
    expect(m.isLeader()).toBe(true);
    await eventually(() => reconciled.length, (n) => n > 0, 'the controller after takeover');
    expect((await client.get(Lease, { namespace: ns, name: lease })).spec?.holderIdentity).toBe('me');
    await r.stop();
    expect(leader.state.stopped).toBe(1);
    expect(follower.state.stopped).toBe(1);
  });
});

describe('graceful shutdown', () => {
  it('a runnable that ignores its signal: start() rejects with ShutdownTimeout after gracefulShutdownTimeoutMs', async () => {
    const m = testManager(ns, { gracefulShutdownTimeoutMs: 600, healthProbeBindAddress: '127.0.0.1:0' });
    const polite = probe();
    let stubbornStarted = false;
    m.add(polite.runnable, { needLeaderElection: false });
    m.add(() => {
      stubbornStarted = true;
      return new Promise<void>(() => undefined); // never ends, never looks at its signal
    });
    const ac = new AbortController();
    const done = m.start(ac.signal);
    await eventually(() => stubbornStarted && polite.state.started === 1, (ok) => ok, 'the runnables');
    const t0 = performance.now();
    ac.abort();
    const err = await rejection(done);
    const elapsed = performance.now() - t0;
    expect(reasonOf(err)).toBe('ShutdownTimeout');
    expect(elapsed).toBeGreaterThanOrEqual(550);
    expect(elapsed).toBeLessThan(5000);
    // the polite one was still stopped, and the servers closed
    expect(polite.state.stopped).toBe(1);
    await expect(fetch(`${m.healthUrl}/healthz`)).rejects.toThrow();
  });

  it('runnables that stop in time: start() resolves', async () => {
    const m = testManager(ns, { gracefulShutdownTimeoutMs: 2000 });
    m.add(async (signal) => {
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      await sleep(200); // some cleanup, within the timeout
    });
    const r = run(m);
    await sleep(100);
    await expect(r.stop()).resolves.toBeUndefined();
  });
});

describe('HTTP servers', () => {
  it('/metrics serves Prometheus text; every other path is 404', async () => {
    const m = testManager(ns, { metricsBindAddress: '127.0.0.1:0' });
    m.controller()
      .named('metrics-probe')
      .for(ConfigMap, { predicates: [() => false] })
      .complete(() => Result.done());
    const r = run(m);
    try {
      await synced(m);
      const url = m.metricsUrl!;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const res = await fetch(`${url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = await res.text();
      expect(text).toContain('controller_runtime_max_concurrent_reconciles{controller="metrics-probe"} 1');
      expect(text).toContain('rest_client_requests_total');
      expect((await fetch(`${url}/metrics?name[]=x`)).status).toBe(200);
      for (const path of ['/', '/metric', '/metrics/extra', '/metricsx', '/healthz']) {
        const other = await fetch(`${url}${path}`);
        expect({ path, status: other.status }).toEqual({ path, status: 404 });
        await other.text();
      }
    } finally {
      await r.stop();
    }
  });

  it('a bad bind address fails at createManager, naming the forms; "0" turns a server off', async () => {
    for (const address of ['8080', 'localhost', '127.0.0.1:99999', '[::1', 'http://127.0.0.1:8080']) {
      expect(() => testManager(ns, { metricsBindAddress: address })).toThrow(/not valid: want host:port/);
      expect(() => testManager(ns, { healthProbeBindAddress: address })).toThrow(ManagerError);
    }
    const m = testManager(ns, { metricsBindAddress: '0', healthProbeBindAddress: '' });
    m.controller()
      .named('servers-off')
      .for(ConfigMap, { predicates: [() => false] })
      .complete(() => Result.done());
    const r = run(m);
    try {
      await synced(m);
      expect(m.metricsUrl).toBeUndefined();
      expect(m.healthUrl).toBeUndefined();
    } finally {
      await r.stop();
    }
  });

  it('/healthz: a failing custom check makes it 500, with the reason under ?verbose; /readyz is separate', async () => {
    const m = testManager(ns, { healthProbeBindAddress: '127.0.0.1:0' });
    let dbUp = false;
    m.addHealthzCheck('database', async () => {
      await sleep(1);
      if (!dbUp) throw new Error('database unreachable: connection refused');
    });
    const r = run(m);
    try {
      const url = await eventually(() => m.healthUrl, (u) => u !== undefined, 'the probe server');
      await eventually(() => fetch(`${url}/readyz`).then((res) => res.status), (s) => s === 200, 'readiness');
      const failing = await fetch(`${url}/healthz`);
      expect(failing.status).toBe(500);
      await failing.text();
      const verbose = await fetch(`${url}/healthz?verbose`);
      expect(verbose.status).toBe(500);
      const body = await verbose.text();
      expect(body).toContain('[+]ping ok');
      expect(body).toContain('[-]database failed: database unreachable: connection refused');
      expect(body).toContain('healthz check failed');
      // one check by name, and excluding it
      expect((await fetch(`${url}/healthz/ping`)).status).toBe(200);
      expect((await fetch(`${url}/healthz/database`)).status).toBe(500);
      expect((await fetch(`${url}/healthz/nope`)).status).toBe(404);
      expect((await fetch(`${url}/healthz?exclude=database`)).status).toBe(200);
      // readiness does not run liveness checks
      const ready = await fetch(`${url}/readyz?verbose`);
      expect(ready.status).toBe(200);
      expect(await ready.text()).not.toContain('database');
      // the check recovers: healthy again, a plain 'ok'
      dbUp = true;
      const ok = await fetch(`${url}/healthz`);
      expect(ok.status).toBe(200);
      expect(await ok.text()).toBe('ok');
      const okVerbose = await (await fetch(`${url}/healthz?verbose`)).text();
      expect(okVerbose).toContain('[+]database ok');
      expect((await fetch(`${url}/other`)).status).toBe(404);
    } finally {
      await r.stop();
    }
  });

  it('/readyz: a failing custom readiness check makes it 500 with its reason', async () => {
    const m = testManager(ns, { healthProbeBindAddress: '127.0.0.1:0' });
    m.addReadyzCheck('warmup', () => {
      throw new Error('still loading the catalog');
    });
    const r = run(m);
    try {
      const url = await eventually(() => m.healthUrl, (u) => u !== undefined, 'the probe server');
      const res = await fetch(`${url}/readyz?verbose`);
      expect(res.status).toBe(500);
      expect(await res.text()).toContain('[-]warmup failed: still loading the catalog');
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    } finally {
      await r.stop();
    }
  });
});
