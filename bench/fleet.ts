/**
 * The cost of one more member cluster for a fleet manager: the fleet
 * example operator as shipped (examples/fleet-operator/dist/main.js on an
 * existing host, `--no-sample`, metrics and probes on free ports), run
 * with 0, 1, 2, 4, 8 members, each size a fresh process, in turn, in one run
 * (rounds interleaved: sizes up, then down, ...; the median run per size).
 *
 * One envtest control plane serves the host and every member. Each member
 * is a kubeconfig Secret in the host (the example's provider, as an
 * administrator registers one) whose server is a recording proxy of its own
 * in front of that plane: the manager sees N distinct clusters and builds,
 * per member, its own transport, discovery, caches, watches and queue, and
 * the proxies count each member's requests apart from the host's (the host
 * talks to the plane through a proxy too; this script's own reads go
 * straight to the plane, uncounted). What is measured is the manager's
 * cost per member, which does not depend on where the member's API server
 * runs. What a shared plane would change is that the members' copies of a
 * FleetConfig land in the same namespace of the same cluster (the first
 * member's create would win, the others' meet 409 and read live, a race
 * that would make the request counts noisy); so the copies are put in
 * place before each run, as after an operator restart, and every member
 * finds its copy in its cache and only reports its status to the host:
 * the same work for each member, whatever plane it is on.
 *
 * Before each run the FleetConfigs are created anew (generation 1, no
 * status), their copies written as the operator writes them, and the
 * previous run's member Secrets deleted, so every size starts from the
 * same state.
 * A run is converged when /readyz answers 200 and every FleetConfig's
 * `status.members` has an entry with `syncedGeneration` = its generation
 * and `Synced=True` from every member (0 members: /readyz alone: the same
 * kinds on a single-cluster manager, the floor). Then, 5 s later (no
 * forced GC): RSS (VmRSS from /proc), the V8 heap (`nodejs_heap_size_*`
 * from its /metrics), the requests from spawn to then by verb (at the
 * proxies: discovery, LIST, WATCH, GET, writes) and the watches opened.
 * Prints a table with the delta per added member over the 0-member floor,
 * the least-squares slope over every size, then one JSON line.
 *
 *   pnpm bench:fleet                        sizes 0,1,2,4,8; 2 FleetConfigs; 3 rounds (sizes interleaved)
 *   pnpm bench:fleet --sizes=0,1,2,4 --configs=10 --rounds=1
 *   pnpm bench:fleet --operators=base=/work/wt/base/examples/fleet-operator/dist/main.js,new=examples/fleet-operator/dist/main.js
 *
 * `--operators` compares builds side by side in one run (label=file pairs;
 * each size runs every build in turn, the order rotating per round), with
 * a table per build and one of the later builds against the first.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createClient } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy, RecordedRequest } from '@kubeloop/envtest';
import { ConfigMap, Secret, builtinScheme } from '@kubeloop/scheme';
import { KUBECONFIG_SECRET_LABEL } from '@kubeloop/manager/fleet';
import { FLEETCONFIG_LABEL, FleetConfig } from '../examples/fleet-operator/dist/index.js';
import { parseOperators } from './support/operators.ts';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const operator = join(root, 'examples', 'fleet-operator', 'dist', 'main.js');
const SECRET_NAMESPACE = 'fleet-system';
const COPY_NAMESPACE = 'bench-fleet';

function param(name: string, fallback: string): string {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
}
const mib = (bytes: number | undefined): number | undefined => (bytes === undefined ? undefined : Number((bytes / 1048576).toFixed(1)));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const started = Date.now();
const log = (line: string): void => void process.stderr.write(`[bench:fleet +${((Date.now() - started) / 1000).toFixed(0)}s] ${line}\n`);

/** A kubeconfig (JSON is YAML) for a proxy: plain HTTP on loopback, no credentials (the proxy adds the plane's). */
const proxyKubeconfig = (proxy: ApiProxy, name: string): string =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server: proxy.url, 'insecure-skip-tls-verify': true } }],
    users: [{ name, user: {} }],
    contexts: [{ name, context: { cluster: name, user: name } }],
    'current-context': name,
  });

type Verb = 'discovery' | 'list' | 'watch' | 'get' | 'write';
const VERBS: readonly Verb[] = ['discovery', 'list', 'watch', 'get', 'write'];

/** What a request was, from its method and path (the API server's own URL scheme). */
function verbOf(r: RecordedRequest): Verb {
  if (r.method !== 'GET') return 'write';
  if (/[?&]watch=(true|1)(&|$)/.test(r.url)) return 'watch';
  const parts = r.path.split('/').filter(Boolean);
  if (parts[0] === 'openapi' || parts[0] === 'version') return 'discovery';
  // /api/v1/... or /apis/group/version/...
  const rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : [];
  if (rest.length === 0) return 'discovery';
  const resource = rest[0] === 'namespaces' && rest.length >= 3 ? rest.slice(2) : rest;
  return resource.length === 1 ? 'list' : 'get';
}
function tally(requests: readonly RecordedRequest[]): Record<Verb, number> {
  const out = Object.fromEntries(VERBS.map((v) => [v, 0])) as Record<Verb, number>;
  for (const r of requests) out[verbOf(r)]++;
  return out;
}

/** VmRSS of a process, bytes. */
function rssOf(pid: number): number {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(text)?.[1] ?? 0) * 1024;
}

interface Run {
  /** The build's label (`--operators`); empty for the one shipped. */
  readonly operator: string;
  readonly members: number;
  readonly round: number;
  readonly convergedMs: number;
  /** From spawn until the operator logged its last member `cluster engaged` (0 without members). */
  readonly engagedMs: number;
  readonly rss: number;
  readonly heapUsed: number | undefined;
  readonly heapTotal: number | undefined;
  /** Requests from spawn to the measurement: the host's, and all members' together. */
  readonly host: Record<Verb, number>;
  readonly memberRequests: Record<Verb, number>;
  readonly watchesOpened: number;
}

async function main(): Promise<void> {
  const sizes = param('sizes', '0,1,2,4,8').split(',').map(Number);
  const configs = Number(param('configs', '2'));
  const rounds = Number(param('rounds', '3'));
  const settleMs = Number(param('settle-ms', '5000'));
  const most = Math.max(...sizes);
  const operators = parseOperators(param('operators', ''), operator);
  const load: number[][] = [loadavg()];

  const env = createEnvironment({ crds: [join(root, 'examples', 'fleet-operator', 'crd')] });
  await env.start();
  const work = mkdtempSync(join(tmpdir(), 'kubeloop-bench-fleet-'));
  const hostProxy = await startApiProxy(env.kubeConfig);
  const memberProxies = await Promise.all(Array.from({ length: most }, () => startApiProxy(env.kubeConfig)));
  const hostKubeconfig = join(work, 'host-kubeconfig');
  writeFileSync(hostKubeconfig, proxyKubeconfig(hostProxy, 'host'));
  const driver: Client = createClient({ kubeConfig: env.kubeConfig, scheme: builtinScheme.extend(FleetConfig), fieldOwner: 'bench-fleet', transportOptions: { qps: 0 } });
  for (const name of [SECRET_NAMESPACE, COPY_NAMESPACE]) await driver.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  log(`control plane ready; ${most} member proxies; sizes ${sizes.join(',')}, ${configs} FleetConfigs, ${rounds} round(s)`);

  /** The same starting state for every run: N member Secrets, fresh FleetConfigs, their copies in place. */
  async function reset(members: number): Promise<void> {
    await driver.deleteAllOf(Secret, { namespace: SECRET_NAMESPACE, labelSelector: `${KUBECONFIG_SECRET_LABEL}=true` });
    await driver.deleteAllOf(FleetConfig, {});
    await driver.deleteAllOf(ConfigMap, { namespace: COPY_NAMESPACE, labelSelector: FLEETCONFIG_LABEL });
    for (;;) {
      const left = (await driver.list(FleetConfig)).items.length + (await driver.list(ConfigMap, { namespace: COPY_NAMESPACE, labelSelector: FLEETCONFIG_LABEL })).items.length;
      if (left === 0) break;
      await sleep(100);
    }
    for (let i = 0; i < members; i++) {
      await driver.create({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { namespace: SECRET_NAMESPACE, name: `member-${i + 1}`, labels: { [KUBECONFIG_SECRET_LABEL]: 'true' } },
        data: { kubeconfig: Buffer.from(proxyKubeconfig(memberProxies[i]!, `member-${i + 1}`)).toString('base64') },
      });
    }
    for (let c = 0; c < configs; c++) {
      const data = { index: String(c), 'log-level': 'info' };
      await driver.create({ apiVersion: FleetConfig.apiVersion, kind: FleetConfig.kind, metadata: { name: `config-${c}` }, spec: { namespace: COPY_NAMESPACE, data } });
      await driver.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: COPY_NAMESPACE, name: `config-${c}`, labels: { [FLEETCONFIG_LABEL]: `config-${c}` } }, data });
    }
  }

  /** Every FleetConfig synced into each of the first `members` members, at its generation. */
  async function converged(members: number): Promise<boolean> {
    const list = await driver.list(FleetConfig);
    if (list.items.length !== configs) return false;
    return list.items.every((config) =>
      Array.from({ length: members }, (_, i) => `member-${i + 1}`).every((cluster) => {
        const entry = config.status?.members?.find((m) => m.cluster === cluster);
        return entry?.syncedGeneration === config.metadata?.generation && entry?.conditions?.some((c) => c.type === 'Synced' && c.status === 'True');
      }),
    );
  }

  async function measure(op: { label: string; file: string }, members: number, round: number): Promise<Run> {
    await reset(members);
    hostProxy.clearRequests();
    for (const p of memberProxies) p.clearRequests();
    const t0 = performance.now();
    const proc: ChildProcess = spawn(
      process.execPath,
      [op.file, '--kubeconfig', hostKubeconfig, '--no-sample', '--secret-namespace', SECRET_NAMESPACE, '--metrics-bind-address', '127.0.0.1:0', '--health-probe-bind-address', '127.0.0.1:0'],
      { cwd: root, env: { ...process.env, KUBELOOP_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const lines: Record<string, unknown>[] = [];
    let engagedMs = 0;
    let stderr = '';
    proc.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        lines.push(parsed);
        if (parsed['msg'] === 'cluster engaged') engagedMs = performance.now() - t0;
      } catch {
        /* not JSON */
      }
    });
    const urlOf = (msg: string): string | undefined => lines.find((l) => l['msg'] === msg && typeof l['url'] === 'string')?.['url'] as string | undefined;
    try {
      const deadline = Date.now() + 120_000;
      for (;;) {
        if (proc.exitCode !== null) throw new Error(`the operator exited (${proc.exitCode}):\n${lines.slice(-5).map((l) => JSON.stringify(l)).join('\n')}\n${stderr}`);
        if (Date.now() > deadline) throw new Error(`${members} members: not converged in 120 s\n${lines.slice(-5).map((l) => JSON.stringify(l)).join('\n')}\n${stderr}`);
        const health = urlOf('health probes listening');
        const ready = health !== undefined && (await fetch(`${health}/readyz`).then((r) => r.ok, () => false));
        if (ready && (await converged(members))) break;
        await sleep(50);
      }
      const convergedMs = performance.now() - t0;
      await sleep(settleMs);
      const rss = rssOf(proc.pid!);
      const metrics = await (await fetch(`${urlOf('metrics listening')!}/metrics`)).text();
      const gauge = (name: string): number | undefined => {
        const m = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(metrics);
        return m ? Number(m[1]) : undefined;
      };
      const memberRequests = memberProxies.slice(0, members).flatMap((p) => p.requests);
      const run: Run = {
        operator: op.label,
        members,
        round,
        convergedMs,
        engagedMs,
        rss,
        heapUsed: gauge('nodejs_heap_size_used_bytes'),
        heapTotal: gauge('nodejs_heap_size_total_bytes'),
        host: tally(hostProxy.requests),
        memberRequests: tally(memberRequests),
        watchesOpened: [...hostProxy.requests, ...memberRequests].filter((r) => verbOf(r) === 'watch').length,
      };
      load.push(loadavg());
      log(`${op.label ? `${op.label}: ` : ''}${members} members (round ${round + 1}): converged in ${(convergedMs / 1000).toFixed(2)} s (all engaged at ${(engagedMs / 1000).toFixed(2)} s), RSS ${mib(rss)} MiB, heap ${mib(run.heapUsed)}/${mib(run.heapTotal)} MiB, requests host ${JSON.stringify(run.host)} members ${JSON.stringify(run.memberRequests)}, watches ${run.watchesOpened}; load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
      return run;
    } finally {
      proc.kill('SIGTERM');
      await new Promise((r) => (proc.exitCode !== null || proc.signalCode !== null ? r(undefined) : proc.once('exit', r)));
    }
  }

  const runs: Run[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const members of round % 2 ? [...sizes].reverse() : sizes) {
      // every build at each size, the order rotating per round
      for (let k = 0; k < operators.length; k++) runs.push(await measure(operators[(k + round) % operators.length]!, members, round));
    }
  }
  for (const p of [hostProxy, ...memberProxies]) await p.close();
  driver.transport.close();
  await env.stop();
  rmSync(work, { recursive: true, force: true });

  // --- report: per build, the median run per size, deltas over the smallest size (0 members: the floor) ---
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const total = (r: Record<Verb, number>): number => VERBS.reduce((s, v) => s + r[v], 0);
  const loads = load.map((l) => l[0]!);
  const out: string[] = [];
  const verbCols = (r: Record<Verb, number>): string => `${total(r)} (${VERBS.map((v) => r[v]).join('/')})`;
  const report = (op: { label: string; file: string }) => {
    const bySize = sizes.map((members) => {
      const mine = runs.filter((r) => r.members === members && r.operator === op.label);
      const pick = (f: (r: Run) => number): number => median(mine.map(f));
      const verbs = (f: (r: Run) => Record<Verb, number>): Record<Verb, number> => Object.fromEntries(VERBS.map((v) => [v, pick((r) => f(r)[v])])) as Record<Verb, number>;
      return {
        members,
        convergedMs: pick((r) => r.convergedMs),
        engagedMs: pick((r) => r.engagedMs),
        rss: pick((r) => r.rss),
        rssPerRound: mine.map((r) => r.rss),
        heapUsed: pick((r) => r.heapUsed ?? 0),
        heapTotal: pick((r) => r.heapTotal ?? 0),
        host: verbs((r) => r.host),
        memberRequests: verbs((r) => r.memberRequests),
        watchesOpened: pick((r) => r.watchesOpened),
      };
    });
    type Size = (typeof bySize)[number];
    const floor = bySize.find((x) => x.members === Math.min(...sizes))!;
    const per = (x: Size, f: (y: Size) => number, digits: number): string => (x.members === floor.members ? '' : ((f(x) - f(floor)) / (x.members - floor.members)).toFixed(digits));
    out.push(`\nFleet: the example operator (node ${process.version}, ${op.label ? `${op.label} = ` : ''}${op.file.replace(`${root}/`, '')}), host + N members on one control plane, ${configs} FleetConfigs, ${rounds} round(s), median per size; load average (1 min) ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}\n`);
    out.push('| members | converged s | all engaged s | RSS MiB | heap used / total MiB | requests host (disc/LIST/WATCH/GET/write) | requests members (disc/LIST/WATCH/GET/write) | watches opened | RSS MiB per member vs floor | heap used MiB per member | requests per member | watches per member |');
    out.push('|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|');
    for (const x of bySize) {
      out.push(
        `| ${x.members} | ${(x.convergedMs / 1000).toFixed(2)} | ${(x.engagedMs / 1000).toFixed(2)} | ${mib(x.rss)}${x.rssPerRound.length > 1 ? ` (${x.rssPerRound.map((y) => mib(y)).join(' / ')})` : ''} | ${mib(x.heapUsed)} / ${mib(x.heapTotal)} | ${verbCols(x.host)} | ${verbCols(x.memberRequests)} | ${x.watchesOpened} | ${per(x, (y) => y.rss / 1048576, 1)} | ${per(x, (y) => y.heapUsed / 1048576, 1)} | ${per(x, (y) => total(y.host) + total(y.memberRequests), 1)} | ${per(x, (y) => y.watchesOpened, 1)} |`,
      );
    }
    // Least squares over the medians: the cost of one more member, all sizes at once.
    const slope = (f: (x: Size) => number): number => {
      const mx = bySize.reduce((a, x) => a + x.members, 0) / bySize.length;
      const my = bySize.reduce((a, x) => a + f(x), 0) / bySize.length;
      const num = bySize.reduce((a, x) => a + (x.members - mx) * (f(x) - my), 0);
      const den = bySize.reduce((a, x) => a + (x.members - mx) ** 2, 0);
      return den === 0 ? 0 : num / den;
    };
    const slopes = {
      rssMiB: slope((x) => x.rss / 1048576),
      heapUsedMiB: slope((x) => x.heapUsed / 1048576),
      requests: slope((x) => total(x.host) + total(x.memberRequests)),
      ...Object.fromEntries(VERBS.map((v) => [v, slope((x) => x.host[v] + x.memberRequests[v])])),
      watches: slope((x) => x.watchesOpened),
      convergedMs: slope((x) => x.convergedMs),
    };
    out.push(`\nSlope over all sizes (least squares on the medians), per added member: RSS ${slopes.rssMiB.toFixed(2)} MiB, heap used ${slopes.heapUsedMiB.toFixed(2)} MiB, requests ${slopes.requests.toFixed(2)} (${VERBS.map((v) => `${v} ${(slopes as Record<string, number>)[v]!.toFixed(2)}`).join(', ')}), watches ${slopes.watches.toFixed(2)}, converged ${(slopes.convergedMs / 1000).toFixed(3)} s`);
    return { op, bySize, slopes };
  };
  const reports = operators.map(report);
  if (reports.length > 1) {
    // Each later build against the first, size by size (medians).
    const [first, ...later] = reports;
    const ratio = (a: number, b: number): string => (b > 0 ? `${(a / b).toFixed(2)}x` : '');
    for (const other of later) {
      out.push(`\n${other.op.label} against ${first!.op.label}, size by size (medians; ratio ${other.op.label}/${first!.op.label}):\n`);
      out.push(`| members | converged s | ratio | RSS MiB | ratio | heap used MiB | ratio | requests | ratio |`);
      out.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
      for (const [i, x] of other.bySize.entries()) {
        const b = first!.bySize[i]!;
        const req = (y: typeof x): number => total(y.host) + total(y.memberRequests);
        out.push(`| ${x.members} | ${(x.convergedMs / 1000).toFixed(2)} vs ${(b.convergedMs / 1000).toFixed(2)} | ${ratio(x.convergedMs, b.convergedMs)} | ${mib(x.rss)} vs ${mib(b.rss)} | ${ratio(x.rss, b.rss)} | ${mib(x.heapUsed)} vs ${mib(b.heapUsed)} | ${ratio(x.heapUsed, b.heapUsed)} | ${req(x)} vs ${req(b)} | ${ratio(req(x), req(b))} |`);
      }
      out.push(`\nPer added member: RSS ${other.slopes.rssMiB.toFixed(2)} vs ${first!.slopes.rssMiB.toFixed(2)} MiB, requests ${other.slopes.requests.toFixed(2)} vs ${first!.slopes.requests.toFixed(2)}, converged ${(other.slopes.convergedMs / 1000).toFixed(3)} vs ${(first!.slopes.convergedMs / 1000).toFixed(3)} s`);
    }
  }
  out.push('\nOne control plane; every copy in place before each run (each member reads it from its cache and writes only its status entry, in the host).');
  process.stdout.write(`${out.join('\n')}\n\n`);
  process.stdout.write(
    `${JSON.stringify({
      bench: 'fleet',
      node: process.version,
      configs,
      rounds,
      loadavg1: { min: Math.min(...loads), max: Math.max(...loads) },
      perMember: reports.length === 1 ? reports[0]!.slopes : Object.fromEntries(reports.map((r) => [r.op.label, r.slopes])),
      runs: runs.map((r) => ({ operator: r.operator || undefined, members: r.members, round: r.round, convergedMs: Math.round(r.convergedMs), engagedMs: Math.round(r.engagedMs), rssMiB: mib(r.rss), heapUsedMiB: mib(r.heapUsed), heapTotalMiB: mib(r.heapTotal), host: r.host, memberRequests: r.memberRequests, watchesOpened: r.watchesOpened })),
    })}\n`,
  );
}

await main();
