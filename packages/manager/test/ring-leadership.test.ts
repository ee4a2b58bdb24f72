/**
 * A shard ring as the manager's leadership gate, on the real API server:
 * three managers run a sharded controller over their shares of the
 * ConfigMaps, while an unsharded leader-only controller (ServiceAccounts)
 * and a leader-only runnable run on exactly one of them: the member
 * working on the ring's leader bucket. Cut off from the API server (its
 * connection black-holed) the leader stops its leader-only work before
 * another member starts it; a leader that leaves hands on at once. Every
 * interval of leader-only work is logged: none overlaps another replica's.
 */
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy } from '@kubeloop/envtest';
import { createShardRing } from '@kubeloop/leaderelection';
import type { ShardRing } from '@kubeloop/leaderelection';
import { ConfigMap, ServiceAccount } from '@kubeloop/scheme';
import { LEADER_BUCKET, Result, ringLeadership, ringShardFilter } from '../src/index.js';
import type { Manager } from '../src/index.js';
import { testKubeConfig } from '../../../test/support/env.js';
import { eventually, metric, newNamespace, readyz, run, testClient, testManager } from './support.js';
import type { Running } from './support.js';

const TIMING = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300, buckets: 16 };
const CONFIGMAPS = 30;
/** How long leader-only work takes to stop once aborted (as a report flushing its last write would). */
const STOP_MS = 300;

interface Replica {
  readonly id: string;
  readonly ring: ShardRing;
  readonly proxy: ApiProxy;
  readonly manager: Manager;
  readonly running: Running;
}

interface Interval {
  readonly replica: string;
  readonly start: number;
  end: number;
}

describe('a shard ring as leadership: sharded and leader-only work in one manager', () => {
  let client: Client;
  let ns: string;
  const replicas: Replica[] = [];
  /** Leader-only runnable, per term. */
  const leaderWork: Interval[] = [];
  /** Sharded reconciles: replica per ConfigMap name. */
  const sharded = new Map<string, Set<string>>();
  /** Unsharded leader-only reconciles: [replica, ServiceAccount name]. */
  const unsharded: [string, string][] = [];

  async function start(id: string): Promise<Replica> {
    const proxy = await startApiProxy(testKubeConfig());
    const ring = createShardRing({ client: createClient({ kubeConfig: proxy.kubeConfig }), namespace: ns, name: 'mixed', identity: id, ...TIMING });
    const manager = testManager(ns, {
      kubeConfig: proxy.kubeConfig,
      leadership: ringLeadership(ring),
      healthProbeBindAddress: '127.0.0.1:0',
      gracefulShutdownTimeoutMs: 5000,
      cache: { byKind: [{ kind: ConfigMap, options: { shard: ringShardFilter(ring) } }] },
    });
    // Sharded: no needLeaderElection given; a sharded controller runs on every replica.
    manager.controller().for(ConfigMap).named('sharded').withOptions({ shard: { ring } }).complete((request) => {
      sharded.set(request.name, (sharded.get(request.name) ?? new Set()).add(id));
      return Result.done();
    });
    manager.controller().for(ServiceAccount).named('unsharded').complete((request) => {
      unsharded.push([id, request.name]);
      return Result.done();
    });
    manager.add(async (signal) => {
      const interval: Interval = { replica: id, start: performance.now(), end: Infinity };
      leaderWork.push(interval);
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      await new Promise((resolve) => setTimeout(resolve, STOP_MS));
      interval.end = performance.now();
    });
    const replica: Replica = { id, ring, proxy, manager, running: run(manager) };
    replicas.push(replica);
    return replica;
  }

  function overlapping(): string[] {
    const found: string[] = [];
    for (let a = 0; a < leaderWork.length; a++)
      for (let b = a + 1; b < leaderWork.length; b++) {
        const x = leaderWork[a]!;
        const y = leaderWork[b]!;
        if (x.replica !== y.replica && x.start < y.end && y.start < x.end) found.push(`${x.replica} and ${y.replica}`);
      }
    return found;
  }

  const up = (): Replica[] => replicas.filter((r) => r.manager.leadershipState() !== undefined);
  const leaders = (): string[] => up().filter((r) => r.manager.isLeader()).map((r) => r.id);
  const openLeaderWork = (): string[] => leaderWork.filter((i) => i.end === Infinity).map((i) => i.replica);
  /** Waits until exactly one replica (not `other`) leads and runs the leader-only work; its id. */
  async function oneLeader(other?: string, timeoutMs?: number): Promise<string> {
    const { lead } = await eventually(() => ({ lead: leaders(), open: openLeaderWork() }), ({ lead, open }) => lead.length === 1 && lead[0] !== other && open.join() === lead.join(), 'one leader running the leader-only work', timeoutMs);
    return lead[0]!;
  }

  beforeAll(async () => {
    client = testClient();
    ns = await newNamespace(client, 'ring-lead');
    await Promise.all(Array.from({ length: CONFIGMAPS }, (_, i) => client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}`, namespace: ns } })));
    await Promise.all(['sa-0', 'sa-1', 'sa-2'].map((name) => client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } })));
  });
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.running.stop().catch(() => undefined)));
    for (const r of replicas) await r.proxy.close();
    await client.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
  });

  it('every replica reconciles its share; leader-only work runs on the one holding the leader bucket', async () => {
    for (const id of ['a', 'b', 'c']) await start(id);
    await eventually(() => replicas.map((r) => r.ring.active().size), (n) => n.every((k) => k > 0) && n.reduce((x, y) => x + y, 0) === TIMING.buckets, 'every bucket active, a share on each');
    await eventually(() => sharded.size, (n) => n === CONFIGMAPS, 'every ConfigMap reconciled');
    await eventually(() => new Set(unsharded.map(([, name]) => name)).size, (n) => n === 3, 'every ServiceAccount reconciled');
    const leader = await oneLeader();
    const holder = replicas.find((r) => r.ring.active().has(LEADER_BUCKET))!;
    expect(leader).toBe(holder.id);
    // Settled (the first replica may have reconciled everything before the others joined): what happens from now on.
    sharded.clear();
    unsharded.length = 0;
    await Promise.all(Array.from({ length: CONFIGMAPS }, (_, i) => client.patch(ConfigMap, { namespace: ns, name: `cm-${i}` }, mergePatch({ data: { round: '1' } }))));
    await Promise.all(['sa-3', 'sa-4'].map((name) => client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } })));
    await eventually(() => sharded.size, (n) => n === CONFIGMAPS, 'every changed ConfigMap reconciled');
    await eventually(() => new Set(unsharded.map(([, name]) => name)).size, (n) => n === 2, 'the new ServiceAccounts reconciled');
    // The sharded controller spread; the unsharded one ran on the leader only; no ConfigMap on two replicas.
    const byReplica = (id: string): number => [...sharded.values()].filter((s) => s.has(id)).length;
    for (const r of replicas) expect(byReplica(r.id)).toBeGreaterThan(0);
    expect([...sharded.values()].every((s) => s.size === 1)).toBe(true);
    expect(new Set(unsharded.map(([id]) => id))).toEqual(new Set([leader]));
    // /readyz says where each stands in the ring; the ring's metrics count every bucket once.
    for (const r of replicas) {
      const { status, body } = await readyz(r.manager);
      expect(status).toBe(200);
      expect(body).toContain(`${r.id === leader ? 'leading' : 'warm standby'}`);
      expect(body).toContain(`member ${r.id} of shard ring mixed (3 live): ${r.ring.active().size}/${TIMING.buckets} buckets active`);
    }
    const active = await Promise.all(replicas.map((r) => metric(r.manager.registry, 'kubeloop_shard_ring_buckets', { ring: 'mixed', state: 'active' })));
    expect(active.reduce((x, y) => x! + y!, 0)).toBe(TIMING.buckets);
    // The manager runs the ring: running it a second time is refused.
    await expect(holder.ring.run(new AbortController().signal)).rejects.toMatchObject({ name: 'LeaderElectionError', reason: 'AlreadyRunning' });
  });

  it('a leader cut off from the API server stops its leader-only work before another replica starts it', async () => {
    const victim = replicas.find((r) => r.manager.isLeader())!;
    victim.proxy.blackhole(true);
    await eventually(() => victim.manager.isLeader(), (l) => !l, 'the cut-off leader to step down');
    const successor = await oneLeader(victim.id, 30_000);
    // The unsharded controller follows leadership: a new ServiceAccount is reconciled by the successor.
    await client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'sa-after-cut', namespace: ns } });
    await eventually(() => unsharded.filter(([, name]) => name === 'sa-after-cut').map(([id]) => id), (ids) => ids.length > 0, 'the new ServiceAccount reconciled');
    expect(unsharded.filter(([, name]) => name === 'sa-after-cut').map(([id]) => id)).toContain(successor);
    expect(unsharded.filter(([, name]) => name === 'sa-after-cut').map(([id]) => id)).not.toContain(victim.id);
    // Not lost for good: reconnected, the member rejoins the ring (the manager did not exit).
    victim.proxy.blackhole(false);
    await eventually(() => victim.ring.active().size, (n) => n > 0, 'the reconnected member to hold buckets again', 30_000);
    expect(victim.manager.leadershipState()).toBeDefined();
    expect(overlapping()).toEqual([]);
  });

  it('a leader that leaves hands leadership on at once; a joiner takes its share', async () => {
    const leader = await oneLeader();
    const leaving = replicas.find((r) => r.id === leader)!;
    await leaving.running.stop();
    await eventually(() => leaders(), (l) => l.length === 1 && l[0] !== leaving.id, 'another replica to lead');
    await start('d');
    await eventually(() => replicas[3]!.ring.active().size, (n) => n > 0, 'the joiner to hold buckets');
    await eventually(() => up().map((r) => r.ring.active().size).reduce((x, y) => x + y, 0), (n) => n === TIMING.buckets, 'every bucket active');
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-late', namespace: ns } });
    await eventually(() => sharded.get('cm-late')?.size ?? 0, (n) => n === 1, 'the late ConfigMap reconciled once');
    // The joiner's share came to it as moved keys (its cached objects enqueued when its buckets started).
    const joiner = replicas[3]!;
    const held = [...sharded.entries()].filter(([, ids]) => ids.has('d')).length;
    expect(held).toBeGreaterThan(0);
    expect(await metric(joiner.manager.registry, 'kubeloop_shard_keys_moved_total', { controller: 'sharded' })).toBeGreaterThan(0);
    await oneLeader();
    expect(overlapping()).toEqual([]);
  });
});
