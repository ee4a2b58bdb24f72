/**
 * Work queue metrics over prom-client: a queue driven through adds, gets,
 * dones and retries, then the registry's text exposition parsed and checked
 * for controller-runtime's names, labels, buckets and values.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createWorkQueueMetrics, priorityLabel, WORKQUEUE_DURATION_BUCKETS } from '../../src/metrics/workqueue-metrics.js';
import { createPriorityQueue, createWorkQueue, exponentialFailureRateLimiter, LOW_PRIORITY } from '@kubeloop/workqueue';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

interface Exposition {
  samples: Sample[];
  types: Map<string, string>;
  help: Map<string, string>;
}

/** Parses the Prometheus text format (what `/metrics` serves). */
function parse(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta !== null) {
      (meta[1] === 'TYPE' ? types : help).set(meta[2]!, meta[3]!);
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (sample === null) throw new Error(`unparseable line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
    samples.push({ name: sample[1]!, labels, value: Number(sample[3]) });
  }
  return { samples, types, help };
}

async function scrape(registry: Registry): Promise<Exposition> {
  return parse(await registry.metrics());
}

function value(exposition: Exposition, name: string, labels: Record<string, string>): number | undefined {
  return exposition.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v) && Object.keys(s.labels).length === Object.keys(labels).length)?.value;
}

function manualClock(): { now: () => number; advance: (ms: number) => void } {
  let t = 0;
  return { now: () => t, advance: (ms) => (t += ms) };
}

const q = { name: 'harddisk', controller: 'harddisk' };

afterEach(() => {
  vi.useRealTimers();
});

describe('createWorkQueueMetrics', () => {
  it('registers controller-runtime names, types and labels, every series at zero from the start', async () => {
    const registry = new Registry();
    createWorkQueueMetrics(registry, 'harddisk');
    const exposition = await scrape(registry);
    expect(Object.fromEntries(exposition.types)).toEqual({
      workqueue_depth: 'gauge',
      workqueue_adds_total: 'counter',
      workqueue_queue_duration_seconds: 'histogram',
      workqueue_work_duration_seconds: 'histogram',
      workqueue_unfinished_work_seconds: 'gauge',
      workqueue_longest_running_processor_seconds: 'gauge',
      workqueue_retries_total: 'counter',
      kubeloop_workqueue_oldest_waiting_seconds: 'gauge',
    });
    expect(value(exposition, 'workqueue_depth', { ...q, priority: '' })).toBe(0);
    expect(value(exposition, 'kubeloop_workqueue_oldest_waiting_seconds', { ...q, priority: '' })).toBe(0);
    for (const name of ['workqueue_adds_total', 'workqueue_retries_total', 'workqueue_unfinished_work_seconds', 'workqueue_longest_running_processor_seconds']) {
      expect(value(exposition, name, q), name).toBe(0);
    }
    expect(value(exposition, 'workqueue_queue_duration_seconds_count', q)).toBe(0);
    expect(value(exposition, 'workqueue_work_duration_seconds_count', q)).toBe(0);
    expect(exposition.help.get('workqueue_adds_total')).toBe('Total number of adds handled by workqueue');
  });

  it('uses ExponentialBuckets(10e-9, 10, 12): 1e-8 s to 1000 s', async () => {
    expect(WORKQUEUE_DURATION_BUCKETS).toEqual(Array.from({ length: 12 }, (_, i) => Number(`1e${i - 8}`)));
    const registry = new Registry();
    createWorkQueueMetrics(registry, 'harddisk');
    const exposition = await scrape(registry);
    for (const name of ['workqueue_queue_duration_seconds', 'workqueue_work_duration_seconds']) {
      const les = exposition.samples.filter((s) => s.name === `${name}_bucket`).map((s) => s.labels.le);
      expect(les.map((le) => (le === '+Inf' ? Infinity : Number(le)))).toEqual([...WORKQUEUE_DURATION_BUCKETS, Infinity]);
      expect(les.at(-1)).toBe('+Inf');
    }
  });

  it('counts adds and retries, times waits and work, and brings depth back to 0', async () => {
    vi.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const registry = new Registry();
    const now = (): number => Date.now();
    const queue = createWorkQueue({
      name: 'harddisk',
      now,
      rateLimiter: exponentialFailureRateLimiter(5, 1_000),
      metrics: createWorkQueueMetrics(registry, 'harddisk', { now }),
    });

    queue.add('default/a');
    queue.add('default/a'); // collapsed: not counted
    queue.add('default/b');
    let exposition = await scrape(registry);
    expect(value(exposition, 'workqueue_depth', { ...q, priority: '' })).toBe(2);
    expect(value(exposition, 'workqueue_adds_total', q)).toBe(2);

    vi.advanceTimersByTime(2_000); // a and b wait 2 s
    const a = (await queue.get())!;
    vi.advanceTimersByTime(500); // a is worked on for 0.5 s
    queue.addRateLimited(a); // failed: retry after 5 ms
    queue.done(a);
    const b = (await queue.get())!;
    queue.addAfter(b, 0); // no delay: an add, not a retry
    queue.done(b);
    exposition = await scrape(registry);
    expect(value(exposition, 'workqueue_retries_total', q)).toBe(1);
    expect(value(exposition, 'workqueue_adds_total', q)).toBe(3);
    expect(value(exposition, 'workqueue_depth', { ...q, priority: '' })).toBe(1);

    vi.advanceTimersByTime(5);
    expect(value(await scrape(registry), 'workqueue_adds_total', q)).toBe(4);
    while (queue.len() > 0) queue.done((await queue.get())!);

    exposition = await scrape(registry);
    expect(value(exposition, 'workqueue_depth', { ...q, priority: '' })).toBe(0);
    expect(value(exposition, 'workqueue_adds_total', q)).toBe(4);
    expect(value(exposition, 'workqueue_retries_total', q)).toBe(1);
    expect(value(exposition, 'workqueue_queue_duration_seconds_count', q)).toBe(4);
    expect(value(exposition, 'workqueue_work_duration_seconds_count', q)).toBe(4);
    // Waits: a 2 s, b 2.5 s, b again 5 ms (re-added while held, taken after a's delay), a again 0 s.
    expect(value(exposition, 'workqueue_queue_duration_seconds_sum', q)).toBeCloseTo(4.505, 6);
    expect(value(exposition, 'workqueue_queue_duration_seconds_bucket', { ...q, le: '1' })).toBe(2);
    expect(value(exposition, 'workqueue_queue_duration_seconds_bucket', { ...q, le: '10' })).toBe(4);
    expect(value(exposition, 'workqueue_work_duration_seconds_sum', q)).toBeCloseTo(0.5);
    expect(value(exposition, 'workqueue_unfinished_work_seconds', q)).toBe(0);
    expect(value(exposition, 'workqueue_longest_running_processor_seconds', q)).toBe(0);
  });

  it('computes unfinished work and the longest running processor at scrape time', async () => {
    const registry = new Registry();
    const clock = manualClock();
    const queue = createWorkQueue({ name: 'harddisk', metrics: createWorkQueueMetrics(registry, 'harddisk', { now: clock.now }) });
    queue.add('a');
    queue.add('b');
    await queue.get();
    clock.advance(3_000);
    await queue.get();
    clock.advance(1_000);
    let exposition = await scrape(registry);
    expect(value(exposition, 'workqueue_unfinished_work_seconds', q)).toBeCloseTo(5); // 4 s + 1 s
    expect(value(exposition, 'workqueue_longest_running_processor_seconds', q)).toBeCloseTo(4);
    clock.advance(1_000);
    exposition = await scrape(registry);
    expect(value(exposition, 'workqueue_unfinished_work_seconds', q)).toBeCloseTo(7);
    queue.done('a');
    queue.done('b');
    exposition = await scrape(registry);
    expect(value(exposition, 'workqueue_unfinished_work_seconds', q)).toBe(0);
    expect(value(exposition, 'workqueue_longest_running_processor_seconds', q)).toBe(0);
    expect(value(exposition, 'workqueue_work_duration_seconds_sum', q)).toBeCloseTo(7); // a 5 s, b 2 s
  });

  it('keeps queues apart in one registry, labelled by name', async () => {
    const registry = new Registry();
    const one = createWorkQueue({ name: 'one', metrics: createWorkQueueMetrics(registry, 'one') });
    const two = createWorkQueue({ name: 'two', metrics: createWorkQueueMetrics(registry, 'two') });
    one.add('x');
    two.add('x');
    two.add('y');
    const exposition = await scrape(registry);
    expect(value(exposition, 'workqueue_adds_total', { name: 'one', controller: 'one' })).toBe(1);
    expect(value(exposition, 'workqueue_adds_total', { name: 'two', controller: 'two' })).toBe(2);
    expect(value(exposition, 'workqueue_depth', { name: 'two', controller: 'two', priority: '' })).toBe(2);
    expect(exposition.samples.filter((s) => s.name === 'workqueue_unfinished_work_seconds')).toHaveLength(2);
  });

  it('lets a queue be created again under the same name (a restarted controller), counters carrying on', async () => {
    const registry = new Registry();
    createWorkQueue({ metrics: createWorkQueueMetrics(registry, 'harddisk') }).add('a');
    createWorkQueue({ metrics: createWorkQueueMetrics(registry, 'harddisk') }).add('a');
    expect(value(await scrape(registry), 'workqueue_adds_total', q)).toBe(2);
  });

  it('drops the depth to 0 when the queue is shut down with keys waiting', async () => {
    const registry = new Registry();
    const queue = createWorkQueue({ metrics: createWorkQueueMetrics(registry, 'harddisk') });
    queue.add('a');
    queue.add('b');
    queue.shutDown();
    expect(value(await scrape(registry), 'workqueue_depth', { ...q, priority: '' })).toBe(0);
  });

  it('a priority queue has exactly three priority series (high, 0, low) whatever priorities it is given, from the start', async () => {
    const registry = new Registry();
    const queue = createPriorityQueue({ name: 'harddisk', metrics: createWorkQueueMetrics(registry, 'harddisk') });
    const series = async (): Promise<Record<string, number>> => {
      const exposition = await scrape(registry);
      return Object.fromEntries(exposition.samples.filter((s) => s.name === 'workqueue_depth' && s.labels.name === 'harddisk').map((s): [string, number] => [s.labels.priority!, s.value]));
    };
    expect(await series()).toEqual({ high: 0, '0': 0, low: 0 });
    // 1,000 different priorities: still three series.
    for (let i = 0; i < 1_000; i++) queue.addWithOptions(`k${i}`, { priority: i - 500 });
    queue.addWithOptions('listed', { priority: LOW_PRIORITY });
    expect(await series()).toEqual({ high: 499, '0': 1, low: 501 });
    while (queue.len() > 0) queue.done((await queue.get())!);
    expect(await series()).toEqual({ high: 0, '0': 0, low: 0 });
    expect([priorityLabel(1), priorityLabel(0), priorityLabel(-0), priorityLabel(LOW_PRIORITY), priorityLabel(-1e9)]).toEqual(['high', '0', '0', 'low', 'low']);
  });

  it('kubeloop_workqueue_oldest_waiting_seconds: the longest wait per priority label, read at scrape time', async () => {
    const registry = new Registry();
    const clock = manualClock();
    const queue = createPriorityQueue({ name: 'harddisk', now: clock.now, maxWaitMs: 3_600_000, metrics: createWorkQueueMetrics(registry, 'harddisk', { now: clock.now }) });
    const oldest = async (): Promise<Record<string, number>> => {
      const exposition = await scrape(registry);
      return Object.fromEntries(exposition.samples.filter((s) => s.name === 'kubeloop_workqueue_oldest_waiting_seconds').map((s): [string, number] => [s.labels.priority!, s.value]));
    };
    expect(await oldest()).toEqual({ high: 0, '0': 0, low: 0 });
    queue.addWithOptions('listed-1', { priority: LOW_PRIORITY });
    clock.advance(40_000);
    queue.addWithOptions('listed-2', { priority: -5 });
    queue.add('edit');
    clock.advance(2_000);
    expect(await oldest()).toEqual({ high: 0, '0': 2, low: 42 });
    // Taken: the edit goes, the low label's oldest stays.
    queue.done((await queue.get())!);
    expect(await oldest()).toEqual({ high: 0, '0': 0, low: 42 });
    queue.done((await queue.get())!); // listed-2 (-5 before -100)
    queue.done((await queue.get())!);
    expect(await oldest()).toEqual({ high: 0, '0': 0, low: 0 });

    // A FIFO queue: one series, priority "".
    const fifo = createWorkQueue({ name: 'fifo', now: clock.now, metrics: createWorkQueueMetrics(registry, 'fifo', { now: clock.now }) });
    fifo.add('a');
    clock.advance(1_500);
    const exposition = await scrape(registry);
    expect(exposition.samples.filter((s) => s.name === 'kubeloop_workqueue_oldest_waiting_seconds' && s.labels.name === 'fifo').map((s) => [s.labels.priority, s.value])).toEqual([['', 1.5]]);
  });

  it('rejects an empty name', () => {
    expect(() => createWorkQueueMetrics(new Registry(), '')).toThrow(TypeError);
  });
});
