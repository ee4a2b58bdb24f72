/**
 * Webhook benchmark on a real control plane (not a test: figures are
 * printed, never asserted).
 *
 * 1. Admission latency at ~200 requests/s, open loop, for N requests
 *    (N=2000 by default):
 *    - through the API server: dry-run creates of a CRD object whose
 *      ValidatingWebhookConfiguration calls this process (client → API server
 *      → webhook → API server → client), next to the same creates of a CRD
 *      with no webhook (what the webhook adds);
 *    - directly: AdmissionReviews POSTed over HTTPS (keep-alive) straight to
 *      the webhook server.
 *    The load comes from a worker thread (bench/webhook-load.ts), so the
 *    webhook server keeps its event loop; its own time per request (from the
 *    request to the answer written) is recorded through its metrics hook.
 * 2. Conversion of CONVERT objects (10,000 by default) per ConversionReview:
 *    the handler alone, over HTTPS to /convert (JSON both ways), and a LIST
 *    of CONVERT stored objects at the version that is not stored (the API
 *    server sends them to /convert) next to a LIST at the stored version.
 *
 *   pnpm bench:webhook        (from the repository root, after `pnpm build`)
 *   N=2000 CONVERT=10000 node bench/webhook.ts
 */
import { Agent, request } from 'node:https';
import { Worker } from 'node:worker_threads';
import { createClient } from '@kubeloop/client';
import { createEnvironment, installWebhooks } from '@kubeloop/envtest';
import { builtinScheme, defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { conversionWebhook, createWebhookServer, defineConversion, fieldError, silentLogger, spoke, staticCertificate, validatePath, validatingWebhook } from '@kubeloop/webhook';
import type { WebhookMetrics } from '@kubeloop/webhook';
import type { LoadJob, LoadResult } from './webhook-load.ts';

const N = Number(process.env['N'] ?? 2000);
const RATE = Number(process.env['RATE'] ?? 200);
const CONVERT = Number(process.env['CONVERT'] ?? 10_000);
const ROUNDS = 5;
const group = 'bench.webhook.kubeloop.dev';
const plainGroup = 'plain.webhook.kubeloop.dev';

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

const median = (values: readonly number[]): number => summarise(values).p50;

interface Probe extends KubeObject {
  spec: { n: number };
}
interface VolV1 extends KubeObject {
  spec: { sizeGiB: number };
}
interface VolV2 extends KubeObject {
  spec: { size: { value: number; unit: 'Gi' } };
}
const Probe = defineKind<Probe>({ group, version: 'v1', kind: 'Probe', plural: 'probes', namespaced: true, listKind: 'ProbeList' });
const VolV1 = defineKind<VolV1>({ group, version: 'v1', kind: 'Volume', plural: 'volumes', namespaced: true, listKind: 'VolumeList' });
const VolV2 = defineKind<VolV2>({ group, version: 'v2', kind: 'Volume', plural: 'volumes', namespaced: true, listKind: 'VolumeList' });

function crd(g: string, kind: string, plural: string, versions: { name: string; storage: boolean; spec: Record<string, unknown> }[]) {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${g}` },
    spec: {
      group: g,
      scope: 'Namespaced',
      names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
      versions: versions.map((v) => ({ name: v.name, served: true, storage: v.storage, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: v.spec } } } } })),
    },
  };
}

/** Run `fn` about `rate` times a second, `n` times, at most 128 at once; returns each call's latency in ms. */
async function openLoop(n: number, rate: number, fn: (i: number) => Promise<unknown>): Promise<LoadResult> {
  const latencies: number[] = [];
  let failures = 0;
  let sent = 0;
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  while (sent < n) {
    const due = Math.min(n, Math.floor(((performance.now() - started) / 1000) * rate) + 1);
    while (sent < due && inFlight.size < 128) {
      const i = sent++;
      const t0 = performance.now();
      const p = fn(i)
        .then(() => void latencies.push(performance.now() - t0))
        .catch(() => void failures++)
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  await Promise.all(inFlight);
  return { latencies, failures, wallMs: performance.now() - started };
}

/** The same open loop in a worker thread (bench/webhook-load.ts), so the webhook server here keeps its event loop. */
function loadInWorker(job: LoadJob): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./webhook-load.ts', import.meta.url), { workerData: job });
    worker.once('message', (result: LoadResult) => resolve(result));
    worker.once('error', reject);
    worker.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`load worker exited with ${code}`))));
  });
}

function post(agent: Agent, url: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`HTTP ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const env = createEnvironment();
await env.start();
const stop = new AbortController();
let serving: Promise<void> | undefined;
const results: Record<string, unknown> = {};
try {
  const client = createClient({ kubeConfig: env.kubeConfig, scheme: builtinScheme.extend(Probe, VolV1, VolV2), fieldOwner: 'kubeloop-bench', transportOptions: { qps: 0, maxRetries: 0 } });
  await env.installCRDs([
    crd(group, 'Probe', 'probes', [{ name: 'v1', storage: true, spec: { n: { type: 'integer' } } }]),
    crd(plainGroup, 'Probe', 'probes', [{ name: 'v1', storage: true, spec: { n: { type: 'integer' } } }]),
    crd(group, 'Volume', 'volumes', [
      { name: 'v1', storage: true, spec: { sizeGiB: { type: 'integer' } } },
      { name: 'v2', storage: false, spec: { size: { type: 'object', properties: { value: { type: 'integer' }, unit: { type: 'string' } } } } },
    ]),
  ]);
  const hooks = await installWebhooks(env.kubeConfig, {
    conversionCRDs: [`volumes.${group}`],
    configurations: [
      {
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'bench-validating' },
        webhooks: [
          {
            name: `vprobe.${group}`,
            admissionReviewVersions: ['v1'],
            sideEffects: 'None',
            failurePolicy: 'Fail',
            clientConfig: { service: { name: 'webhook', namespace: 'system', path: validatePath(Probe) } },
            rules: [{ apiGroups: [group], apiVersions: ['v1'], operations: ['CREATE'], resources: ['probes'] }],
          },
        ],
      },
    ],
  });
  const serverTimes: number[] = [];
  const metrics: WebhookMetrics = { requestStarted: () => undefined, requestFinished: (_w, _c, s) => void serverTimes.push(s * 1000), requestFailed: () => undefined };
  const server = createWebhookServer({ host: hooks.host, port: hooks.port, certificates: staticCertificate({ certPem: hooks.certPem, keyPem: hooks.keyPem }), metrics });
  const validator = validatingWebhook(Probe, { validateCreate: (p) => (p.spec.n >= 0 ? undefined : [fieldError.invalid('spec.n', p.spec.n, 'must not be negative')]) });
  const conversion = conversionWebhook([
    defineConversion(VolV2, [
      spoke<VolV1, VolV2>(VolV1, { toHub: (v) => ({ spec: { size: { value: v.spec.sizeGiB, unit: 'Gi' } } }), fromHub: (v) => ({ spec: { sizeGiB: v.spec.size.value } }) }),
    ]),
  ]);
  server.register(validator);
  server.register(conversion);
  serving = server.start(stop.signal);
  await server.listening();
  const namespace = `bench-${Date.now().toString(36)}`;
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  const probe = (g: string, n: number) => ({ apiVersion: `${g}/v1`, kind: 'Probe', metadata: { generateName: 'p-', namespace }, spec: { n } });
  // Until the API server has loaded the webhook configuration, and to warm every path up.
  for (let i = 0; ; i++) {
    const err: unknown = await client.create(probe(group, -1), { dryRun: true }).then(() => undefined, (e: unknown) => e);
    if (err) break;
    if (i > 200) throw new Error('the webhook never answered');
    await new Promise((r) => setTimeout(r, 100));
  }
  for (let i = 0; i < 200; i++) await client.create(probe(i % 2 ? group : plainGroup, i), { dryRun: true });

  // --- admission ---------------------------------------------------------------
  const admission: Record<string, Summary & { failures: number; rate: number }> = {};
  const record = (name: string, run: { latencies: number[]; failures: number; wallMs: number }): void => {
    admission[name] = { ...summarise(run.latencies), failures: run.failures, rate: Number(((run.latencies.length + run.failures) / (run.wallMs / 1000)).toFixed(1)) };
  };
  const job = { n: N, rate: RATE, kubeconfigPath: env.kubeconfigPath, namespace, url: `${hooks.url}${validatePath(Probe)}`, caPem: hooks.caPem };
  record('API server, no webhook', await loadInWorker({ ...job, mode: 'api', group: plainGroup }));
  serverTimes.length = 0;
  record('API server + webhook', await loadInWorker({ ...job, mode: 'api', group }));
  admission['webhook server time (via API server)'] = { ...summarise(serverTimes), failures: 0, rate: Number.NaN };
  serverTimes.length = 0;
  record('directly (HTTPS keep-alive)', await loadInWorker({ ...job, mode: 'direct', group }));
  admission['webhook server time (direct)'] = { ...summarise(serverTimes), failures: 0, rate: Number.NaN };
  results['admission'] = admission;
  console.log(`webhook: N=${N} at ${RATE}/s open loop (at most 128 in flight); kubernetes ${env.binaries?.kubernetesVersion ?? 'existing cluster'}, node ${process.version}`);
  console.log('admission (ms)                          n       p50      p90      p99      max  failures  achieved/s');
  for (const [name, s] of Object.entries(admission)) {
    const f = (v: number): string => v.toFixed(2).padStart(8);
    console.log(`${name.padEnd(36)} ${String(s.n).padStart(5)} ${f(s.p50)} ${f(s.p90)} ${f(s.p99)} ${f(s.max)} ${String(s.failures).padStart(9)} ${Number.isNaN(s.rate) ? '' : String(s.rate).padStart(11)}`);
  }

  // --- conversion --------------------------------------------------------------
  const agent = new Agent({ keepAlive: true, maxSockets: 64, ca: hooks.caPem });
  const objects = Array.from({ length: CONVERT }, (_, i) => ({
    apiVersion: `${group}/v1`,
    kind: 'Volume',
    metadata: { name: `vol-${i}`, namespace, uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`, resourceVersion: String(1000 + i), labels: { app: 'bench' } },
    spec: { sizeGiB: i },
  }));
  const convertBody = JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid: 'c', desiredAPIVersion: `${group}/v2`, objects } });
  const handlerMs: number[] = [];
  const httpsMs: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const parsed = JSON.parse(convertBody) as unknown;
    let t0 = performance.now();
    await conversion.handle(parsed, { signal: stop.signal, log: silentLogger });
    handlerMs.push(performance.now() - t0);
    t0 = performance.now();
    const answer = await post(agent, `${hooks.url}/convert`, convertBody);
    httpsMs.push(performance.now() - t0);
    if (!answer.includes('"Success"')) throw new Error(`conversion failed: ${answer.slice(0, 300)}`);
  }
  agent.destroy();

  // Store CONVERT volumes at v1 (the storage version), then list them at v1 and at v2 (converted by the webhook).
  const created = await openLoop(CONVERT, 1000, (i) => client.create({ apiVersion: `${group}/v1`, kind: 'Volume', metadata: { name: `vol-${i}`, namespace }, spec: { sizeGiB: i } }));
  if (created.failures > 0) throw new Error(`${created.failures} volumes were not created`);
  const listV1: number[] = [];
  const listV2: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    let t0 = performance.now();
    const l1 = await client.list(VolV1, { namespace });
    listV1.push(performance.now() - t0);
    t0 = performance.now();
    const l2 = await client.list(VolV2, { namespace });
    listV2.push(performance.now() - t0);
    if (l1.items.length !== CONVERT || l2.items.length !== CONVERT || l2.items.find((v) => v.metadata?.name === 'vol-7')?.spec.size.value !== 7) throw new Error('the lists do not hold every volume');
  }
  results['conversion'] = {
    objects: CONVERT,
    bodyBytes: Buffer.byteLength(convertBody),
    handlerMs: Number(median(handlerMs).toFixed(1)),
    httpsMs: Number(median(httpsMs).toFixed(1)),
    listStoredVersionMs: Number(median(listV1).toFixed(1)),
    listConvertedVersionMs: Number(median(listV2).toFixed(1)),
  };

  const kubernetes = env.binaries?.kubernetesVersion ?? 'existing cluster';
  const c = results['conversion'] as Record<string, number>;
  console.log(`conversion of ${CONVERT} objects (${(c['bodyBytes']! / 1e6).toFixed(1)} MB review), median of ${ROUNDS}:`);
  console.log(`  handler alone ${c['handlerMs']} ms; over HTTPS with JSON both ways ${c['httpsMs']} ms`);
  console.log(`  LIST at the stored version ${c['listStoredVersionMs']} ms; LIST at the other version (webhook conversion) ${c['listConvertedVersionMs']} ms`);
  console.log(JSON.stringify({ bench: 'webhook', N, RATE, kubernetes, node: process.version, ...results }));
} finally {
  stop.abort();
  await serving?.catch(() => undefined);
  await env.stop();
}
