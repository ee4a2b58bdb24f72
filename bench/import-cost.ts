/**
 * What each import costs in memory: for every module, a fresh Node process
 * (with --expose-gc) measures its RSS and heap after a full GC, imports the
 * module, collects again and measures again. The median of several runs is
 * reported, as the RSS the import added and the total. Needs no cluster.
 * Prints a table, then one JSON line of the figures.
 *
 *   pnpm bench:import-cost        (from the repository root, after a build)
 *
 * Extra modules can be measured with IMPORT_COST_EXTRA=/abs/path/to/module.js[,...]
 * (for example an older build of a package, to compare).
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Number(process.env['IMPORT_COST_RUNS'] ?? 5);

/** Module, and the folder whose node_modules resolve it. */
const MODULES: { spec: string; from: string; note?: string }[] = [
  { spec: '(nothing)', from: 'bench', note: 'plain node' },
  { spec: 'node:https', from: 'bench', note: 'TLS: any https client pays it' },
  { spec: '@kubernetes/client-node', from: 'bench' },
  { spec: '@kubeloop/scheme', from: 'bench' },
  { spec: '@kubeloop/mapper', from: 'bench' },
  { spec: '@kubeloop/client', from: 'bench' },
  { spec: '@kubeloop/cache', from: 'bench' },
  { spec: '@kubeloop/manager', from: 'bench' },
  { spec: 'js-yaml', from: 'packages/client' },
  { spec: 'hpagent', from: 'packages/client' },
  { spec: 'pino', from: 'packages/manager' },
  { spec: 'prom-client', from: 'packages/manager' },
  { spec: 'rxjs', from: 'packages/manager' },
  { spec: 'tsyringe', from: 'packages/manager', note: 'with reflect-metadata' },
  ...(process.env['IMPORT_COST_EXTRA'] ?? '')
    .split(',')
    .filter(Boolean)
    .map((p) => ({ spec: p, from: 'bench' })),
];

const probe = (spec: string): string => `
const gc = globalThis.gc;
const settle = () => { for (let i = 0; i < 3; i++) gc(); };
settle();
const before = process.memoryUsage();
${spec === '(nothing)' ? '' : spec === 'tsyringe' ? `await import('reflect-metadata'); await import('tsyringe');` : `await import(${JSON.stringify(spec)});`}
await new Promise((r) => setTimeout(r, 50));
settle();
const after = process.memoryUsage();
console.log(JSON.stringify({ rss: after.rss, rssAdded: after.rss - before.rss, heapAdded: after.heapUsed - before.heapUsed }));
`;

const MiB = 1024 * 1024;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Row {
  module: string;
  rssAddedMiB: number;
  heapAddedMiB: number;
  rssTotalMiB: number;
  note?: string;
}
const rows: Row[] = [];
for (const m of MODULES) {
  const samples: { rss: number; rssAdded: number; heapAdded: number }[] = [];
  for (let i = 0; i < RUNS; i++) {
    const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', probe(m.spec)], { cwd: join(root, m.from), encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`import of ${m.spec} failed: ${r.stderr}`);
    samples.push(JSON.parse(r.stdout.trim().split('\n').pop()!) as { rss: number; rssAdded: number; heapAdded: number });
  }
  rows.push({
    module: m.spec,
    rssAddedMiB: Math.round((median(samples.map((s) => s.rssAdded)) / MiB) * 10) / 10,
    heapAddedMiB: Math.round((median(samples.map((s) => s.heapAdded)) / MiB) * 10) / 10,
    rssTotalMiB: Math.round((median(samples.map((s) => s.rss)) / MiB) * 10) / 10,
    ...(m.note ? { note: m.note } : {}),
  });
}

console.log(`node ${process.version}, median of ${RUNS} fresh processes each\n`);
console.log('| module | RSS added (MiB) | heap added (MiB) | RSS total (MiB) |');
console.log('| --- | ---: | ---: | ---: |');
for (const r of rows) console.log(`| ${r.module}${r.note ? ` (${r.note})` : ''} | ${r.rssAddedMiB} | ${r.heapAddedMiB} | ${r.rssTotalMiB} |`);
console.log(JSON.stringify({ bench: 'import-cost', node: process.version, runs: RUNS, rows }));
