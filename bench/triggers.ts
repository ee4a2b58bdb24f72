/**
 * What trigger attribution costs per waiting key, no cluster needed: the
 * heap a priority queue holding 10,000 waiting keys takes, alone and with
 * the controller's trigger ledger beside it, in three shapes:
 *
 * - one: each key enqueued once by an informer update (the common case);
 * - folded: each key enqueued by 100 updates of its own object (repeats
 *   fold into one entry with a count: memory must not grow with them);
 * - full: each key enqueued by 8 distinct objects (the per-key bound) and
 *   20 more (counted as overflow, not kept): the most a key can hold.
 *
 * And the time of the hot path: one `record` (what each enqueued event
 * adds) and one `take` (each reconcile's start), in ns.
 *
 *   pnpm bench:triggers        (from the repository root, after a build)
 *
 * Heap figures are `heapUsed` after a full GC, the median of ROUNDS rounds;
 * prints a table, then one JSON line of the figures.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as wqTypes from '../packages/workqueue/src/index.ts';
import type * as internalTypes from '../packages/manager/src/internal-api.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const wq = (await import(join(root, 'packages/workqueue/dist/index.js'))) as typeof wqTypes;
const { TriggerLedger } = (await import(join(root, 'packages/manager/dist/internal-api.js'))) as Pick<typeof internalTypes, 'TriggerLedger'>;

const KEYS = 10_000;
const ROUNDS = 5;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc (pnpm bench:triggers does)');

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const heap = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

/** Names as an informer would hand them over: one string per object, shared by the event and the key. */
const names = Array.from({ length: KEYS }, (_, i) => `disk-${i.toString().padStart(5, '0')}`);
const keys = names.map((n) => `default/${n}`);
const others = Array.from({ length: 28 }, (_, i) => `settings-${i}`);

type Shape = 'queue only' | 'one' | 'folded' | 'full';

/** Heap held by 10,000 waiting keys in the shape given (queue and ledger kept alive until measured). */
function measure(shape: Shape): number {
  const before = heap();
  const queue = wq.createPriorityQueue({ name: 'bench' });
  const ledger = shape === 'queue only' ? undefined : new TriggerLedger(8, () => undefined);
  let rv = 1000;
  for (let i = 0; i < KEYS; i++) {
    const key = keys[i]!;
    queue.add(key);
    if (!ledger) continue;
    if (shape === 'one') ledger.record(key, { source: 'for', event: 'update', kind: 'HardDisk', namespace: 'default', name: names[i]!, resourceVersion: String(rv++) });
    else if (shape === 'folded') for (let j = 0; j < 100; j++) ledger.record(key, { source: 'for', event: 'update', kind: 'HardDisk', namespace: 'default', name: names[i]!, resourceVersion: String(rv++) });
    else for (const o of others) ledger.record(key, { source: 'watches', event: 'update', kind: 'ConfigMap', namespace: 'default', name: o, resourceVersion: String(rv++), mapped: true });
  }
  const after = heap();
  if (queue.len() !== KEYS || (ledger && ledger.size !== KEYS)) throw new Error('the queue or the ledger lost keys');
  return after - before;
}

/** ns per record (cycling over the 10,000 keys, each already waiting: the fold path) and per take + record of a fresh key. */
function hotPath(): { recordNs: number; takeNs: number } {
  const ledger = new TriggerLedger(8, () => undefined);
  const input = names.map((name, i) => ({ source: 'for' as const, event: 'update' as const, kind: 'HardDisk', namespace: 'default', name, resourceVersion: String(i) }));
  for (let i = 0; i < KEYS; i++) ledger.record(keys[i]!, input[i]!);
  const n = 2_000_000;
  let t = performance.now();
  for (let i = 0; i < n; i++) ledger.record(keys[i % KEYS]!, input[i % KEYS]!);
  const recordNs = ((performance.now() - t) * 1e6) / n;
  t = performance.now();
  for (let i = 0; i < n; i++) {
    const k = keys[i % KEYS]!;
    ledger.take(k);
    ledger.record(k, input[i % KEYS]!);
  }
  const takeNs = ((performance.now() - t) * 1e6) / n - recordNs;
  return { recordNs, takeNs };
}

const shapes: Shape[] = ['queue only', 'one', 'folded', 'full'];
const bytes: Record<Shape, number[]> = { 'queue only': [], one: [], folded: [], full: [] };
for (let r = 0; r < ROUNDS; r++) for (const s of shapes) bytes[s].push(measure(s));
const perKey = Object.fromEntries(shapes.map((s) => [s, median(bytes[s]) / KEYS])) as Record<Shape, number>;
const hot = [hotPath(), hotPath(), hotPath()];
const recordNs = median(hot.map((h) => h.recordNs));
const takeNs = median(hot.map((h) => h.takeNs));

console.log(`${KEYS} waiting keys, heap after a full GC (median of ${ROUNDS}), bytes per waiting key:`);
console.log(`  queue only (no attribution)            ${perKey['queue only'].toFixed(0)}`);
for (const s of ['one', 'folded', 'full'] as const) console.log(`  queue + triggers, ${s.padEnd(20)} ${perKey[s].toFixed(0)}  (triggers: +${(perKey[s] - perKey['queue only']).toFixed(0)})`);
console.log(`hot path: record ${recordNs.toFixed(0)} ns (an event folded into a waiting key's entry), take ${takeNs.toFixed(0)} ns (a reconcile's start)`);
console.log(JSON.stringify({ bench: 'triggers', keys: KEYS, bytesPerKey: perKey, triggerBytesPerKey: { one: perKey.one - perKey['queue only'], folded: perKey.folded - perKey['queue only'], full: perKey.full - perKey['queue only'] }, recordNs, takeNs }));
