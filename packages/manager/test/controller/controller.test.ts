/**
 * The controller against the real API server: the priority queue puts a
 * user's edit ahead of the initial list, user callbacks that throw are
 * contained and counted, terminal errors are recognised through `cause`,
 * `requeueAfter(0)` backs off instead of spinning, a stop is not counted as
 * a reconcile error, and `newQueue` picks the queue.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { BehaviorSubject, Subject } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { ConfigMap } from '@kubeloop/scheme';
import { createWorkQueue } from '@kubeloop/workqueue';
import { enqueueMapped, observableSource, Result, terminalError } from '../../src/index.js';
import type { Manager, ReconcileResult, Request } from '../../src/index.js';
import { eventually, metric, newNamespace, run, startsPerTest, synced, testClient, testManager } from '../support.js';

let client: Client;
let ns: string;

beforeAll(async () => {
  client = testClient();
  ns = await newNamespace(client, 'ctrl');
});
afterAll(() => {
  client.transport.close();
});

const start = startsPerTest();

async function configMap(name: string, namespace = ns, labels: Record<string, string> = {}): Promise<void> {
  await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data: { v: '0' } });
}

describe('priority: a change made while the initial list is worked off goes first', () => {
  it.each([
    { queue: 'priority queue (default)', newQueue: undefined, editFirst: true },
    { queue: 'FIFO queue (newQueue: createWorkQueue)', newQueue: createWorkQueue, editFirst: false },
  ])('$queue', async ({ newQueue, editFirst }) => {
    const own = await newNamespace(client, 'prio');
    const N = 60;
    await Promise.all(Array.from({ length: N }, (_, i) => configMap(`listed-${String(i).padStart(3, '0')}`, own)));
    const order: string[] = [];
    let gate: (() => void) | undefined;
    const firstStarted = new Promise<void>((resolve) => {
      gate = resolve;
    });
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const manager = testManager(own);
    manager.controller().named(`prio-${newQueue ? 'fifo' : 'pq'}`).for(ConfigMap).withOptions({ ...(newQueue ? { newQueue } : {}) }).complete(async (req) => {
      order.push(req.name);
      if (order.length === 1) {
        gate?.();
        await held; // the worker is busy while the rest of the initial list waits
      }
      return Result.done();
    });
    start(manager);
    await firstStarted;
    await client.patch(ConfigMap, { namespace: own, name: 'listed-059' }, mergePatch({ data: { v: 'edited' } }));
    // Let the watch event reach the queue, then free the worker.
    await eventually(() => manager.cache.get(ConfigMap, { namespace: own, name: 'listed-059' }), (cm) => cm.data?.v === 'edited', 'the edit in the cache');
    release();
    await eventually(() => order.length, (n) => n >= N, 'every ConfigMap reconciled');
    const position = order.indexOf('listed-059', 1);
    if (editFirst) expect(position, `order: ${order.slice(0, 5).join(', ')}`).toBe(1);
    else expect(position).toBeGreaterThan(N / 2);
  });
});

describe('aging: a steady stream of changes does not starve the initial list (queueMaxWaitMs)', () => {
  /**
   * N ConfigMaps listed at start (low priority) and a stream of priority-0
   * requests that never runs dry: it starts with two requests queued before
   * the workers start, and every reconcile of a stream request adds two
   * more, until `cap` stream reconciles have run. One worker. Returns, for
   * each listed ConfigMap, how many stream reconciles had run when it was
   * reconciled.
   */
  async function streamAgainstList(name: string, queueMaxWaitMs: number, cap: number): Promise<{ listedAt: number[]; streamed: () => number; manager: Manager }> {
    const own = await newNamespace(client, 'aging');
    const N = 5;
    await Promise.all(Array.from({ length: N }, (_, i) => configMap(`listed-${i}`, own)));
    const stream = new BehaviorSubject<readonly Request[]>([{ namespace: own, name: 'stream-0' }, { namespace: own, name: 'stream-1' }]);
    let streamed = 0;
    let next = 2;
    const listedAt: number[] = [];
    const manager = testManager(own);
    manager.controller().named(name).for(ConfigMap).watches(observableSource(stream)).withOptions({ queueMaxWaitMs }).complete(async (req) => {
      if (req.name.startsWith('listed-')) {
        listedAt.push(streamed);
        return Result.done();
      }
      await sleep(5);
      if (++streamed < cap) stream.next([{ namespace: own, name: `stream-${next++}` }, { namespace: own, name: `stream-${next++}` }]);
      return Result.done();
    });
    start(manager);
    return { listedAt, streamed: () => streamed, manager };
  }

  it('with queueMaxWaitMs 1 s, every listed object is reconciled while the stream still runs', async () => {
    const cap = 2_000; // at least 10 s of stream (5 ms a reconcile): far past the 1 s bound
    const { listedAt, streamed, manager } = await streamAgainstList('aging-on', 1_000, cap);
    await eventually(() => listedAt.length, (n) => n === 5, 'every listed ConfigMap reconciled', 60_000);
    expect(Math.max(...listedAt)).toBeLessThan(cap);
    expect(streamed()).toBeLessThan(cap);
    // The metric a user alerts on: the low priority's oldest wait is back to 0 (nothing listed waits), the stream's is what it is.
    expect(await metric(manager.registry, 'kubeloop_workqueue_oldest_waiting_seconds', { name: 'aging-on', controller: 'aging-on', priority: 'low' })).toBe(0);
  });

  it('with queueMaxWaitMs Infinity (controller-runtime\'s strict order), none is reconciled until the stream ends', async () => {
    const cap = 300;
    const { listedAt, streamed, manager } = await streamAgainstList('aging-off', Infinity, cap);
    await eventually(() => streamed(), (n) => n >= cap, 'the stream to end', 60_000);
    expect(listedAt).toEqual([]);
    // Starved, and it shows: the low priority's oldest key has waited about as long as the stream ran.
    expect(await metric(manager.registry, 'kubeloop_workqueue_oldest_waiting_seconds', { name: 'aging-off', controller: 'aging-off', priority: 'low' })).toBeGreaterThan(1);
    await eventually(() => listedAt.length, (n) => n === 5, 'the listed ConfigMaps, once the stream has drained', 60_000);
  });

  it('initialListPriority 0 puts the initial list in line with changes', async () => {
    const own = await newNamespace(client, 'ilp');
    await configMap('listed', own);
    await configMap('listed-2', own);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const manager = testManager(own);
    manager.controller().named('ilp').for(ConfigMap).withOptions({ initialListPriority: 0 }).complete(async () => {
      await held; // the worker is busy: the other listed key waits
      return Result.done();
    });
    start(manager);
    try {
      // One taken, one waiting, counted at priority "0" rather than "low".
      await eventually(() => metric(manager.registry, 'workqueue_depth', { name: 'ilp', controller: 'ilp', priority: '0' }), (v) => v === 1, 'the second listed key waiting at priority 0');
      expect(await metric(manager.registry, 'workqueue_depth', { name: 'ilp', controller: 'ilp', priority: 'low' })).toBe(0);
    } finally {
      release();
    }
  });
});

describe('priority across requeues (controller-runtime v0.21 keeps it; v0.23 Result.Priority)', () => {
  /**
   * N ConfigMaps listed at start (LOW_PRIORITY), one worker, each reconcile
   * a few ms. The first key handed out is held until the rest of the list
   * is waiting, then answers `first` (a throw, or a result); every later
   * reconcile answers done. Returns the order of reconciles.
   */
  async function afterFirst(name: string, first: () => ReconcileResult): Promise<{ order: string[]; depthWhileHeld: { low: number | undefined; unlabelled: number | undefined } }> {
    const own = await newNamespace(client, 'rqp');
    const N = 30;
    await Promise.all(Array.from({ length: N }, (_, i) => configMap(`listed-${String(i).padStart(3, '0')}`, own)));
    const order: string[] = [];
    let started: () => void = () => undefined;
    const firstStarted = new Promise<void>((resolve) => (started = resolve));
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const manager = testManager(own);
    manager.controller().named(name).for(ConfigMap).complete(async (req) => {
      order.push(req.name);
      if (order.length === 1) {
        started();
        await held;
        return first();
      }
      await sleep(3);
      return Result.done();
    });
    start(manager);
    await firstStarted;
    // The rest of the initial list waits at LOW_PRIORITY (-100), counted under priority="low"; no unlabelled series for a priority queue.
    const low = await eventually(() => metric(manager.registry, 'workqueue_depth', { name, controller: name, priority: 'low' }), (v) => v === N - 1, 'the rest of the list waiting at low priority');
    const unlabelled = await metric(manager.registry, 'workqueue_depth', { name, controller: name, priority: '' });
    release();
    await eventually(() => order.length, (n) => n >= N + 1, 'every ConfigMap reconciled, the first twice');
    return { order, depthWhileHeld: { low, unlabelled } };
  }

  it('a failed key is retried at the priority it was handed out at: a listed key behind the rest of the list; workqueue_depth per priority', async () => {
    const { order, depthWhileHeld } = await afterFirst('rqp-error', () => {
      throw new Error('first attempt fails');
    });
    expect(depthWhileHeld).toEqual({ low: 29, unlabelled: undefined });
    // Re-added at LOW_PRIORITY after its 5 ms backoff, behind the 29 keys already waiting there (each reconcile takes >= 3 ms).
    expect(order.lastIndexOf(order[0]!), `order: ${order.join(', ')}`).toBe(order.length - 1);
  });

  it('Result.requeue({ priority }) puts the key ahead of lower priorities; Result.requeue() keeps the priority it had', async () => {
    const raised = await afterFirst('rqp-raised', () => Result.requeue({ priority: 10 }));
    expect(raised.order.lastIndexOf(raised.order[0]!), `order: ${raised.order.join(', ')}`).toBeLessThan(10);
    const kept = await afterFirst('rqp-kept', () => Result.requeue());
    expect(kept.order.lastIndexOf(kept.order[0]!), `order: ${kept.order.join(', ')}`).toBe(kept.order.length - 1);
  });

  it('a priority that is not a finite number is refused where it is written', () => {
    expect(() => Result.requeueAfter(1000, { priority: Number.NaN })).toThrow(/priority must be a finite number/);
  });
});

describe('errors of user callbacks are contained', () => {
  it('a throwing predicate and a throwing map function drop their event, are counted and logged; the controller goes on', async () => {
    const manager = testManager(ns);
    const seen: string[] = [];
    manager
      .controller()
      .named('throwing-callbacks')
      .for(ConfigMap, {
        predicates: [
          (e) => {
            if (e.object.metadata?.labels?.['explode'] === 'predicate') throw new TypeError('predicate exploded');
            return true;
          },
        ],
      })
      .watches(
        ConfigMap,
        enqueueMapped((obj) => {
          if (obj.metadata?.labels?.['explode'] === 'map') throw new Error('map exploded');
          return [];
        }),
      )
      .complete((req) => {
        seen.push(req.name);
        return Result.done();
      });
    start(manager);
    await synced(manager);
    await configMap('boom-predicate', ns, { explode: 'predicate' });
    await configMap('boom-map', ns, { explode: 'map' });
    await configMap('fine-after');
    await eventually(() => seen, (s) => s.includes('fine-after') && s.includes('boom-map'), 'the controller to go on');
    expect(seen).not.toContain('boom-predicate');
    await eventually(() => metric(manager.registry, 'kubeloop_controller_source_errors_total', { controller: 'throwing-callbacks' }), (v) => v === 2, 'two source errors counted');
  });

  it('an Observable source that errors is reported; the other sources keep feeding the controller', async () => {
    const manager = testManager(ns);
    const subject = new Subject<Request>();
    const seen: string[] = [];
    manager
      .controller()
      .named('erroring-observable')
      .for(ConfigMap)
      .watches(observableSource(subject, 'ticker'))
      .complete((req) => {
        seen.push(req.name);
        return Result.done();
      });
    start(manager);
    await synced(manager);
    subject.next({ namespace: ns, name: 'from-observable' });
    subject.error(new Error('the feed broke'));
    await configMap('after-observable-error');
    await eventually(() => seen, (s) => s.includes('from-observable') && s.includes('after-observable-error'), 'both sources delivered');
    expect(await metric(manager.registry, 'kubeloop_controller_source_errors_total', { controller: 'erroring-observable' })).toBe(1);
  });
});

describe('results and errors', () => {
  it('a terminal error wrapped in another error (cause, AggregateError) is not retried', async () => {
    const manager = testManager(ns);
    const subject = new Subject<Request>();
    const calls = new Map<string, number>();
    manager
      .controller()
      .named('wrapped-terminal')
      .for(ConfigMap, { predicates: [() => false] })
      .watches(observableSource(subject))
      .complete((req) => {
        calls.set(req.name, (calls.get(req.name) ?? 0) + 1);
        if (req.name === 'cause') throw new Error('validation failed', { cause: terminalError('spec.size is invalid') });
        throw new AggregateError([new Error('one'), terminalError('two')], 'several');
      });
    start(manager);
    await synced(manager);
    subject.next({ namespace: ns, name: 'cause' });
    subject.next({ namespace: ns, name: 'aggregate' });
    await eventually(() => metric(manager.registry, 'controller_runtime_terminal_reconcile_errors_total', { controller: 'wrapped-terminal' }), (v) => v === 2, 'two terminal errors');
    await sleep(300); // a retry would come after 5, 10, 20 ... ms
    expect(Object.fromEntries(calls)).toEqual({ cause: 1, aggregate: 1 });
  });

  it('requeueAfter(0) requeues with backoff, not in a hot loop', async () => {
    const manager = testManager(ns);
    const subject = new Subject<Request>();
    let calls = 0;
    manager
      .controller()
      .named('requeue-zero')
      .for(ConfigMap, { predicates: [() => false] })
      .watches(observableSource(subject))
      .complete(() => {
        calls++;
        return Result.requeueAfter(0);
      });
    start(manager);
    await synced(manager);
    subject.next({ namespace: ns, name: 'spin' });
    await sleep(600);
    // 5 ms doubling: about 7 reconciles in 600 ms; a hot loop makes thousands.
    expect(calls).toBeGreaterThan(2);
    expect(calls).toBeLessThan(20);
    expect(await metric(manager.registry, 'controller_runtime_reconcile_total', { controller: 'requeue-zero', result: 'requeue' })).toBe(calls);
  });

  it('stopping the manager does not count reconciles in flight as errors when a reconcile timeout is set', async () => {
    const manager = testManager(ns, { gracefulShutdownTimeoutMs: 5_000 });
    const subject = new Subject<Request>();
    let inFlight = false;
    manager
      .controller()
      .named('stop-with-timeout')
      .for(ConfigMap, { predicates: [() => false] })
      .watches(observableSource(subject))
      .withOptions({ reconcileTimeoutMs: 10_000 })
      .complete(async (_req, ctx) => {
        inFlight = true;
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        await sleep(50); // finish the work after the stop was asked for
        return Result.done();
      });
    const r = run(manager);
    await synced(manager);
    subject.next({ namespace: ns, name: 'busy' });
    await eventually(() => inFlight, (v) => v, 'the reconcile to start');
    await r.stop();
    expect(await metric(manager.registry, 'controller_runtime_reconcile_errors_total', { controller: 'stop-with-timeout' })).toBe(0);
    expect(await metric(manager.registry, 'controller_runtime_reconcile_total', { controller: 'stop-with-timeout', result: 'success' })).toBe(1);
  });
});

describe('syncPeriodMs', () => {
  it('re-enqueues every cached object of the `for` kind each period, with no change made', async () => {
    const own = await newNamespace(client, 'resync');
    await Promise.all(['a', 'b', 'c'].map((n) => configMap(n, own)));
    const counts = new Map<string, number>();
    const manager = testManager(own, { syncPeriodMs: 250 });
    manager.controller().named('resync').for(ConfigMap).complete((req) => {
      counts.set(req.name, (counts.get(req.name) ?? 0) + 1);
      return Result.done();
    });
    start(manager);
    await eventually(() => Object.fromEntries(counts), (c) => ['a', 'b', 'c'].every((n) => (c[n] ?? 0) >= 4), 'three resyncs of every object');
  });

  it('is off with 0, and the manager default (10 h) does not fire during a test', async () => {
    const own = await newNamespace(client, 'noresync');
    await configMap('only', own);
    let calls = 0;
    const manager = testManager(own);
    manager.controller().named('noresync').for(ConfigMap).withOptions({ syncPeriodMs: 0 }).complete(() => {
      calls++;
      return Result.done();
    });
    start(manager);
    await synced(manager);
    await eventually(() => calls, (n) => n === 1, 'the initial reconcile');
    await sleep(600);
    expect(calls).toBe(1);
  });
});
