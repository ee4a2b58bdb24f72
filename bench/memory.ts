/**
 * Memory on a real control plane: what an operator process holds, as
 * shipped, against N cached ConfigMaps, next to a no-framework floor in the
 * same run. Each process runs alone, in turn, started fresh per size:
 *
 * - floor: a plain script holding every ConfigMap from one LIST + a watch
 *   (support/memory-floor.ts: node:https and JSON.parse, nothing else);
 * - cache (WatchList) / cache (LIST): kubeloop's client and informer cache
 *   alone (support/memory-cache.ts), the initial state streamed or listed
 *   in pages, to compare sync time and peak RSS both ways;
 * - cache-no-intern (only when named in --only): the cache with WatchList
 *   and `internStrings: false`, to see what interning saves per object;
 * - example: the example operator as the README's scripts/dev.sh runs it (its
 *   entry and node flags read from that script) on an existing cluster (`--no-sample`; its controller owns ConfigMaps,
 *   so it caches every one);
 * - scaffold: a project made by create-kubeloop, built by its own `build`
 *   script (tsc, then rolldown: dist/operator.js), run as its Dockerfile's
 *   ENTRYPOINT runs it (`NODE_ENV=production node <flags> dist/operator.js`,
 *   entry and flags read from the Dockerfile; its Website controller owns
 *   ConfigMaps too);
 * - controller-runtime: a Go manager with one controller owning ConfigMaps
 *   (support/controller-runtime, controller-runtime v0.25.3, managedFields
 *   stripped as kubeloop's cache strips them), built with `go build` when Go
 *   is on PATH (the first build downloads modules and takes minutes), left
 *   out with a note otherwise: the same-run reference the ratios are against.
 * - controller-runtime-harddisk (HardDisk phase only): the same Go program
 *   with `--mode=harddisk`, the example's HardDisk operator written with
 *   controller-runtime (support/controller-runtime/harddisk.go: For
 *   HardDisk, Owns ConfigMap, the finalizer, status, events.k8s.io events,
 *   managedFields stripped), holding the same HardDisks reconciled to Bound
 *   and checked the same way: the same-run reference of the example's row;
 *   its "heap" is Go's (HeapAlloc / HeapSys - HeapReleased, on SIGUSR2).
 *
 * For each: the time from spawn to synced, the peak RSS up to then (VmHWM),
 * RSS 5 s later (steady state, no forced GC: what a pod limit sees), the V8
 * heap where the process reports it, and the peak RSS during a relist
 * (etcd compacted, the API server restarted: every watch resumes from a
 * compacted resourceVersion, gets 410 and relists). Then the example
 * operator (and controller-runtime-harddisk when named in --only) holding H
 * HardDisks it reconciled to Bound (the issue's 1,000 HardDisk figure), each
 * with its ratio to controller-runtime's and its RSS 5 s after synced, before
 * the disks are created; its RSS and heap are read --settle seconds (30)
 * after the last disk is Bound, its peak is the whole run's VmHWM, and its
 * CPU time (user + system, /proc/<pid>/stat) from the first create to all
 * Bound is given per round. Prints tables, then one JSON line.
 *
 *   pnpm bench:memory                              sizes 0,1000,10000; 1,000 HardDisks
 *   pnpm bench:memory --sizes=0,1000 --harddisks=0
 *   pnpm bench:memory --sizes=100000 --only=floor,example
 *   pnpm bench:memory --sizes=0,10000,100000 --only=controller-runtime,cache-watchlist,cache-list,example --harddisks=0
 *   pnpm bench:memory --sizes=0 --harddisks=1000 --only=example,controller-runtime-harddisk --relist=false --harddisk-rounds=2
 *       (the example and controller-runtime holding 1,000 HardDisks, two rounds, interleaved)
 *   EXAMPLE_NODE_FLAGS= SCAFFOLD_NODE_FLAGS= pnpm bench:memory --sizes=0,1000   (without the shipped node flags)
 *   EXAMPLE_VARIANTS='unbundled|examples/harddisk-operator/dist/main.js|--max-semi-space-size=1' pnpm bench:memory --sizes=0 --harddisk-rounds=2
 *       (the HardDisk phase for the shipped example and each variant, "label|entry|node flags|VAR=value …" with `;` between, interleaved)
 *   pnpm bench:memory ... --warmup=0             (no untimed warm-up round of 200 disks before the timed HardDisk rounds)
 *   pnpm bench:memory --sizes=0 --harddisks=1000 --only=example --settle=5 --hold=120
 *       (memory read 5 s after the last disk is Bound instead of 30; each operator then kept 120 s, its pid logged)
 *   pnpm bench:memory --sizes=0 --harddisks=1000 --only=example --relist=false --hold=90 --smaps --restart
 *       (--smaps: each HardDisk operator's /proc/<pid>/smaps grouped by what backs it (support/smaps.ts), read after
 *       the hold; --restart: then a fresh process of the same variant started over the Bound disks, its RSS read
 *       --settle seconds after it synced: the disks without the burst of writes that reconciled them)
 *   pnpm bench:memory --sizes=0 --harddisks=1000 --only=example --relist=false --harddisk-rounds=2 --collect
 *       (--collect: each HardDisk operator started with --inspect-port=127.0.0.1:<free port>; once its figures are
 *       read (and --hold and --smaps are done) its inspector opened with SIGUSR1 and, through it, an ordinary full
 *       collection and then V8's last-resort one forced, RSS, anon, V8's heap pages and heapTotal read before,
 *       once attached, and after each (support/collections.ts): what the burst leaves that a collection returns)
 *   BENCH_TEE=/tmp/operator.log EXAMPLE_NODE_FLAGS="--max-semi-space-size=1 --no-opt --no-maglev --trace-gc --trace-memory-reducer" pnpm bench:memory ...
 *       (every operator's stdout appended to a file: here V8's collections and memory reducer)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import { ConfigMap, builtinScheme } from '@kubeloop/scheme';
import { HardDisk } from '@kubeloop/example-harddisk-operator';
import { createProject } from 'create-kubeloop';
import { compactEtcd } from '../packages/cache/test/fault-support.ts';
import { COLLECTION_STEPS, forceCollections } from './support/collections.ts';
import type { CollectionReading } from './support/collections.ts';
import { buildControllerRuntime, compileScripts, cpuMsOf, freePort, metricsOf, mib, pool, procStatus, resetPeak, sleep, startProcess } from './support/processes.ts';
import type { ProcessSpec, Running } from './support/processes.ts';
import { SMAPS_GROUPS, smapsGroups } from './support/smaps.ts';
import type { SmapsGroup } from './support/smaps.ts';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const NAMESPACE = 'bench-memory';
const IN_FLIGHT = 16;

function param(name: string, fallback: string): string {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
}
/** A boolean option: `--name` or `--name=true`. */
const flag = (name: string): boolean => process.argv.includes(`--${name}`) || param(name, 'false') === 'true';
const started = Date.now();
const log = (line: string): void => void process.stderr.write(`[bench:memory +${((Date.now() - started) / 1000).toFixed(0)}s] ${line}\n`);

// --- the processes -----------------------------------------------------------------

interface Spec extends ProcessSpec {
  /** Reports memory on SIGUSR2 (the bench's own scripts, and controller-runtime-harddisk: its Go heap). */
  readonly reportsMemory?: boolean;
  /** Says when it relisted: a `relisted` line, or (operators) its metrics. */
  readonly relisted?: (p: Running) => Promise<boolean>;
}

/** The heap a process reports: on SIGUSR2 (reportsMemory), else node's default metrics (an operator's /metrics). */
async function heapOf(spec: Spec, p: Running): Promise<Pick<Figures, 'heapUsed' | 'heapTotal' | 'newSpace'>> {
  if (spec.reportsMemory) {
    const before = p.lines.length;
    p.proc.kill('SIGUSR2');
    const line = await p.waitFor((l) => l['memory'] !== undefined && p.lines.indexOf(l) >= before, 1, 10_000);
    const m = line['memory'] as { heapUsed: number; heapTotal: number; newSpace?: number };
    return { heapUsed: m.heapUsed, heapTotal: m.heapTotal, newSpace: m.newSpace };
  }
  const metrics = await metricsOf(p).catch(() => undefined);
  return { heapUsed: metrics?.get('nodejs_heap_size_used_bytes'), heapTotal: metrics?.get('nodejs_heap_size_total_bytes'), newSpace: metrics?.get('nodejs_heap_space_size_total_bytes{space="new"}') };
}

interface Figures {
  syncMs: number;
  peakSync: number;
  steady: number;
  /** Steady RSS: anonymous and file-backed. */
  anon?: number | undefined;
  file?: number | undefined;
  /** V8's committed new (young) space and all its other spaces, at steady state. */
  newSpace?: number | undefined;
  heapUsed?: number | undefined;
  heapTotal?: number | undefined;
  relistPeak?: number | undefined;
  relistMs?: number | undefined;
  /** HardDisk phase: RSS 5 s after synced, before any disk is created. */
  idle?: number | undefined;
  /** HardDisk phase: the operator's CPU time (user + system) from the first create to all Bound, ms. */
  cpuMs?: number | undefined;
  /** HardDisk phase (--smaps): its resident memory by what backs it (support/smaps.ts), bytes, read after --hold. */
  smaps?: { total: number; groups: Record<SmapsGroup, number> } | undefined;
  /** HardDisk phase (--restart): RSS, anon and file of a fresh process of the same variant started over the Bound disks, --settle seconds after synced. */
  restarted?: { rss: number; anon: number; file: number } | undefined;
  /** HardDisk phase (--collect): RSS, anon, V8's heap pages and heap before and after forced full collections (support/collections.ts). */
  collections?: CollectionReading[] | undefined;
}

async function measure(spec: Spec, envRelist: (() => Promise<void>) | undefined, timeoutMs: number): Promise<Figures> {
  const p = startProcess(spec);
  try {
    const pid = p.proc.pid!;
    await p.waitFor(spec.synced, spec.syncLines ?? 1, timeoutMs);
    const syncMs = performance.now() - p.startedAt;
    const peakSync = procStatus(pid).hwm;
    await sleep(5000);
    const status = procStatus(pid);
    const figures: Figures = { syncMs, peakSync, steady: status.rss, anon: status.anon, file: status.file, ...(await heapOf(spec, p)) };
    if (envRelist && spec.relisted) {
      resetPeak(pid);
      const t0 = performance.now();
      await envRelist();
      const deadline = Date.now() + timeoutMs;
      while (!(await spec.relisted(p).catch(() => false))) {
        if (Date.now() > deadline) throw new Error(`${spec.name}: no relist after the compaction and restart`);
        await sleep(100);
      }
      await sleep(1000);
      figures.relistPeak = procStatus(pid).hwm;
      figures.relistMs = performance.now() - t0;
    }
    return figures;
  } finally {
    await p.stop();
  }
}

// --- the scaffolded operator -----------------------------------------------------------

/**
 * A new create-kubeloop project under bench/ (so its @kubeloop/* imports resolve to this workspace), built
 * by its own `build` script, with the tsc and rolldown of this package's node_modules/.bin on PATH.
 */
async function buildScaffold(): Promise<string> {
  const parent = mkdtempSync(join(here, '.tmp-memory-scaffold-'));
  const { directory } = await createProject({ name: 'memory-demo', cwd: parent });
  const { scripts } = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { scripts: { build: string } };
  const built = spawnSync('sh', ['-c', scripts.build], { cwd: directory, encoding: 'utf8', env: { ...process.env, PATH: `${join(here, 'node_modules', '.bin')}:${process.env['PATH'] ?? ''}` } });
  if (built.error || built.status !== 0) throw new Error(`the scaffold's build (${scripts.build}) failed: ${built.error?.message ?? `${built.stdout}${built.stderr}`}`);
  return directory;
}

// --- the run ---------------------------------------------------------------------------

interface Row {
  readonly process: string;
  readonly objects: number;
  readonly figures: Figures;
}

async function main(): Promise<void> {
  const sizes = param('sizes', '0,1000,10000').split(',').map(Number);
  const harddisks = Number(param('harddisks', '1000'));
  const only = param('only', 'controller-runtime,floor,cache-watchlist,cache-list,example,scaffold').split(',');
  const relist = param('relist', 'true') !== 'false';
  // As shipped: the node flags of scripts/dev.sh's `exec node ... main.js` (the README's main job) and of
  // the scaffold Dockerfile's ENTRYPOINT; EXAMPLE_NODE_FLAGS / SCAFFOLD_NODE_FLAGS replace them.
  const devSh = /exec node (.*?)\s*(examples\/harddisk-operator\/dist\/[a-z]+\.js)/.exec(readFileSync(join(root, 'scripts', 'dev.sh'), 'utf8'));
  const devFlags = devSh?.[1]?.split(' ').filter(Boolean) ?? [];
  const exampleMain = join(root, devSh?.[2] ?? 'examples/harddisk-operator/dist/main.js');
  const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(readFileSync(join(root, 'packages', 'create-kubeloop', 'templates', 'Dockerfile'), 'utf8'))?.[1] ?? '[]') as string[];
  const flags = (name: string, shipped: string[]): string[] => (process.env[name]?.split(' ').filter(Boolean) ?? shipped);
  const exampleFlags = flags('EXAMPLE_NODE_FLAGS', devFlags);
  // ["node", ...flags, entry]: the image runs the file the ENTRYPOINT names last.
  const scaffoldEntry = entrypoint.at(-1) ?? 'dist/operator.js';
  const scaffoldFlags = flags('SCAFFOLD_NODE_FLAGS', entrypoint.slice(1, -1));

  const scaffold = only.includes('scaffold') ? await buildScaffold() : undefined;
  const scripts = compileScripts(['memory-floor.ts', 'memory-cache.ts'], '.tmp-memory-scripts-');
  const controllerRuntime = only.some((o) => o.startsWith('controller-runtime')) ? buildControllerRuntime(dirname(scripts.get('memory-floor.ts')!), log) : undefined;
  const env = createEnvironment({ crds: [join(root, 'examples', 'harddisk-operator', 'crd'), ...(scaffold ? [join(scaffold, 'config', 'crd')] : [])] });
  await env.start();
  log(`control plane ready; ${scaffold ? `scaffold built in ${scaffold}` : 'no scaffold'}`);
  const kubeconfig = env.kubeconfigPath;
  const driver: Client = createClient({ kubeConfig: env.kubeConfig, scheme: builtinScheme.extend(HardDisk), fieldOwner: 'bench-memory' });
  await driver.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  // The floor's TLS material, as PEM text, from the admin kubeconfig envtest wrote.
  const kc = env.kubeConfig;
  const user = kc.getCurrentUser()!;
  const cluster = kc.getCurrentCluster()!;
  const pem = (data: string | undefined, file: string | undefined): string => (data ? Buffer.from(data, 'base64').toString() : readFileSync(file!, 'utf8'));
  const floorEnv = {
    FLOOR_SERVER: cluster.server,
    FLOOR_CA: pem(cluster.caData, cluster.caFile),
    FLOOR_CERT: pem(user.certData, user.certFile),
    FLOOR_KEY: pem(user.keyData, user.keyFile),
  };

  const relistLine = (p: Running): Promise<boolean> => Promise.resolve(p.lines.some((l) => l['relisted'] !== undefined));
  const relistMetric = async (p: Running): Promise<boolean> => ((await metricsOf(p))?.get('kubeloop_informer_relists_total') ?? 0) > 0;
  const all: Spec[] = [
    ...(controllerRuntime ? [{ name: 'controller-runtime', command: [controllerRuntime, '--kubeconfig', kubeconfig], synced: (l: Record<string, unknown>) => l['synced'] !== undefined, relisted: relistLine } satisfies Spec] : []),
    { name: 'floor', command: [process.execPath, scripts.get('memory-floor.ts')!], env: floorEnv, synced: (l) => l['synced'] !== undefined, reportsMemory: true, relisted: relistLine },
    { name: 'cache-watchlist', command: [process.execPath, scripts.get('memory-cache.ts')!, kubeconfig, 'true'], synced: (l) => l['synced'] !== undefined, reportsMemory: true, relisted: relistLine },
    { name: 'cache-list', command: [process.execPath, scripts.get('memory-cache.ts')!, kubeconfig, 'false'], synced: (l) => l['synced'] !== undefined, reportsMemory: true, relisted: relistLine },
    { name: 'cache-no-intern', command: [process.execPath, scripts.get('memory-cache.ts')!, kubeconfig, 'true', 'false'], synced: (l) => l['synced'] !== undefined, reportsMemory: true, relisted: relistLine },
    {
      name: 'example',
      command: [process.execPath, ...exampleFlags, exampleMain, '--kubeconfig', kubeconfig, '--no-sample', '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'],
      synced: (l) => l['msg'] === 'caches synced; starting workers',
      relisted: relistMetric,
    },
    ...(scaffold
      ? [
          {
            name: 'scaffold',
            cwd: scaffold,
            env: { NODE_ENV: 'production' },
            command: [process.execPath, ...scaffoldFlags, scaffoldEntry, '--kubeconfig', kubeconfig, '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'],
            synced: (l: Record<string, unknown>) => l['msg'] === 'caches synced; starting workers',
            // Its /metrics is HTTPS behind TokenReview: wait for the relist a fixed while instead.
            relisted: async (p: Running) => performance.now() - p.startedAt > 0 && (await sleep(8000), true),
          } satisfies Spec,
        ]
      : []),
  ];
  const specs = all.filter((spec) => only.includes(spec.name));

  const doRelist = relist
    ? async (): Promise<void> => {
        // A write, so every watcher's last resourceVersion is behind; etcd compacted past it; the API
        // server restarted with a fresh watch cache: resuming watches get 410 and relist.
        await driver.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'bump-', namespace: 'default' } });
        await compactEtcd(env);
        await env.restartApiServer();
      }
    : undefined;

  const rows: Row[] = [];
  let have = 0;
  for (const n of sizes) {
    if (n > have) {
      log(`creating ConfigMaps ${have}..${n - 1}`);
      const base = have;
      await pool(n - have, IN_FLIGHT, (i) =>
        driver.create({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `cm-${String(base + i).padStart(6, '0')}`, namespace: NAMESPACE, labels: { app: 'bench-memory', shard: String((base + i) % 16) } },
          data: { size: `${10 + ((base + i) % 90)}Gi`, storageClass: (base + i) % 2 ? 'fast' : 'standard', medium: 'ssd', iops: '16000' },
        }),
      );
      have = n;
    }
    for (const spec of specs) {
      const figures = await measure(spec, doRelist, 600_000 + n * 20);
      rows.push({ process: spec.name, objects: n, figures });
      log(`${spec.name} @ ${n}: sync ${(figures.syncMs / 1000).toFixed(2)} s, peak ${mib(figures.peakSync)} MiB, steady ${mib(figures.steady)} MiB, heap ${mib(figures.heapUsed)}/${mib(figures.heapTotal)} MiB, relist peak ${mib(figures.relistPeak)} MiB`);
    }
  }

  // The example holding HardDisks it reconciled (their ConfigMaps too); the bench's ConfigMaps gone first.
  // EXAMPLE_VARIANTS adds variants beside the shipped one ("label|entry|node flags|VAR=value …", `;` between them; the
  // entry relative to the repository, empty for the shipped one; the environment optional); --harddisk-rounds=N runs each N times, interleaved, each round in a fresh operator process.
  const example = specs.find((s) => s.name === 'example');
  const crHardDisks: Spec | undefined =
    controllerRuntime && only.includes('controller-runtime-harddisk')
      ? { name: 'controller-runtime-harddisk', command: [controllerRuntime, '--kubeconfig', kubeconfig, '--mode=harddisk'], synced: (l) => l['synced'] !== undefined, reportsMemory: true }
      : undefined;
  const variants: { label: string; spec: Spec }[] = [
    ...(example
    ? [
        { label: 'as shipped', spec: example },
        ...(process.env['EXAMPLE_VARIANTS'] ?? '').split(';').filter(Boolean).map((v) => {
          const [label, main, variantFlags, variantEnv] = v.split('|');
          const command = [process.execPath, ...(variantFlags ?? '').split(' ').filter(Boolean), resolve(root, main || exampleMain), ...example.command.slice(example.command.indexOf('--kubeconfig'))];
          const env = { ...example.env, ...Object.fromEntries((variantEnv ?? '').split(' ').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])) };
          return { label: label!, spec: { ...example, command, env } };
        }),
      ]
    : []),
    ...(crHardDisks ? [{ label: 'controller-runtime', spec: crHardDisks }] : []),
  ];
  const rounds = Number(param('harddisk-rounds', '1'));
  // --settle=S: seconds between the last HardDisk turning Bound and reading the operator's memory. Default 30:
  // V8's memory reducer, which hands a burst's pooled pages back, looks every 8 s and runs 8-24 s after a burst;
  // 5 (the default before) read the burst's high-water mark.
  const settleSeconds = Number(param('settle', '30'));
  // --hold=S keeps each HardDisk operator running S seconds after its figures are read, its pid logged (to read its smaps or take a heap snapshot).
  const holdSeconds = Number(param('hold', '0'));
  // --smaps: each HardDisk operator's /proc/<pid>/smaps grouped by what backs each mapping (support/smaps.ts), read
  // once its figures are read and --hold has passed.
  const readSmaps = flag('smaps');
  // --restart: then a fresh process of the same variant is started over the disks, all Bound already (its first
  // reconciles write nothing), and its RSS read --settle seconds after it synced: what the disks cost without the
  // burst of writes that reconciled them. The disks are deleted through that process.
  const restart = flag('restart');
  // --collect: then, through the operator's inspector, an ordinary full collection and V8's last-resort one, with
  // readings before and after each (support/collections.ts). Node operators only.
  const collect = flag('collect');
  const diskRows: { label: string; round: number; figures: Figures }[] = [];
  if (harddisks > 0 && variants.length > 0) {
    // Deleting 10,000+ ConfigMaps in one call can take minutes on a busy machine.
    await driver.deleteAllOf(ConfigMap, { namespace: NAMESPACE, timeoutMs: 600_000 });
    // --warmup=N (default 200; 0: none): an untimed round of N disks with the first variant before the timed
    // rounds. Without it the run's first round took 1.5-1.7x the CPU of the same variant's later rounds (7.85
    // and 7.57 s against 4.50-5.39, two runs; the cause is not established).
    const warmup = Number(param('warmup', '200'));
    if (warmup > 0) await holdHardDisks(variants[0]!.spec, 'warm-up, not reported', warmup, false);
    for (let round = 0; round < rounds; round++) {
      for (const { label, spec } of round % 2 ? [...variants].reverse() : variants) {
        diskRows.push({ label, round, figures: await holdHardDisks(spec, label) });
      }
    }
  }

  /** `looks`: --hold, --smaps and --restart apply (not to the warm-up). */
  async function holdHardDisks(spec: Spec, label: string, count = harddisks, looks = true): Promise<Figures> {
    // --collect: where the inspector is to listen once SIGUSR1 opens it (nothing listens before).
    const inspectPort = looks && collect && spec.command[0] === process.execPath ? await freePort() : undefined;
    const p = startProcess(inspectPort === undefined ? spec : { ...spec, command: [spec.command[0]!, `--inspect-port=127.0.0.1:${inspectPort}`, ...spec.command.slice(1)] });
    try {
      await p.waitFor(spec.synced, 1, 60_000);
      await sleep(5000);
      const idle = procStatus(p.proc.pid!).rss;
      const cpu0 = cpuMsOf(p.proc.pid!);
      const t0 = performance.now();
      await pool(count, IN_FLIGHT, (i) =>
        driver.create({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: `disk-${String(i).padStart(5, '0')}`, namespace: NAMESPACE }, spec: { size: `${10 + (i % 90)}Gi`, storageClass: i % 2 ? 'fast' : 'standard' } }),
      );
      for (;;) {
        const list = await driver.list(HardDisk, { namespace: NAMESPACE });
        if (list.items.filter((d) => d.status?.phase === 'Bound').length === count) break;
        await sleep(500);
      }
      const boundMs = performance.now() - t0;
      const cpuMs = cpuMsOf(p.proc.pid!) - cpu0;
      await sleep(settleSeconds * 1000);
      const status = procStatus(p.proc.pid!);
      const figures: Figures = { syncMs: boundMs, peakSync: status.hwm, steady: status.rss, anon: status.anon, file: status.file, idle, cpuMs, ...(await heapOf(spec, p)) };
      log(`${spec.name} (${label}) holding ${count} HardDisks: all Bound in ${(boundMs / 1000).toFixed(1)} s (CPU ${(cpuMs / 1000).toFixed(2)} s), RSS ${mib(figures.steady)} MiB (${mib(idle)} with none; peak ${mib(figures.peakSync)}; anon ${mib(figures.anon)} / file ${mib(figures.file)}), heap ${mib(figures.heapUsed)}/${mib(figures.heapTotal)} MiB`);
      if (looks && holdSeconds > 0) {
        log(`${spec.name} (${label}): pid ${p.proc.pid} held ${holdSeconds} s (--hold) for a look: /proc/${p.proc.pid}/smaps_rollup, or kill -WINCH with --heapsnapshot-signal`);
        await sleep(holdSeconds * 1000);
      }
      if (looks && readSmaps) {
        const { total, groups } = smapsGroups(p.proc.pid!);
        figures.smaps = { total, groups };
        log(`${spec.name} (${label}) smaps, ${mib(total)} MiB: ${SMAPS_GROUPS.map((g) => `${g} ${mib(groups[g])}`).join(', ')}`);
      }
      if (inspectPort !== undefined) {
        figures.collections = await forceCollections(p.proc.pid!, inspectPort, figures);
        log(`${spec.name} (${label}) collections through the inspector: ${figures.collections.map((r) => `${r.step} RSS ${mib(r.rss)} / anon ${mib(r.anon)} / V8 pages ${mib(r.v8Pages)} / heapTotal ${mib(r.heapTotal) ?? '-'} MiB`).join('; ')}`);
      }
      let deleter = p;
      if (looks && restart) {
        await p.stop();
        deleter = startProcess(spec);
        await deleter.waitFor(spec.synced, 1, 120_000);
        await sleep(settleSeconds * 1000);
        const again = procStatus(deleter.proc.pid!);
        figures.restarted = { rss: again.rss, anon: again.anon, file: again.file };
        log(`${spec.name} (${label}) restarted over the ${count} Bound HardDisks: RSS ${mib(again.rss)} MiB (anon ${mib(again.anon)} / file ${mib(again.file)}) ${settleSeconds} s after synced`);
      }
      try {
        // The disks deleted while the operator runs (it removes their finalizers), for the next variant.
        await driver.deleteAllOf(HardDisk, { namespace: NAMESPACE, timeoutMs: 600_000 });
        while ((await driver.list(HardDisk, { namespace: NAMESPACE })).items.length > 0) await sleep(500);
      } finally {
        if (deleter !== p) await deleter.stop();
      }
      return figures;
    } finally {
      await p.stop();
    }
  }

  await env.stop();
  if (scaffold && existsSync(dirname(scaffold))) rmSync(dirname(scaffold), { recursive: true, force: true });
  rmSync(dirname(scripts.get('memory-floor.ts')!), { recursive: true, force: true });

  // --- report ---
  const out: string[] = [];
  out.push(`\nMemory, node ${process.version}; example flags: ${exampleFlags.join(' ') || '(none)'}; scaffold flags: ${scaffoldFlags.join(' ') || '(none)'} (RSS from /proc; MiB)\n`);
  out.push('| process | objects | sync s | peak RSS to sync | steady RSS | vs controller-runtime | anon / file | heap used / total | new space | relist peak RSS | peak/steady | RSS per object vs 0 |');
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const zero = rows.find((z) => z.process === r.process && z.objects === 0);
    const perObject = zero && r.objects > 0 ? `${((r.figures.steady - zero.figures.steady) / r.objects / 1024).toFixed(2)} KiB` : '';
    const reference = rows.find((c) => c.process === 'controller-runtime' && c.objects === r.objects);
    const ratio = reference ? `${(r.figures.steady / reference.figures.steady).toFixed(2)}x` : '-';
    out.push(
      `| ${r.process} | ${r.objects} | ${(r.figures.syncMs / 1000).toFixed(2)} | ${mib(r.figures.peakSync)} | ${mib(r.figures.steady)} | ${ratio} | ${mib(r.figures.anon)} / ${mib(r.figures.file)} | ${r.figures.heapUsed !== undefined ? `${mib(r.figures.heapUsed)} / ${mib(r.figures.heapTotal)}` : '-'} | ${mib(r.figures.newSpace) ?? '-'} | ${mib(r.figures.relistPeak) ?? '-'} | ${(r.figures.peakSync / r.figures.steady).toFixed(2)} | ${perObject} |`,
    );
  }
  if (diskRows.length > 0) {
    out.push(`\nholding ${harddisks} HardDisks reconciled to Bound (with their ConfigMaps), ${rounds} round(s), interleaved:\n`);
    out.push('| variant | command | RSS per round | median RSS | vs controller-runtime | RSS synced, no disks (median round) | anon / file (median round) | heap used / total | peak RSS (median round) | all Bound s | operator CPU s to all Bound, per round |');
    out.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    const medianOf = (label: string): Figures => {
      const mine = diskRows.filter((d) => d.label === label).map((d) => d.figures).sort((a, b) => a.steady - b.steady);
      return mine[Math.floor(mine.length / 2)]!;
    };
    const reference = crHardDisks ? medianOf('controller-runtime') : undefined;
    for (const { label, spec } of variants) {
      const median = medianOf(label);
      const command = spec === crHardDisks ? 'controller-runtime --mode=harddisk' : `node ${spec.command.slice(1, spec.command.indexOf('--kubeconfig')).map((a) => a.replace(`${root}/`, '')).join(' ')}`;
      const heap = median.heapUsed !== undefined ? `${mib(median.heapUsed)} / ${mib(median.heapTotal)}` : '-';
      out.push(`| ${label} | \`${command}\` | ${diskRows.filter((d) => d.label === label).map((d) => mib(d.figures.steady)).join(' / ')} | ${mib(median.steady)} | ${reference ? `${(median.steady / reference.steady).toFixed(2)}x` : '-'} | ${mib(median.idle)} | ${mib(median.anon)} / ${mib(median.file)} | ${heap} | ${mib(median.peakSync)} | ${(median.syncMs / 1000).toFixed(1)} | ${diskRows.filter((d) => d.label === label).map((d) => ((d.figures.cpuMs ?? 0) / 1000).toFixed(2)).join(' / ')} |`);
    }
    if (diskRows.some((d) => d.figures.restarted)) {
      out.push(`\n--restart: a fresh process of each variant started over the ${harddisks} Bound HardDisks, read ${settleSeconds} s after synced, against the one that reconciled them:\n`);
      out.push('| variant | RSS having reconciled them, per round | RSS restarted over them, per round | anon / file restarted (per round) |');
      out.push('|---|---:|---:|---:|');
      for (const { label } of variants) {
        const mine = diskRows.filter((d) => d.label === label);
        out.push(`| ${label} | ${mine.map((d) => mib(d.figures.steady)).join(' / ')} | ${mine.map((d) => mib(d.figures.restarted?.rss) ?? '-').join(' / ')} | ${mine.map((d) => `${mib(d.figures.restarted?.anon) ?? '-'} / ${mib(d.figures.restarted?.file) ?? '-'}`).join(', ')} |`);
      }
    }
    if (diskRows.some((d) => d.figures.collections)) {
      out.push(`\n--collect: MiB before and after full collections forced through the inspector (${settleSeconds} s after all Bound${holdSeconds > 0 ? `, then --hold=${holdSeconds}` : ''}), one line per round; "attached": the inspector open and gc made (support/collections.ts):\n`);
      out.push('| variant | round | step | RSS | anon | V8 heap pages | heapTotal | heapUsed |');
      out.push('|---|---:|---|---:|---:|---:|---:|---:|');
      for (const d of diskRows.filter((r) => r.figures.collections)) {
        for (const r of d.figures.collections!) out.push(`| ${d.label} | ${d.round + 1} | ${r.step} | ${mib(r.rss)} | ${mib(r.anon)} | ${mib(r.v8Pages)} | ${mib(r.heapTotal) ?? '-'} | ${mib(r.heapUsed) ?? '-'} |`);
      }
      const medianStep = (label: string, step: (typeof COLLECTION_STEPS)[number], k: 'rss' | 'anon' | 'v8Pages' | 'heapTotal'): number | undefined => {
        const xs = diskRows.filter((d) => d.label === label && d.figures.collections).map((d) => d.figures.collections!.find((r) => r.step === step)?.[k]).filter((x): x is number => x !== undefined).sort((a, b) => a - b);
        return xs.length > 0 ? xs[Math.floor(xs.length / 2)] : undefined;
      };
      out.push('\nmedians over rounds, MiB: RSS / anon / V8 heap pages / heapTotal\n');
      out.push(`| variant | ${COLLECTION_STEPS.join(' | ')} |`);
      out.push(`|---|${COLLECTION_STEPS.map(() => '---:').join('|')}|`);
      for (const { label } of variants.filter((v) => diskRows.some((d) => d.label === v.label && d.figures.collections))) {
        out.push(`| ${label} | ${COLLECTION_STEPS.map((step) => (['rss', 'anon', 'v8Pages', 'heapTotal'] as const).map((k) => mib(medianStep(label, step, k)) ?? '-').join(' / ')).join(' | ')} |`);
      }
    }
    if (diskRows.some((d) => d.figures.smaps)) {
      const withSmaps = diskRows.filter((d) => d.figures.smaps);
      out.push(`\n--smaps: MiB resident by what backs it (support/smaps.ts), ${holdSeconds > 0 ? `after --hold=${holdSeconds}` : `${settleSeconds} s after all Bound`}, one column per round:\n`);
      out.push(`| group | ${withSmaps.map((d) => `${d.label} (round ${d.round + 1})`).join(' | ')} |`);
      out.push(`|---|${withSmaps.map(() => '---:').join('|')}|`);
      for (const g of SMAPS_GROUPS) out.push(`| ${g} | ${withSmaps.map((d) => mib(d.figures.smaps!.groups[g])).join(' | ')} |`);
      out.push(`| all (RSS when read) | ${withSmaps.map((d) => mib(d.figures.smaps!.total)).join(' | ')} |`);
    }
  }
  process.stdout.write(`${out.join('\n')}\n\n`);
  process.stdout.write(`${JSON.stringify({ bench: 'memory', node: process.version, exampleFlags, scaffoldFlags, rows: rows.map((r) => ({ process: r.process, objects: r.objects, ...Object.fromEntries(Object.entries(r.figures).map(([k, v]: [string, number | undefined]) => [k, k.endsWith('Ms') ? Math.round(v ?? 0) : mib(v)])) })), harddisks: { n: harddisks, rounds: diskRows.map((d) => ({ variant: d.label, round: d.round, rssMiB: mib(d.figures.steady), idleRssMiB: mib(d.figures.idle), anonMiB: mib(d.figures.anon), fileMiB: mib(d.figures.file), heapUsedMiB: mib(d.figures.heapUsed), heapTotalMiB: mib(d.figures.heapTotal), peakMiB: mib(d.figures.peakSync), boundMs: Math.round(d.figures.syncMs), cpuMs: d.figures.cpuMs, ...(d.figures.restarted ? { restartedRssMiB: mib(d.figures.restarted.rss), restartedAnonMiB: mib(d.figures.restarted.anon), restartedFileMiB: mib(d.figures.restarted.file) } : {}), ...(d.figures.collections ? { collections: d.figures.collections.map((r) => ({ step: r.step, rssMiB: mib(r.rss), anonMiB: mib(r.anon), v8PagesMiB: mib(r.v8Pages), heapTotalMiB: mib(r.heapTotal), heapUsedMiB: mib(r.heapUsed) })) } : {}), ...(d.figures.smaps ? { smapsTotalMiB: mib(d.figures.smaps.total), smapsMiB: Object.fromEntries(SMAPS_GROUPS.map((g) => [g, mib(d.figures.smaps!.groups[g])])) } : {}) }))  } })}\n`);
}

await main();
