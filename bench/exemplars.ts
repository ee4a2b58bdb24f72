/**
 * What an exemplar costs a reconcile: `ControllerMetrics.observeReconcile`
 * on a histogram made without exemplars (tracing off, as shipped) and on
 * one made with them (tracing on: each observation carries its reconcile's
 * trace ID), N observations per round, the two interleaved round by round so
 * the machine's load hits both alike. No cluster needed.
 *
 *   pnpm bench:exemplars        (from the repository root, after a build)
 *
 * Prints nanoseconds per observation (median of ROUNDS rounds) for each and
 * their difference, then one JSON line of the figures.
 */
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as internalTypes from '../packages/manager/src/internal-api.ts';
import type * as managerTypes from '../packages/manager/src/index.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { ControllerMetrics } = (await import(join(root, 'packages/manager/dist/internal-api.js'))) as Pick<typeof internalTypes, 'ControllerMetrics'>;
const { Registry } = (await import(join(root, 'packages/manager/dist/index.js'))) as Pick<typeof managerTypes, 'Registry'>;

const arg = (name: string, fallback: number): number => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const N = arg('n', 1_000_000);
const ROUNDS = arg('rounds', 5);

const labels = { controller: 'harddisk' };
// Trace IDs as a sampler would give them: a few hundred distinct ones, reused.
const traceIds = Array.from({ length: 512 }, () => randomBytes(16).toString('hex'));
// Reconcile times over the histogram's buckets, fixed so both sides observe the same values.
const seconds = Array.from({ length: 1024 }, (_, i) => ((i * 7919) % 1000) / 2000);

function round(metrics: InstanceType<typeof ControllerMetrics>, withTrace: boolean): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) metrics.observeReconcile(labels, seconds[i & 1023]!, withTrace ? traceIds[i & 511] : undefined);
  return Number(process.hrtime.bigint() - t0) / N;
}

const plain = new ControllerMetrics(new Registry(), { exemplars: false });
const exemplary = new ControllerMetrics(new Registry(), { exemplars: true });
round(plain, false);
round(exemplary, true); // warm both up
const off: number[] = [];
const on: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  off.push(round(plain, false));
  on.push(round(exemplary, true));
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const figures = { n: N, rounds: ROUNDS, offNs: Math.round(median(off)), onNs: Math.round(median(on)) };
console.log(`observeReconcile, ${N} observations, median of ${ROUNDS} rounds:`);
console.log(`  tracing off (no exemplars):     ${figures.offNs} ns`);
console.log(`  tracing on (trace ID exemplar): ${figures.onNs} ns (+${figures.onNs - figures.offNs} ns, ${(figures.onNs / figures.offNs).toFixed(2)}x)`);
console.log(JSON.stringify(figures));
