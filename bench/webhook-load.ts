/**
 * The load generator of bench/webhook.ts, in a worker thread so that the
 * webhook server in the main thread has its event loop to itself: about
 * `rate` requests a second, `n` in all, at most 128 in flight, each request's
 * latency in ms posted back.
 */
import { Agent, request } from 'node:https';
import { parentPort, workerData } from 'node:worker_threads';
import { KubeConfig } from '@kubernetes/client-node';
import { createClient } from '@kubeloop/client';

export interface LoadJob {
  readonly mode: 'api' | 'direct';
  readonly n: number;
  readonly rate: number;
  /** api: the kubeconfig file; direct: unused. */
  readonly kubeconfigPath: string;
  /** api: the group of the Probe kind to dry-run create. */
  readonly group: string;
  readonly namespace: string;
  /** direct: the webhook URL and the CA to trust. */
  readonly url: string;
  readonly caPem: string;
}

export interface LoadResult {
  readonly latencies: number[];
  readonly failures: number;
  readonly wallMs: number;
}

const job = workerData as LoadJob;
const kc = new KubeConfig();
if (job.mode === 'api') kc.loadFromFile(job.kubeconfigPath);
const client = job.mode === 'api' ? createClient({ kubeConfig: kc, fieldOwner: 'kubeloop-bench', transportOptions: { qps: 0, maxRetries: 0 } }) : undefined;
const agent = new Agent({ keepAlive: true, maxSockets: 128, ca: job.caPem });
const probe = (i: number) => ({ apiVersion: `${job.group}/v1`, kind: 'Probe', metadata: { generateName: 'p-', namespace: job.namespace }, spec: { n: i } });

function post(body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(job.url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.on('data', () => undefined);
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function review(i: number): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `u-${i}`,
      kind: { group: job.group, version: 'v1', kind: 'Probe' },
      resource: { group: job.group, version: 'v1', resource: 'probes' },
      operation: 'CREATE',
      namespace: job.namespace,
      userInfo: { username: 'bench' },
      object: probe(i),
    },
  });
}

const one = (i: number): Promise<unknown> => (client ? client.create(probe(i), { dryRun: true }) : post(review(i)));

const latencies: number[] = [];
let failures = 0;
let sent = 0;
const inFlight = new Set<Promise<void>>();
const started = performance.now();
while (sent < job.n) {
  const due = Math.min(job.n, Math.floor(((performance.now() - started) / 1000) * job.rate) + 1);
  while (sent < due && inFlight.size < 128) {
    const i = sent++;
    const t0 = performance.now();
    const p = one(i)
      .then(() => void latencies.push(performance.now() - t0))
      .catch(() => void failures++)
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  }
  await new Promise((r) => setTimeout(r, 2));
}
await Promise.all(inFlight);
agent.destroy();
parentPort?.postMessage({ latencies, failures, wallMs: performance.now() - started } satisfies LoadResult);
