/**
 * 1,000 reconciler unit tests, on the fake API server and on envtest. Each
 * "test" is what an operator author writes: a fresh API (a new fake, or a
 * fresh namespace on the shared control plane), a primary object created, a
 * reconcile (get the primary, get its child ConfigMap, create it with an
 * owner reference, write the primary's status through the status
 * subresource), and assertions reading both back. Cases run one after
 * another, as a test file's tests do.
 *
 * Reported: the wall time of N cases on each backend, per-case p50/p99, and
 * envtest's start time (paid once per test run). One JSON line at the end.
 *
 *   node bench/fake-vs-envtest.ts            (N=1000; N=... to change)
 */
import { createClient, isNotFound } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import { ConfigMap, defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { createFakeApiServer } from '@kubeloop/testing';

const N = Number(process.env['N'] ?? 1000);
const GROUP = 'bench.kubeloop.dev';

interface App extends KubeObject {
  apiVersion?: 'bench.kubeloop.dev/v1';
  kind?: 'App';
  spec?: { size?: number };
  status?: { phase?: string; observedGeneration?: number };
}
const App = defineKind<App>({ group: GROUP, version: 'v1', kind: 'App', plural: 'apps', namespaced: true, listKind: 'AppList' });

const CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `apps.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { plural: 'apps', singular: 'app', kind: 'App', listKind: 'AppList' },
    versions: [{ name: 'v1', served: true, storage: true, subresources: { status: {} }, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
};

/** The reconciler under test. */
async function reconcile(client: Client, namespace: string, name: string): Promise<void> {
  const app = await client.get(App, { namespace, name });
  const child = await client.get(ConfigMap, { namespace, name: `${name}-config` }).catch((err: unknown) => {
    if (isNotFound(err)) return undefined;
    throw err;
  });
  if (!child) {
    await client.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `${name}-config`, namespace, ownerReferences: [{ apiVersion: app.apiVersion, kind: app.kind, name, uid: app.metadata?.uid ?? '', controller: true, blockOwnerDeletion: true }] },
      data: { size: String(app.spec?.size ?? 0) },
    });
  }
  await client.status().update({ ...app, status: { phase: 'Ready', observedGeneration: app.metadata?.generation ?? 0 } });
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`assertion failed: ${what}`);
}

/** One test case against `client` in `namespace`. */
async function testCase(client: Client, namespace: string, i: number): Promise<void> {
  const name = `app-${i}`;
  await client.create({ apiVersion: `${GROUP}/v1`, kind: 'App', metadata: { name, namespace }, spec: { size: i } });
  await reconcile(client, namespace, name);
  const child = await client.get(ConfigMap, { namespace, name: `${name}-config` });
  check(child.data?.['size'] === String(i), 'child data');
  const app = await client.get(App, { namespace, name });
  check(app.status?.phase === 'Ready' && app.status.observedGeneration === 1, 'status');
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

interface Run {
  totalMs: number;
  p50: number;
  p99: number;
}

async function timed(cases: number, one: (i: number) => Promise<void>): Promise<Run> {
  const times: number[] = [];
  const started = performance.now();
  for (let i = 0; i < cases; i++) {
    const t = performance.now();
    await one(i);
    times.push(performance.now() - t);
  }
  const totalMs = performance.now() - started;
  times.sort((a, b) => a - b);
  const r = (v: number): number => Number(v.toFixed(2));
  return { totalMs: r(totalMs), p50: r(percentile(times, 50)), p99: r(percentile(times, 99)) };
}

// --- the fake: a new fake per test, and one fake shared by a file's tests (a fresh namespace each) ---
const fresh = await timed(N, async (i) => {
  const fake = createFakeApiServer({ bookmarkIntervalMs: 0 });
  fake.register(App, { status: true });
  const client = fake.client({ fieldOwner: 'bench' });
  await testCase(client, 'default', i);
  await fake.close();
});

const shared = createFakeApiServer({ bookmarkIntervalMs: 0 });
await shared.installCRDs([CRD]);
const sharedClient = shared.client({ fieldOwner: 'bench' });
const sharedRun = await timed(N, async (i) => {
  const namespace = `case-${i}`;
  await sharedClient.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  await testCase(sharedClient, namespace, i);
});
await shared.close();

// --- envtest: one control plane, a fresh namespace per test ---
const envStarted = performance.now();
const env = createEnvironment();
await env.start();
await env.installCRDs([CRD]);
const envStartMs = Number((performance.now() - envStarted).toFixed(0));
let envRun: Run;
try {
  const client = createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'bench', transportOptions: { qps: 0 } });
  envRun = await timed(N, async (i) => {
    const namespace = `case-${i}`;
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    await testCase(client, namespace, i);
  });
  client.transport.close();
} finally {
  await env.stop();
}

const rows: [string, Run][] = [
  ['fake, a new fake per test', fresh],
  ['fake, shared, a namespace per test', sharedRun],
  ['envtest, a namespace per test', envRun],
];
console.log(`fake-vs-envtest: N = ${N} reconciler tests, one after another; node ${process.version}`);
console.log(`${'backend'.padEnd(38)}${'total (s)'.padStart(11)}${'p50 (ms)'.padStart(10)}${'p99 (ms)'.padStart(10)}`);
for (const [label, run] of rows) console.log(`${label.padEnd(38)}${(run.totalMs / 1000).toFixed(2).padStart(11)}${run.p50.toFixed(2).padStart(10)}${run.p99.toFixed(2).padStart(10)}`);
console.log(`envtest start (control plane + CRD), once per run: ${(envStartMs / 1000).toFixed(2)} s`);
console.log(JSON.stringify({ bench: 'fake-vs-envtest', n: N, fakeFresh: fresh, fakeShared: sharedRun, envtest: envRun, envtestStartMs: envStartMs }));
