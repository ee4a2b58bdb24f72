/**
 * A sharded member paused (SIGSTOP, as a VM freeze or a long GC pause would)
 * while its reconciles are in flight, on the real API server. The member is
 * a process of its own (the built manager); its reconciles work a while
 * (ignoring their signal), then write. It is stopped in the middle of that
 * work, past its lease; an in-process member takes every bucket over once
 * its Lease has expired and reconciles every object again. Resumed, the
 * paused member's reconciles wake and try to write: every one is cut
 * (ClientError `Fenced`: its bucket's fence fell at the renew deadline on
 * the monotonic clock, before any timer ran), and read back from a watch of
 * the objects in the order the server committed the writes, no write lands
 * after a write of another member's reconcile that started later (0 late
 * writes). Then it rejoins as a newcomer and the next change is written
 * once per object, again without a late write.
 *
 * The slow-link form of the same guarantee is fencing.test.ts; the example
 * operator's SIGSTOP test (examples/harddisk-operator/test/paused.test.ts)
 * stops a member while idle and checks reconcile intervals.
 */
import { spawn } from 'node:child_process';
import type { ChildProcessByStdio } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createShardRing } from '@kubeloop/leaderelection';
import type { ShardRing } from '@kubeloop/leaderelection';
import { ConfigMap } from '@kubeloop/scheme';
import { createLogger, createManager, Result, ringShardFilter } from '../../src/index.js';
import { eventually, newNamespace, run, testClient } from '../support.js';
import type { Running } from '../support.js';
import { ROUND, STARTED, startWriteLog, WRITER } from './write-log.js';
import type { WriteLog } from './write-log.js';
import { testKubeConfig, testKubeconfigPath } from '../../../../test/support/env.js';

const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300, buckets: 16 };
const OBJECTS = 12;
/** How long a reconcile works (ignoring its signal) before it writes. */
const WORK_MS = 1500;
/** Paused this long: past the lease, so the other member takes the buckets over meanwhile. */
const PAUSE_MS = 4 * TIMING.leaseDurationMs;
const RING = 'paused-fencing';

/** What the paused member's process said last. */
interface Said {
  inFlight: number;
  fenced: number;
  active: number;
  wrote: number;
}

/** The member as a process of its own: the built manager, a sharded controller whose reconciles work WORK_MS then write. */
function startProcess(ns: string, said: Said): { child: ChildProcessByStdio<null, Readable, Readable>; stderr: () => string } {
  const dist = JSON.stringify(fileURLToPath(new URL('../../dist/index.js', import.meta.url)));
  const script = `
    const { createLogger, createManager, Result, ringShardFilter } = await import(${dist});
    const { createClient, isFenced, loadKubeConfig, mergePatch } = await import('@kubeloop/client');
    const { createShardRing } = await import('@kubeloop/leaderelection');
    const { ConfigMap } = await import('@kubeloop/scheme');
    const [kubeconfig, ns, timing, ringName, workMs] = process.argv.slice(1);
    const say = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
    const kubeConfig = loadKubeConfig({ path: kubeconfig });
    const ring = createShardRing({ client: createClient({ kubeConfig }), namespace: ns, name: ringName, identity: 'paused', ...JSON.parse(timing) });
    const manager = createManager({ kubeConfig, namespaces: [ns], logger: createLogger({ level: 'silent' }), fieldOwner: 'paused', cache: { byKind: [{ kind: ConfigMap, options: { shard: ringShardFilter(ring) } }] } });
    manager.add((signal) => ring.run(signal), { needLeaderElection: false });
    let inFlight = 0, fenced = 0, wrote = 0;
    const report = () => say({ inFlight, fenced, wrote, active: ring.active().size });
    manager.controller().for(ConfigMap).withOptions({ maxConcurrentReconciles: 32, shard: { ring } }).complete(async (request) => {
      const started = Date.now();
      const cm = await manager.client.get(ConfigMap, { namespace: request.namespace, name: request.name }).catch(() => undefined);
      const round = cm?.data?.round;
      if (!cm || round === undefined || cm.metadata?.annotations?.[${JSON.stringify(ROUND)}] === round) return Result.done();
      inFlight++; report();
      try {
        await new Promise((r) => setTimeout(r, Number(workMs)));
        await manager.client.patch(ConfigMap, { namespace: request.namespace, name: request.name }, mergePatch({ metadata: { annotations: { ${JSON.stringify(WRITER)}: 'paused', ${JSON.stringify(STARTED)}: String(started), ${JSON.stringify(ROUND)}: round } } }));
        wrote++;
      } finally {
        inFlight--; report();
      }
      return Result.done();
    });
    manager.onReconcile((r) => { if (r.result === 'error' && isFenced(r.error)) { fenced++; report(); } });
    setInterval(report, 200);
    const stop = new AbortController();
    process.once('SIGTERM', () => stop.abort());
    await manager.start(stop.signal);
    process.exit(0);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, testKubeconfigPath(), ns, JSON.stringify(TIMING), RING, String(WORK_MS)], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  createInterface({ input: child.stdout }).on('line', (text) => {
    try {
      Object.assign(said, JSON.parse(text) as Said);
    } catch {
      stderr += `${text}\n`;
    }
  });
  return { child, stderr: () => stderr };
}

describe('a sharded member paused with its reconciles in flight', () => {
  let admin: Client;
  let ns: string;
  let log: WriteLog;
  let paused: ReturnType<typeof startProcess> | undefined;
  let live: { ring: ShardRing; running: Running; close: () => void } | undefined;

  /** The other member, in this process. */
  function startLive(): NonNullable<typeof live> {
    const kubeConfig = testKubeConfig();
    const ringClient = createClient({ kubeConfig });
    const ring = createShardRing({ client: ringClient, namespace: ns, name: RING, identity: 'live', ...TIMING });
    const manager = createManager({ kubeConfig, namespaces: [ns], logger: createLogger({ level: 'silent' }), fieldOwner: 'live', cache: { byKind: [{ kind: ConfigMap, options: { shard: ringShardFilter(ring) } }] } });
    manager.add((signal) => ring.run(signal), { needLeaderElection: false });
    manager
      .controller()
      .for(ConfigMap)
      .withOptions({ maxConcurrentReconciles: OBJECTS, shard: { ring } })
      .complete(async (request) => {
        const started = Date.now();
        const cm = await manager.client.get(ConfigMap, { namespace: request.namespace!, name: request.name }).catch(() => undefined);
        const round = cm?.data?.['round'];
        if (!cm || round === undefined || cm.metadata?.annotations?.[ROUND] === round) return Result.done();
        await manager.client.patch(ConfigMap, { namespace: request.namespace!, name: request.name }, mergePatch({ metadata: { annotations: { [WRITER]: 'live', [STARTED]: String(started), [ROUND]: round } } }));
        return Result.done();
      });
    return { ring, running: run(manager), close: () => ringClient.transport.close() };
  }

  beforeAll(async () => {
    admin = testClient();
    ns = await newNamespace(admin, 'paused-fencing');
    log = await startWriteLog(admin, ns, OBJECTS);
  });
  afterAll(async () => {
    log.stop();
    if (paused) {
      paused.child.kill('SIGCONT');
      paused.child.kill('SIGKILL');
    }
    await live?.running.stop().catch(() => undefined);
    live?.close();
    await admin.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
  });

  it('cuts every write its resumed reconciles try: none lands after the new owner\'s, and it rejoins as a newcomer', async () => {
    const said: Said = { inFlight: 0, fenced: 0, active: 0, wrote: 0 };
    paused = startProcess(ns, said);
    await eventually(() => log.written('1'), (n) => n === OBJECTS, `the paused-to-be member alone to write every object (stderr: ${paused.stderr()})`, 60_000);

    // A change of every object: its reconciles start and work; it is stopped in the middle of that work.
    await log.touchAll('2');
    await eventually(() => said.inFlight, (n) => n === OBJECTS, 'every reconcile of the change in flight on the member');
    paused.child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    const wroteBefore = said.wrote;
    live = startLive();
    await eventually(() => live!.ring.active().size, (n) => n === TIMING.buckets, 'the live member to take every bucket over', 30_000);
    await eventually(() => log.written('2'), (n) => n === OBJECTS, 'every object written by its new owner', 30_000);

    // Resumed past its lease: its reconciles wake and try to write.
    await sleep(Math.max(0, stoppedAt + PAUSE_MS - Date.now()));
    paused.child.kill('SIGCONT');
    await eventually(() => ({ ...said }), (s) => s.inFlight === 0 && s.fenced >= OBJECTS, 'the resumed reconciles to end, each cut by its fence', 30_000);
    expect(said.wrote - wroteBefore, 'writes of the resumed reconciles that were not refused').toBe(0);
    expect(log.writes.filter((w) => w.round === '2').map((w) => w.writer)).not.toContain('paused');
    expect(log.lateWrites()).toEqual([]);

    // It rejoins as a newcomer and takes a share; the next change lands once per object, without a late write.
    await eventually(() => ({ mine: said.active, theirs: live!.ring.active().size }), (a) => a.mine > 0 && a.mine + a.theirs === TIMING.buckets, 'the resumed member to rejoin with a share', 30_000);
    await log.touchAll('3');
    await eventually(() => log.written('3'), (n) => n === OBJECTS, 'every object written after the rejoin', 30_000);
    console.info(`[paused fencing] ${log.writes.length} writes watched; the resumed member's reconciles cut by their fence: ${said.fenced}; paused ${Date.now() - stoppedAt} ms before the end`);
    expect(log.lateWrites()).toEqual([]);
  });
});
