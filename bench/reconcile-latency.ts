/**
 * Reconcile latency on a real control plane: the time from a write being
 * acknowledged by the API server (the create resolved) to the reconcile of
 * that key starting, with a manager running one ConfigMap controller (the
 * default: one worker). The time the request was sent is recorded too, so
 * "sent → reconcile" includes the write's own round trip; "ack → reconcile"
 * may be negative when the watch event beats the HTTP answer.
 *
 * Two phases of N ConfigMaps each (N=200 by default, `N=...` to change):
 * written one after the other, then with 20 creates in flight. Prints a table
 * of p50/p90/p99/max, then one JSON line of the figures.
 *
 *   pnpm bench:latency        (from the repository root, after `npx tsc -b`)
 *   node bench/reconcile-latency.ts
 */
import { createClient } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import { createLogger, createManager, Result } from '@kubeloop/manager';
import { ConfigMap } from '@kubeloop/scheme';

const N = Number(process.env['N'] ?? 200);
const IN_FLIGHT = 20;
const FIELD_OWNER = 'kubeloop-bench';

interface Timing {
  sent: number;
  ack?: number;
  reconciled?: number;
}

interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentiles, ms with two decimals. */
function summarise(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
  const round = (v: number): number => Number(v.toFixed(2));
  return { n: sorted.length, p50: round(rank(50)), p90: round(rank(90)), p99: round(rank(99)), max: round(sorted.at(-1) ?? Number.NaN) };
}

async function waitFor(what: string, ok: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const env = createEnvironment();
await env.start();
const stop = new AbortController();
let running: Promise<void> | undefined;
// Writes are not throttled client-side: the request leaves when `sent` is taken.
const client = createClient({ kubeConfig: env.kubeConfig, fieldOwner: FIELD_OWNER, transportOptions: { qps: 0 } });
const timings = new Map<string, Timing>();
const phases: Record<string, { ackToReconcile: Summary; sentToReconcile: Summary; writeRoundTrip: Summary; wallMs: number }> = {};

try {
  const namespace = `latency-${Date.now().toString(36)}`;
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });

  const manager = createManager({ kubeConfig: env.kubeConfig, namespaces: [namespace], fieldOwner: FIELD_OWNER, logger: createLogger({ level: 'silent' }) });
  manager
    .controller()
    .for(ConfigMap)
    .complete((req) => {
      const now = performance.now();
      const t = timings.get(req.name);
      // the first reconcile of the key is the one that answers its write
      if (t && t.reconciled === undefined) t.reconciled = now;
      return Result.done();
    });
  running = manager.start(stop.signal);
  await waitFor('the controller to sync', () => manager.controllers().every((c) => c.synced));

  const write = async (name: string): Promise<void> => {
    const t: Timing = { sent: performance.now() };
    timings.set(name, t);
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data: { n: name } });
    t.ack = performance.now();
  };

  // Warm-up (client discovery, connections, the first watch event): not measured.
  await write('warmup');
  await waitFor('the warm-up reconcile', () => timings.get('warmup')?.reconciled !== undefined);

  const runPhase = async (phase: string, concurrency: number): Promise<void> => {
    const names = Array.from({ length: N }, (_, i) => `${phase}-${i}`);
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < names.length) await write(names[next++]!);
      }),
    );
    await waitFor(`the ${phase} reconciles`, () => names.every((n) => timings.get(n)?.reconciled !== undefined));
    const wallMs = Number((performance.now() - t0).toFixed(1));
    const ts = names.map((n) => timings.get(n)!);
    phases[phase] = {
      ackToReconcile: summarise(ts.map((t) => t.reconciled! - t.ack!)),
      sentToReconcile: summarise(ts.map((t) => t.reconciled! - t.sent)),
      writeRoundTrip: summarise(ts.map((t) => t.ack! - t.sent)),
      wallMs,
    };
  };

  await runPhase('sequential', 1);
  await runPhase(`concurrent${IN_FLIGHT}`, IN_FLIGHT);
} finally {
  stop.abort();
  await running?.catch((err: unknown) => console.error('manager:', err));
  client.transport.close();
  await env.stop();
}

const pad = (s: string | number, n: number): string => String(s).padEnd(n);
const num = (v: number): string => v.toFixed(2).padStart(9);
console.log(`${pad('phase', 14)}${pad('measure (ms)', 22)}${pad('n', 6)}${'p50'.padStart(9)}${'p90'.padStart(9)}${'p99'.padStart(9)}${'max'.padStart(9)}`);
for (const [phase, p] of Object.entries(phases)) {
  for (const [label, s] of [
    ['ack -> reconcile', p.ackToReconcile],
    ['sent -> reconcile', p.sentToReconcile],
    ['write round trip', p.writeRoundTrip],
  ] as const) {
    console.log(`${pad(phase, 14)}${pad(label, 22)}${pad(s.n, 6)}${num(s.p50)}${num(s.p90)}${num(s.p99)}${num(s.max)}`);
  }
}
console.log(
  JSON.stringify({
    benchmark: 'reconcile-latency',
    kubernetes: env.binaries?.kubernetesVersion ?? 'existing',
    node: process.version,
    objects: N,
    inFlight: IN_FLIGHT,
    workers: 1,
    phases,
  }),
);
