/**
 * Sharding on a real control plane: 1, 2 and 3 replicas of the sharded
 * HardDisk operator, each its own process, over N HardDisks (and the
 * ConfigMap each owns), side by side in one run.
 *
 * Per gate (kube-apiserver's `ShardedListAndWatch` on: the API server
 * filters lists and watches; off: each replica's reflector filters by the
 * same hash, after receiving everything): envtest starts with the gate; one
 * replica runs alone over no HardDisks (the empty replica); N HardDisks are
 * created; then for R = 1, 2, 3: R replicas start on a fresh ring, the ring
 * settles (every replica sees R members, works on the buckets the split
 * gives it, together on all of them), every disk is Bound at its current
 * generation and every work queue has been empty for 2 s. Then, per
 * replica: steady RSS (VmRSS from /proc, 5 s after idle, no forced GC),
 * its growth over the empty replica's, the objects its cache holds
 * (`kubeloop_informer_store_objects`). Then every HardDisk's spec.size is
 * changed (merge patches, 32 in flight) and the run waits until every
 * disk's status has observed its new generation (a watch in this
 * process): the convergence time counts from the first patch. Per replica
 * over that change: watch events received
 * (`kubeloop_informer_watch_events_total`, per kind) and peak RSS (VmHWM,
 * reset before the change) and CPU seconds used (utime + stime from
 * /proc, so a loaded machine slows the change but does not inflate its
 * cost). Prints a table with ratios to 1 replica, then
 * one JSON line.
 *
 * Each replica is the example operator as scripts/dev.sh ships it (its
 * file, examples/harddisk-operator/dist/operator.js, and its node flags;
 * SHARD_NODE_FLAGS replaces the flags), run sharded (`--shard-ring NAME
 * --no-sample`, metrics and probes on free ports).
 *
 *   pnpm bench:sharding                                   (N = 300, gate on: a smoke run)
 *   pnpm bench:sharding --n=10000 --gates=on,off
 *   pnpm bench:sharding --operators=base=examples/harddisk-operator/dist/operator-base.js,new=examples/harddisk-operator/dist/operator.js
 *
 * `--operators` compares builds side by side in one run on one control
 * plane: for each replica count, each labelled operator file in turn (a
 * fresh ring each), so both see the same objects and about the same load.
 * Build the other one from another commit and keep it beside dist/operator.js
 * (the bundle loads envtest from the example's node_modules).
 *
 * No no-framework floor: what is measured is how the framework's sharding
 * splits one operator's work (the ratios between 1, 2 and 3 replicas of
 * the same process); a floor has no ring, no handoff and no reconciler to
 * compare against.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { createInformerCache } from '@kubeloop/cache';
import { createClient, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import { HardDisk } from '@kubeloop/example-harddisk-operator';
import { builtinScheme } from '@kubeloop/scheme';
import { parseOperators } from './support/operators.ts';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const NAMESPACE = 'bench-sharding';
const IN_FLIGHT = 32;
const BUCKETS = 128;
const HARDDISK_KIND = 'HardDisk.crd-demo.io/v1';
const CONFIGMAP_KIND = 'ConfigMap.v1';

function param(name: string, fallback: string): string {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const mib = (bytes: number): number => Number((bytes / 1048576).toFixed(1));
const started = Date.now();
const log = (line: string): void => void process.stderr.write(`[bench:sharding +${((Date.now() - started) / 1000).toFixed(0)}s] ${line}\n`);

async function pool(count: number, limit: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
}

/** VmRSS and VmHWM of a process, bytes. */
function procStatus(pid: number): { rss: number; hwm: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** CPU time a process has used (user + system), seconds, from /proc/<pid>/stat (clock ticks of 10 ms). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces, in parentheses): utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

// --- replicas --------------------------------------------------------------------------

/** Prometheus text: every sample, by name and labels. */
type Samples = { name: string; labels: Record<string, string>; value: number }[];

interface Replica {
  readonly proc: ChildProcess;
  readonly pid: number;
  metrics(): Promise<Samples>;
  stop(): Promise<void>;
}

function spawnReplica(command: readonly string[], what: string): Replica {
  const [cmd, ...args] = command;
  const proc = spawn(cmd!, args, { cwd: here, env: { ...process.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let url: string | undefined;
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  // Only the one line wanted is parsed: the replicas log every reconcile that writes.
  createInterface({ input: proc.stdout }).on('line', (line) => {
    if (url === undefined && line.includes('"metrics listening"')) url = (JSON.parse(line) as { url?: string }).url;
  });
  let exited = false;
  proc.once('exit', () => (exited = true));
  return {
    proc,
    pid: proc.pid!,
    async metrics() {
      if (exited) throw new Error(`${what} exited (${String(proc.exitCode ?? proc.signalCode)}):\n${stderr}`);
      if (url === undefined) return [];
      // A scrape of a replica busy on a loaded machine may be reset: tried again, a few times.
      let text = '';
      for (let attempt = 1; ; attempt++) {
        try {
          text = await (await fetch(`${url}/metrics`)).text();
          break;
        } catch (err) {
          if (exited || attempt >= 5) throw err;
          await sleep(1000);
        }
      }
      const out: Samples = [];
      for (const line of text.split('\n')) {
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ([0-9.e+-]+|NaN)$/.exec(line);
        if (!m) continue;
        const labels: Record<string, string> = {};
        for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
        out.push({ name: m[1]!, labels, value: Number(m[3]) });
      }
      return out;
    },
    async stop() {
      if (exited) return;
      const gone = new Promise<void>((r) => proc.once('exit', () => r()));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      await gone;
      clearTimeout(timer);
    },
  };
}

function sum(samples: Samples, name: string, labels: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
}

/** Wait until `check` (over every replica's metrics) holds; it returns why not, or undefined. */
async function until(replicas: readonly Replica[], check: (all: Samples[]) => string | undefined, timeoutMs: number, what: string): Promise<Samples[]> {
  const deadline = Date.now() + timeoutMs;
  let why: string | undefined = 'no metrics yet';
  for (;;) {
    const all = await Promise.all(replicas.map((r) => r.metrics()));
    why = all.some((s) => s.length === 0) ? 'metrics not served yet' : check(all);
    if (why === undefined) return all;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms: ${why}`);
    await sleep(500);
  }
}

/**
 * Every replica a live member of a ring of `count`, working on exactly the
 * buckets the split gives it, all buckets covered; caches synced and holding
 * every HardDisk exactly once between them (an informer whose ranges changed
 * stays synced while it lists its new share, so "synced" alone can be read
 * before a replica holds anything).
 */
function settled(ring: string, count: number, n: number) {
  return (all: Samples[]): string | undefined => {
    const held = all.reduce((a, s) => a + sum(s, 'kubeloop_informer_store_objects', { kind: HARDDISK_KIND }), 0);
    if (held !== n) return `the replicas hold ${held} of ${n} HardDisks`;
    let active = 0;
    for (const [i, s] of all.entries()) {
      const members = sum(s, 'kubeloop_shard_ring_members', { ring });
      const mine = sum(s, 'kubeloop_shard_ring_buckets', { ring, state: 'active' });
      const assigned = sum(s, 'kubeloop_shard_ring_buckets', { ring, state: 'assigned' });
      const draining = sum(s, 'kubeloop_shard_ring_buckets', { ring, state: 'draining' });
      if (members !== count) return `replica ${i} sees ${members} members`;
      if (mine !== assigned || draining > 0) return `replica ${i}: ${mine} active, ${assigned} assigned, ${draining} draining`;
      const synced = s.filter((x) => x.name === 'kubeloop_informer_synced');
      if (synced.length < 2 || synced.some((x) => x.value !== 1)) return `replica ${i}: caches not synced`;
      active += mine;
    }
    return active === BUCKETS ? undefined : `${active} of ${BUCKETS} buckets active`;
  };
}

/** Every work queue empty and no reconcile finished, for two polls 1 s apart. */
async function idle(replicas: readonly Replica[], timeoutMs: number): Promise<void> {
  let last = -1;
  let quiet = 0;
  await until(
    replicas,
    (all) => {
      const depth = all.reduce((a, s) => a + sum(s, 'workqueue_depth'), 0);
      const done = all.reduce((a, s) => a + sum(s, 'controller_runtime_reconcile_total'), 0);
      quiet = depth === 0 && done === last ? quiet + 1 : 0;
      last = done;
      return quiet >= 3 ? undefined : `queue depth ${depth}, ${done} reconciles`;
    },
    timeoutMs,
    'idle',
  );
}

// --- convergence, seen from a watch in this process --------------------------------------

const converged = (d: HardDisk): boolean => d.status?.phase === 'Bound' && d.status.observedGeneration !== undefined && d.status.observedGeneration === d.metadata?.generation;

// --- the run ---------------------------------------------------------------------------

interface Row {
  gate: 'on' | 'off';
  /** The operator's label (`--operators`); empty for the one shipped. */
  operator: string;
  replicas: number;
  perReplica: {
    steadyRss: number;
    growth: number;
    peakRss: number;
    /** CPU seconds the replica used from the first patch until the change was reconciled and its queues idle: the work the change cost, whatever the machine's load. */
    changeCpu: number;
    harddisks: number;
    configMaps: number;
    events: { harddisk: number; configMap: number };
    dropped: number;
  }[];
  patchMs: number;
  convergeMs: number;
  loadavg: number;
}

async function main(): Promise<void> {
  const N = Math.max(1, Number.parseInt(param('n', '300'), 10));
  const counts = param('replicas', '1,2,3').split(',').map(Number);
  const gates = param('gates', 'on').split(',') as ('on' | 'off')[];
  // As shipped: the file and node flags of scripts/dev.sh's `exec node ...` (the README's main job); SHARD_NODE_FLAGS replaces the flags.
  const devSh = /exec node (.*?)\s*(examples\/harddisk-operator\/dist\/[a-z]+\.js)/.exec(readFileSync(join(root, 'scripts', 'dev.sh'), 'utf8'));
  const nodeFlags = process.env['SHARD_NODE_FLAGS']?.split(' ').filter(Boolean) ?? devSh?.[1]?.split(' ').filter(Boolean) ?? [];
  const shipped = devSh?.[2] ?? 'examples/harddisk-operator/dist/main.js';
  const operators = parseOperators(param('operators', ''), shipped);
  const operator = operators.map((o) => (o.label ? `${o.label}=${o.file}` : o.file)).join(', ');
  const timeoutMs = 600_000 + N * 60;
  const rows: Row[] = [];
  /** Empty-replica RSS by gate and operator label (`on`, `on new`...). */
  const empty: Record<string, number> = {};
  const at = (gate: string, label: string): string => (label ? `${gate} ${label}` : gate);

  for (const gate of gates) {
    const env = createEnvironment({ crds: [join(root, 'examples', 'harddisk-operator', 'crd')], featureGates: { ShardedListAndWatch: gate === 'on' } });
    await env.start();
    const kubeconfig = env.kubeconfigPath;
    const command = (ring: string, file: string): string[] => [process.execPath, ...nodeFlags, resolve(root, file), '--kubeconfig', kubeconfig, '--no-sample', '--shard-ring', ring, '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'];
    const client: Client = createClient({ kubeConfig: env.kubeConfig, scheme: builtinScheme.extend(HardDisk), fieldOwner: 'bench-sharding', transportOptions: { qps: 0 } });
    const watcher = createInformerCache({ client, namespaces: [NAMESPACE] });
    let running: Replica[] = [];
    try {
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
      log(`gate ${gate}: control plane ready (kubeconfig ${kubeconfig})`);

      // The empty replica: a ring of one over no HardDisks (one per operator).
      for (const op of operators) {
        const ring = `empty-${gate}${op.label ? `-${op.label}` : ''}`;
        running = [spawnReplica(command(ring, op.file), 'the empty replica')];
        await until(running, settled(ring, 1, 0), timeoutMs, 'the empty replica settles');
        await idle(running, timeoutMs);
        await sleep(5000);
        empty[at(gate, op.label)] = procStatus(running[0]!.pid).rss;
        log(`gate ${at(gate, op.label)}: empty replica ${mib(empty[at(gate, op.label)]!)} MiB RSS`);
        await running[0]!.stop();
        running = [];
      }

      log(`gate ${gate}: creating ${N} HardDisks`);
      await pool(N, IN_FLIGHT, (i) =>
        client.create({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: `disk-${String(i).padStart(6, '0')}`, namespace: NAMESPACE }, spec: { size: `${10 + (i % 90)}Gi`, storageClass: i % 2 ? 'fast' : 'standard' } }),
      );
      const informer = await watcher.getInformer(HardDisk);
      const wanted = new Map<string, number>();
      let pending = new Set<string>();
      let convergedAt = 0;
      const look = (d: HardDisk): void => {
        const name = d.metadata?.name ?? '';
        if (pending.has(name) && converged(d) && (d.metadata?.generation ?? 0) >= (wanted.get(name) ?? 0)) {
          pending.delete(name);
          if (pending.size === 0) convergedAt = performance.now();
        }
      };
      informer.addEventHandler({ onAdd: (d) => look(d), onUpdate: (_, d) => look(d) });
      const all = async (): Promise<HardDisk[]> => (await watcher.list(HardDisk, { namespace: NAMESPACE })).items;

      for (const count of counts) for (const [opIndex, op] of operators.entries()) {
        const ring = `bench-${gate}-${count}${op.label ? `-${op.label}` : ''}`;
        running = Array.from({ length: count }, (_, i) => spawnReplica(command(ring, op.file), `replica ${i} of ${count}`));
        await until(running, settled(ring, count, N), timeoutMs, `${count} replicas settle`);
        // Every disk Bound at its generation (the first round reconciles them all), then quiet.
        const deadline = Date.now() + timeoutMs;
        while ((await all()).filter(converged).length < N) {
          if (Date.now() > deadline) throw new Error(`${count} replicas: not every HardDisk Bound within ${timeoutMs} ms`);
          await sleep(500);
        }
        await idle(running, timeoutMs);
        const ringNow = await until(running, settled(ring, count, N), timeoutMs, `${count} replicas still settled`);
        await sleep(5000);
        const steady = running.map((r) => procStatus(r.pid).rss);
        for (const r of running) writeFileSync(`/proc/${r.pid}/clear_refs`, '5');
        const before = await Promise.all(running.map((r) => r.metrics()));
        const cpuBefore = running.map((r) => cpuSeconds(r.pid));

        // The change: every disk's spec.size, one generation up.
        const disks = await all();
        pending = new Set(disks.map((d) => d.metadata!.name!));
        for (const d of disks) wanted.set(d.metadata!.name!, (d.metadata!.generation ?? 0) + 1);
        convergedAt = 0;
        const t0 = performance.now();
        await pool(disks.length, IN_FLIGHT, (i) => {
          const name = disks[i]!.metadata!.name!;
          // A size no earlier round wrote (each replica count and operator its own), so every patch is a change.
          return client.patch(HardDisk, { namespace: NAMESPACE, name }, mergePatch({ spec: { size: `${100 + (count * operators.length + opIndex) * 10 + (i % 7)}Gi` } }));
        });
        const patchMs = performance.now() - t0;
        for (const d of await all()) look(d);
        while (pending.size > 0) {
          if (performance.now() - t0 > timeoutMs) throw new Error(`${count} replicas: ${pending.size} HardDisks not converged within ${timeoutMs} ms`);
          await sleep(50);
        }
        const convergeMs = convergedAt - t0;
        await idle(running, timeoutMs);
        const after = await Promise.all(running.map((r) => r.metrics()));
        const cpuAfter = running.map((r) => cpuSeconds(r.pid));
        const row: Row = {
          gate,
          operator: op.label,
          replicas: count,
          perReplica: running.map((r, i) => {
            const delta = (kind: string): number => sum(after[i]!, 'kubeloop_informer_watch_events_total', { kind }) - sum(before[i]!, 'kubeloop_informer_watch_events_total', { kind });
            return {
              steadyRss: steady[i]!,
              growth: steady[i]! - empty[at(gate, op.label)]!,
              peakRss: procStatus(r.pid).hwm,
              changeCpu: cpuAfter[i]! - cpuBefore[i]!,
              harddisks: sum(ringNow[i]!, 'kubeloop_informer_store_objects', { kind: HARDDISK_KIND }),
              configMaps: sum(ringNow[i]!, 'kubeloop_informer_store_objects', { kind: CONFIGMAP_KIND }),
              events: { harddisk: delta(HARDDISK_KIND), configMap: delta(CONFIGMAP_KIND) },
              dropped: sum(after[i]!, 'kubeloop_informer_shard_dropped_total') - sum(before[i]!, 'kubeloop_informer_shard_dropped_total'),
            };
          }),
          patchMs,
          convergeMs,
          loadavg: loadavg()[0]!,
        };
        rows.push(row);
        log(
          `gate ${at(gate, op.label)}, ${count} replicas: converged in ${(convergeMs / 1000).toFixed(1)} s (patches written in ${(patchMs / 1000).toFixed(1)} s); per replica: ` +
            row.perReplica.map((p) => `${p.harddisks} disks, ${mib(p.steadyRss)} MiB (+${mib(p.growth)}), ${p.events.harddisk}+${p.events.configMap} events`).join('; ') +
            `; load ${row.loadavg.toFixed(1)}`,
        );
        await Promise.all(running.map((r) => r.stop()));
        running = [];
      }
    } finally {
      await Promise.all(running.map((r) => r.stop()));
      await watcher.stop();
      client.transport.close();
      await env.stop();
    }
  }

  // --- report ---
  const mean = (xs: readonly number[]): number => xs.reduce((a, x) => a + x, 0) / xs.length;
  const ratio = (x: number, one: number): string => (one > 0 ? `${(x / one).toFixed(2)}x` : '-');
  const out: string[] = [];
  out.push(`\nSharding: ${N} HardDisks (each owning a ConfigMap); replicas: ${operator} --shard-ring; node ${process.version} ${nodeFlags.join(' ')}; RSS from /proc, MiB; mean per replica (max in brackets)\n`);
  out.push('| gate | operator | replicas | disks held | ConfigMaps held | steady RSS | growth over empty | growth vs 1 | peak RSS in the change | HardDisk events | vs 1 | ConfigMap events | vs 1 | dropped here | CPU s in the change | converge s | vs 1 | patches s | load |');
  out.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const one = rows.find((o) => o.gate === r.gate && o.operator === r.operator && o.replicas === 1);
    const p = r.perReplica;
    const m = (pick: (x: Row['perReplica'][number]) => number): number => mean(p.map(pick));
    const mx = (pick: (x: Row['perReplica'][number]) => number): number => Math.max(...p.map(pick));
    const oneOf = (pick: (x: Row['perReplica'][number]) => number): number => (one ? mean(one.perReplica.map(pick)) : 0);
    out.push(
      `| ${r.gate} | ${r.operator || '-'} | ${r.replicas} | ${Math.round(m((x) => x.harddisks))} (${mx((x) => x.harddisks)}) | ${Math.round(m((x) => x.configMaps))} (${mx((x) => x.configMaps)}) | ${mib(m((x) => x.steadyRss))} (${mib(mx((x) => x.steadyRss))}) | ${mib(m((x) => x.growth))} (${mib(mx((x) => x.growth))}) | ${ratio(m((x) => x.growth), oneOf((x) => x.growth))} | ${mib(m((x) => x.peakRss))} | ${Math.round(m((x) => x.events.harddisk))} (${mx((x) => x.events.harddisk)}) | ${ratio(m((x) => x.events.harddisk), oneOf((x) => x.events.harddisk))} | ${Math.round(m((x) => x.events.configMap))} (${mx((x) => x.events.configMap)}) | ${ratio(m((x) => x.events.configMap), oneOf((x) => x.events.configMap))} | ${Math.round(m((x) => x.dropped))} | ${m((x) => x.changeCpu).toFixed(2)} (${mx((x) => x.changeCpu).toFixed(2)}) | ${(r.convergeMs / 1000).toFixed(1)} | ${one ? ratio(r.convergeMs, one.convergeMs) : '-'} | ${(r.patchMs / 1000).toFixed(1)} | ${r.loadavg.toFixed(1)} |`,
    );
  }
  out.push(`\nempty replica RSS: ${Object.entries(empty).map(([g, v]) => `gate ${g} ${mib(v)} MiB`).join(', ')}; events: received over the change (every HardDisk patched once), per kind; converge: from the first patch until every HardDisk's status observed its new generation.`);
  process.stdout.write(`${out.join('\n')}\n\n`);
  process.stdout.write(
    `${JSON.stringify({ bench: 'sharding', n: N, operator, node: process.version, nodeFlags, emptyRssMiB: Object.fromEntries(Object.entries(empty).map(([g, v]) => [g, mib(v)])), rows: rows.map((r) => ({ ...r, patchMs: Math.round(r.patchMs), convergeMs: Math.round(r.convergeMs), perReplica: r.perReplica.map((p) => ({ ...p, steadyRss: mib(p.steadyRss), growth: mib(p.growth), peakRss: mib(p.peakRss) })) })) })}\n`,
  );
}

await main();
