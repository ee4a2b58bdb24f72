/**
 * The fluent controller builder: registration errors, default names, and
 * controllers built with it running against the real API server (watches
 * with an rxjs source, owns, event filters, concurrency, timeouts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Subject } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { metadataOnly, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { ConfigMap, Secret } from '@kubeloop/scheme';
import { enqueueMapped, isManagerError, labelSelectorPredicate, observableSource, Result } from '../../src/index.js';
import type { Manager, ReconcileContext, Request } from '../../src/index.js';
import { eventually, metric, newNamespace, run, synced, testClient, testManager } from '../support.js';
import type { Running } from '../support.js';

let client: Client;
let ns: string;
const running: Running[] = [];

beforeAll(async () => {
  client = testClient();
  ns = await newNamespace(client, 'builder');
});
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
});
afterAll(() => {
  client.transport.close();
});

function start(manager: Manager): Running {
  const r = run(manager);
  running.push(r);
  return r;
}

function reasonOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return isManagerError(err) ? err.reason : `not a ManagerError: ${String(err)}`;
  }
  return undefined;
}

const noop = (): void => undefined;

describe('registration errors', () => {
  it('a controller without `for` is refused', () => {
    const m = testManager(ns);
    expect(reasonOf(() => m.controller().complete(noop))).toBe('InvalidRegistration');
    expect(reasonOf(() => m.controller().owns(ConfigMap).named('x').complete(noop))).toBe('InvalidRegistration');
    expect(m.controllers()).toEqual([]);
  });

  it('`for` twice is refused', () => {
    const m = testManager(ns);
    expect(reasonOf(() => m.controller().for(ConfigMap).for(Secret))).toBe('InvalidRegistration');
  });

  it('two controllers with one name are refused: the default name, or an explicit one', () => {
    const m = testManager(ns);
    m.controller().for(ConfigMap).complete(noop);
    expect(reasonOf(() => m.controller().for(ConfigMap).complete(noop))).toBe('InvalidRegistration');
    m.controller().for(Secret).named('shared').complete(noop);
    expect(reasonOf(() => m.controller().for(ConfigMap).named('shared').complete(noop))).toBe('InvalidRegistration');
    // a distinct name makes a second controller of one kind fine
    m.controller().for(ConfigMap).named('configmap-2').complete(noop);
    expect(m.controllers().map((c) => c.name)).toEqual(['configmap', 'shared', 'configmap-2']);
  });

  it('bad options are refused at registration', () => {
    const m = testManager(ns);
    expect(reasonOf(() => m.controller().for(ConfigMap).withOptions({ maxConcurrentReconciles: 0 }).complete(noop))).toBe('InvalidOptions');
    expect(reasonOf(() => m.controller().for(ConfigMap).withOptions({ maxConcurrentReconciles: 1.5 }).complete(noop))).toBe('InvalidOptions');
  });
});

describe('default names', () => {
  it('is the lower-cased kind of `for`, for descriptors, TypeRefs and metadata-only kinds', () => {
    const m = testManager(ns);
    m.controller().for(ConfigMap).complete(noop);
    m.controller().for({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' }).complete(noop);
    m.controller().for(metadataOnly(Secret)).complete(noop);
    expect(m.controllers().map((c) => c.name)).toEqual(['configmap', 'harddisk', 'secret']);
  });
});

/** Records reconciles; `seen` is `namespace/name` in order. */
function recorder(): { seen: string[]; fn: (req: Request) => ReturnType<typeof Result.done> } {
  const seen: string[] = [];
  return { seen, fn: (req) => (seen.push(`${req.namespace ?? ''}/${req.name}`), Result.done()) };
}

describe('controllers built with the builder', () => {
  it('watches an rxjs source: a request pushed into a Subject reaches the reconciler', async () => {
    const m = testManager(ns);
    const subject = new Subject<Request | readonly Request[]>();
    const r = recorder();
    // `for` events of this namespace are dropped so that only the subject's requests arrive
    m.controller().named('from-subject').for(ConfigMap, { predicates: [() => false] }).watches(observableSource(subject, 'test subject')).complete(r.fn);
    start(m);
    await synced(m);
    subject.next({ namespace: 'elsewhere', name: 'external-1' });
    subject.next([{ name: 'cluster-wide' }, { namespace: ns, name: 'batch-2' }]);
    await eventually(() => r.seen, (s) => s.length === 3, 'three requests');
    expect(r.seen).toEqual(['elsewhere/external-1', '/cluster-wide', `${ns}/batch-2`]);
  });

  it('`for` enqueues the object, `owns` its controller owner, `watches` with a map function what it maps to', async () => {
    const m = testManager(ns);
    const r = recorder();
    m.controller()
      .named('wiring')
      .for(ConfigMap, { predicates: [labelSelectorPredicate({ test: 'wiring' })] })
      .owns(Secret, { predicates: [labelSelectorPredicate({ test: 'wiring' })] })
      .watches({ apiVersion: 'v1', kind: 'ServiceAccount' }, enqueueMapped((sa) => [{ namespace: ns, name: `for-${sa.metadata?.name ?? ''}` }]))
      .complete(r.fn);
    start(m);
    await synced(m);
    const owner = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owner', namespace: ns, labels: { test: 'wiring' } } });
    await eventually(() => r.seen, (s) => s.includes(`${ns}/owner`), 'the owner itself');
    r.seen.length = 0;
    await client.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'owned-secret',
        namespace: ns,
        labels: { test: 'wiring' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid!, controller: true }],
      },
    });
    await eventually(() => r.seen, (s) => s.includes(`${ns}/owner`), 'the owner, for its Secret');
    expect(r.seen).not.toContain(`${ns}/owned-secret`);
    await client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'robot', namespace: ns } });
    await eventually(() => r.seen, (s) => s.includes(`${ns}/for-robot`), 'the mapped request');
  });

  it('withEventFilter drops the events it rejects, on every kind source', async () => {
    const m = testManager(ns);
    const r = recorder();
    m.controller().named('filtered').for(ConfigMap).withEventFilter(labelSelectorPredicate({ keep: 'yes' })).complete(r.fn);
    start(m);
    await synced(m);
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'dropped', namespace: ns } });
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kept', namespace: ns, labels: { keep: 'yes' } } });
    await eventually(() => r.seen, (s) => s.includes(`${ns}/kept`), 'the kept object');
    // events are delivered in order: the dropped one came first, and a little more time changes nothing
    await sleep(300);
    expect(r.seen).not.toContain(`${ns}/dropped`);
    // once it matches the filter, it is reconciled
    await client.patch(ConfigMap, { namespace: ns, name: 'dropped' }, mergePatch({ metadata: { labels: { keep: 'yes' } } }));
    await eventually(() => r.seen, (s) => s.includes(`${ns}/dropped`), 'the object once it matches');
  });

  it('maxConcurrentReconciles: 3 workers and 6 keys run at most 3 at once, never two on one key', async () => {
    const m = testManager(ns);
    const subject = new Subject<Request>();
    let inFlight = 0;
    let maxInFlight = 0;
    const perKey = new Map<string, number>();
    const runs = new Map<string, number>();
    let sameKeyOverlap = 0;
    let activeWorkersSeen = 0;
    m.controller()
      .named('concurrent')
      .for(ConfigMap, { predicates: [() => false] })
      .watches(observableSource(subject))
      .withOptions({ maxConcurrentReconciles: 3 })
      .complete(async (req) => {
        const key = req.name;
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        if ((perKey.get(key) ?? 0) > 0) sameKeyOverlap++;
        perKey.set(key, (perKey.get(key) ?? 0) + 1);
        runs.set(key, (runs.get(key) ?? 0) + 1);
        if (inFlight === 3) activeWorkersSeen = (await metric(m.registry, 'controller_runtime_active_workers', { controller: 'concurrent' })) ?? -1;
        await sleep(250);
        perKey.set(key, perKey.get(key)! - 1);
        inFlight--;
      });
    start(m);
    await synced(m);
    expect(await metric(m.registry, 'controller_runtime_max_concurrent_reconciles', { controller: 'concurrent' })).toBe(3);
    const keys = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'];
    for (const k of keys) subject.next({ namespace: ns, name: k });
    // while k0..k2 run and k3..k5 wait, every key is added again, twice
    await eventually(() => inFlight, (n) => n === 3, 'three reconciles in flight');
    for (let i = 0; i < 2; i++) for (const k of keys) subject.next({ namespace: ns, name: k });
    await eventually(() => [...runs.values()].reduce((a, b) => a + b, 0), (n) => n >= 9, 'nine reconciles');
    await eventually(() => inFlight, (n) => n === 0, 'the queue to drain');
    await sleep(100);
    expect(maxInFlight).toBe(3);
    expect(sameKeyOverlap).toBe(0);
    expect(activeWorkersSeen).toBe(3);
    // the ones in flight when re-added run once more afterwards; the waiting ones were collapsed
    expect(Object.fromEntries(runs)).toEqual({ k0: 2, k1: 2, k2: 2, k3: 1, k4: 1, k5: 1 });
  });

  it('a reconcile that ignores its timeout keeps its key (and its worker) until it returns', async () => {
    const m = testManager(ns);
    const subject = new Subject<Request>();
    const spans: { start: number; end: number; aborted: boolean }[] = [];
    let inFlight = 0;
    let overlap = 0;
    m.controller()
      .named('stubborn')
      .for(ConfigMap, { predicates: [() => false] })
      .watches(observableSource(subject))
      .withOptions({ reconcileTimeoutMs: 150 })
      .complete(async (_req: Request, ctx: ReconcileContext) => {
        if (++inFlight > 1) overlap++;
        const start = performance.now();
        if (spans.length === 0) await sleep(600); // looks at nothing, least of all its signal
        spans.push({ start, end: performance.now(), aborted: ctx.signal.aborted });
        inFlight--;
        return Result.done();
      });
    start(m);
    await synced(m);
    subject.next({ namespace: ns, name: 'stubborn-1' });
    await eventually(() => spans.length, (n) => n >= 2, 'the retry');
    expect(spans[0]?.aborted).toBe(true);
    // the retry started only once the first call had returned
    expect(spans[1]!.start).toBeGreaterThanOrEqual(spans[0]!.end);
    expect(overlap).toBe(0);
    expect(await metric(m.registry, 'controller_runtime_reconcile_errors_total', { controller: 'stubborn' })).toBe(1);
    expect(await metric(m.registry, 'controller_runtime_reconcile_timeouts_total', { controller: 'stubborn' })).toBe(1);
  });

  it('reconcileTimeoutMs aborts ctx.signal with a ReconcileTimeout, counts an error and retries', async () => {
    const m = testManager(ns);
    const subject = new Subject<Request>();
    const calls: { aborted: boolean; reason: unknown; elapsedMs: number }[] = [];
    m.controller()
      .named('slow')
      .for(ConfigMap, { predicates: [() => false] })
      .watches(observableSource(subject))
      .withOptions({ reconcileTimeoutMs: 300 })
      .complete(async (_req: Request, ctx: ReconcileContext) => {
        const t0 = performance.now();
        if (calls.length === 0) {
          // ignore the work, wait for the signal (at most 5 s)
          await Promise.race([new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true })), sleep(5000)]);
        }
        calls.push({ aborted: ctx.signal.aborted, reason: ctx.signal.reason, elapsedMs: performance.now() - t0 });
        return Result.done();
      });
    start(m);
    await synced(m);
    subject.next({ namespace: ns, name: 'slow-1' });
    await eventually(() => calls.length, (n) => n >= 2, 'the timed-out reconcile and its retry');
    const [first, second] = calls;
    expect(first?.aborted).toBe(true);
    expect(isManagerError(first?.reason) && first.reason.reason).toBe('ReconcileTimeout');
    expect(first?.elapsedMs).toBeGreaterThanOrEqual(250);
    expect(first?.elapsedMs).toBeLessThan(3000);
    expect(second?.aborted).toBe(false);
    await eventually(() => metric(m.registry, 'controller_runtime_reconcile_total', { controller: 'slow', result: 'success' }), (v) => v === 1, 'the successful retry');
    expect(await metric(m.registry, 'controller_runtime_reconcile_errors_total', { controller: 'slow' })).toBe(1);
    expect(await metric(m.registry, 'controller_runtime_reconcile_total', { controller: 'slow', result: 'error' })).toBe(1);
    // The timed-out attempt, not the retry that finished in time: controller-runtime's counter, from 0 at start.
    expect(await metric(m.registry, 'controller_runtime_reconcile_timeouts_total', { controller: 'slow' })).toBe(1);
  });

  it('controller_runtime_reconcile_timeouts_total is 0 from the start, and a controller without reconcileTimeoutMs never times out', async () => {
    const m = testManager(ns);
    const subject = new Subject<Request>();
    let calls = 0;
    m.controller()
      .named('untimed')
      .for(ConfigMap, { predicates: [() => false] })
      .watches(observableSource(subject))
      .complete(async (_req: Request, ctx: ReconcileContext) => {
        calls++;
        await sleep(300);
        expect(ctx.signal.aborted).toBe(false);
        return Result.done();
      });
    start(m);
    await synced(m);
    expect(await metric(m.registry, 'controller_runtime_reconcile_timeouts_total', { controller: 'untimed' })).toBe(0);
    subject.next({ namespace: ns, name: 'untimed-1' });
    await eventually(() => metric(m.registry, 'controller_runtime_reconcile_total', { controller: 'untimed', result: 'success' }), (v) => v === 1, 'the reconcile');
    expect(calls).toBe(1);
    expect(await metric(m.registry, 'controller_runtime_reconcile_timeouts_total', { controller: 'untimed' })).toBe(0);
  });

  it('refuses wrong queue and timeout options where they are written, naming the controller and what to pass', () => {
    const m = testManager(ns);
    const register = (name: string, options: Record<string, unknown>): void =>
      m.controller().named(name).for(ConfigMap).withOptions(options).complete(() => Result.done());
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ reconcileTimeoutMs: -1 }, /controller bad-0: reconcileTimeoutMs must be a number of ms >= 0 and at most 2147483647 \(0: no timeout\); got a number \(-1\)/],
      [{ reconcileTimeoutMs: 2 ** 31 }, /reconcileTimeoutMs must be a number of ms >= 0 and at most 2147483647/],
      [{ initialListPriority: Number.NaN }, /initialListPriority must be a finite number/],
      [{ queueMaxWaitMs: 0 }, /queueMaxWaitMs must be a number of ms > 0 \(Infinity: no aging\)/],
      [{ queueMaxWaitMs: '60s' }, /queueMaxWaitMs must be a number of ms > 0/],
    ];
    cases.forEach(([options, message], i) => {
      let thrown: unknown;
      try {
        register(`bad-${i}`, options);
      } catch (err) {
        thrown = err;
      }
      expect(isManagerError(thrown) && thrown.reason).toBe('InvalidOptions');
      expect((thrown as Error).message).toMatch(message);
    });
    // Infinity and 0 are fine: no aging, no timeout.
    register('fine', { queueMaxWaitMs: Infinity, reconcileTimeoutMs: 0, initialListPriority: 0 });
  });
});
