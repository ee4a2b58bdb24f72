/**
 * End to end on the example operator, against the real API server: the
 * HardDisk lifecycle, metrics, probes, events, retries with backoff, leader
 * election between two managers, draining on shutdown, and a CRD that
 * appears after start.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { createClient, isNotFound, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { ConfigMap, builtinScheme } from '@kubeloop/scheme';
import { createLogger, createManager, Result, terminalError } from '@kubeloop/manager';
import type { Manager } from '@kubeloop/manager';
import { FINALIZER, HardDisk, setupHardDiskController } from '../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { testCRD } from '../../../test/support/crds.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const scheme = builtinScheme.extend(HardDisk);
const quiet = createLogger({ level: 'silent' });

let env: Environment;
let client: Client;
let ns: string;

beforeAll(async () => {
  env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  await env.installCRDs([join(root, 'crd')]);
  client = createClient({ kubeConfig: env.kubeConfig, scheme, fieldOwner: 'e2e' });
  ns = uniqueName('op');
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});
afterAll(async () => {
  await env.stop();
});

async function eventually<T>(read: () => Promise<T | undefined>, ok: (v: T) => boolean, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await read().catch(() => undefined);
    if (last !== undefined && ok(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(last)?.slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function disk(name: string, size: string, storageClass = 'fast') {
  return { apiVersion: 'crd-demo.io/v1' as const, kind: 'HardDisk' as const, metadata: { name, namespace: ns }, spec: { size, storageClass } };
}

/** Parse Prometheus text into `name{labels} value` lines. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

describe('the HardDisk operator', () => {
  let manager: Manager;
  let stop: AbortController;
  let running: Promise<void>;

  beforeAll(async () => {
    manager = createManager({
      kubeConfig: env.kubeConfig,
      scheme,
      fieldOwner: 'harddisk-operator',
      namespaces: [ns],
      logger: quiet,
      metricsBindAddress: '127.0.0.1:0',
      healthProbeBindAddress: '127.0.0.1:0',
    });
    setupHardDiskController(manager, 'explicit');
    stop = new AbortController();
    running = manager.start(stop.signal);
    await eventually(async () => (manager.healthUrl ? (await fetch(`${manager.healthUrl}/readyz`)).status : undefined), (s) => s === 200, 'readiness');
  });
  afterAll(async () => {
    stop.abort();
    await running;
  });

  it('creates a ConfigMap for a HardDisk, sets status and conditions, records events', async () => {
    await client.create(disk('d1', '10Gi'));
    const bound = await eventually(() => client.get(HardDisk, { namespace: ns, name: 'd1' }), (d) => d.status?.phase === 'Bound', 'd1 Bound');
    expect(bound.status?.configMapName).toBe('d1-disk');
    expect(bound.metadata?.finalizers).toContain(FINALIZER);
    const ready = bound.status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'True', reason: 'Provisioned', observedGeneration: bound.metadata?.generation });
    const cm = await client.get(ConfigMap, { namespace: ns, name: 'd1-disk' });
    expect(cm.data).toEqual({ size: '10Gi', storageClass: 'fast', medium: 'ssd', iops: '16000' });
    expect(cm.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'HardDisk', name: 'd1', uid: bound.metadata?.uid, controller: true })]);
    const events = await eventually(
      () => client.list({ apiVersion: 'events.k8s.io/v1', kind: 'Event' }, { namespace: ns }),
      (l) => l.items.some((e) => e['reason'] === 'Provisioned'),
      'the Provisioned event',
    );
    const provisioned = events.items.find((e) => e['reason'] === 'Provisioned')!;
    expect(provisioned).toMatchObject({ type: 'Normal', reportingController: 'harddisk-controller', regarding: { kind: 'HardDisk', name: 'd1' } });
  });

  it('keeps the ConfigMap in sync with the spec, and repairs it when changed by hand', async () => {
    await client.patch(HardDisk, { namespace: ns, name: 'd1' }, mergePatch({ spec: { size: '20Gi', storageClass: 'standard' } }));
    await eventually(() => client.get(ConfigMap, { namespace: ns, name: 'd1-disk' }), (c) => c.data?.['size'] === '20Gi' && c.data['medium'] === 'hdd', 'the resize');
    // someone edits the owned ConfigMap: the owner is reconciled and the drift undone
    await client.patch(ConfigMap, { namespace: ns, name: 'd1-disk' }, mergePatch({ data: { size: '1Ki' } }));
    await eventually(() => client.get(ConfigMap, { namespace: ns, name: 'd1-disk' }), (c) => c.data?.['size'] === '20Gi', 'the repair');
  });

  it('an invalid spec sets Ready=False with a warning event and is not retried', async () => {
    await client.create(disk('bad', 'lots'));
    const invalid = await eventually(() => client.get(HardDisk, { namespace: ns, name: 'bad' }), (d) => d.status?.phase === 'Invalid', 'bad Invalid');
    expect(invalid.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    await expect(client.get(ConfigMap, { namespace: ns, name: 'bad-disk' })).rejects.toSatisfy(isNotFound);
  });

  it('cleans up through the finalizer on delete', async () => {
    await client.delete(HardDisk, { namespace: ns, name: 'd1' });
    await eventually(async () => (await client.get(HardDisk, { namespace: ns, name: 'd1' }).then(() => false).catch((e: unknown) => isNotFound(e))) || undefined, (v) => v === true, 'd1 gone');
    await expect(client.get(ConfigMap, { namespace: ns, name: 'd1-disk' })).rejects.toSatisfy(isNotFound);
  });

  it('exports controller-runtime metrics, informer metrics and REST client metrics', async () => {
    const text = await (await fetch(`${manager.metricsUrl}/metrics`)).text();
    const m = samples(text);
    expect(m.get('controller_runtime_reconcile_total{controller="harddisk",result="success"}')).toBeGreaterThan(0);
    expect(m.get('controller_runtime_max_concurrent_reconciles{controller="harddisk"}')).toBe(1);
    expect(m.get('controller_runtime_active_workers{controller="harddisk"}')).toBe(0);
    expect(m.get('controller_runtime_reconcile_errors_total{controller="harddisk"}')).toBeDefined();
    expect(m.get('controller_runtime_terminal_reconcile_errors_total{controller="harddisk"}')).toBeDefined();
    expect(m.get('controller_runtime_reconcile_panics_total{controller="harddisk"}')).toBe(0);
    expect([...m.keys()].some((k) => k.startsWith('controller_runtime_reconcile_time_seconds_bucket{le="0.005",controller="harddisk"}'))).toBe(true);
    for (const name of ['workqueue_depth', 'workqueue_adds_total', 'workqueue_queue_duration_seconds_bucket', 'workqueue_work_duration_seconds_bucket', 'workqueue_unfinished_work_seconds', 'workqueue_longest_running_processor_seconds', 'workqueue_retries_total']) {
      expect([...m.keys()].some((k) => k.startsWith(`${name}{`) && k.includes('name="harddisk"')), name).toBe(true);
    }
    expect([...m.keys()].some((k) => /^rest_client_requests_total\{code="200",method="GET",host="127\.0\.0\.1:\d+"\}$/.test(k))).toBe(true);
    expect(m.get('kubeloop_informer_synced{kind="HardDisk.crd-demo.io/v1"}')).toBe(1);
    expect(m.get('kubeloop_informer_relists_total{kind="HardDisk.crd-demo.io/v1"}')).toBe(0);
    expect(m.get('kubeloop_informer_store_objects{kind="ConfigMap.v1"}')).toBeGreaterThanOrEqual(0);
  });

  it('answers health and readiness, with named checks and ?verbose', async () => {
    expect((await fetch(`${manager.healthUrl}/healthz`)).status).toBe(200);
    const verbose = await (await fetch(`${manager.healthUrl}/readyz?verbose`)).text();
    expect(verbose).toContain('[+]informers ok');
    expect(verbose).toContain('[+]controllers ok');
    expect((await fetch(`${manager.healthUrl}/readyz/informers`)).status).toBe(200);
    expect((await fetch(`${manager.healthUrl}/readyz/nope`)).status).toBe(404);
  });
});

describe('retries', () => {
  it('a throwing reconciler is retried with growing delay, counted, and panics are told apart', async () => {
    const attempts: number[] = [];
    const manager = createManager({ kubeConfig: env.kubeConfig, namespaces: [ns], logger: quiet });
    const name = uniqueName('flaky');
    manager
      .controller()
      .named('flaky')
      .for(ConfigMap, { predicates: [(e) => e.object.metadata?.name === name] })
      .complete((req) => {
        attempts.push(performance.now());
        if (attempts.length === 1) throw new TypeError('a bug'); // a "panic"
        if (attempts.length < 7) throw new Error('not yet');
        expect(req.name).toBe(name);
        return Result.done();
      });
    const stop = new AbortController();
    const running = manager.start(stop.signal);
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns } });
    await eventually(async () => attempts.length, (n) => n >= 7, 'seven attempts');
    const gaps = attempts.slice(1).map((t, i) => t - attempts[i]!);
    // 5 ms, 10, 20, 40, 80, 160: each retry waits at least its backoff (timers never fire early; a busy machine only adds)
    gaps.forEach((gap, i) => expect(gap, `gap ${i}`).toBeGreaterThanOrEqual(5 * 2 ** i - 2));
    const m = samples(await manager.registry.metrics());
    expect(m.get('controller_runtime_reconcile_errors_total{controller="flaky"}')).toBe(6);
    expect(m.get('controller_runtime_reconcile_panics_total{controller="flaky"}')).toBe(1);
    expect(m.get('workqueue_retries_total{controller="flaky",name="flaky"}') ?? m.get('workqueue_retries_total{name="flaky",controller="flaky"}')).toBe(6);
    stop.abort();
    await running;
  });

  it('a terminal error is counted and not retried', async () => {
    let calls = 0;
    const manager = createManager({ kubeConfig: env.kubeConfig, namespaces: [ns], logger: quiet });
    const name = uniqueName('terminal');
    manager
      .controller()
      .named('terminal')
      .for(ConfigMap, { predicates: [(e) => e.object.metadata?.name === name] })
      .complete(() => {
        calls++;
        throw terminalError('cannot ever work');
      });
    const stop = new AbortController();
    const running = manager.start(stop.signal);
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns } });
    await eventually(async () => calls, (n) => n >= 1, 'the first call');
    await new Promise((r) => setTimeout(r, 500));
    expect(calls).toBe(1);
    const m = samples(await manager.registry.metrics());
    expect(m.get('controller_runtime_terminal_reconcile_errors_total{controller="terminal"}')).toBe(1);
    stop.abort();
    await running;
  });
});

describe('shutdown', () => {
  it('stopping during a slow reconcile lets it finish, and starts nothing after', async () => {
    const manager = createManager({ kubeConfig: env.kubeConfig, namespaces: [ns], logger: quiet, gracefulShutdownTimeoutMs: 10_000 });
    const name = uniqueName('slow');
    let started = 0;
    let finished = 0;
    manager
      .controller()
      .named('slow')
      .for(ConfigMap, { predicates: [(e) => e.object.metadata?.name?.startsWith(name) ?? false] })
      .complete(async () => {
        started++;
        await new Promise((r) => setTimeout(r, 1500)); // ignores the signal on purpose
        finished++;
        return Result.done();
      });
    const stop = new AbortController();
    const running = manager.start(stop.signal);
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${name}-a`, namespace: ns } });
    await eventually(async () => started, (n) => n === 1, 'the slow reconcile to start');
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${name}-b`, namespace: ns } });
    stop.abort();
    await running;
    expect(finished).toBe(1);
    expect(started).toBe(1); // b was queued but never started
  });
});

describe('a kind that is not installed yet', () => {
  // A missing CRD is the cluster's state, not the pod's fault: /readyz stays 200 and names the
  // wait (docs/day-two.md, "When a CRD comes and goes"), so the webhooks and other controllers
  // stay in service.
  it('reports the wait for its CRD in readiness (still ready), and starts once the CRD appears', async () => {
    const group = `${uniqueName('late')}.crd-demo.io`;
    let reconciled = 0;
    const manager = createManager({
      kubeConfig: env.kubeConfig,
      namespaces: [ns],
      logger: quiet,
      healthProbeBindAddress: '127.0.0.1:0',
      cache: { reflector: { backoffInitialMs: 100, backoffMaxMs: 500 } },
    });
    manager.controller().named('late').for({ apiVersion: `${group}/v1`, kind: 'Widget' }).complete(() => {
      reconciled++;
      return Result.done();
    });
    const stop = new AbortController();
    const running = manager.start(stop.signal);
    const waiting = await eventually(
      async () => {
        const res = await fetch(`${manager.healthUrl}/readyz?verbose`);
        return { status: res.status, body: await res.text() };
      },
      (r) => r.status === 200 && r.body.includes('late waits for the CRD of'),
      'a readiness answer naming the wait for the missing kind',
    );
    expect(waiting.body).toContain(`Widget.${group}/v1`);
    await env.installCRDs([testCRD(group, 'Widget')]);
    await client.create({ apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w', namespace: ns } });
    await eventually(async () => reconciled, (n) => n >= 1, 'the reconcile once the CRD exists', 30_000);
    expect((await fetch(`${manager.healthUrl}/readyz`)).status).toBe(200);
    stop.abort();
    await running;
  });
});

describe('leader election between two managers', () => {
  it('one reconciles at a time; killing the leader hands over to the standby, within lease + retry and 3 s of slack for a busy machine', async () => {
    const lease = uniqueName('lease');
    const name = uniqueName('le');
    let active = 0;
    let maxActive = 0;
    const byReplica = [0, 0];
    const make = (i: number): Manager => {
      const m = createManager({
        kubeConfig: env.kubeConfig,
        namespaces: [ns],
        logger: quiet,
        leaderElection: { name: lease, namespace: ns, identity: `replica-${i}`, leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 },
      });
      m.controller()
        .named('le')
        .for(ConfigMap, { predicates: [(e) => e.object.metadata?.name?.startsWith(name) ?? false] })
        .complete(async () => {
          active++;
          maxActive = Math.max(maxActive, active);
          byReplica[i]!++;
          await new Promise((r) => setTimeout(r, 20));
          active--;
          return Result.requeueAfter(100); // keep both busy if both led
        });
      return m;
    };
    const managers = [make(0), make(1)];
    const stops = [new AbortController(), new AbortController()];
    const runs = managers.map((m, i) => m.start(stops[i]!.signal).catch((e: unknown) => e));
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns } });
    const leader = await eventually(async () => managers.findIndex((m) => m.isLeader()), (i) => i >= 0, 'a leader');
    await eventually(async () => byReplica[leader], (n) => (n ?? 0) >= 3, 'the leader reconciling');
    expect(managers[1 - leader]!.isLeader()).toBe(false);
    expect(byReplica[1 - leader]).toBe(0);

    // "Kill" the leader: stop it without releasing the lease.
    const killedAt = Date.now();
    stops[leader]!.abort();
    await runs[leader];
    const before = byReplica[1 - leader]!;
    await eventually(async () => managers[1 - leader]!.isLeader(), (v) => v, 'the standby to take over', 15_000);
    const handover = Date.now() - killedAt;
    await eventually(async () => byReplica[1 - leader], (n) => (n ?? 0) > before + 2, 'the new leader reconciling');
    console.log(`[leader election] standby led ${handover} ms after the leader was stopped (lease 2000 ms + retry 300 ms ×[1,2.2))`);
    expect(handover).toBeLessThan(2000 + 300 * 2.2 + 3000); // lease + jittered retry, with slack for a busy machine
    expect(maxActive).toBe(1);
    stops[1 - leader]!.abort();
    await runs[1 - leader];
  });
});
