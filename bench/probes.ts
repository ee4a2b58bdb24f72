/**
 * Small probes behind single figures in docs/benchmarks.md that no larger
 * bench measures. Each runs its variants in fresh child processes
 * (support/probe-child.ts, compiled to .mjs so Node's type stripper is not in
 * them), once with V8's defaults and once with the node flags the example's
 * scripts/dev.sh and the scaffold's Dockerfile ship, the rounds interleaving
 * every variant and flag set; the medians over rounds are reported. Prints a
 * table per probe, then one JSON line of all figures.
 *
 * - get: CPU (user + system, `process.cpuUsage`) per sequential GET of one
 *   ConfigMap from envtest's kube-apiserver, the body parsed with
 *   JSON.parse, three ways: `node:https` with a keep-alive agent and the
 *   headers as an object (the floor of `pnpm bench:request`), the same with
 *   the headers as a raw array (Node then validates nothing and adds no Host:
 *   the array carries it), and one `node:http2` session (what client-go
 *   speaks); and each child's RSS after its requests (the whole process: node
 *   and the builtins the variant loads).
 * - intern: heap bytes per ConfigMap held by a kubeloop `Informer` (the
 *   cache's own code: managedFields dropped, objects frozen), with
 *   `internStrings` on (the default) and off: --objects ConfigMaps like
 *   bench:memory's (four short data values) with three labels, an owner
 *   reference and one managedFields entry, listed in pages of 500 parsed
 *   from JSON text; the heap after three full collections, before the list
 *   and once synced, divided by the count. No API server: the list-watch is
 *   in the child.
 * - builtins: what loading `node:worker_threads` and `node:assert` (pino's
 *   transport support and sonic-boom require them when loaded) adds to a
 *   process that has loaded `node:https`: RSS, anonymous and file-backed
 *   memory, and heap after full collections. --modules and --after change
 *   the two lists.
 * - ops: CPU per single operation that kubeloop does per request, µs, each
 *   in a loop of --n after --warmup: a query string built with
 *   URLSearchParams as the client's transport builds it (a paginated,
 *   label-selected list's five parameters, one undefined) and `toString()`;
 *   a timer set and cleared (`clearTimeout(setTimeout(…))`, a request's
 *   timeout); `structuredClone` of a small object (apiVersion, kind, a
 *   three-field metadata) and of a ConfigMap as the API server returns it
 *   (the intern probe's, about 1.2 KB of JSON).
 * - gc-observer: what prom-client's `nodejs_gc_duration_seconds` (a
 *   PerformanceObserver on 'gc' entries feeding a histogram; every operator's
 *   default metrics) adds per collection: an allocation loop (--chunks
 *   chunks of --objects small objects, the event loop turned between
 *   chunks) run without and with the metric registered, CPU (user +
 *   system) of each; the collections counted by the histogram itself.
 *
 *   pnpm bench:probes                               (all three; from the repository root, after a build)
 *   pnpm bench:probes get --n=2000 --rounds=5
 *   pnpm bench:probes get --only=https,http2
 *   pnpm bench:probes intern --objects=10000 --rounds=3
 *   pnpm bench:probes builtins --modules=node:worker_threads,node:assert --after=node:https --rounds=5
 *   pnpm bench:probes ops --n=200000 --warmup=20000 --rounds=5
 *   pnpm bench:probes gc-observer --chunks=4000 --objects=2000 --rounds=5
 *   PROBE_NODE_FLAGS="--max-semi-space-size=1" pnpm bench:probes get   (another flag set instead of the shipped one)
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { compileScripts, mib } from './support/processes.ts';

const NAMESPACE = 'default';
const OBJECT = 'bench-probes';
/** The flags the example's scripts/dev.sh and the scaffold's Dockerfile run an operator with. */
const SHIPPED_FLAGS = '--max-semi-space-size=1 --no-opt --no-maglev';
const GET_VARIANTS = ['https', 'https-raw-headers', 'http2'] as const;
const INTERN_VARIANTS = ['not-interned', 'interned'] as const;
const OPS_VARIANTS = ['query', 'timer', 'clone-small', 'clone-configmap'] as const;
const OPS_LABELS: Record<(typeof OPS_VARIANTS)[number], string> = {
  query: 'URLSearchParams: a list query built, toString()',
  timer: 'setTimeout + clearTimeout',
  'clone-small': 'structuredClone, small object',
  'clone-configmap': 'structuredClone, ConfigMap (~1.2 KB JSON)',
};
const GC_OBSERVER_VARIANTS = ['without', 'with'] as const;
const PROBES = ['get', 'intern', 'builtins', 'ops', 'gc-observer'] as const;
type Probe = (typeof PROBES)[number];

function param(name: string, fallback: string): string {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const log = (line: string): void => void process.stderr.write(`[bench:probes] ${line}\n`);
const range = (xs: number[], digits: number): string => {
  const lo = Math.min(...xs).toFixed(digits);
  const hi = Math.max(...xs).toFixed(digits);
  return lo === hi ? lo : `${lo}–${hi}`;
};

/** Run the compiled child once; its last stdout line, parsed. */
function runChild(script: string, flags: readonly string[], probe: Probe, variant: string, options: Record<string, unknown>): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...flags, script, probe, variant, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    p.on('error', reject);
    p.on('exit', (code) => {
      const line = stdout.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`${probe} ${variant} (${flags.join(' ') || 'no flags'}) exited ${code}: ${stdout}`));
      else resolve(JSON.parse(line) as Record<string, number>);
    });
  });
}

async function main(): Promise<void> {
  const asked = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const unknown = asked.filter((a) => !(PROBES as readonly string[]).includes(a));
  if (unknown.length > 0) throw new Error(`unknown probe(s) ${unknown.join(', ')}; known: ${PROBES.join(', ')}`);
  const probes = asked.length > 0 ? (asked as Probe[]) : [...PROBES];
  const rounds = Math.max(1, Number.parseInt(param('rounds', '3'), 10));
  const shipped = (process.env['PROBE_NODE_FLAGS'] ?? SHIPPED_FLAGS).split(/\s+/).filter(Boolean);
  const flagSets = [
    { label: 'V8 defaults', flags: [] as string[] },
    { label: shipped.join(' '), flags: shipped },
  ];
  const scripts = compileScripts(['probe-child.ts'], '.tmp-probes-');
  const script = scripts.get('probe-child.ts')!;
  const load = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const out: Record<string, unknown> = { bench: 'probes', node: process.version, rounds, loadStart: load() };
  const report: string[] = [];
  try {
    /** Every variant under every flag set, `rounds` times interleaved: the samples by `flags|variant`. */
    const interleaved = async (probe: Probe, variants: readonly string[], options: Record<string, unknown>, gcFlags: readonly string[]): Promise<Map<string, Record<string, number>[]>> => {
      const samples = new Map<string, Record<string, number>[]>();
      for (let round = 1; round <= rounds; round++) {
        for (const set of flagSets) {
          for (const variant of round % 2 ? variants : [...variants].reverse()) {
            const r = await runChild(script, [...gcFlags, ...set.flags], probe, variant, options);
            log(`${probe} round ${round} ${set.label} ${variant}: ${JSON.stringify(r)}`);
            const k = `${set.label}|${variant}`;
            samples.set(k, [...(samples.get(k) ?? []), r]);
          }
        }
      }
      return samples;
    };

    if (probes.includes('get')) {
      const n = Math.max(1, Number.parseInt(param('n', '2000'), 10));
      const warmup = Math.max(0, Number.parseInt(param('warmup', '300'), 10));
      const only = param('only', GET_VARIANTS.join(',')).split(',');
      const bad = only.filter((v) => !(GET_VARIANTS as readonly string[]).includes(v));
      if (bad.length > 0) throw new Error(`--only: unknown variant(s) ${bad.join(', ')}; known: ${GET_VARIANTS.join(', ')}`);
      const { createEnvironment } = await import('@kubeloop/envtest');
      const { createClient } = await import('@kubeloop/client');
      const env = createEnvironment();
      await env.start();
      try {
        await createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'bench-probes' }).create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: OBJECT, namespace: NAMESPACE }, data: { a: '0' } });
        const kc = env.kubeConfig;
        const user = kc.getCurrentUser()!;
        const cluster = kc.getCurrentCluster()!;
        const pem = (data: string | undefined, file: string | undefined): string => (data ? Buffer.from(data, 'base64').toString() : readFileSync(file!, 'utf8'));
        const options = { server: cluster.server, ca: pem(cluster.caData, cluster.caFile), cert: pem(user.certData, user.certFile), key: pem(user.keyData, user.keyFile), path: `/api/v1/namespaces/${NAMESPACE}/configmaps/${OBJECT}`, n, warmup };
        const samples = await interleaved('get', only, options, []);
        const results: Record<string, unknown>[] = [];
        report.push(`\nget: CPU per sequential GET (user + system), µs, and the child's RSS after its requests, MiB; median of ${rounds} rounds of ${n} after ${warmup} warm-up; the rounds' range beside it\n`);
        report.push('| flags | variant | µs per GET | ×https | rounds, µs | RSS | RSS − https |');
        report.push('|---|---|---:|---:|---|---:|---:|');
        for (const set of flagSets) {
          const base = samples.get(`${set.label}|https`);
          for (const variant of only) {
            const rows = samples.get(`${set.label}|${variant}`)!;
            const us = median(rows.map((r) => r['usPerRequest']!));
            const rss = median(rows.map((r) => r['rss']!));
            const ratio = base ? us / median(base.map((r) => r['usPerRequest']!)) : undefined;
            const extra = base ? rss - median(base.map((r) => r['rss']!)) : undefined;
            results.push({ flags: set.label, variant, usPerRequest: Math.round(us), ratioToHttps: ratio === undefined ? null : Number(ratio.toFixed(2)), rssMiB: mib(rss), rssOverHttpsMiB: extra === undefined ? null : mib(extra), roundsUs: rows.map((r) => Math.round(r['usPerRequest']!)) });
            report.push(`| ${set.label} | ${variant} | ${us.toFixed(0)} | ${ratio === undefined ? '-' : `${ratio.toFixed(2)}x`} | ${range(rows.map((r) => r['usPerRequest']!), 0)} | ${mib(rss)} | ${extra === undefined ? '-' : mib(extra)} |`);
          }
        }
        out['get'] = { n, warmup, results };
      } finally {
        await env.stop();
      }
    }

    if (probes.includes('intern')) {
      const n = Math.max(1, Number.parseInt(param('objects', '10000'), 10));
      const samples = await interleaved('intern', INTERN_VARIANTS, { n }, ['--expose-gc']);
      const results: Record<string, unknown>[] = [];
      report.push(`\nintern: heap bytes per ConfigMap held by an Informer (${n} objects, after full collections), median of ${rounds} rounds\n`);
      report.push('| flags | internStrings | bytes per object | rounds | change |');
      report.push('|---|---|---:|---|---:|');
      for (const set of flagSets) {
        const off = median(samples.get(`${set.label}|not-interned`)!.map((r) => r['bytesPerObject']!));
        for (const variant of INTERN_VARIANTS) {
          const rows = samples.get(`${set.label}|${variant}`)!;
          const bytes = median(rows.map((r) => r['bytesPerObject']!));
          results.push({ flags: set.label, internStrings: variant === 'interned', bytesPerObject: Math.round(bytes), rounds: rows.map((r) => Math.round(r['bytesPerObject']!)) });
          report.push(`| ${set.label} | ${variant === 'interned' ? 'true (default)' : 'false'} | ${bytes.toFixed(0)} | ${range(rows.map((r) => r['bytesPerObject']!), 0)} | ${variant === 'interned' ? `${(((bytes - off) / off) * 100).toFixed(0)} %` : ''} |`);
        }
      }
      out['intern'] = { objects: n, results };
    }

    if (probes.includes('builtins')) {
      const modules = param('modules', 'node:worker_threads,node:assert');
      const after = param('after', 'node:https');
      const samples = await interleaved('builtins', [modules], { after }, ['--expose-gc']);
      const results: Record<string, unknown>[] = [];
      report.push(`\nbuiltins: what loading ${modules} adds to a process that has loaded ${after || 'nothing'}, MiB, median of ${rounds} rounds (after full collections)\n`);
      report.push('| flags | RSS added | rounds | anon added | file added | heap added | RSS before |');
      report.push('|---|---:|---|---:|---:|---:|---:|');
      for (const set of flagSets) {
        const rows = samples.get(`${set.label}|${modules}`)!;
        const m = (k: string): number => median(rows.map((r) => r[k]!));
        results.push({ flags: set.label, rssMiB: mib(m('rss')), anonMiB: mib(m('anon')), fileMiB: mib(m('file')), heapMiB: mib(m('heap')), rssBeforeMiB: mib(m('rssBefore')), roundsRssMiB: rows.map((r) => mib(r['rss'])) });
        report.push(`| ${set.label} | ${mib(m('rss'))} | ${range(rows.map((r) => r['rss']! / 1048576), 1)} | ${mib(m('anon'))} | ${mib(m('file'))} | ${mib(m('heap'))} | ${mib(m('rssBefore'))} |`);
      }
      out['builtins'] = { modules, after, results };
    }

    if (probes.includes('ops')) {
      const n = Math.max(1, Number.parseInt(param('n', '200000'), 10));
      const warmup = Math.max(0, Number.parseInt(param('warmup', '20000'), 10));
      const samples = await interleaved('ops', OPS_VARIANTS, { n, warmup }, []);
      const [defaults, flagged] = flagSets as [(typeof flagSets)[number], (typeof flagSets)[number]];
      const results: Record<string, unknown>[] = [];
      report.push(`\nops: CPU per operation (user + system), µs, median of ${rounds} rounds of ${n} after ${warmup} warm-up; the rounds' range beside it\n`);
      report.push(`| operation | ${defaults.label} | rounds | ${flagged.label} | rounds | flags / defaults |`);
      report.push('|---|---:|---|---:|---|---:|');
      for (const variant of OPS_VARIANTS) {
        const rowsOf = (label: string): number[] => samples.get(`${label}|${variant}`)!.map((r) => r['usPerOp']!);
        const a = rowsOf(defaults.label);
        const b = rowsOf(flagged.label);
        results.push({ op: variant, usDefaults: Number(median(a).toFixed(3)), usFlags: Number(median(b).toFixed(3)), ratio: Number((median(b) / median(a)).toFixed(2)), roundsDefaults: a.map((x) => Number(x.toFixed(3))), roundsFlags: b.map((x) => Number(x.toFixed(3))) });
        report.push(`| ${OPS_LABELS[variant]} | ${median(a).toFixed(2)} | ${range(a, 2)} | ${median(b).toFixed(2)} | ${range(b, 2)} | ${(median(b) / median(a)).toFixed(2)}x |`);
      }
      out['ops'] = { n, warmup, results };
    }

    if (probes.includes('gc-observer')) {
      const chunks = Math.max(1, Number.parseInt(param('chunks', '4000'), 10));
      const objects = Math.max(1, Number.parseInt(param('objects', '2000'), 10));
      const samples = await interleaved('gc-observer', GC_OBSERVER_VARIANTS, { chunks, objects }, []);
      const results: Record<string, unknown>[] = [];
      report.push(`\ngc-observer: an allocation loop (${chunks} chunks of ${objects} objects) without and with prom-client's nodejs_gc_duration_seconds, CPU ms, median of ${rounds} rounds; added per collection = (with − without) / the collections the histogram counted\n`);
      report.push('| flags | CPU without | rounds | CPU with | rounds | collections | collections per CPU s | added per collection, µs | added |');
      report.push('|---|---:|---|---:|---|---:|---:|---:|---:|');
      for (const set of flagSets) {
        const without = samples.get(`${set.label}|without`)!.map((r) => r['cpuMs']!);
        const withObserver = samples.get(`${set.label}|with`)!;
        const withCpu = withObserver.map((r) => r['cpuMs']!);
        const collections = median(withObserver.map((r) => r['collections']!));
        const added = median(withCpu) - median(without);
        const perCollectionUs = (added * 1000) / collections;
        const share = added / median(without);
        results.push({ flags: set.label, cpuMsWithout: Math.round(median(without)), cpuMsWith: Math.round(median(withCpu)), collections, collectionsPerCpuSecond: Math.round(collections / (median(without) / 1000)), addedUsPerCollection: Number(perCollectionUs.toFixed(1)), addedShare: Number(share.toFixed(3)), roundsWithout: without.map(Math.round), roundsWith: withCpu.map(Math.round) });
        report.push(`| ${set.label} | ${median(without).toFixed(0)} | ${range(without, 0)} | ${median(withCpu).toFixed(0)} | ${range(withCpu, 0)} | ${collections} | ${(collections / (median(without) / 1000)).toFixed(0)} | ${perCollectionUs.toFixed(1)} | ${(share * 100).toFixed(0)} % |`);
      }
      out['gcObserver'] = { chunks, objects, results };
    }
  } finally {
    rmSync(dirname(script), { recursive: true, force: true });
  }
  out['loadEnd'] = load();
  console.log(`node ${process.version}; load average ${String(out['loadStart'])} at the start, ${String(out['loadEnd'])} at the end`);
  console.log(report.join('\n'));
  console.log('');
  console.log(JSON.stringify(out));
}

await main();
