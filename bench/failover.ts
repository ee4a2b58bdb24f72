/**
 * Failover on a real control plane: how long a standby takes, once it holds
 * the Lease, to reconcile, warm (`warmStandby: true`, the default: its
 * controller's sources and cache run while it stands by) and cold
 * (`warmStandby: false`: nothing runs until it leads), and what standing by
 * costs it in memory.
 *
 * N ConfigMaps (~1.3 KB of JSON each) in one namespace. Each round: a leader
 * (this file with `--child leader`, its own process) takes a fresh Lease;
 * a standby (`--child warm` or `--child cold`) starts and settles; the
 * standby's RSS and V8 heap (after a full GC) are taken; the leader is
 * killed with SIGKILL (the Lease is neither renewed nor released) and one
 * ConfigMap is changed; the standby takes the Lease once it expires. From
 * the standby's own clock, from the moment it leads (a leader-only runnable
 * starts): to its first reconcile, to the reconcile of the changed object,
 * to every object reconciled once. The floor: a paginated LIST of the N
 * objects read with node:https and JSON.parse (no framework), which is the
 * least a cold standby must do before it knows what to reconcile.
 *
 *   pnpm bench:failover                    (from the repository root, after a build; N = 1000, 3 rounds)
 *   pnpm bench:failover --n=10000 --rounds=2
 */
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:https';
import type { RequestOptions } from 'node:https';
import { fileURLToPath } from 'node:url';
import { createClient, loadKubeConfig, mergePatch } from '@kubeloop/client';
import { createLogger, createManager, Result } from '@kubeloop/manager';
import { ConfigMap } from '@kubeloop/scheme';

// client-go's defaults: with tighter ones a leader busy with 10,000 first reconciles, next to a standby
// listing as many, on a shared 2-core machine, lost its lease before it was killed.
const LEASE = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const DEADLINE_MS = 10 * 60_000;

type Role = 'leader' | 'warm' | 'cold';
type FromChild =
  | { type: 'leading' }
  | { type: 'standing-by'; rss: number; heapUsed: number }
  | { type: 'ended'; role: Role; message: string }
  | { type: 'took-over'; firstMs: number; changedMs: number; changedRank: number; eventMs: number; eventWall: number; allMs: number };

// --- a replica (this file with --child) --------------------------------------------

async function replica(role: Role, kubeconfigPath: string, namespace: string, lease: string, n: number, changed: string, changedValue: string): Promise<void> {
  const send = (m: FromChild): void => void process.send?.(m);
  const manager = createManager({
    kubeConfig: loadKubeConfig(kubeconfigPath),
    namespaces: [namespace],
    logger: createLogger({ level: process.env['BENCH_FAILOVER_DEBUG'] ? 'info' : 'silent' }),
    leaderElection: { name: lease, namespace, identity: role, ...LEASE },
    warmStandby: role !== 'cold',
  });
  let ledAt = 0;
  let firstAt = 0;
  let changedAt = 0;
  let changedRank = 0;
  let eventAt = 0;
  let eventWall = 0;
  let reported = false;
  const seen = new Set<string>();
  manager
    .controller()
    .for(ConfigMap, {
      predicates: [
        (e) => {
          // The changed object, as an update (a warm standby) or in the list it makes once it leads (a cold one).
          const data = (e.object as { data?: Record<string, string> }).data;
          if (e.type !== 'delete' && e.object.metadata?.name === changed && data?.['n'] === changedValue && !eventAt) {
            eventAt = performance.now();
            eventWall = Date.now();
          }
          return true;
        },
      ],
    })
    .complete((req) => {
      const now = performance.now();
      firstAt ||= now;
      // The change is reconciled by the first reconcile of its key that starts after its event arrived.
      if (req.name === changed && eventAt && !changedAt) {
        changedAt = now;
        changedRank = seen.size + 1;
      }
      seen.add(req.name);
      if (role !== 'leader' && seen.size === n && changedAt && !reported) {
        reported = true;
        send({ type: 'took-over', firstMs: firstAt - ledAt, changedMs: changedAt - ledAt, changedRank, eventMs: eventAt - ledAt, eventWall, allMs: now - ledAt });
      }
      return Result.done();
    });
  // Starts exactly when this replica leads.
  manager.add(() => {
    ledAt = performance.now();
    if (role === 'leader') send({ type: 'leading' });
    return Promise.resolve();
  });
  process.on('disconnect', () => process.exit(0));
  const running = manager.start();
  if (role !== 'leader') {
    // Settled: a warm standby's controller has synced; a cold one has nothing to wait for.
    const deadline = Date.now() + DEADLINE_MS;
    while (!(role === 'cold' || manager.controllers().every((c) => c.synced)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 1000));
    const gc = (globalThis as { gc?: () => void }).gc!;
    gc();
    await new Promise((r) => setImmediate(r));
    gc();
    const mem = process.memoryUsage();
    send({ type: 'standing-by', rss: mem.rss, heapUsed: mem.heapUsed });
  }
  try {
    await running;
  } catch (err) {
    send({ type: 'ended', role, message: String(err) });
    process.stderr.write(`[bench:failover ${role}] ${String(err)}\n`);
    process.exitCode = 1;
  }
}

// --- the driver ----------------------------------------------------------------------

function param(name: string, fallback: string): string {
  const flag = process.argv.find((a) => a.startsWith(`--${name}=`));
  return flag?.slice(name.length + 3) ?? fallback;
}

function spawnReplica(role: Role, args: readonly string[]): { child: ChildProcess; next: (type: FromChild['type']) => Promise<FromChild> } {
  const child = fork(fileURLToPath(import.meta.url), ['--child', role, ...args], { execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const inbox: FromChild[] = [];
  let wake: (() => void) | undefined;
  child.on('message', (m: FromChild) => {
    inbox.push(m);
    wake?.();
  });
  const next = async (type: FromChild['type']): Promise<FromChild> => {
    const deadline = Date.now() + DEADLINE_MS;
    for (;;) {
      const i = inbox.findIndex((m) => m.type === type);
      if (i >= 0) return inbox.splice(i, 1)[0]!;
      const ended = inbox.find((m) => m.type === 'ended');
      if (ended) throw new Error(`${role} ended before ${type}: ${ended.message}`);
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${role}: no ${type} (exit ${String(child.exitCode)})`);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 200);
      });
    }
  };
  return { child, next };
}

function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  return exited;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const ms = (x: number): number => Number(x.toFixed(1));
const mib = (bytes: number): number => Number((bytes / 1048576).toFixed(1));

async function main(): Promise<void> {
  const N = Math.max(1, Number.parseInt(param('n', '1000'), 10));
  const ROUNDS = Math.max(1, Number.parseInt(param('rounds', '3'), 10));
  const started = Date.now();
  const log = (line: string): void => void process.stderr.write(`[bench:failover +${((Date.now() - started) / 1000).toFixed(1)}s] ${line}\n`);

  // Loaded here, not at the top: replicas (this file with --child) must not carry it.
  const { createEnvironment } = await import('@kubeloop/envtest');
  const env = createEnvironment();
  await env.start();
  const writer = createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'bench-failover', transportOptions: { qps: 0 } });
  try {
    const namespace = 'failover';
    await writer.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    const name = (i: number): string => `cm-${String(i).padStart(6, '0')}`;
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < N) {
          const i = next++;
          await writer.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: name(i), namespace, labels: { app: 'bench' } }, data: { 'config.yaml': randomBytes(480).toString('base64'), n: String(i) } });
        }
      }),
    );
    log(`${N} ConfigMaps created`);

    // The floor: one paginated LIST of the N objects, node:https and JSON.parse.
    const tls: RequestOptions = {};
    await env.kubeConfig.applyToHTTPSOptions(tls);
    const get = (path: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const req = request(new URL(path, env.server), { ...tls, headers: { ...(tls.headers as Record<string, string>), accept: 'application/json' } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end();
      });
    const floors: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now();
      let cont = '';
      let items = 0;
      do {
        const page = JSON.parse(await get(`/api/v1/namespaces/${namespace}/configmaps?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`)) as { items: unknown[]; metadata: { continue?: string } };
        items += page.items.length;
        cont = page.metadata.continue ?? '';
      } while (cont);
      if (items !== N) throw new Error(`the floor listed ${items} of ${N}`);
      floors.push(performance.now() - t0);
    }

    const results: Record<'warm' | 'cold', { firstMs: number[]; changedMs: number[]; allMs: number[]; eventLagMs: number[]; rss: number[]; heapUsed: number[] }> = {
      warm: { firstMs: [], changedMs: [], allMs: [], eventLagMs: [], rss: [], heapUsed: [] },
      cold: { firstMs: [], changedMs: [], allMs: [], eventLagMs: [], rss: [], heapUsed: [] },
    };
    for (let r = 0; r < ROUNDS; r++) {
      for (const mode of ['warm', 'cold'] as const) {
        const lease = `failover-${mode}-${r}-${Date.now().toString(36)}`;
        const changed = name(Math.floor(N / 2));
        const changedValue = `changed-${mode}-${r}`;
        const args = [env.kubeconfigPath, namespace, lease, String(N), changed, changedValue];
        const leader = spawnReplica('leader', args);
        let standby: ReturnType<typeof spawnReplica> | undefined;
        try {
          await leader.next('leading');
          standby = spawnReplica(mode, args);
          const idle = (await standby.next('standing-by')) as Extract<FromChild, { type: 'standing-by' }>;
          await killed(leader.child);
          await writer.patch(ConfigMap, { namespace, name: changed }, mergePatch({ data: { n: changedValue } }));
          const patchedAt = Date.now();
          const took = (await standby.next('took-over')) as Extract<FromChild, { type: 'took-over' }>;
          const out = results[mode];
          out.firstMs.push(took.firstMs);
          out.changedMs.push(took.changedMs);
          out.allMs.push(took.allMs);
          out.eventLagMs.push(took.eventWall - patchedAt);
          out.rss.push(idle.rss);
          out.heapUsed.push(idle.heapUsed);
          log(`round ${r + 1} ${mode}: first ${ms(took.firstMs)} ms, changed ${ms(took.changedMs)} ms (${took.changedRank}th; its event ${ms(took.eventWall - patchedAt)} ms after the patch, ${ms(took.eventMs)} ms from leading), all ${ms(took.allMs)} ms; standing by ${mib(idle.rss)} MiB RSS, ${mib(idle.heapUsed)} MiB heap`);
        } finally {
          await killed(leader.child);
          if (standby) await killed(standby.child);
        }
      }
    }

    const floor = median(floors);
    const w = results.warm;
    const c = results.cold;
    const row = (metric: string, warm: number, cold: number, unit: (x: number) => number, withFloor: boolean, ratio = true): string =>
      `${String(N).padStart(6)} ${metric.padEnd(40)} ${String(unit(warm)).padStart(9)} ${String(unit(cold)).padStart(9)} ${(withFloor ? String(ms(floor)) : '').padStart(9)} ${(ratio ? `${(warm / cold).toPrecision(2)}x` : '').padStart(9)}`;
    console.log(`failover: ${ROUNDS} rounds, median; lease ${LEASE.leaseDurationMs} ms; ConfigMaps ~1.3 KB; kubernetes v1.37.2, node ${process.version}`);
    console.log(`${'N'.padStart(6)} ${'metric'.padEnd(40)} ${'warm'.padStart(9)} ${'cold'.padStart(9)} ${'floor'.padStart(9)} ${'warm/cold'.padStart(9)}`);
    console.log(row('lead -> first reconcile (ms)', median(w.firstMs), median(c.firstMs), ms, true));
    console.log(row('lead -> the change reconciled (ms)', median(w.changedMs), median(c.changedMs), ms, true));
    console.log(row('lead -> all reconciled once (ms)', median(w.allMs), median(c.allMs), ms, false));
    console.log(row('patch acked -> the standby has it (ms)', median(w.eventLagMs), median(c.eventLagMs), ms, false, false));
    console.log(row('standing by: RSS (MiB)', median(w.rss), median(c.rss), mib, false));
    console.log(row('standing by: V8 heap after GC (MiB)', median(w.heapUsed), median(c.heapUsed), mib, false));
    console.log('floor = one paginated LIST of N read with node:https and JSON.parse (what a cold standby must at least do before it knows what to reconcile).');
    console.log('"has it": from the patch being acknowledged to the standby seeing the changed object (its watch when warm; its list, once it leads, when cold).');
    console.log(JSON.stringify({ bench: 'failover', n: N, rounds: ROUNDS, lease: LEASE, floorListMs: floors.map(ms), warm: w, cold: c }));
  } finally {
    writer.transport.close();
    await env.stop();
  }
}

const childAt = process.argv.indexOf('--child');
if (childAt >= 0) {
  const [role, kubeconfigPath, namespace, lease, n, changed, changedValue] = process.argv.slice(childAt + 1);
  await replica(role as Role, kubeconfigPath!, namespace!, lease!, Number(n), changed!, changedValue!);
} else {
  await main();
}
