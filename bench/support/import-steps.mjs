/**
 * What each module adds to RSS inside the example operator's own import
 * graph (not alone, as `pnpm bench:import-cost` measures it): one process
 * imports them in the order the operator loads them, collecting garbage
 * and reading /proc/self/status after each step. Modules shared with
 * earlier steps are paid once, at the first. Run with the shipped flags:
 *
 *   node --expose-gc --max-semi-space-size=1 bench/support/import-steps.mjs
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = (pkg) => pathToFileURL(join(root, pkg, 'dist', 'index.js')).href;
const fromManager = createRequire(join(root, 'packages', 'manager', 'package.json'));
const example = createRequire(join(root, 'examples', 'harddisk-operator', 'package.json'));
const cjs = (spec, require = fromManager) => pathToFileURL(require.resolve(spec)).href;
const steps = [
  ['node:https', 'node:https'],
  ['@kubeloop/scheme', dist('packages/scheme')],
  ['@kubeloop/scheme/schema (typebox\'s Type)', pathToFileURL(join(root, 'packages', 'scheme', 'dist', 'schema', 'index.js')).href],
  ['@kubeloop/client', dist('packages/client')],
  ['@kubeloop/cache (rxjs Observable)', dist('packages/cache')],
  ['pino', cjs('pino')],
  ['prom-client (@opentelemetry/api)', cjs('prom-client')],
  ['reflect-metadata', cjs('reflect-metadata', example)],
  ['tsyringe', cjs('tsyringe', example)],
  ['@kubeloop/webhook (pki)', dist('packages/webhook')],
  ['@kubeloop/manager', dist('packages/manager')],
  ['the example (its kinds, reconciler, webhooks)', dist('examples/harddisk-operator')],
];
if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
const settle = async () => {
  await sleep(30);
  for (let i = 0; i < 3; i++) globalThis.gc();
};
const status = () => {
  const text = readFileSync('/proc/self/status', 'utf8');
  const mib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) / 1024;
  return { rss: mib('VmRSS'), anon: mib('RssAnon'), file: mib('RssFile'), heap: process.memoryUsage().heapUsed / 1048576 };
};
const f = (n) => n.toFixed(1);
await settle();
let prev = status();
console.log(`| step | RSS added | anon added | file added | heap added | RSS total |\n|---|---:|---:|---:|---:|---:|\n| (plain node) | | | | | ${f(prev.rss)} |`);
for (const [name, url] of steps) {
  await import(url);
  await settle();
  const now = status();
  console.log(`| ${name} | ${f(now.rss - prev.rss)} | ${f(now.anon - prev.anon)} | ${f(now.file - prev.file)} | ${f(now.heap - prev.heap)} | ${f(now.rss)} |`);
  prev = now;
}
