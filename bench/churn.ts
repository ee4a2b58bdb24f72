/**
 * Sustained churn on a real control plane: H HardDisks held, a writer changing R of them per second for M
 * minutes, and each operator in turn reconciling the stream, as shipped, side by side in one run:
 *
 * - shipped: the example operator as the README's scripts/dev.sh runs it (its entry and node flags read
 *   from that script: the bundle, `--max-semi-space-size=1 --no-opt --no-maglev`);
 * - v8-defaults: the same bundle with no node flags (V8's optimizing compilers on, its default young
 *   generation);
 * - controller-runtime: the example's operator written with controller-runtime v0.25.3
 *   (support/controller-runtime, `--mode=harddisk`: For HardDisk with GenerationChangedPredicate, Owns
 *   ConfigMap, the finalizer, CreateOrUpdate, events.k8s.io events, a status patch when something changed).
 *
 * The driver (this process, its own unthrottled client straight to the API server) creates the H disks
 * once; the first operator converges them (its time is logged, not compared). Each operator then starts
 * over the H converged disks, and once its queue is empty and its CPU idle the writer changes one disk
 * every 1/R s (a merge patch of `spec.size`, each write a different disk, round robin, so no write is
 * coalesced with another; at most 256 in flight), for M minutes. A write's latency is from just before its
 * request to the driver's watch seeing the disk's `status.observedGeneration` reach the generation the
 * write made: the operator's watch, queue, reconcile (the ConfigMap updated, an event, the status patch)
 * and the status back through a watch. Sampled every 5 s: the operator's CPU (user + system, /proc), RSS and
 * RssAnon (anonymous: heaps and malloc; RSS also counts the binary's file pages), and its work queue depth
 * (`workqueue_depth` from its /metrics: controller-runtime's name, served by both). After the last write the
 * driver waits up to 120 s for every write to be observed (the drain).
 *
 * Prints a table per operator (latency p50/p90/p99/max, CPU, CPU per 1,000 writes, RSS and RssAnon mean and
 * peak, queue depth peak, writes behind schedule), the figures per minute, then one JSON line.
 *
 *   pnpm bench:churn                                   H = 10000, R = 100/s, M = 5, the three operators
 *   pnpm bench:churn --held=1000 --rate=50 --minutes=1 --only=shipped,controller-runtime
 *   pnpm bench:churn --rounds=2                        each operator twice, the order reversed in round 2
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Informer, clientListWatcher } from '@kubeloop/cache';
import { createClient, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import { builtinScheme } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { HardDisk } from '@kubeloop/example-harddisk-operator';
import { buildControllerRuntime, cpuMsOf, freePort, metricsOf, mib, pool, procStatus, sleep, startProcess } from './support/processes.ts';
import type { ProcessSpec, Running } from './support/processes.ts';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const NAMESPACE = 'bench-churn';
const MAX_IN_FLIGHT = 256;
const SAMPLE_MS = 5000;
const DRAIN_MS = 120_000;

function param(name: string, fallback: string): string {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
}
const started = Date.now();
const log = (line: string): void => void process.stderr.write(`[bench:churn +${((Date.now() - started) / 1000).toFixed(0)}s] ${line}\n`);

/** What the driver reads of a disk. */
type Disk = KubeObject & { status?: { observedGeneration?: number; phase?: string } };

interface Sample {
  /** Seconds since the churn began. */
  readonly at: number;
  readonly cpuMs: number;
  readonly rss: number;
  readonly anon: number;
  readonly depth: number | undefined;
}

interface Result {
  readonly operator: string;
  readonly round: number;
  readonly writes: number;
  readonly observed: number;
  /** Reconciles from the first write to the end of the drain (`controller_runtime_reconcile_total`, both serve it): fewer than writes when a disk changed again while queued. */
  readonly reconciles: number | undefined;
  /** Latencies of the observed writes, ms, in the order they were observed. */
  readonly latencies: readonly { readonly sentAt: number; readonly ms: number }[];
  readonly cpuMs: number;
  readonly samples: readonly Sample[];
  /** Largest lag of a write behind its schedule, ms (the writer could not keep the rate: the server was slow). */
  readonly maxLagMs: number;
  readonly drainMs: number;
  readonly peakRss: number;
  readonly churnMs: number;
}

const quantile = (sorted: readonly number[], q: number): number => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);

async function main(): Promise<void> {
  const held = Number(param('held', '10000'));
  const rate = Number(param('rate', '100'));
  const minutes = Number(param('minutes', '5'));
  const rounds = Number(param('rounds', '1'));
  const only = param('only', 'shipped,v8-defaults,controller-runtime').split(',');

  // As shipped: the node flags and entry of scripts/dev.sh's `exec node ... operator.js` (the README's main job).
  const devSh = /exec node (.*?)\s*(examples\/harddisk-operator\/dist\/[a-z]+\.js)/.exec(readFileSync(join(root, 'scripts', 'dev.sh'), 'utf8'));
  if (!devSh) throw new Error('scripts/dev.sh no longer runs `exec node <flags> examples/harddisk-operator/dist/<entry>.js`: read the shipped flags from where they are now');
  const shippedFlags = devSh[1]!.split(' ').filter(Boolean);
  const entry = join(root, devSh[2]!);

  const tmp = mkdtempSync(join(here, '.tmp-churn-'));
  const controllerRuntime = only.includes('controller-runtime') ? buildControllerRuntime(tmp, log) : undefined;
  const env = createEnvironment({ crds: [join(root, 'examples', 'harddisk-operator', 'crd')] });
  await env.start();
  const kubeconfig = env.kubeconfigPath;
  const operatorArgs = ['--kubeconfig', kubeconfig, '--no-sample', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'];
  const exampleSynced = (l: Record<string, unknown>): boolean => l['msg'] === 'caches synced; starting workers';
  const specs = async (name: string): Promise<ProcessSpec | undefined> => {
    switch (name) {
      case 'shipped':
        return { name, command: [process.execPath, ...shippedFlags, entry, ...operatorArgs], synced: exampleSynced, keepLines: 200 };
      case 'v8-defaults':
        return { name, command: [process.execPath, entry, ...operatorArgs], synced: exampleSynced, keepLines: 200 };
      case 'controller-runtime': {
        if (!controllerRuntime) return undefined;
        const port = await freePort();
        return { name, command: [controllerRuntime, '--kubeconfig', kubeconfig, '--mode=harddisk', `--metrics-bind-address=127.0.0.1:${port}`], synced: (l) => l['synced'] !== undefined, metricsUrl: `http://127.0.0.1:${port}`, keepLines: 200 };
      }
      default:
        throw new Error(`--only: unknown operator ${JSON.stringify(name)} (shipped, v8-defaults, controller-runtime)`);
    }
  };

  const driver: Client = createClient({ kubeConfig: env.kubeConfig, scheme: builtinScheme.extend(HardDisk), fieldOwner: 'bench-churn' });
  await driver.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  const name = (i: number): string => `disk-${String(i).padStart(6, '0')}`;
  const sizeOf = (i: number, version: number): string => `${10 + ((i + version) % 90)}Gi`;
  log(`creating ${held} HardDisks`);
  await pool(held, 32, (i) => driver.create({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: name(i), namespace: NAMESPACE }, spec: { size: sizeOf(i, 0), storageClass: i % 2 ? 'fast' : 'standard' } }));

  // The driver's view: its own informer of the disks; a write is observed when its generation is.
  const disks = new Informer<KubeObject>([{ lw: clientListWatcher(driver, HardDisk, { namespace: NAMESPACE }), namespace: NAMESPACE }], { unsafeDisableDeepFreeze: true });
  const pending = new Map<string, { generation: number; sentAt: number }[]>();
  let onObserved: (sentAt: number, ms: number) => void = () => undefined;
  const settle = (object: KubeObject): void => {
    const disk = object as Disk;
    const name = disk.metadata?.name ?? '';
    const waiting = pending.get(name);
    const observed = disk.status?.observedGeneration;
    if (!waiting || observed === undefined) return;
    const now = performance.now();
    const left = waiting.filter((w) => {
      if (w.generation > observed) return true;
      onObserved(w.sentAt, now - w.sentAt);
      return false;
    });
    if (left.length === 0) pending.delete(name);
    else pending.set(name, left);
  };
  disks.addEventHandler({ onAdd: settle, onUpdate: (_old, disk) => settle(disk) });
  disks.start();
  await disks.waitForSync();
  const converged = (): number => {
    let n = 0;
    for (const o of disks.store.values()) {
      const d = o as Disk;
      if (d.status?.phase === 'Bound' && d.status.observedGeneration === d.metadata?.generation) n++;
    }
    return n;
  };

  // Writes go round robin over the disks, across operators: the k-th write of disk i sets sizeOf(i, k), a size it did not have just before.
  let writeIndex = 0;
  const results: Result[] = [];
  let first = true;
  for (let round = 0; round < rounds; round++) {
    for (const operator of round % 2 ? [...only].reverse() : only) {
      const spec = await specs(operator);
      if (!spec) continue;
      const p = startProcess(spec);
      try {
        await p.waitFor(spec.synced, 1, 600_000);
        const t0 = performance.now();
        while (converged() < held) {
          if (performance.now() - t0 > 1_800_000) throw new Error(`${operator}: ${converged()} of ${held} disks converged after 30 minutes`);
          await sleep(1000);
        }
        if (first) log(`${operator} converged the ${held} new disks in ${((performance.now() - t0) / 1000).toFixed(1)} s (from synced)`);
        first = false;
        await quiet(p);
        results.push(await churn(p, round));
        const r = results.at(-1)!;
        const sorted = r.latencies.map((l) => l.ms).sort((a, b) => a - b);
        log(`${operator}: ${r.writes} writes, ${r.observed} observed; latency p50 ${quantile(sorted, 0.5).toFixed(0)} ms, p99 ${quantile(sorted, 0.99).toFixed(0)} ms; CPU ${(r.cpuMs / 1000).toFixed(1)} s`);
      } finally {
        await p.stop();
      }
    }
  }
  await disks.stop();
  await env.stop();
  rmSync(tmp, { recursive: true, force: true });
  report(results, { held, rate, minutes, shippedFlags });

  /** Until the operator's queue is empty and its CPU idle (under 5 % for 3 s running). */
  async function quiet(p: Running): Promise<void> {
    const pid = p.proc.pid!;
    let calm = 0;
    let last = cpuMsOf(pid);
    const deadline = performance.now() + 600_000;
    while (calm < 3) {
      if (performance.now() > deadline) throw new Error(`${p.spec.name}: never went quiet after syncing`);
      await sleep(1000);
      const now = cpuMsOf(pid);
      const depth = (await metricsOf(p).catch(() => undefined))?.get('workqueue_depth');
      calm = now - last < 50 && (depth ?? 0) === 0 ? calm + 1 : 0;
      last = now;
    }
  }

  async function churn(p: Running, round: number): Promise<Result> {
    const pid = p.proc.pid!;
    const latencies: { sentAt: number; ms: number }[] = [];
    onObserved = (sentAt, ms) => latencies.push({ sentAt, ms });
    const total = Math.round(rate * minutes * 60);
    const samples: Sample[] = [];
    const before = await metricsOf(p).catch(() => undefined);
    const cpu0 = cpuMsOf(pid);
    const t0 = performance.now();
    let peakRss = 0;
    let sampling: Promise<void> = Promise.resolve();
    const sampler = setInterval(() => {
      sampling = (async () => {
        const at = (performance.now() - t0) / 1000;
        const status = procStatus(pid);
        const cpuMs = cpuMsOf(pid) - cpu0;
        peakRss = Math.max(peakRss, status.rss);
        const depth = (await metricsOf(p).catch(() => undefined))?.get('workqueue_depth');
        samples.push({ at, cpuMs, rss: status.rss, anon: status.anon, depth });
      })();
    }, SAMPLE_MS);
    let inFlight = 0;
    let maxLagMs = 0;
    const sends: Promise<void>[] = [];
    try {
      for (let i = 0; i < total; i++) {
        const due = t0 + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 1) await sleep(wait);
        while (inFlight >= MAX_IN_FLIGHT) await sleep(1);
        maxLagMs = Math.max(maxLagMs, performance.now() - due);
        const index = writeIndex % held;
        const size = sizeOf(index, Math.floor(writeIndex / held) + 1);
        writeIndex++;
        const disk = name(index);
        const sentAt = performance.now();
        inFlight++;
        sends.push(
          driver
            .patch(HardDisk, { name: disk, namespace: NAMESPACE }, mergePatch({ spec: { size } }))
            .then((written) => {
              const generation = written.metadata?.generation ?? 0;
              pending.set(disk, [...(pending.get(disk) ?? []), { generation, sentAt }]);
              const seen = disks.store.get(`${NAMESPACE}/${disk}`);
              if (seen) settle(seen);
            })
            .finally(() => inFlight--),
        );
      }
      await Promise.all(sends);
      const churnMs = performance.now() - t0;
      const drainStart = performance.now();
      while (pending.size > 0 && performance.now() - drainStart < DRAIN_MS) await sleep(50);
      const drainMs = performance.now() - drainStart;
      const cpuMs = cpuMsOf(pid) - cpu0;
      const after = await metricsOf(p).catch(() => undefined);
      const delta = (series: string): number | undefined => {
        const a = after?.get(series);
        return a === undefined ? undefined : a - (before?.get(series) ?? 0);
      };
      const reconciles = delta('controller_runtime_reconcile_total');
      // What the reconciles spent (controller-runtime's histogram, both serve it) and, for kubeloop, its cached
      // reads that waited for its own writes (read-your-writes), by outcome.
      const reconcileSeconds = delta('controller_runtime_reconcile_time_seconds_sum');
      const waits = [...(after?.keys() ?? [])].filter((k) => k.startsWith('kubeloop_client_read_your_writes_total{'));
      log(
        `${p.spec.name}: ${reconciles ?? '?'} reconciles, ${reconcileSeconds !== undefined && reconciles ? ((reconcileSeconds / reconciles) * 1000).toFixed(2) : '?'} ms each on average; ` +
          `read-your-writes waits ${delta('kubeloop_client_read_your_writes_wait_seconds_count') ?? '-'} (${delta('kubeloop_client_read_your_writes_wait_seconds_sum')?.toFixed(1) ?? '-'} s): ` +
          (waits.map((k) => `${k.slice(k.indexOf('{'))} ${delta(k)}`).join(', ') || 'none') +
          `; GC (node's default metrics) ` +
          ([...(after?.keys() ?? [])]
            .filter((k) => k.startsWith('nodejs_gc_duration_seconds_sum{'))
            .map((k) => `${k.slice(k.indexOf('{'))} ${delta(k)?.toFixed(2)} s in ${delta(k.replace('_sum{', '_count{'))}`)
            .join(', ') || 'not served'),
      );
      const unobserved = [...pending.values()].reduce((n, w) => n + w.length, 0);
      pending.clear();
      return { operator: p.spec.name, round, writes: total, observed: total - unobserved, reconciles, latencies, cpuMs, samples, maxLagMs, drainMs, peakRss: Math.max(peakRss, procStatus(pid).hwm), churnMs };
    } finally {
      clearInterval(sampler);
      await sampling;
    }
  }
}

function report(results: readonly Result[], run: { held: number; rate: number; minutes: number; shippedFlags: readonly string[] }): void {
  const out: string[] = [];
  out.push(`\nchurn: ${run.held} HardDisks held, ${run.rate} writes/s for ${run.minutes} min; node ${process.version}; shipped flags: ${run.shippedFlags.join(' ')}`);
  out.push('| operator | round | writes | observed | latency p50 ms | p90 | p99 | max | reconciles | CPU s | CPU ms / 1,000 writes | CPU ms / reconcile | RSS mean / peak MiB | RssAnon mean MiB | queue depth max | writer lag max ms | drain s |');
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  const figures = results.map((r) => {
    const sorted = r.latencies.map((l) => l.ms).sort((a, b) => a - b);
    const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    const depths = r.samples.map((s) => s.depth).filter((d): d is number => d !== undefined);
    const f = {
      operator: r.operator,
      round: r.round,
      writes: r.writes,
      observed: r.observed,
      p50: quantile(sorted, 0.5),
      p90: quantile(sorted, 0.9),
      p99: quantile(sorted, 0.99),
      max: sorted.at(-1) ?? NaN,
      cpuS: r.cpuMs / 1000,
      reconciles: r.reconciles,
      cpuPerThousand: (r.cpuMs / r.writes) * 1000,
      cpuPerReconcile: r.reconciles ? r.cpuMs / r.reconciles : undefined,
      rssMean: mib(mean(r.samples.map((s) => s.rss)))!,
      rssPeak: mib(r.peakRss)!,
      anonMean: mib(mean(r.samples.map((s) => s.anon)))!,
      depthMax: depths.length ? Math.max(...depths) : undefined,
      maxLagMs: r.maxLagMs,
      drainS: r.drainMs / 1000,
    };
    out.push(`| ${f.operator} | ${f.round + 1} | ${f.writes} | ${f.observed} | ${f.p50.toFixed(0)} | ${f.p90.toFixed(0)} | ${f.p99.toFixed(0)} | ${f.max.toFixed(0)} | ${f.reconciles ?? '-'} | ${f.cpuS.toFixed(1)} | ${f.cpuPerThousand.toFixed(0)} | ${f.cpuPerReconcile?.toFixed(2) ?? '-'} | ${f.rssMean} / ${f.rssPeak} | ${f.anonMean} | ${f.depthMax ?? '-'} | ${f.maxLagMs.toFixed(0)} | ${f.drainS.toFixed(1)} |`);
    return f;
  });
  out.push('\nper minute: latency p50 / p99 ms of the writes sent in that minute; CPU s used in it; RSS and RssAnon MiB and queue depth at its last sample');
  out.push('| operator | round | minute | p50 | p99 | CPU s | RSS | RssAnon | depth |');
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    const t0 = r.latencies.length ? Math.min(...r.latencies.map((l) => l.sentAt)) : 0;
    // The minutes of the churn, then those of the drain (no write sent in them: no latency).
    for (let m = 0; m * 60_000 < r.churnMs + r.drainMs; m++) {
      const inMinute = r.latencies.filter((l) => l.sentAt - t0 >= m * 60_000 && l.sentAt - t0 < (m + 1) * 60_000).map((l) => l.ms).sort((a, b) => a - b);
      const samples = r.samples.filter((s) => s.at < (m + 1) * 60);
      const last = samples.at(-1);
      const before = r.samples.filter((s) => s.at < m * 60).at(-1);
      const latency = inMinute.length ? `${quantile(inMinute, 0.5).toFixed(0)} | ${quantile(inMinute, 0.99).toFixed(0)}` : '- | -';
      out.push(`| ${r.operator} | ${r.round + 1} | ${m + 1}${inMinute.length ? '' : ' (drain)'} | ${latency} | ${(((last?.cpuMs ?? 0) - (before?.cpuMs ?? 0)) / 1000).toFixed(1)} | ${mib(last?.rss)} | ${mib(last?.anon)} | ${last?.depth ?? '-'} |`);
    }
  }
  process.stdout.write(out.join('\n') + '\n');
  process.stdout.write(JSON.stringify({ bench: 'churn', ...run, results: figures }) + '\n');
}

await main();
