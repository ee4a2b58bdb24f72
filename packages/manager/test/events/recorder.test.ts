/**
 * The event recorder writes events.k8s.io/v1 Events as client-go's does:
 * never throwing or waiting, folding repeats into a series, filtering spam,
 * dropping (and counting) what a full queue cannot hold, retrying failed
 * writes a few times, over a transport of its own. Requests are counted at
 * envtest's recording proxy; faults are a black hole in that proxy.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import type { AnyKubeObject, Stored } from '@kubeloop/client/internal';
import type { Client } from '@kubeloop/client';
import { startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy } from '@kubeloop/envtest';
import { eventsv1 } from '@kubeloop/scheme';
import type { ConfigMap } from '@kubeloop/scheme';
import { createCluster, createLogger, createManager, isManagerError } from '../../src/index.js';
import type { Cluster, Manager } from '../../src/index.js';
import type { EventRecorderTuning } from '../../src/internal-api.js';
import { testKubeConfig, uniqueName } from '../../../../test/support/env.js';
import { eventually, LogCapture, metric, newNamespace, testClient } from '../support.js';

let client: Client;
let ns: string;
let manager: Manager;
let out: LogCapture;
let subject: Stored<ConfigMap>;

beforeAll(async () => {
  client = testClient();
  ns = await newNamespace(client, 'recorder');
  out = new LogCapture();
  manager = createManager({
    kubeConfig: testKubeConfig(),
    namespaces: [ns],
    logger: createLogger({ level: 'info', destination: out }),
    leaderElection: { name: 'unused', identity: 'replica-7' },
  });
  subject = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'subject', namespace: ns } });
});
afterAll(async () => {
  await manager.cluster.stop();
  client.transport.close();
});

async function eventsIn(namespace: string): Promise<eventsv1.Event[]> {
  return (await client.list(eventsv1.Event, { namespace })).items;
}

/** The object with its kind (what `event()` needs of it). */
function ref(obj: AnyKubeObject): AnyKubeObject {
  return { ...obj, apiVersion: 'v1', kind: 'ConfigMap' };
}

/** A ConfigMap-shaped reference to an object that need not exist (events may be about anything). */
function ghost(namespace: string, name: string): { apiVersion: string; kind: string; metadata: { name: string; namespace: string; uid: string } } {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, uid: crypto.randomUUID() } };
}

/** A cluster whose every request goes through its own recording proxy. */
interface Proxied {
  readonly proxy: ApiProxy;
  readonly cluster: Cluster;
  readonly registry: Registry;
  readonly ns: string;
  /** Event writes (POST or PATCH) the proxy has seen in `ns`. */
  writes(method: 'POST' | 'PATCH'): number;
  dropped(reason: string): Promise<number | undefined>;
  close(): Promise<void>;
}

async function proxied(prefix: string, eventRecorder: EventRecorderTuning = {}, transportOptions = {}): Promise<Proxied> {
  const proxy = await startApiProxy(testKubeConfig());
  const registry = new Registry();
  const namespace = await newNamespace(client, prefix);
  const cluster = createCluster({ kubeConfig: proxy.kubeConfig, registry, logger: createLogger({ level: 'silent' }), eventInstance: 'replica-1', eventRecorder, transportOptions });
  const path = `/apis/events.k8s.io/v1/namespaces/${namespace}/events`;
  return {
    proxy,
    cluster,
    registry,
    ns: namespace,
    writes: (method) => proxy.count((r) => r.method === method && r.path.startsWith(path)),
    dropped: (reason) => metric(registry, 'kubeloop_events_dropped_total', { reason }),
    close: async () => {
      proxy.blackhole(false);
      await cluster.stop();
      await proxy.close();
    },
  };
}

describe('recorderFor(name).event', () => {
  it('creates an events.k8s.io/v1 Event about the object, reported by the named controller', async () => {
    const recorder = manager.recorderFor('disk-controller');
    const returned: unknown = recorder.event(ref(subject), 'Normal', 'Provisioned', 'Reconcile', 'created ConfigMap subject-disk');
    expect(returned).toBeUndefined();
    await recorder.flush();
    const events = (await eventsIn(ns)).filter((e) => e.reason === 'Provisioned');
    expect(events).toHaveLength(1);
    const e = events[0]!;
    expect(e).toMatchObject({
      type: 'Normal',
      reason: 'Provisioned',
      action: 'Reconcile',
      note: 'created ConfigMap subject-disk',
      reportingController: 'disk-controller',
      reportingInstance: 'replica-7',
      regarding: { apiVersion: 'v1', kind: 'ConfigMap', name: 'subject', namespace: ns, uid: subject.metadata.uid, resourceVersion: subject.metadata.resourceVersion },
    });
    expect(e.series).toBeUndefined();
    expect(e.metadata?.namespace).toBe(ns);
    expect(e.metadata?.name).toMatch(/^subject\.[0-9a-f]{16}$/);
    // MicroTime: microsecond precision
    expect(String(e.eventTime)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it('records warnings, and cuts a long note to the 1,024 bytes the API allows without splitting a character', async () => {
    const recorder = manager.recorderFor('disk-controller');
    recorder.event(ref(subject), 'Warning', 'TooLong', 'Reconcile', 'x'.repeat(5000));
    recorder.event(ref(subject), 'Warning', 'TooLongEuros', 'Reconcile', '€'.repeat(1000)); // 3 bytes each
    await recorder.flush();
    const events = await eventsIn(ns);
    const ascii = events.find((ev) => ev.reason === 'TooLong');
    expect(ascii?.type).toBe('Warning');
    expect(ascii?.note).toHaveLength(1024);
    expect(ascii?.note?.endsWith('...')).toBe(true);
    const euros = events.find((ev) => ev.reason === 'TooLongEuros')?.note ?? '';
    expect(Buffer.byteLength(euros)).toBeLessThanOrEqual(1024);
    expect(euros).toBe(`${'€'.repeat(340)}...`);
  });

  it('an event about a cluster-scoped object goes to the default namespace, named after the object even when its name is no DNS name', async () => {
    const recorder = manager.recorderFor('ns-controller');
    const namespace = await client.get({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns });
    const reason = `Seen${uniqueName('x').slice(2)}`;
    recorder.event(namespace, 'Normal', reason, 'Observe', 'namespace seen');
    const role = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: `system:kubeloop:${ns}` } };
    recorder.event(role, 'Normal', reason, 'Observe', 'role seen');
    await recorder.flush();
    const mine = (await eventsIn('default')).filter((ev) => ev.reason === reason);
    const e = mine.find((ev) => ev.regarding?.kind === 'Namespace');
    expect(e?.regarding).toMatchObject({ kind: 'Namespace', name: ns, uid: namespace.metadata?.uid });
    expect(e?.regarding?.namespace).toBeUndefined();
    const r = mine.find((ev) => ev.regarding?.kind === 'ClusterRole');
    expect(r?.regarding?.name).toBe(`system:kubeloop:${ns}`);
    expect(r?.metadata?.name).toMatch(new RegExp(`^system-kubeloop-${ns}\\.[0-9a-f]{16}$`));
  });

  it('flush waits for every pending event of every recorder', async () => {
    const a = manager.recorderFor('a');
    const b = manager.recorderFor('b');
    for (let i = 0; i < 5; i++) {
      a.event(ref(subject), 'Normal', 'Burst', 'Reconcile', `a${i}`);
      b.event(ref(subject), 'Normal', 'Burst', 'Reconcile', `b${i}`);
    }
    await a.flush();
    const notes = (await eventsIn(ns)).filter((e) => e.reason === 'Burst').map((e) => e.note);
    expect(notes.sort()).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'b0', 'b1', 'b2', 'b3', 'b4']);
  });

  it('a write the server refuses (its namespace does not exist) is logged without the event body, counted, never thrown, and not retried', async () => {
    const recorder = manager.recorderFor('disk-controller');
    const missing = uniqueName('no-such-ns');
    const orphan = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ghost', namespace: missing, uid: '00000000-0000-0000-0000-000000000000' } };
    const before = (await metric(manager.registry, 'kubeloop_events_dropped_total', { reason: 'write_failed' })) ?? 0;
    expect(() => recorder.event(orphan, 'Warning', 'Lost', 'Reconcile', 'nobody hears this secret-ish note')).not.toThrow();
    await expect(recorder.flush()).resolves.toBeUndefined();
    const lines = out.lines().filter((l) => l['msg'] === 'could not record event');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, reason: 'Lost', object: `${missing}/ghost` });
    expect(String(lines[0]?.['err'])).toMatch(/not ?found/i);
    expect(out.text()).not.toContain('secret-ish');
    expect(await metric(manager.registry, 'kubeloop_events_dropped_total', { reason: 'write_failed' })).toBe(before + 1);
    // and the recorder still works afterwards
    recorder.event(ref(subject), 'Normal', 'StillWorks', 'Reconcile', 'ok');
    await recorder.flush();
    expect((await eventsIn(ns)).some((e) => e.reason === 'StillWorks')).toBe(true);
  });

  it('invalid input is dropped, counted and logged, never thrown; a recorder name the API would refuse is a typed error at once', async () => {
    const recorder = manager.recorderFor('disk-controller');
    const before = (await metric(manager.registry, 'kubeloop_events_dropped_total', { reason: 'invalid' })) ?? 0;
    expect(() => recorder.event(ref(subject), 'Info' as 'Normal', 'Odd', 'Reconcile', 'bad type')).not.toThrow();
    expect(() => recorder.event(ref(subject), 'Normal', '', 'Reconcile', 'no reason')).not.toThrow();
    expect(() => recorder.event(ref(subject), 'Normal', 'R'.repeat(129), 'Reconcile', 'long reason')).not.toThrow();
    expect(() => recorder.event({ apiVersion: 'v1', kind: 'ConfigMap', metadata: {} }, 'Normal', 'Nameless', 'Reconcile', 'no name')).not.toThrow();
    expect(() => recorder.event(null as unknown as AnyKubeObject, 'Normal', 'Null', 'Reconcile', 'no object')).not.toThrow();
    await recorder.flush();
    expect(await metric(manager.registry, 'kubeloop_events_dropped_total', { reason: 'invalid' })).toBe(before + 5);
    expect(out.lines().find((l) => l['msg'] === 'events dropped' && l['reason'] === 'invalid')?.['problem']).toMatch(/type must be Normal or Warning/);
    expect((await eventsIn(ns)).filter((e) => ['Odd', 'Nameless', 'Null'].includes(e.reason ?? ''))).toEqual([]);

    let thrown: unknown;
    try {
      manager.recorderFor('disk controller');
    } catch (err) {
      thrown = err;
    }
    expect(isManagerError(thrown) && thrown.reason).toBe('InvalidOptions');
  });
});

describe('series', () => {
  it('100 identical events on one object are one Event whose series.count reaches 100, in two writes', async () => {
    const p = await proxied('series');
    try {
      const recorder = p.cluster.recorderFor('hot-loop');
      const hot = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'hot', namespace: p.ns } });
      // A hot reconcile loop: the same event on every pass.
      for (let i = 0; i < 100; i++) {
        recorder.event(ref(hot), 'Warning', 'Unreachable', 'Reconcile', 'backend did not answer');
        await new Promise((resolve) => setImmediate(resolve));
      }
      const first = await eventually(() => eventsIn(p.ns), (es) => es.length === 1, 'the Event');
      // the loop cost one create; its repeats wait for the series interval (30 s) instead of a write each
      expect(p.writes('POST')).toBe(1);
      expect(p.writes('PATCH')).toBe(0);
      expect(first[0]?.series).toBeUndefined();

      await recorder.flush();
      let events = await eventsIn(p.ns);
      expect(events).toHaveLength(1);
      expect(events[0]?.series?.count).toBe(100);
      expect(Date.parse(String(events[0]?.series?.lastObservedTime))).toBeGreaterThanOrEqual(Date.parse(String(events[0]?.eventTime)));
      expect(p.writes('POST')).toBe(1);
      expect(p.writes('PATCH')).toBe(1);

      // 50 more, back to back: still one Event, one more write
      for (let i = 0; i < 50; i++) recorder.event(ref(hot), 'Warning', 'Unreachable', 'Reconcile', 'backend did not answer');
      await recorder.flush();
      events = await eventsIn(p.ns);
      expect(events).toHaveLength(1);
      expect(events[0]?.series?.count).toBe(150);
      expect(p.writes('POST') + p.writes('PATCH')).toBe(3);
      expect(await metric(p.registry, 'kubeloop_events_written_total', { operation: 'patch' })).toBe(2);
    } finally {
      await p.close();
    }
  });

  it('events on two different objects, or with different notes, are not folded', async () => {
    const p = await proxied('series');
    try {
      const recorder = p.cluster.recorderFor('folder');
      const a = ghost(p.ns, 'disk-a');
      const b = ghost(p.ns, 'disk-b');
      for (let i = 0; i < 3; i++) recorder.event(a, 'Normal', 'Synced', 'Reconcile', 'in sync');
      for (let i = 0; i < 2; i++) recorder.event(b, 'Normal', 'Synced', 'Reconcile', 'in sync');
      recorder.event(a, 'Normal', 'Synced', 'Reconcile', 'in sync again');
      await recorder.flush();
      const events = await eventsIn(p.ns);
      const summary = events.map((e) => `${e.regarding?.name} ${e.note} ${e.series?.count ?? 1}`).sort();
      expect(summary).toEqual(['disk-a in sync 3', 'disk-a in sync again 1', 'disk-b in sync 2']);
      expect(p.writes('POST')).toBe(3);
    } finally {
      await p.close();
    }
  });

  it('a repeat after the series window starts a new Event', async () => {
    const p = await proxied('series', { seriesWindowMs: 300 });
    try {
      const recorder = p.cluster.recorderFor('windowed');
      const obj = ghost(p.ns, 'disk');
      recorder.event(obj, 'Normal', 'Checked', 'Reconcile', 'ok');
      recorder.event(obj, 'Normal', 'Checked', 'Reconcile', 'ok');
      await recorder.flush();
      await sleep(400);
      recorder.event(obj, 'Normal', 'Checked', 'Reconcile', 'ok');
      await recorder.flush();
      const counts = (await eventsIn(p.ns)).map((e) => e.series?.count ?? 1).sort();
      expect(counts).toEqual([1, 2]);
    } finally {
      await p.close();
    }
  });

  it('an event is forgotten once its series window has passed, not held until the cache is full (client-go finishSeries)', async () => {
    const p = await proxied('expire', { seriesWindowMs: 500 });
    try {
      const recorder = p.cluster.recorderFor('expiring');
      const cached = (): Promise<number | undefined> => metric(p.registry, 'kubeloop_events_cached', {});
      // One event on each of 100 objects, as a controller touching many objects records them.
      for (let i = 0; i < 100; i++) recorder.event(ghost(p.ns, `disk-${i}`), 'Normal', 'Checked', 'Reconcile', 'ok');
      await recorder.flush();
      expect(await cached()).toBe(100);
      await sleep(700);
      // Past their window none can fold a repeat any more: the next event lets them go (kept, they
      // would stay until 4,096 others pushed them out).
      recorder.event(ghost(p.ns, 'later'), 'Normal', 'Checked', 'Reconcile', 'ok');
      expect(await cached()).toBe(1);
      await recorder.flush();
      expect(p.writes('POST')).toBe(101);
      // A repeat within the window still folds into its series.
      const folded = ghost(p.ns, 'folded');
      recorder.event(folded, 'Normal', 'Checked', 'Reconcile', 'ok');
      recorder.event(folded, 'Normal', 'Checked', 'Reconcile', 'ok');
      await recorder.flush();
      expect(await cached()).toBe(2);
      expect((await eventsIn(p.ns)).find((e) => e.regarding?.name === 'folded')?.series?.count).toBe(2);
    } finally {
      await p.close();
    }
  });

  it('a series whose Event was deleted meanwhile (its TTL passed) is created again with its count', async () => {
    const p = await proxied('series');
    try {
      const recorder = p.cluster.recorderFor('survivor');
      const obj = ghost(p.ns, 'disk');
      recorder.event(obj, 'Normal', 'Checked', 'Reconcile', 'ok');
      await recorder.flush();
      const [created] = await eventsIn(p.ns);
      await client.delete(eventsv1.Event, { namespace: p.ns, name: created!.metadata!.name! });
      recorder.event(obj, 'Normal', 'Checked', 'Reconcile', 'ok');
      recorder.event(obj, 'Normal', 'Checked', 'Reconcile', 'ok');
      await recorder.flush();
      const events = await eventsIn(p.ns);
      expect(events).toHaveLength(1);
      expect(events[0]?.metadata?.name).toBe(created!.metadata!.name);
      expect(events[0]?.series?.count).toBe(3);
    } finally {
      await p.close();
    }
  });
});

describe('spam filter', () => {
  it('30 distinct events on one object in a burst: the first 25 are written, 5 dropped and counted; other objects and repeats are unaffected', async () => {
    const p = await proxied('spam');
    try {
      const recorder = p.cluster.recorderFor('noisy');
      const obj = ghost(p.ns, 'flapping');
      for (let i = 0; i < 30; i++) recorder.event(obj, 'Warning', `Failure${i}`, 'Reconcile', `failure ${i}`);
      await recorder.flush();
      let events = await eventsIn(p.ns);
      expect(events.map((e) => e.reason).sort()).toEqual(Array.from({ length: 25 }, (_, i) => `Failure${i}`).sort());
      expect(await p.dropped('spam')).toBe(5);
      expect(p.writes('POST')).toBe(25);

      // another object has its own budget; a repeat of a written event folds into its series
      recorder.event(ghost(p.ns, 'calm'), 'Normal', 'Fine', 'Reconcile', 'fine');
      recorder.event(obj, 'Warning', 'Failure0', 'Reconcile', 'failure 0');
      recorder.event(obj, 'Warning', 'Failure99', 'Reconcile', 'failure 99');
      await recorder.flush();
      events = await eventsIn(p.ns);
      expect(events.some((e) => e.regarding?.name === 'calm')).toBe(true);
      expect(events.find((e) => e.reason === 'Failure0')?.series?.count).toBe(2);
      expect(events.some((e) => e.reason === 'Failure99')).toBe(false);
      expect(await p.dropped('spam')).toBe(6);
    } finally {
      await p.close();
    }
  });
});

describe('queue', () => {
  it('1,500 events while the API is black-holed: event() returns at once every time, 1,000 wait, the rest are dropped and counted; the queued ones are written once the API is back', async () => {
    // (qps: 0: the transport's own 20/s default would make writing the 1,000 take 50 s)
    const p = await proxied('flood', { writeTimeoutMs: 1_000, retryDelayMs: 200 }, { qps: 0 });
    try {
      const recorder = p.cluster.recorderFor('flood');
      // one event first, so that the mapping of events.k8s.io is known
      p.cluster.recorderFor('warm-up').event(ghost(p.ns, 'warm'), 'Normal', 'Warm', 'Reconcile', 'warm');
      await p.cluster.recorders.flush();

      p.proxy.blackhole(true);
      let yielded = false;
      setTimeout(() => (yielded = true), 0);
      const returned = new Set<unknown>();
      // 60 objects x 25 reasons: within every object's spam budget, so only the queue limits
      for (let i = 0; i < 1500; i++) returned.add(recorder.event(ghost(p.ns, `disk-${Math.floor(i / 25)}`), 'Warning', `Failure${i % 25}`, 'Reconcile', `failure ${i}`));
      // all 1,500 calls returned without waiting for anything (no timer has had a chance to run)
      expect(yielded).toBe(false);
      expect([...returned]).toEqual([undefined]);

      // 4 writers hold one event each, 1,000 wait, the other 496 were dropped
      expect(await p.dropped('queue_full')).toBe(1500 - 1000 - 4);
      expect(await metric(p.registry, 'kubeloop_events_queued', {})).toBe(1000);
      await eventually(() => p.writes('POST'), (n) => n >= 1 + 4, 'the writers to send');
      expect(p.writes('POST')).toBe(1 + 4);

      p.proxy.blackhole(false);
      await recorder.flush();
      const written = (await eventsIn(p.ns)).filter((e) => e.reportingController === 'flood');
      expect(written).toHaveLength(1004);
      expect(await p.dropped('write_failed')).toBe(0);
      expect(await metric(p.registry, 'kubeloop_events_queued', {})).toBe(0);
    } finally {
      await p.close();
    }
  });

  it('stop() with the API black-holed gives up within its bound and counts what it dropped; later events are dropped too', async () => {
    const p = await proxied('stop', { writeTimeoutMs: 60_000 });
    try {
      const recorder = p.cluster.recorderFor('stopper');
      p.cluster.recorderFor('warm-up').event(ghost(p.ns, 'warm'), 'Normal', 'Warm', 'Reconcile', 'warm');
      await p.cluster.recorders.flush();
      p.proxy.blackhole(true);
      for (let i = 0; i < 10; i++) recorder.event(ghost(p.ns, 'disk'), 'Normal', `Step${i}`, 'Reconcile', `step ${i}`);
      // the writes hang (their timeout is a minute); stop waits 300 ms, then abandons them
      await p.cluster.recorders.stop(300);
      expect(await p.dropped('shutdown')).toBe(10);
      recorder.event(ghost(p.ns, 'disk'), 'Normal', 'AfterStop', 'Reconcile', 'too late');
      expect(await p.dropped('shutdown')).toBe(11);
      p.proxy.blackhole(false);
      expect((await eventsIn(p.ns)).filter((e) => e.reportingController === 'stopper')).toEqual([]);
    } finally {
      await p.close();
    }
  });

  it('a write that times out is retried and lands', async () => {
    const p = await proxied('retry', { writeTimeoutMs: 500, retryDelayMs: 100 });
    try {
      const recorder = p.cluster.recorderFor('patient');
      p.cluster.recorderFor('warm-up').event(ghost(p.ns, 'warm'), 'Normal', 'Warm', 'Reconcile', 'warm');
      await p.cluster.recorders.flush();
      p.proxy.blackhole(true);
      recorder.event(ghost(p.ns, 'disk'), 'Normal', 'Eventually', 'Reconcile', 'after a timeout');
      await eventually(() => p.writes('POST'), (n) => n >= 2, 'the first try');
      p.proxy.blackhole(false);
      await recorder.flush();
      expect((await eventsIn(p.ns)).filter((e) => e.reason === 'Eventually')).toHaveLength(1);
      expect(p.writes('POST')).toBeGreaterThanOrEqual(3);
      expect(await p.dropped('write_failed')).toBe(0);
    } finally {
      await p.close();
    }
  });
});

describe('transport', () => {
  it('event writes do not wait behind the cluster’s own requests', async () => {
    // One request a second on each transport: reconcile traffic queues; the recorder's transport has its own budget.
    const p = await proxied('transport', {}, { qps: 1, burst: 1 });
    try {
      const recorder = p.cluster.recorderFor('prompt');
      // warm up: the mappings of Event and Namespace are known (discovery goes through the cluster's transport)
      recorder.event(ghost(p.ns, 'warm'), 'Normal', 'Warm', 'Reconcile', 'warm');
      await recorder.flush();
      await p.cluster.apiReader.get({ apiVersion: 'v1', kind: 'Namespace' }, { name: p.ns });
      await sleep(1_100); // both buckets full again
      const done: number[] = [];
      const reads = [1, 2, 3].map((i) => p.cluster.apiReader.get({ apiVersion: 'v1', kind: 'Namespace' }, { name: p.ns }).then(() => done.push(i)));
      recorder.event(ghost(p.ns, 'disk'), 'Normal', 'Prompt', 'Reconcile', 'not queued behind reads');
      await recorder.flush();
      // the event was written while the third read (two seconds of budget away) still waited
      expect(done).not.toContain(3);
      expect((await eventsIn(p.ns)).some((e) => e.reason === 'Prompt')).toBe(true);
      await Promise.all(reads);
    } finally {
      await p.close();
    }
  });
});
