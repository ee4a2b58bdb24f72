/**
 * Throughput of the work queue's hot path (add, get, done), no cluster
 * needed: the FIFO queue and the priority queue (controllers' default), with
 * and without the manager's prom-client metrics, in four shapes:
 *
 * - fill/drain: N distinct keys added at priority 0, then all taken and done;
 * - mixed: N keys, every other one at LOW_PRIORITY, then all taken and done;
 * - steady: 10,000 keys wait at LOW_PRIORITY while priority-0 keys are
 *   added, taken and done one by one (each get looks past the waiting low
 *   line; with aging on, the low line's oldest key is served every other get
 *   once it is overdue);
 * - readd: one key added while held, N times (the dirty/processing path).
 *
 *   pnpm bench:workqueue        (from the repository root, after a build)
 *
 * To compare with an earlier build in one run, set WORKQUEUE_BASELINE (and
 * WORKQUEUE_BASELINE_METRICS), see below: the table gains `base` columns.
 *
 * Prints operations per second (one op = one key added, taken and done),
 * the median of ROUNDS rounds, then one JSON line of the figures.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as wqTypes from '../packages/workqueue/src/index.ts';
import type { WorkQueue } from '../packages/workqueue/src/index.ts';
import type * as internalTypes from '../packages/manager/src/internal-api.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
type WQ = typeof wqTypes;
type Internal = typeof internalTypes;
const wq = (await import(join(root, 'packages/workqueue/dist/index.js'))) as WQ;
const { createWorkQueueMetrics } = (await import(join(root, 'packages/manager/dist/internal-api.js'))) as Pick<Internal, 'createWorkQueueMetrics'>;
// A baseline to compare with in the same process, rounds interleaved (the machine's load hits both alike):
// WORKQUEUE_BASELINE = another build of the queue (a copy of packages/workqueue/dist/index.js from before a
// change), WORKQUEUE_BASELINE_METRICS = the manager's workqueue-metrics module from before (optional).
const base = process.env['WORKQUEUE_BASELINE'] ? ((await import(process.env['WORKQUEUE_BASELINE'])) as WQ) : undefined;
const baseMetrics = process.env['WORKQUEUE_BASELINE_METRICS']
  ? ((await import(process.env['WORKQUEUE_BASELINE_METRICS'])) as Pick<Internal, 'createWorkQueueMetrics'>).createWorkQueueMetrics
  : createWorkQueueMetrics;
// prom-client as the manager resolves it (the bench does not depend on it itself).
const { Registry } = createRequire(join(root, 'packages/manager/package.json'))('prom-client') as { Registry: new () => Parameters<typeof createWorkQueueMetrics>[0] };

const N = Number(process.env['WORKQUEUE_BENCH_N'] ?? 100_000);
const ROUNDS = Number(process.env['WORKQUEUE_BENCH_ROUNDS'] ?? 7);
const keys = Array.from({ length: N }, (_, i) => `ns-${i % 50}/obj-${i}`);

type Make = () => WorkQueue;

async function drain(q: WorkQueue, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const k = await q.get();
    q.done(k!);
  }
}

const shapes: Record<string, (make: Make) => Promise<number>> = {
  'fill/drain': async (make) => {
    const q = make();
    const t = performance.now();
    for (const k of keys) q.add(k);
    await drain(q, N);
    const ms = performance.now() - t;
    q.shutDown();
    return ms;
  },
  mixed: async (make) => {
    const q = make();
    const t = performance.now();
    for (let i = 0; i < N; i++) q.addWithOptions(keys[i]!, { priority: i % 2 === 0 ? wq.LOW_PRIORITY : 0 });
    await drain(q, N);
    const ms = performance.now() - t;
    q.shutDown();
    return ms;
  },
  steady: async (make) => {
    const q = make();
    for (let i = 0; i < 10_000; i++) q.addWithOptions(`low/${i}`, { priority: wq.LOW_PRIORITY });
    const t = performance.now();
    for (const k of keys) {
      q.add(k);
      const got = await q.get();
      q.done(got!);
      // a served low key comes back, so 10,000 keep waiting
      if (got!.startsWith('low/')) q.addWithOptions(got!, { priority: wq.LOW_PRIORITY });
    }
    const ms = performance.now() - t;
    q.shutDown();
    return ms;
  },
  readd: async (make) => {
    const q = make();
    q.add('default/one');
    const t = performance.now();
    for (let i = 0; i < N; i++) {
      const k = await q.get();
      q.add(k!); // re-added while held: waits again after done
      q.done(k!);
    }
    const ms = performance.now() - t;
    q.shutDown();
    return ms;
  },
};

const rateLimiter = { when: () => 0, forget() {}, numRequeues: () => 0 };
const variants: Record<string, Make> = {
  fifo: () => wq.createWorkQueue({ rateLimiter }),
  priority: () => wq.createPriorityQueue({ rateLimiter }),
  'priority+metrics': () => wq.createPriorityQueue({ rateLimiter, metrics: createWorkQueueMetrics(new Registry(), 'bench') }),
  ...(base === undefined
    ? {}
    : {
        'base fifo': () => base.createWorkQueue({ rateLimiter }),
        'base priority': () => base.createPriorityQueue({ rateLimiter }),
        'base prio+metrics': () => base.createPriorityQueue({ rateLimiter, metrics: baseMetrics(new Registry(), 'bench') }),
      }),
};

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const figures: Record<string, Record<string, number>> = {};
console.log(`workqueue: N = ${N}, ${ROUNDS} rounds, median ops/s (op = add + get + done), node ${process.version}`);
console.log(`${'shape'.padEnd(12)}${Object.keys(variants).map((v) => v.padStart(18)).join('')}`);
for (const [shape, run] of Object.entries(shapes)) {
  const times = new Map<string, number[]>(Object.keys(variants).map((v) => [v, []]));
  for (const make of Object.values(variants)) await run(make); // warm up
  // Rounds interleaved across variants, so a burst of load elsewhere hits each alike.
  for (let r = 0; r < ROUNDS; r++) for (const [variant, make] of Object.entries(variants)) times.get(variant)!.push(await run(make));
  const row: Record<string, number> = {};
  for (const [variant, ts] of times) row[variant] = Math.round((N / median(ts)) * 1000);
  figures[shape] = row;
  console.log(`${shape.padEnd(12)}${Object.values(row).map((v) => v.toLocaleString('en-US').padStart(18)).join('')}`);
}
console.log(JSON.stringify({ bench: 'workqueue', n: N, rounds: ROUNDS, opsPerSecond: figures }));
