/**
 * A replica of the example operator paused past its lease (SIGSTOP, as a VM
 * freeze or a long GC pause would) and resumed (SIGCONT), as shipped
 * (dist/main.js --shard-ring), on a control plane of its own. Three replicas
 * split the HardDisks; one is stopped while idle; the other two take its
 * buckets over once its Lease has expired (and delete that Lease) and
 * reconcile every change; it is resumed while every disk keeps changing.
 * Resumed, it has missed its renew deadline: it stops every bucket before it
 * writes its Lease again, logs that at warn, and joins as a newcomer. Every
 * reconcile's start and end on every replica (KUBELOOP_LOG_LEVEL=debug) is
 * read back: no two replicas ever reconcile one disk at once (0 overlaps),
 * and the resumed replica reconciles its share again afterwards.
 */
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createClient, fnv1a64, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import { createShardRing, parseBuckets, SHARD_HELD_ANNOTATION, SHARD_RING_LABEL } from '@kubeloop/leaderelection';
import { builtinScheme, Lease } from '@kubeloop/scheme';
import { HardDisk } from '../src/index.js';
import { startLogged } from '../../../test/support/logged-process.js';
import type { Running } from '../../../test/support/logged-process.js';

const main = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'main.js');
const DISKS = 60;
/** 3 s leases: a renew deadline of 2 s, a round every 0.4 s. */
const LEASE_MS = 3000;
/** Paused this long: well past the lease, so the others take its buckets over meanwhile. */
const PAUSE_MS = 4 * LEASE_MS;
const RING = 'paused';
const NAMESPACE = 'default';
const WAIT_MS = 120_000;

interface Interval {
  readonly replica: string;
  readonly key: string;
  readonly start: number;
  end: number;
}

async function eventually<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = WAIT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms; last seen: ${JSON.stringify(value).slice(0, 2000)}`);
    await sleep(250);
  }
}

describe('the example operator sharded: a replica paused past its lease with SIGSTOP, then resumed', () => {
  it('never reconciles a disk beside its new owner, and rejoins as a newcomer', async () => {
    const env = createEnvironment({});
    await env.start();
    const client: Client = createClient({ kubeConfig: env.kubeConfig, scheme: builtinScheme.extend(HardDisk), fieldOwner: 'paused-test' });
    const math = createShardRing({ client, namespace: NAMESPACE, name: RING, identity: 'bucket-math' });
    const replicas = new Map<string, Running>();
    const names = Array.from({ length: DISKS }, (_, i) => `disk-${String(i).padStart(3, '0')}`);
    const start = (id: string): void => {
      replicas.set(id, startLogged(main, ['--kubeconfig', env.kubeconfigPath, '--shard-ring', RING, '--shard-identity', id, '--shard-lease-duration', `${LEASE_MS / 1000}s`, '--no-sample', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'], { env: { KUBELOOP_LOG_LEVEL: 'debug' } }));
    };
    /** The buckets each member's Lease holds. */
    const leases = async (): Promise<Map<string, number[]>> => {
      const items = (await client.list(Lease, { namespace: NAMESPACE, labelSelector: `${SHARD_RING_LABEL}=${RING}` })).items;
      return new Map(items.map((l) => [l.spec!.holderIdentity!, parseBuckets(l.metadata?.annotations?.[SHARD_HELD_ANNOTATION], math.buckets)]));
    };
    /** `ids` hold every bucket between them, each about its share. */
    const settledOver = (ids: readonly string[]) => (held: Map<string, number[]>): boolean =>
      ids.every((id) => Math.abs((held.get(id)?.length ?? 0) - math.buckets / ids.length) < 1) && ids.reduce((n, id) => n + held.get(id)!.length, 0) === math.buckets;
    const converged = (size: string): Promise<unknown> =>
      eventually(`every disk Bound at ${size}`, async () => (await client.list(HardDisk, { namespace: NAMESPACE })).items.filter((d) => !(d.status?.phase === 'Bound' && d.status.observedGeneration === d.metadata?.generation && d.spec?.size === size)).length, (behind) => behind === 0);
    const resize = (size: string): Promise<unknown> => Promise.all(names.map((name) => client.patch(HardDisk, { namespace: NAMESPACE, name }, mergePatch({ spec: { size } }))));

    try {
      for (const id of ['r1', 'r2', 'r3']) start(id);
      await eventually('three members to split the ring', leases, settledOver(['r1', 'r2', 'r3']));
      const uids = new Map<string, string>();
      for (let i = 0; i < names.length; i += 20) {
        await Promise.all(names.slice(i, i + 20).map(async (name) => {
          const disk = await client.create({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name, namespace: NAMESPACE }, spec: { size: '1Gi', storageClass: 'standard' } });
          uids.set(name, disk.metadata.uid!);
        }));
      }
      await converged('1Gi');

      // Idle (no reconcile in flight), r1 is stopped; r2 and r3 take its buckets over once its Lease expires, and delete that Lease.
      const victim = replicas.get('r1')!;
      const itsBuckets = new Set((await leases()).get('r1'));
      const itsDisks = names.filter((n) => itsBuckets.has(math.bucketOf(fnv1a64(uids.get(n)!))));
      victim.kill('SIGSTOP');
      const stoppedAt = Date.now();
      await eventually('the other two to hold every bucket, the paused member\'s Lease deleted', leases, (held) => settledOver(['r2', 'r3'])(held) && !held.has('r1'));
      await resize('2Gi');
      await converged('2Gi');
      const pausedFor = Date.now() - stoppedAt;
      if (pausedFor < PAUSE_MS) await sleep(PAUSE_MS - pausedFor);

      // Resumed while every disk keeps changing.
      const changing = (async () => {
        for (let round = 3; round <= 8; round++) {
          await resize(`${round}Gi`);
          await sleep(LEASE_MS / 3);
        }
      })();
      victim.kill('SIGCONT');
      const resumedAt = Date.now();
      await changing;
      await eventually('the three to split the ring again', leases, settledOver(['r1', 'r2', 'r3']));
      await converged('8Gi');
      await resize('9Gi');
      await converged('9Gi');

      // Every reconcile as an interval, from each replica's log.
      const intervals: Interval[] = [];
      const allClosed = (): boolean => {
        intervals.length = 0;
        let closed = true;
        for (const [id, r] of replicas) {
          const open = new Map<string, Interval>();
          for (const l of r.lines) {
            const reconcileID = String(l['reconcileID']);
            if (l['msg'] === 'reconcile started') {
              const interval = { replica: id, key: `${String(l['namespace'])}/${String(l['name'])}`, start: Date.parse(String(l['time'])), end: Number.POSITIVE_INFINITY };
              open.set(reconcileID, interval);
              intervals.push(interval);
            } else if (l['msg'] === 'reconcile finished') {
              const interval = open.get(reconcileID);
              if (interval) interval.end = Date.parse(String(l['time']));
              open.delete(reconcileID);
            }
          }
          if (open.size > 0) closed = false;
        }
        return closed;
      };
      await eventually('no reconcile in flight', async () => allClosed(), (closed) => closed, 30_000);
      const overlaps: string[] = [];
      for (let a = 0; a < intervals.length; a++) {
        for (let b = a + 1; b < intervals.length; b++) {
          const x = intervals[a]!;
          const y = intervals[b]!;
          if (x.key === y.key && x.replica !== y.replica && x.start < y.end && y.start < x.end) overlaps.push(`${x.key}: ${x.replica} [${x.start}, ${x.end}] and ${y.replica} [${y.start}, ${y.end}]`);
        }
      }
      const byVictimAfter = intervals.filter((i) => i.replica === 'r1' && i.start >= resumedAt);
      const ofItsDisksByOthers = intervals.filter((i) => i.replica !== 'r1' && i.start >= stoppedAt && i.start < resumedAt && itsDisks.some((d) => i.key === `${NAMESPACE}/${d}`));
      console.log(`[paused] ${intervals.length} reconciles logged; the paused replica's ${itsDisks.length} disks reconciled ${ofItsDisksByOthers.length} times by the others while it was stopped; ${byVictimAfter.length} reconciles on it after it resumed; ${overlaps.length} overlapping`);
      expect(overlaps).toEqual([]);
      // The check had something to catch: the others reconciled its disks while it was stopped, and it works again after.
      expect(ofItsDisksByOthers.length).toBeGreaterThan(0);
      expect(byVictimAfter.length).toBeGreaterThan(0);
      // It said, at warn, that it lost its share.
      expect(victim.lines.some((l) => l['level'] === 40 && /did not renew its Lease .* within \d+ ms; it stopped its \d+ buckets/.test(String(l['msg'])))).toBe(true);
    } finally {
      for (const r of replicas.values()) {
        r.kill('SIGCONT');
        r.kill();
      }
      await Promise.all([...replicas.values()].map((r) => r.exited));
      await env.stop();
    }
  }, 5 * WAIT_MS);
});
