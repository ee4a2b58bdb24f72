/**
 * A sharded controller's writes are fenced by its bucket, on the real API
 * server. Two managers share a shard ring; one reaches the API server through
 * a proxy. Its link turns slow (every request held 5 s, past its renew
 * deadline and its lease) while its reconciles are in flight: they are slow
 * and ignore their signal, then write. Its renewals stop getting through, the
 * other member takes every bucket over once its Lease has expired and
 * reconciles every object again. Read back from a watch of the objects, in
 * the order the server committed the writes: no write of a reconcile lands
 * after a write of another member's reconcile that started later (0 late
 * writes); the slow member's writes in flight were cut (ClientError
 * `Fenced`), not left to land when the link delivers them. Then the link
 * recovers: the member rejoins as a newcomer, and the next change is
 * reconciled, again without a late write.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, isFenced, mergePatch } from '@kubeloop/client';
import type { Client, KubeConfigLike } from '@kubeloop/client';
import { startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy } from '@kubeloop/envtest';
import { createShardRing } from '@kubeloop/leaderelection';
import type { ShardRing } from '@kubeloop/leaderelection';
import { ConfigMap } from '@kubeloop/scheme';
import { createLogger, createManager, Result, ringShardFilter } from '../../src/index.js';
import { eventually, newNamespace, run, testClient } from '../support.js';
import type { Running } from '../support.js';
import { ROUND, STARTED, startWriteLog, WRITER } from './write-log.js';
import type { WriteLog } from './write-log.js';
import { testKubeConfig } from '../../../../test/support/env.js';

const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300, buckets: 16 };
const OBJECTS = 16;
/** How long a reconcile works (ignoring its signal) before it writes. */
const WORK_MS = 1200;
/** The slow link: every request held this long (past the renew deadline and the lease). */
const SLOW_MS = 5000;

describe('a sharded reconcile on a slow link', () => {
  let admin: Client;
  let ns: string;
  let proxy: ApiProxy;
  let log: WriteLog;
  const replicas: { id: string; ring: ShardRing; running: Running; fenced: number; inFlight: number; close: () => void }[] = [];

  function start(id: string, kubeConfig: KubeConfigLike): (typeof replicas)[number] {
    const ringClient = createClient({ kubeConfig });
    const ring = createShardRing({ client: ringClient, namespace: ns, name: 'slow-link', identity: id, ...TIMING });
    const manager = createManager({ kubeConfig, namespaces: [ns], logger: createLogger({ level: 'silent' }), fieldOwner: id, cache: { byKind: [{ kind: ConfigMap, options: { shard: ringShardFilter(ring) } }] } });
    manager.add((signal) => ring.run(signal), { needLeaderElection: false });
    const replica = { id, ring, running: undefined as unknown as Running, fenced: 0, inFlight: 0, close: () => ringClient.transport.close() };
    manager
      .controller()
      .for(ConfigMap)
      .withOptions({ maxConcurrentReconciles: OBJECTS, shard: { ring } })
      .complete(async (request) => {
        const started = Date.now();
        const cm = await manager.client.get(ConfigMap, { namespace: request.namespace!, name: request.name }).catch(() => undefined);
        const round = cm?.data?.['round'];
        if (!cm || round === undefined || cm.metadata?.annotations?.[ROUND] === round) return Result.done();
        replica.inFlight++;
        try {
          // Slow work that ignores its signal, then the write.
          await sleep(WORK_MS);
          await manager.client.patch(ConfigMap, { namespace: request.namespace!, name: request.name }, mergePatch({ metadata: { annotations: { [WRITER]: id, [STARTED]: String(started), [ROUND]: round } } }));
        } finally {
          replica.inFlight--;
        }
        return Result.done();
      });
    manager.onReconcile((r) => {
      if (r.result === 'error' && isFenced(r.error)) replica.fenced++;
    });
    replica.running = run(manager);
    replicas.push(replica);
    return replica;
  }

  beforeAll(async () => {
    admin = testClient();
    ns = await newNamespace(admin, 'fencing');
    log = await startWriteLog(admin, ns, OBJECTS);
    proxy = await startApiProxy(testKubeConfig());
  });
  afterAll(async () => {
    log.stop();
    await Promise.all(replicas.map((r) => r.running.stop().catch(() => undefined)));
    for (const r of replicas) r.close();
    await proxy.close();
    await admin.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
  });

  it('cuts the slow member\'s writes in flight at its renew deadline: none lands after the new owner\'s', async () => {
    const slow = start('slow', proxy.kubeConfig);
    await eventually(() => log.written('1'), (n) => n === OBJECTS, 'the slow member alone to write every object', 30_000);

    // A change of every object: the slow member's reconciles start and work; the link turns slow under them.
    await log.touchAll('2');
    await eventually(() => slow.inFlight, (n) => n === OBJECTS, 'every reconcile of the change in flight on the slow member');
    proxy.delay(SLOW_MS);
    const fast = start('fast', testKubeConfig());
    await eventually(() => fast.ring.active().size, (n) => n === TIMING.buckets, 'the fast member to take every bucket over', 30_000);
    await eventually(() => log.written('2'), (n) => n === OBJECTS, 'every object written by its new owner', 30_000);
    // Past the slow link's delay: whatever the proxy still held has been delivered or dropped.
    await sleep(SLOW_MS + 1000);
    expect(slow.fenced, 'reconciles of the slow member cut by their fence').toBeGreaterThan(0);
    expect(log.writes.filter((w) => w.round === '2').map((w) => w.writer)).not.toContain('slow');
    expect(log.lateWrites()).toEqual([]);

    // The link recovers: the slow member joins again as a newcomer and takes a share; the next change lands once per object.
    proxy.delay(0);
    await eventually(() => slow.ring.active().size, (n) => n > 0 && n + fast.ring.active().size === TIMING.buckets, 'the slow member to rejoin', 30_000);
    await log.touchAll('3');
    await eventually(() => log.written('3'), (n) => n === OBJECTS, 'every object written after the rejoin', 30_000);
    console.info(`[fencing] ${log.writes.length} writes watched; the slow member's reconciles cut by their fence: ${slow.fenced}`);
    expect(log.lateWrites()).toEqual([]);
  });
});
