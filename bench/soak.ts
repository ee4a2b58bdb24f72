/**
 * Soak: the example HardDisk operator as shipped (examples/harddisk-operator/dist/operator.js with
 * scripts/dev.sh's node flags, on an existing cluster, serving its admission and conversion
 * webhooks) over H HardDisks under continuous updates for M minutes, its memory sampled all along.
 * Does it hold still, or does something keep growing?
 *
 * The driver (this file) starts envtest with the HardDisk CRD, installs the example's admission
 * webhook configurations pointing at a local port (envtest's installWebhooks), and starts the
 * operator with `--webhook-cert-dir` on that port. The operator applies its own CRD at start, whose
 * conversion names the in-cluster Service; the driver then points the conversion at the same local
 * port (a URL and the CA bundle, as installWebhooks does). So every HardDisk write goes through the
 * operator's mutating and validating webhooks and every v2 read or write through its conversion
 * webhook, as in a cluster. It creates H HardDisks (16 in flight), waits until every one is `Bound`, then
 * changes disks' sizes at --rate updates a second (at most 16 in flight), a random disk each time,
 * a --v2-share of them as a crd-demo.io/v2 merge patch of `spec.capacity`, the rest as a v1 merge
 * patch of `spec.size`. Every --sample-seconds it reads the operator's VmRSS and RssAnon
 * (/proc/<pid>/status) and its V8 heap used (`nodejs_heap_size_used_bytes`, its /metrics, scraped as
 * Prometheus would: no forced GC). At the end it waits until the operator has caught up and checks
 * every disk: `Bound`, status.observedGeneration equal to its generation, spec.size and its
 * ConfigMap's data.size the last size the driver wrote. It reports the samples, each series' slope
 * by least squares over the second half of the updates (MB/h, 1 MB = 10^6 bytes) and over the
 * whole, the failed updates, the final check, as a table and one JSON line; then stops the
 * operator and the control plane and removes what it wrote.
 *
 *   pnpm bench:soak                                         (2,000 HardDisks, 60 minutes, 10 updates/s, 1 in 5 through v2)
 *   pnpm bench:soak --harddisks=2000 --minutes=60 --rate=10 --v2-share=0.2 --sample-seconds=30
 *   pnpm bench:soak --minutes=12 --heap-snapshots=4,12 --snapshot-dir=/tmp/soak-snapshots
 *       (heap snapshots of the operator 4 minutes into the updates and at the end, after the last
 *       sample, for bench/support/heap-diff.mjs or heap-owners.mjs. A snapshot costs the operator
 *       a pause of seconds, a step of about 90 MB in its RSS (native memory glibc keeps) and a
 *       compacting GC after which V8's heap grows back for many minutes: the slopes of a run with a
 *       snapshot before its end are not the operator's; quote slopes only from runs whose snapshots
 *       are all at the end)
 *   EXAMPLE_NODE_FLAGS="--max-semi-space-size=1" pnpm bench:soak ...   (other node flags for the operator)
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { createClient, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment, installWebhooks } from '@kubeloop/envtest';
import { ConfigMap, CustomResourceDefinition, builtinScheme } from '@kubeloop/scheme';
import { HardDisk, HardDiskV2 } from '@kubeloop/example-harddisk-operator';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const NAMESPACE = 'bench-soak';
const IN_FLIGHT = 16;
const CRD_NAME = 'harddisks.crd-demo.io';

function param(name: string, fallback: string): string {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const mb = (bytes: number): number => Number((bytes / 1e6).toFixed(1));
const started = Date.now();
const log = (line: string): void => void process.stderr.write(`[bench:soak +${((Date.now() - started) / 1000).toFixed(0)}s] ${line}\n`);

async function pool(count: number, limit: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
}

/** VmRSS and RssAnon of a process, bytes. */
function procStatus(pid: number): { rss: number; anon: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), anon: kb('RssAnon') };
}
/** CPU time the process has used (user + system), ms (clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/** Least-squares slope of y over x. */
function slope(points: readonly (readonly [number, number])[]): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? Number.NaN : num / den;
}

interface Sample {
  /** Seconds since the updates began (negative: before). */
  readonly t: number;
  readonly rss: number;
  readonly anon: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly updates: number;
  readonly failed: number;
  readonly reconciles: number;
  readonly depth: number;
  readonly cpuMs: number;
  readonly load: string;
}

async function main(): Promise<void> {
  const harddisks = Number(param('harddisks', '2000'));
  const minutes = Number(param('minutes', '60'));
  const rate = Number(param('rate', '10'));
  const v2Share = Number(param('v2-share', '0.2'));
  const sampleSeconds = Number(param('sample-seconds', '30'));
  const snapshotsAt = param('heap-snapshots', '').split(',').filter(Boolean).map(Number).sort((a, b) => a - b);
  const snapshotDir = resolve(param('snapshot-dir', join(tmpdir(), 'kubeloop-soak-snapshots')));
  for (const [name, v] of Object.entries({ harddisks, minutes, rate, v2Share, sampleSeconds })) {
    if (!Number.isFinite(v) || v < 0) throw new Error(`--${name}: a non-negative number, not ${v}`);
  }

  // As shipped: the entry and node flags of scripts/dev.sh's `exec node ... dist/operator.js`.
  const devSh = /exec node (.*?)\s*(examples\/harddisk-operator\/dist\/[a-z]+\.js)/.exec(readFileSync(join(root, 'scripts', 'dev.sh'), 'utf8'));
  const shippedFlags = devSh?.[1]?.split(' ').filter(Boolean) ?? [];
  const nodeFlags = process.env['EXAMPLE_NODE_FLAGS']?.split(' ').filter(Boolean) ?? shippedFlags;
  const entry = join(root, devSh?.[2] ?? 'examples/harddisk-operator/dist/operator.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`pnpm -s build\` first`);

  const work = mkdtempSync(join(tmpdir(), 'kubeloop-bench-soak-'));
  const env = createEnvironment({ crds: [join(root, 'examples', 'harddisk-operator', 'crd')] });
  let operator: ChildProcess | undefined;
  let hooks: Awaited<ReturnType<typeof installWebhooks>> | undefined;
  let exitedEarly: string | undefined;
  const cleanup = async (): Promise<void> => {
    if (operator && operator.exitCode === null && operator.signalCode === null) {
      const exited = new Promise((r) => operator!.once('exit', r));
      operator.kill('SIGTERM');
      await Promise.race([exited, sleep(35_000)]);
      if (operator.exitCode === null && operator.signalCode === null) operator.kill('SIGKILL');
    }
    await hooks?.uninstall().catch(() => undefined);
    await env.stop();
    rmSync(work, { recursive: true, force: true });
  };
  let interrupted = false;
  const onSignal = (): void => {
    if (interrupted) process.exit(1);
    interrupted = true;
    log('interrupted: cleaning up');
    void cleanup().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    await env.start();
    hooks = await installWebhooks(env.kubeConfig, {
      // The conversion is pointed at the local port once the operator has applied its CRD (below).
      configurations: [join(root, 'examples', 'harddisk-operator', 'webhook', 'manifests.yaml')],
    });
    const driver: Client = createClient({ kubeConfig: env.kubeConfig, scheme: builtinScheme.extend(HardDisk), fieldOwner: 'bench-soak', transportOptions: { qps: 0 } });
    await driver.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
    log(`control plane ready (load ${loadAverage()}); operator: node ${nodeFlags.join(' ')} ${entry.replace(`${root}/`, '')}`);

    // --- the operator, as shipped, on this cluster, serving its webhooks ---
    // The operator's working directory: where --heapsnapshot-signal writes (kept when the run fails).
    const snapshotsHere = snapshotsAt.length > 0 ? snapshotDir : join(work, 'cwd');
    mkdirSync(snapshotsHere, { recursive: true });
    const flags = snapshotsAt.length > 0 ? [...nodeFlags, '--heapsnapshot-signal=SIGUSR2'] : nodeFlags;
    operator = spawn(
      process.execPath,
      [...flags, entry, '--kubeconfig', env.kubeconfigPath, '--no-sample', '--webhook-cert-dir', hooks.certDir, '--webhook-port', String(hooks.port), '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'],
      { cwd: snapshotsHere, env: { ...process.env, KUBELOOP_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const pid = operator.pid!;
    let stderr = '';
    operator.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    let metricsUrl: string | undefined;
    let synced = false;
    let crdInstalled = false;
    const lastLines: string[] = [];
    createInterface({ input: operator.stdout! }).on('line', (line) => {
      lastLines.push(line);
      if (lastLines.length > 20) lastLines.shift();
      if (!line.includes('"msg"')) return;
      try {
        const l = JSON.parse(line) as Record<string, unknown>;
        if (l['msg'] === 'metrics listening' && typeof l['url'] === 'string') metricsUrl = l['url'];
        if (l['msg'] === 'caches synced; starting workers') synced = true;
        if (l['msg'] === 'using the cluster from the kubeconfig; CRD installed') crdInstalled = true;
      } catch {
        /* not JSON */
      }
    });
    operator.once('exit', (code, signal) => (exitedEarly = `operator exited (${code ?? signal}):\n${lastLines.join('\n')}\n${stderr}`));
    const until = async (what: string, ok: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 200): Promise<void> => {
      const deadline = Date.now() + timeoutMs;
      while (!(await ok())) {
        if (exitedEarly) throw new Error(exitedEarly);
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
        await sleep(everyMs);
      }
    };
    await until('the operator to install its CRD', () => crdInstalled, 120_000);
    // The operator applied its CRD, whose conversion names the in-cluster Service: point it at the local port again.
    await driver.patch(
      CustomResourceDefinition,
      { name: CRD_NAME },
      mergePatch({ spec: { conversion: { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig: { service: null, url: `${hooks.url}/convert`, caBundle: Buffer.from(hooks.caPem).toString('base64') } } } } }),
    );
    await until('the operator to sync and its metrics to listen', () => synced && metricsUrl !== undefined, 120_000);
    await until(
      'a v2 list through the conversion webhook',
      () => driver.list(HardDiskV2, { namespace: 'default' }).then(() => true, () => false),
      60_000,
    );

    const metrics = async (): Promise<Map<string, number>> => {
      // After a pause (a heap snapshot) the operator's server may reset a connection it timed out: try again.
      let text = '';
      for (let attempt = 1; ; attempt++) {
        try {
          text = await (await fetch(`${metricsUrl!}/metrics`)).text();
          break;
        } catch (err) {
          if (attempt >= 5 || exitedEarly) throw err;
          await sleep(1000);
        }
      }
      const out = new Map<string, number>();
      for (const line of text.split('\n')) {
        const m = /^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
        if (m) out.set(m[1]!, (out.get(m[1]!) ?? 0) + Number(m[3])); // summed over labels
      }
      return out;
    };

    // --- H HardDisks, all Bound ---
    const name = (i: number): string => `disk-${String(i).padStart(5, '0')}`;
    const expected: number[] = Array.from({ length: harddisks }, (_, i) => 10 + (i % 90));
    const t0 = performance.now();
    await pool(harddisks, IN_FLIGHT, (i) =>
      driver.create({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: name(i), namespace: NAMESPACE }, spec: { size: `${expected[i]}Gi`, storageClass: i % 2 ? 'fast' : 'standard' } }),
    );
    const boundCount = async (): Promise<number> => (await driver.list(HardDisk, { namespace: NAMESPACE })).items.filter((d) => d.status?.phase === 'Bound').length;
    await until(`${harddisks} HardDisks Bound`, async () => (await boundCount()) === harddisks, 1_800_000, 2000);
    log(`${harddisks} HardDisks created and Bound in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    // --- continuous updates, sampled ---
    const samples: Sample[] = [];
    let updates = 0;
    let failed = 0;
    let v2Updates = 0;
    const failures: string[] = [];
    const updatesStart = performance.now();
    const elapsedS = (): number => (performance.now() - updatesStart) / 1000;
    const sample = async (): Promise<Sample> => {
      const m = await metrics();
      const status = procStatus(pid);
      const s: Sample = {
        t: Math.round(elapsedS()),
        rss: status.rss,
        anon: status.anon,
        heapUsed: m.get('nodejs_heap_size_used_bytes') ?? Number.NaN,
        heapTotal: m.get('nodejs_heap_size_total_bytes') ?? Number.NaN,
        updates,
        failed,
        reconciles: m.get('controller_runtime_reconcile_total') ?? Number.NaN,
        depth: m.get('workqueue_depth') ?? Number.NaN,
        cpuMs: cpuMsOf(pid),
        load: loadAverage(),
      };
      samples.push(s);
      log(`t=${s.t}s RSS ${mb(s.rss)} MB (anon ${mb(s.anon)}), heap ${mb(s.heapUsed)}/${mb(s.heapTotal)} MB, ${s.updates} updates (${s.failed} failed), ${s.reconciles} reconciles, depth ${s.depth}, load ${s.load}`);
      return s;
    };
    await sample();

    const durationS = minutes * 60;
    let inFlight = 0;
    let skipped = 0;
    const update = async (): Promise<void> => {
      const i = Math.floor(Math.random() * harddisks);
      let size = 10 + Math.floor(Math.random() * 90);
      if (size === expected[i]) size = size === 99 ? 10 : size + 1;
      const v2 = Math.random() < v2Share;
      const key = { namespace: NAMESPACE, name: name(i) };
      try {
        if (v2) await driver.patch(HardDiskV2, key, mergePatch({ spec: { capacity: { value: size, unit: 'Gi' } } }));
        else await driver.patch(HardDisk, key, mergePatch({ spec: { size: `${size}Gi` } }));
        expected[i] = size;
        if (v2) v2Updates++;
      } catch (err) {
        failed++;
        if (failures.length < 20) failures.push(`${v2 ? 'v2' : 'v1'} ${key.name}: ${err instanceof Error ? err.message : String(err)}`);
        // Which size the server kept is now unknown: read it back for the final check.
        const now = await driver.get(HardDisk, key).catch(() => undefined);
        const kept = now && /^(\d+)Gi$/.exec(now.spec?.size ?? '');
        if (kept) expected[i] = Number(kept[1]);
      } finally {
        updates++;
      }
    };
    const snapshots: { atMinutes: number; file: string }[] = [];
    const pendingSnapshots = [...snapshotsAt];
    let nextSample = sampleSeconds;
    const pending = new Set<Promise<void>>();
    for (;;) {
      if (exitedEarly) throw new Error(exitedEarly);
      const t = elapsedS();
      if (t >= durationS) break;
      if (t >= nextSample) {
        nextSample += sampleSeconds;
        await sample();
      }
      if (pendingSnapshots.length > 0 && t >= pendingSnapshots[0]! * 60) {
        const at = pendingSnapshots.shift()!;
        snapshots.push({ atMinutes: at, file: await snapshot(pid, snapshotsHere, snapshotDir, at, metrics) });
      }
      // Due by now: rate × elapsed; at most IN_FLIGHT at once (what could not start is counted as behind).
      const due = Math.floor(t * rate);
      while (updates + inFlight < due && inFlight < IN_FLIGHT) {
        inFlight++;
        const p = update().finally(() => {
          inFlight--;
          pending.delete(p);
        });
        pending.add(p);
      }
      if (updates + inFlight < due - rate * 5) skipped = due - updates - inFlight;
      await sleep(20);
    }
    await Promise.all(pending);
    const issued = updates;
    await sample();
    // Snapshots asked for at (or past) the end: taken after the last sample, so they do not bump it.
    for (const at of pendingSnapshots) snapshots.push({ atMinutes: at, file: await snapshot(pid, snapshotsHere, snapshotDir, at, metrics) });
    log(`updates done: ${issued} in ${elapsedS().toFixed(0)} s (${(issued / elapsedS()).toFixed(1)}/s, ${v2Updates} through v2), ${failed} failed`);

    // --- the final state: every disk Bound at its generation, its size and its ConfigMap's the last written ---
    const check = async (): Promise<{ wrong: string[] }> => {
      const disks = new Map((await driver.list(HardDisk, { namespace: NAMESPACE })).items.map((d) => [d.metadata?.name, d]));
      const cms = new Map((await driver.list(ConfigMap, { namespace: NAMESPACE, labelSelector: 'crd-demo.io/disk' })).items.map((c) => [c.metadata?.name, c]));
      const wrong: string[] = [];
      for (let i = 0; i < harddisks; i++) {
        const d = disks.get(name(i));
        const want = `${expected[i]}Gi`;
        const cm = cms.get(`${name(i)}-disk`);
        if (!d) wrong.push(`${name(i)}: missing`);
        else if (d.spec?.size !== want) wrong.push(`${name(i)}: spec.size ${d.spec?.size}, expected ${want}`);
        else if (d.status?.phase !== 'Bound') wrong.push(`${name(i)}: phase ${d.status?.phase}`);
        else if (d.status.observedGeneration !== d.metadata?.generation) wrong.push(`${name(i)}: observedGeneration ${d.status.observedGeneration}, generation ${d.metadata?.generation}`);
        else if (cm?.data?.['size'] !== want) wrong.push(`${name(i)}: ConfigMap size ${cm?.data?.['size']}, expected ${want}`);
      }
      return { wrong };
    };
    let final = await check();
    const checkDeadline = Date.now() + 600_000;
    while (final.wrong.length > 0 && Date.now() < checkDeadline && !exitedEarly) {
      await sleep(2000);
      final = await check();
    }
    const caughtUpS = elapsedS() - durationS;
    log(`final state: ${harddisks - final.wrong.length}/${harddisks} correct${final.wrong.length ? ` (first: ${final.wrong.slice(0, 5).join('; ')})` : ''}, ${caughtUpS.toFixed(0)} s after the last update`);
    const cpuTotalMs = cpuMsOf(pid);
    await cleanup();
    operator = undefined;

    // --- report ---
    const during = samples.filter((s) => s.t <= durationS + sampleSeconds);
    const second = during.filter((s) => s.t >= durationS / 2);
    const perHour = (pick: (s: Sample) => number, of: readonly Sample[]): number => Number((slope(of.map((s) => [s.t / 3600, pick(s) / 1e6])) ).toFixed(2));
    const series = { rss: (s: Sample) => s.rss, rssAnon: (s: Sample) => s.anon, heapUsed: (s: Sample) => s.heapUsed } as const;
    const slopes = Object.fromEntries(Object.entries(series).map(([k, pick]) => [k, { secondHalf: perHour(pick, second), whole: perHour(pick, during) }])) as Record<keyof typeof series, { secondHalf: number; whole: number }>;
    const first = during[0]!;
    const last = during.at(-1)!;
    const halfway = second[0]!;
    const out: string[] = [];
    out.push(`\nSoak: ${harddisks} HardDisks, ${minutes} min of updates at ${rate}/s asked (${(issued / durationS).toFixed(2)}/s made; ${v2Updates} of ${issued} through v2), node ${process.version}`);
    out.push(`operator: node ${nodeFlags.join(' ')} ${entry.replace(`${root}/`, '')} (MB = 10^6 bytes; heap used from its /metrics, no forced GC)\n`);
    out.push('| t (min) | RSS MB | RssAnon MB | heap used MB | heap total MB | updates | failed | reconciles | queue depth | operator CPU s | load average |');
    out.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    const every = Math.max(1, Math.round(during.length / 24));
    for (const [k, s] of during.entries()) {
      if (k % every !== 0 && k !== during.length - 1) continue;
      out.push(`| ${(s.t / 60).toFixed(1)} | ${mb(s.rss)} | ${mb(s.anon)} | ${mb(s.heapUsed)} | ${mb(s.heapTotal)} | ${s.updates} | ${s.failed} | ${s.reconciles} | ${s.depth} | ${(s.cpuMs / 1000).toFixed(0)} | ${s.load} |`);
    }
    out.push('');
    out.push('| series | start MB | halfway MB | end MB | slope, second half (MB/h) | slope, whole run (MB/h) |');
    out.push('|---|---:|---:|---:|---:|---:|');
    for (const [k, pick] of Object.entries(series)) {
      const sl = slopes[k as keyof typeof series];
      out.push(`| ${k} | ${mb(pick(first))} | ${mb(pick(halfway))} | ${mb(pick(last))} | ${sl.secondHalf} | ${sl.whole} |`);
    }
    out.push('');
    out.push(`Updates: ${issued} (${v2Updates} through v2), ${failed} failed${skipped > 0 ? `; the driver fell behind the asked rate by ${skipped}` : ''}. Final state: ${harddisks - final.wrong.length}/${harddisks} HardDisks Bound at their generation with the last size written (and their ConfigMaps), ${caughtUpS.toFixed(0)} s after the last update.`);
    if (failures.length > 0) out.push(`First failures: ${failures.slice(0, 5).join(' | ')}`);
    if (snapshots.length > 0) out.push(`Heap snapshots: ${snapshots.map((s) => `${s.atMinutes} min: ${s.file}`).join(', ')}`);
    process.stdout.write(`${out.join('\n')}\n\n`);
    process.stdout.write(
      `${JSON.stringify({
        bench: 'soak',
        node: process.version,
        nodeFlags,
        harddisks,
        minutes,
        rate,
        v2Share,
        updates: issued,
        v2Updates,
        failed,
        final: { correct: harddisks - final.wrong.length, wrong: final.wrong.slice(0, 20), caughtUpSeconds: Math.round(caughtUpS) },
        operatorCpuSeconds: Math.round(cpuTotalMs / 1000),
        slopesMBPerHour: slopes,
        samples: during.map((s) => ({ t: s.t, rssMB: mb(s.rss), rssAnonMB: mb(s.anon), heapUsedMB: mb(s.heapUsed), heapTotalMB: mb(s.heapTotal), updates: s.updates, failed: s.failed, reconciles: s.reconciles, depth: s.depth, cpuS: Math.round(s.cpuMs / 1000), load: s.load })),
        snapshots,
      })}\n`,
    );
  } catch (err) {
    await cleanup().catch(() => undefined);
    throw err;
  }
}

/** A heap snapshot of the operator (--heapsnapshot-signal=SIGUSR2), moved to `dir` once written. */
async function snapshot(pid: number, cwd: string, dir: string, atMinutes: number, answers: () => Promise<unknown>): Promise<string> {
  const before = new Set(readdirSync(cwd));
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 300_000;
  for (;;) {
    const file = readdirSync(cwd).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (file) {
      // Written synchronously by the operator's main thread: done once the operator answers again.
      await answers();
      mkdirSync(dir, { recursive: true });
      const target = join(dir, `soak-${atMinutes}min-${file}`);
      renameSync(join(cwd, file), target);
      log(`heap snapshot at ${atMinutes} min: ${target}`);
      return target;
    }
    if (Date.now() > deadline) throw new Error('no heap snapshot written within 300 s');
    await sleep(200);
  }
}

await main();
process.exit(0);
