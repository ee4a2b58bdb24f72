/**
 * Fencing of Lease holders on the real API server. The pauses are real: the
 * test blocks its own event loop (Atomics.wait) past the renew deadline and
 * short of the lease, as a long GC pause or a frozen VM would, so every
 * timer and every answer that came in meanwhile runs in whatever order Node
 * picks on resume.
 * - A leader paused past its renew deadline is not leader the moment it
 *   resumes, its term's write fence refuses writes, and it never writes the
 *   Lease again (it steps down first).
 * - A ring member paused so stops every bucket, and the first Lease it
 *   writes after the pause holds no bucket (a newcomer), before it claims
 *   again.
 * - A joiner ignores a Lease left behind long ago and the member that takes
 *   its buckets deletes it; a member that dies holding buckets has its Lease
 *   deleted by the member that takes them over once it has expired.
 */
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, isFenced, loadKubeConfig, mergePatch, runFenced } from '@kubeloop/client';
import type { Client, WatchEvent, WriteFence } from '@kubeloop/client';
import { startApiProxy } from '@kubeloop/envtest';
import { ConfigMap, Lease } from '@kubeloop/scheme';
import { createLeaderElector, formatMicroTime } from '../src/leader-elector.js';
import { createShardRing, formatBuckets, memberLeaseName, parseBuckets, SHARD_BUCKETS_ANNOTATION, SHARD_HELD_ANNOTATION, SHARD_RING_LABEL } from '../src/shard-ring.js';
import type { RingChange, ShardRing } from '../src/shard-ring.js';
import { testKubeConfig, testKubeconfigPath, uniqueName } from '../../../test/support/env.js';

const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
/** Past the renew deadline, short of the lease. */
const PAUSE_MS = 2600;
const BUCKETS = 16;

/** A slower round, so a pause started with a renewal in flight ends past the renew deadline of the renewal before it, and short of this one's. */
const LATE_TIMING = { leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 1000 };
/** From just after a renewal is sent: its predecessor's deadline is about 2 s away, its own 3 s. */
const LATE_PAUSE_MS = 2500;

let admin: Client;
let namespace: string;

/** Block this process's event loop for `ms` (nothing runs meanwhile: timers, sockets and promises wait). */
function freeze(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Asked with a pause: posts `freeze` at once, then `check` and `answer` 300 and 250 ms before the pause ends. */
const LATE_WORKER = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', (pauseMs) => {
  parentPort.postMessage('freeze');
  setTimeout(() => {
    parentPort.postMessage('check');
    setTimeout(() => parentPort.postMessage('answer'), 50);
  }, pauseMs - 300);
});
`;

/**
 * A client (the real one, talking to the real server) whose next `update`,
 * a Lease renewal, is answered late: once the server has answered, before its
 * caller hears of it, the process freezes for `pauseMs` in an I/O callback (a
 * message from a worker thread),
 * and the worker posts two more messages meanwhile, which Node runs on resume
 * in the same poll phase, before the timers that fell due in the pause (as it
 * runs answers that came in while a paused process was not scheduled): the
 * first calls `check` (what a write in flight checks meanwhile), the second
 * lets the renewal's answer through to its caller. `next` resolves then.
 */
function lateRenewals(real: Client): { client: Client; next: (pauseMs: number, check: () => void) => Promise<void>; close: () => void } {
  const worker = new Worker(LATE_WORKER, { eval: true });
  let armed: { pauseMs: number; check: () => void; release: () => void; released: Promise<void> } | undefined;
  let inFlight: typeof armed;
  worker.on('message', (m: string) => {
    if (m === 'freeze') freeze(inFlight!.pauseMs);
    else if (m === 'check') inFlight?.check();
    else inFlight?.release();
  });
  const update = async (...args: Parameters<Client['update']>): Promise<unknown> => {
    const late = armed;
    if (!late) return real.update(...args);
    armed = undefined;
    inFlight = late;
    // The server has answered; its caller hears of it only after the pause.
    const answer = await real.update(...args);
    worker.postMessage(late.pauseMs);
    await late.released;
    return answer;
  };
  const client = new Proxy(real, {
    get(target, prop) {
      if (prop === 'update') return update;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    client,
    next: (pauseMs, check) =>
      new Promise<void>((resolve) => {
        let release!: () => void;
        const released = new Promise<void>((r) => (release = r));
        armed = { pauseMs, check, release: () => (release(), resolve()), released };
      }),
    close: () => void worker.terminate(),
  };
}

async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Every version of one Lease written from now on, in the order the server committed them. */
async function recordLease(name: string, signal: AbortSignal): Promise<Lease[]> {
  const seen: Lease[] = [];
  const list = await admin.list(Lease, { namespace });
  const events = await admin.watch(Lease, { namespace, resourceVersion: list.metadata!.resourceVersion!, fieldSelector: { 'metadata.name': name }, signal });
  void (async () => {
    try {
      for await (const e of events as AsyncIterable<WatchEvent<Lease>>) if (e.type === 'ADDED' || e.type === 'MODIFIED') seen.push(e.object);
    } catch {
      /* stopped */
    }
  })();
  return seen;
}

beforeAll(async () => {
  admin = createClient({ kubeConfig: loadKubeConfig(testKubeconfigPath()), fieldOwner: 'fencing-test' });
  namespace = uniqueName('fencing');
  await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
});
afterAll(async () => {
  await admin.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: namespace }).catch(() => undefined);
});

describe('leader election', () => {
  it('a leader paused past its renew deadline is not leader on resume, its writes are fenced, and it never renews the Lease again', async () => {
    const name = uniqueName('paused-leader');
    const client = createClient({ kubeConfig: loadKubeConfig(testKubeconfigPath()), fieldOwner: 'fencing-test' });
    await admin.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { v: '0' } });
    let fence: WriteFence | undefined;
    let term: AbortSignal | undefined;
    const elector = createLeaderElector({
      client,
      namespace,
      name,
      identity: 'paused',
      ...TIMING,
      onStartedLeading: (signal, f) => {
        term = signal;
        fence = f;
      },
    });
    const stop = new AbortController();
    const watching = new AbortController();
    const versions = await recordLease(name, watching.signal);
    const running = elector.run(stop.signal);
    await eventually(() => elector.isLeader() && fence !== undefined, 'leadership');
    // Leader work writes under the term's fence while the lease holds.
    await runFenced(fence!, () => client.patch(ConfigMap, { namespace, name }, mergePatch({ data: { v: 'leading' } })));

    const pausedAt = Date.now();
    freeze(PAUSE_MS);
    // Resumed: before any timer or answer has run, it is no leader and its writes are refused.
    expect(elector.isLeader()).toBe(false);
    expect(fence!.revoked()).toMatch(/not renewed within the renew deadline/);
    const refused: unknown = await runFenced(fence!, () => client.patch(ConfigMap, { namespace, name }, mergePatch({ data: { v: 'stale' } }))).catch((e: unknown) => e);
    expect(isFenced(refused)).toBe(true);

    expect(await running).toBe('lost');
    expect(term!.aborted).toBe(true);
    expect(fence!.signal.aborted).toBe(true);
    // Time for a renewal that should not happen to land.
    await new Promise((r) => setTimeout(r, 3 * TIMING.retryPeriodMs));
    watching.abort();
    const renewedAfter = versions.filter((l) => Date.parse(String(l.spec?.renewTime)) >= pausedAt);
    expect(renewedAfter.map((l) => l.spec?.renewTime)).toEqual([]);
    expect(versions.length).toBeGreaterThan(0);
    expect((await admin.get(ConfigMap, { namespace, name })).data?.['v']).toBe('leading');
    client.transport.close();
  });

  it('a leader whose renewal is answered past its renew deadline (paused with it in flight) stops leading: no term goes on under a fence that refuses its writes', async () => {
    const name = uniqueName('late-leader');
    const real = createClient({ kubeConfig: loadKubeConfig(testKubeconfigPath()), fieldOwner: 'fencing-test' });
    const late = lateRenewals(real);
    let fence: WriteFence | undefined;
    let term: AbortSignal | undefined;
    const elector = createLeaderElector({
      client: late.client,
      namespace,
      name,
      identity: 'late',
      ...LATE_TIMING,
      onStartedLeading: (signal, f) => {
        term = signal;
        fence = f;
      },
    });
    const stop = new AbortController();
    const running = elector.run(stop.signal);
    try {
      await eventually(() => elector.isLeader() && fence !== undefined, 'leadership');
      let seen: { leader: boolean; revoked: string | undefined } | undefined;
      // In the pause, past the deadline, leader-only work's write checks the fence: refused.
      await late.next(LATE_PAUSE_MS, () => (seen = { leader: elector.isLeader(), revoked: fence!.revoked() }));
      expect(seen?.leader).toBe(false);
      expect(seen?.revoked).toMatch(/not renewed within the renew deadline/);
      // Once the late answer has run (before any timer), it is not a leader whose every write is refused.
      await new Promise((r) => setImmediate(r));
      expect({ leader: elector.isLeader(), fenced: fence!.revoked() !== undefined }).toEqual({ leader: false, fenced: true });
      // It has lost, as client-go's renew deadline fails a renewal answered past it.
      expect(await Promise.race([running, new Promise((r) => setTimeout(() => r('still leading 10 s later'), 10_000))])).toBe('lost');
      expect(elector.isLeader()).toBe(false);
      expect(term!.aborted).toBe(true);
    } finally {
      stop.abort();
      await running;
      late.close();
      real.transport.close();
    }
  });
});

describe('shard ring', () => {
  const started: { ring: ShardRing; stop: AbortController; done: Promise<void>; close: () => void }[] = [];
  afterAll(async () => {
    for (const m of started) m.stop.abort();
    await Promise.all(started.map((m) => m.done));
    for (const m of started) m.close();
  });

  function member(identity: string, ringName: string, client?: Client): ShardRing {
    const own = client ?? createClient({ kubeConfig: loadKubeConfig(testKubeconfigPath()), fieldOwner: 'fencing-test' });
    const ring = createShardRing({ client: own, namespace, name: ringName, identity, buckets: BUCKETS, ...TIMING });
    const stop = new AbortController();
    started.push({ ring, stop, done: ring.run(stop.signal), close: () => own.transport.close() });
    return ring;
  }

  it('a member paused past its renew deadline stops every bucket and writes its Lease holding none before it claims again', async () => {
    const ringName = 'paused';
    const ring = member('solo', ringName);
    const changes: RingChange[] = [];
    ring.subscribe((c) => changes.push(c));
    await eventually(() => ring.active().size === BUCKETS, 'every bucket active');
    const fence = ring.fence(0)!;
    expect(fence.revoked()).toBeUndefined();
    const watching = new AbortController();
    const versions = await recordLease(memberLeaseName(ringName, 'solo'), watching.signal);

    const pausedAt = Date.now();
    freeze(PAUSE_MS);
    // Resumed: no bucket is worked on, and the bucket's fence refuses writes, before any timer has run.
    expect(ring.active().size).toBe(0);
    expect(ring.fence(0)).toBeUndefined();
    expect(fence.revoked()).toMatch(/bucket 0 of shard ring paused: its Lease was not renewed within the renew deadline/);

    // It joins again as a newcomer and, alone, ends up with every bucket.
    await eventually(() => ring.active().size === BUCKETS, 'every bucket active again');
    watching.abort();
    const after = versions.filter((l) => Date.parse(String(l.spec?.renewTime)) >= pausedAt);
    expect(after.length).toBeGreaterThan(1);
    // The first write after the pause holds nothing; buckets are held again only by a later claim.
    expect(after[0]!.metadata?.annotations?.[SHARD_HELD_ANNOTATION]).toBe('');
    expect(changes.some((c) => c.lost !== undefined && c.stopped.length === BUCKETS)).toBe(true);
    expect(fence.signal.aborted).toBe(true);
  });

  it('a member whose renewal is answered past its renew deadline (paused with it in flight) stops every bucket and claims again: no bucket is worked on without its fence', async () => {
    const ringName = 'late';
    const real = createClient({ kubeConfig: loadKubeConfig(testKubeconfigPath()), fieldOwner: 'fencing-test' });
    const late = lateRenewals(real);
    const ring = createShardRing({ client: late.client, namespace, name: ringName, identity: 'solo', buckets: BUCKETS, ...LATE_TIMING });
    const stop = new AbortController();
    started.push({ ring, stop, done: ring.run(stop.signal), close: () => (late.close(), real.transport.close()) });
    const changes: RingChange[] = [];
    ring.subscribe((c) => changes.push(c));
    await eventually(() => ring.active().size === BUCKETS, 'every bucket active');
    const fence = ring.fence(0)!;
    let seen: { member: boolean; revoked: string | undefined } | undefined;
    // In the pause, past the deadline, a reconcile's write checks bucket 0's fence: refused.
    await late.next(LATE_PAUSE_MS, () => (seen = { member: ring.isMember(), revoked: fence.revoked() }));
    expect(seen?.member).toBe(false);
    expect(seen?.revoked).toMatch(/bucket 0 of shard ring late: its Lease was not renewed within the renew deadline/);
    // Once the late answer has run (before any timer), no bucket is worked on under a fence that refuses its writes.
    await new Promise((r) => setImmediate(r));
    expect([...ring.active()].filter((b) => ring.fence(b) === undefined)).toEqual([]);
    // The renewal's late answer cuts it off (it does not go on working bucket 0 with a fence that refuses everything,
    // nor the others after keys were passed over while it was no member)...
    await eventually(() => changes.some((c) => c.lost !== undefined), 'the member to be cut off', 10_000);
    const cut = changes.find((c) => c.lost !== undefined)!;
    expect(cut.stopped).toContain(0);
    // (said as a late answer; a machine so loaded that the answer itself came past the deadline, before the pause, has the
    // deadline's timer say it first: the same stop)
    expect(cut.lost).toMatch(/did not renew its Lease \S+ within 3000 ms( \(its renewal was answered \d+ ms past the renew deadline\))?; it stopped its 16 buckets and joins again as a newcomer/);
    // ...and it claims every bucket again, each under a fence of its own.
    await eventually(() => ring.active().size === BUCKETS && [...ring.active()].every((b) => ring.fence(b) !== undefined), 'every bucket active again, each fenced');
    expect(ring.fence(0)).not.toBe(fence);
  });

  it('a joiner ignores a Lease left behind long ago, and the member that takes its buckets deletes it', async () => {
    const ringName = 'ghosts';
    const stale = formatMicroTime(Date.now() - 3_600_000);
    const ghost = memberLeaseName(ringName, 'ghost');
    await admin.create({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: ghost, namespace, labels: { [SHARD_RING_LABEL]: ringName }, annotations: { [SHARD_HELD_ANNOTATION]: formatBuckets(Array.from({ length: BUCKETS }, (_, i) => i)), [SHARD_BUCKETS_ANNOTATION]: String(BUCKETS) } },
      spec: { holderIdentity: 'ghost', leaseDurationSeconds: 3, acquireTime: stale, renewTime: stale },
    });
    const ring = member('joiner', ringName);
    await eventually(() => ring.members().some((m) => m.identity === 'ghost') || ring.active().size > 0, 'the first round');
    // Seen for the first time, renewed an hour ago: dead at once.
    expect(ring.members().find((m) => m.identity === 'ghost')?.live ?? false).toBe(false);
    await eventually(() => ring.active().size === BUCKETS, 'every bucket active');
    await eventually(async () => !(await admin.list(Lease, { namespace, labelSelector: { [SHARD_RING_LABEL]: ringName } })).items.some((l) => l.metadata?.name === ghost), 'the ghost Lease to be deleted');
  });

  it('a member that dies holding buckets has its Lease deleted by the member that takes them, once it expired', async () => {
    const ringName = 'dying';
    const proxy = await startApiProxy(testKubeConfig());
    try {
      const doomed = member('doomed', ringName, createClient({ kubeConfig: proxy.kubeConfig, fieldOwner: 'fencing-test' }));
      const taker = member('taker', ringName);
      await eventually(() => doomed.active().size + taker.active().size === BUCKETS && doomed.active().size > 0, 'two shares');
      const lease = memberLeaseName(ringName, 'doomed');
      expect(parseBuckets((await admin.get(Lease, { namespace, name: lease })).metadata?.annotations?.[SHARD_HELD_ANNOTATION], BUCKETS).length).toBeGreaterThan(0);
      // Dead to the API server (a kill -9 with its connections gone): it never renews, never leaves.
      proxy.blackhole(true);
      await eventually(() => taker.active().size === BUCKETS, 'the taker to hold every bucket');
      await eventually(async () => !(await admin.list(Lease, { namespace, labelSelector: { [SHARD_RING_LABEL]: ringName } })).items.some((l) => l.metadata?.name === lease), 'the dead member\'s Lease to be deleted');
      expect(doomed.active().size).toBe(0);
    } finally {
      // Its run ends (the leave's delete times out against the black hole).
      started.find((m) => m.ring.identity === 'doomed')?.stop.abort();
      await started.find((m) => m.ring.identity === 'doomed')?.done;
      await proxy.close();
    }
  });
});
