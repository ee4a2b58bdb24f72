/**
 * Cost of keeping N ConfigMaps (about 1 KB each) in an informer, on a real
 * API server, in one run: (a) the raw floor, a paginated LIST read with
 * node:https and JSON.parse and a watch stream read line by line, no
 * framework; (b) kubeloop's Informer, default (managedFields stripped,
 * deep-frozen) and with `unsafeDisableDeepFreeze`; (c) @kubernetes/client-node's
 * makeInformer. For each: ms until synced, V8 heap per cached object, ms to
 * deliver M updates to a handler. Each figure is the median of several rounds.
 * Prints a table with ratios, then one JSON line of the figures.
 *
 *   pnpm bench:cache                       (from the repository root, after a build)
 *   pnpm bench:cache --n=1000 --rounds=5   (or BENCH_CACHE_N=1000,10000 BENCH_CACHE_ROUNDS=3 BENCH_CACHE_M=1000)
 *
 * Needs `node --expose-gc` (the package script passes it).
 */
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:https';
import type { RequestOptions } from 'node:https';
import type { IncomingMessage } from 'node:http';
import { Informer, clientListWatcher } from '@kubeloop/cache';
import type { ListWatcher } from '@kubeloop/cache';
import { createClient, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { CoreV1Api, makeInformer } from '@kubernetes/client-node';
import type { KubeConfig, V1ConfigMap } from '@kubernetes/client-node';

// --- parameters ---------------------------------------------------------------

function param(name: string, envName: string, fallback: string): string {
  const flag = process.argv.find((a) => a.startsWith(`--${name}=`));
  return flag?.slice(name.length + 3) ?? process.env[envName] ?? fallback;
}
const SIZES = param('n', 'BENCH_CACHE_N', '1000,10000')
  .split(',')
  .map((s) => Number.parseInt(s.trim(), 10))
  .filter((n) => Number.isFinite(n) && n > 0);
const ROUNDS = Math.max(1, Number.parseInt(param('rounds', 'BENCH_CACHE_ROUNDS', '3'), 10));
const UPDATES = Math.max(1, Number.parseInt(param('m', 'BENCH_CACHE_M', '1000'), 10));
const CONCURRENCY = 32;
const SETTLE_MS = 1000;
const PAGE = 500;
const DEADLINE_MS = 120_000;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error('run with node --expose-gc (pnpm bench:cache does)');
  process.exit(2);
}
/** V8 heap in use after full collections, once pending callbacks (socket closes, timers) have run. */
async function heapUsed(): Promise<number> {
  await new Promise((r) => setTimeout(r, 20));
  gc!();
  await new Promise((r) => setImmediate(r));
  gc!();
  const used = process.memoryUsage().heapUsed;
  if (process.env.BENCH_CACHE_DEBUG) process.stderr.write(`  heap ${(used / 1048576).toFixed(2)} MiB at ${new Error().stack?.split('\n')[2]?.trim()}\n`);
  return used;
}

const now = (): number => performance.now();
const ms = (x: number): number => Number(x.toFixed(1));
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Run fn(0..count-1) with at most `limit` calls in flight. */
async function pool(count: number, limit: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) await fn(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
}

/** A promise with its resolve, and a deadline so a broken approach fails instead of hanging. */
function deferred<T>(what: string): { promise: Promise<T>; resolve: (v: T) => void; cancel: () => void } {
  let resolve!: (v: T) => void;
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<T>((res, rej) => {
    resolve = (v) => {
      clearTimeout(timer);
      res(v);
    };
    timer = setTimeout(() => rej(new Error(`${what}: nothing after ${DEADLINE_MS} ms`)), DEADLINE_MS);
  });
  return { promise, resolve, cancel: () => clearTimeout(timer) };
}

// --- control plane and objects -------------------------------------------------

const env = createEnvironment();
await env.start();
const kc: KubeConfig = env.kubeConfig;
// Writes (setup, and the patches that drive every update measurement) and the
// informers use separate clients (separate connections); neither rate-limits.
const writer = createClient({ kubeConfig: kc, transportOptions: { qps: 0 } });
const reader = createClient({ kubeConfig: kc, transportOptions: { qps: 0 } });

const name = (i: number): string => `cm-${String(i).padStart(6, '0')}`;
const rev = (seq: number): string => String(seq).padStart(10, '0');

async function createObjects(namespace: string, n: number): Promise<number> {
  await writer.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  const t0 = now();
  await pool(n, CONCURRENCY, (i) =>
    writer.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: name(i), namespace, labels: { app: 'bench', shard: String(i % 16) } },
      // ~760 bytes of data; with metadata (and its managedFields) the object is ~1.3 KB of JSON
      data: { 'config.yaml': randomBytes(480).toString('base64'), owner: `team-${i % 50}`, rev: rev(0) },
    }),
  );
  return now() - t0;
}

let patchSeq = 0;
/** Patch objects 0..m-1 (32 in flight); resolves with when the first was sent and the last acknowledged. */
async function patchObjects(namespace: string, m: number): Promise<{ firstSent: number; lastAcked: number }> {
  const value = rev(++patchSeq); // same length every time: objects keep their size
  const firstSent = now();
  await pool(m, CONCURRENCY, (i) => writer.patch(ConfigMap, { namespace, name: name(i) }, mergePatch({ data: { rev: value } })));
  return { firstSent, lastAcked: now() };
}

// --- (a) raw: node:https + JSON.parse ------------------------------------------

const server = new URL(env.server);
const tls: RequestOptions = {};
await kc.applyToHTTPSOptions(tls);
const rawAgent = new Agent({
  keepAlive: true,
  ca: tls.ca,
  cert: tls.cert,
  key: tls.key,
  rejectUnauthorized: tls.rejectUnauthorized ?? true,
});
const rawHeaders: Record<string, string> = { accept: 'application/json' };
for (const [k, v] of Object.entries(tls.headers ?? {})) if (typeof v === 'string') rawHeaders[k] = v;

function rawOpen(path: string): Promise<{ res: IncomingMessage; close: () => void }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, server), { agent: rawAgent, headers: rawHeaders }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET ${path}: HTTP ${res.statusCode}`));
        return;
      }
      res.on('error', () => undefined); // destroyed on close
      resolve({ res, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

async function rawGet(path: string): Promise<string> {
  const { res } = await rawOpen(path);
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

interface RawList {
  items: Record<string, unknown>[];
  resourceVersion: string;
  bytes: number;
}
async function rawList(namespace: string): Promise<RawList> {
  const items: Record<string, unknown>[] = [];
  let cont = '';
  let resourceVersion = '';
  let bytes = 0;
  do {
    const body = await rawGet(`/api/v1/namespaces/${namespace}/configmaps?limit=${PAGE}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
    bytes += body.length;
    const page = JSON.parse(body) as { metadata: { continue?: string; resourceVersion: string }; items: Record<string, unknown>[] };
    for (const item of page.items) items.push(item);
    cont = page.metadata.continue ?? '';
    resourceVersion = page.metadata.resourceVersion;
  } while (cont);
  return { items, resourceVersion, bytes };
}

/** Open a watch from `rv`; every parsed line goes to onEvent. Resolves once the server has answered. */
async function rawWatch(namespace: string, rv: string, onEvent: (e: { type: string; object: unknown }) => void): Promise<() => void> {
  const { res, close } = await rawOpen(`/api/v1/namespaces/${namespace}/configmaps?watch=true&allowWatchBookmarks=true&timeoutSeconds=600&resourceVersion=${rv}`);
  res.setEncoding('utf8');
  let carry = '';
  res.on('data', (chunk: string) => {
    carry += chunk;
    let nl: number;
    while ((nl = carry.indexOf('\n')) !== -1) {
      const line = carry.slice(0, nl);
      carry = carry.slice(nl + 1);
      if (line.length > 0) onEvent(JSON.parse(line) as { type: string; object: unknown });
    }
  });
  return close;
}

// --- measurements ---------------------------------------------------------------

interface Sample {
  syncMs: number;
  heapPerObject: number;
  updatesMs: number;
  /** M-th update delivered, ms after the last patch was acknowledged. */
  updatesLagMs: number;
  /** Raw only: heap per object once managedFields are deleted. */
  heapPerObjectStripped?: number;
  /** client-node only: when start() resolved (after the list and the watch request). */
  startResolvedMs?: number;
}

async function measureRaw(namespace: string, n: number, m: number): Promise<Sample & { avgObjectBytes: number }> {
  let list: RawList | undefined;
  const h0 = await heapUsed();
  const t0 = now();
  list = await rawList(namespace);
  const syncMs = now() - t0;
  if (list.items.length !== n) throw new Error(`raw list: ${list.items.length} items, expected ${n}`);
  const h1 = await heapUsed();
  for (const item of list.items) delete (item.metadata as { managedFields?: unknown }).managedFields;
  const h2 = await heapUsed();
  const { resourceVersion, bytes } = list;
  list = undefined;

  let seen = 0;
  const done = deferred<number>('raw watch');
  const close = await rawWatch(namespace, resourceVersion, (e) => {
    if (e.type === 'MODIFIED' && ++seen === m) done.resolve(now());
  });
  const patched = await patchObjects(namespace, m);
  const last = await done.promise;
  close();
  return {
    syncMs,
    heapPerObject: (h1 - h0) / n,
    heapPerObjectStripped: (h2 - h0) / n,
    updatesMs: last - patched.firstSent,
    updatesLagMs: last - patched.lastAcked,
    avgObjectBytes: bytes / n,
  };
}

async function measureKubeloop(client: Client, namespace: string, n: number, m: number, unsafeDisableDeepFreeze: boolean): Promise<Sample> {
  // The ConfigMap ListWatcher, told when its watch is open (patching starts only then, as for raw).
  const lw = clientListWatcher(client, ConfigMap, { namespace });
  const watching = deferred<void>('kubeloop watch');
  const tracked: ListWatcher<ConfigMap> = {
    list: (o) => lw.list(o),
    watch: async (o) => {
      const it = await lw.watch(o);
      watching.resolve();
      return it;
    },
  };
  const informer = new Informer<ConfigMap>([{ lw: tracked, namespace }], { unsafeDisableDeepFreeze });
  const initial = deferred<void>('kubeloop initial adds');
  const done = deferred<number>('kubeloop updates');
  try {
    const h0 = await heapUsed();
    const t0 = now();
    informer.start();
    await informer.waitForSync();
    const syncMs = now() - t0;
    if (informer.store.size !== n) throw new Error(`kubeloop: ${informer.store.size} objects, expected ${n}`);
    const h1 = await heapUsed();

    let updates = 0;
    let adds = 0;
    informer.addEventHandler({
      onAdd: () => {
        if (++adds === n) initial.resolve();
      },
      onUpdate: () => {
        if (++updates === m) done.resolve(now());
      },
    });
    await initial.promise;
    await watching.promise;
    const patched = await patchObjects(namespace, m);
    const last = await done.promise;
    return { syncMs, heapPerObject: (h1 - h0) / n, updatesMs: last - patched.firstSent, updatesLagMs: last - patched.lastAcked };
  } finally {
    for (const d of [watching, initial, done]) d.cancel();
    await informer.stop();
  }
}

async function measureClientNode(core: CoreV1Api, namespace: string, n: number, m: number): Promise<Sample> {
  const informer = makeInformer<V1ConfigMap>(
    kc,
    `/api/v1/namespaces/${namespace}/configmaps`,
    () => core.listNamespacedConfigMap({ namespace }),
  );
  let adds = 0;
  let updates = 0;
  let t0 = 0;
  let syncedAt = 0;
  let counting = false;
  const done = deferred<number>('client-node updates');
  const errors: unknown[] = [];
  informer.on('add', () => {
    if (++adds === n) syncedAt = now(); // the list is in the cache
  });
  informer.on('update', () => {
    if (counting && ++updates === m) done.resolve(now());
  });
  informer.on('error', (err) => errors.push(err));
  try {
    const h0 = await heapUsed();
    t0 = now();
    await informer.start(); // resolves after the list and once the watch request is answered
    const startResolvedMs = now() - t0;
    if (errors.length > 0) throw errors[0] instanceof Error ? errors[0] : new Error(String(errors[0]));
    if (informer.list(namespace).length !== n) throw new Error(`client-node: ${informer.list(namespace).length} objects, expected ${n}`);
    const h1 = await heapUsed();
    counting = true;
    const patched = await patchObjects(namespace, m);
    const last = await done.promise;
    return {
      syncMs: syncedAt - t0,
      startResolvedMs,
      heapPerObject: (h1 - h0) / n,
      updatesMs: last - patched.firstSent,
      updatesLagMs: last - patched.lastAcked,
    };
  } finally {
    done.cancel();
    await informer.stop();
  }
}

// --- run ------------------------------------------------------------------------

const APPROACHES = ['raw', 'kubeloop', 'kubeloopUnfrozen', 'clientNode'] as const;
type Approach = (typeof APPROACHES)[number];
interface SizeResult {
  n: number;
  m: number;
  createMs: number;
  avgObjectBytes: number;
  samples: Record<Approach, Sample[]>;
}
const results: SizeResult[] = [];
const core = kc.makeApiClient(CoreV1Api);
const suffix = Date.now().toString(36);

try {
  for (const n of SIZES) {
    const m = Math.min(UPDATES, n);
    const namespace = `bench-cache-${n}-${suffix}`;
    process.stderr.write(`N=${n}: creating ${n} ConfigMaps in ${namespace} ... `);
    const createMs = await createObjects(namespace, n);
    process.stderr.write(`${(createMs / 1000).toFixed(1)} s\n`);
    // Warm every approach's connection (and kubeloop's RESTMapper) outside the figures.
    await rawGet(`/api/v1/namespaces/${namespace}/configmaps?limit=1`);
    await reader.list(ConfigMap, { namespace, limit: 1 });
    await core.listNamespacedConfigMap({ namespace, limit: 1 });

    const result: SizeResult = { n, m, createMs, avgObjectBytes: 0, samples: { raw: [], kubeloop: [], kubeloopUnfrozen: [], clientNode: [] } };
    for (let round = 1; round <= ROUNDS; round++) {
      // Rotate the order each round, so no approach always runs first (or right after another).
      const order = APPROACHES.map((_, i) => APPROACHES[(i + round - 1) % APPROACHES.length]!);
      for (const approach of order) {
        await new Promise((r) => setTimeout(r, SETTLE_MS)); // let the API server finish the last burst (its GC, watch fan-out)
        if (approach === 'raw') {
          const raw = await measureRaw(namespace, n, m);
          result.avgObjectBytes = raw.avgObjectBytes;
          result.samples.raw.push(raw);
        } else if (approach === 'clientNode') {
          result.samples.clientNode.push(await measureClientNode(core, namespace, n, m));
        } else {
          result.samples[approach].push(await measureKubeloop(reader, namespace, n, m, approach === 'kubeloopUnfrozen'));
        }
      }
      if (process.env.BENCH_CACHE_DEBUG) await heapUsed();
      process.stderr.write(`N=${n}: round ${round}/${ROUNDS} done\n`);
    }
    results.push(result);
    if (env.existingCluster) await writer.delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  }
} finally {
  rawAgent.destroy();
  writer.transport.close();
  reader.transport.close();
  await env.stop();
}

// --- report ---------------------------------------------------------------------

type Metric = 'syncMs' | 'heapPerObject' | 'updatesMs' | 'updatesLagMs';
const med = (r: SizeResult, a: Approach, k: Metric | 'heapPerObjectStripped' | 'startResolvedMs'): number =>
  median(r.samples[a].map((s) => s[k] ?? Number.NaN));
const ratio = (a: number, b: number): string => (Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? `${(a / b).toFixed(2)}x` : '-');

const pad = (s: string | number, w: number): string => String(s).padStart(w);
const header = ['N', 'metric', 'raw', 'kubeloop', 'kl unfrozen', 'client-node', 'kl/raw', 'kl/cn', 'unfr/raw', 'unfr/cn', 'freeze'];
const widths = [6, 28, 9, 9, 12, 12, 8, 8, 9, 8, 7];
const line = (cells: (string | number)[]): string => cells.map((c, i) => (i === 1 ? String(c).padEnd(widths[i]!) : pad(c, widths[i]!))).join(' ');

console.log(
  `\ncache-informer: ${ROUNDS} rounds, median; M = ${UPDATES} updates; ConfigMaps ~${Math.round(results[0]?.avgObjectBytes ?? 0)} B of JSON each; kubernetes ${env.binaries?.kubernetesVersion ?? 'existing'}, node ${process.version}`,
);
console.log(line(header));
const rows: { n: number; metric: string; raw: number; kubeloop: number; kubeloopUnfrozen: number; clientNode: number }[] = [];
for (const r of results) {
  const metrics: [string, Metric, number?][] = [
    ['list -> synced (ms)', 'syncMs'],
    ['heap / object (B)', 'heapPerObject'],
    ['  vs JSON w/o managedFields', 'heapPerObject', med(r, 'raw', 'heapPerObjectStripped')],
    [`${r.m} updates delivered (ms)`, 'updatesMs'],
  ];
  for (const [label, key, rawOverride] of metrics) {
    const raw = rawOverride ?? med(r, 'raw', key);
    const kl = med(r, 'kubeloop', key);
    const un = med(r, 'kubeloopUnfrozen', key);
    const cn = med(r, 'clientNode', key);
    const f = (x: number): string => (key === 'heapPerObject' ? String(Math.round(x)) : x.toFixed(1));
    rows.push({ n: r.n, metric: label.trim(), raw: ms(raw), kubeloop: ms(kl), kubeloopUnfrozen: ms(un), clientNode: ms(cn) });
    console.log(line([r.n, label, f(raw), f(kl), f(un), f(cn), ratio(kl, raw), ratio(kl, cn), ratio(un, raw), ratio(un, cn), ratio(kl, un)]));
  }
}
console.log('kl = kubeloop Informer (managedFields stripped, deep-frozen); kl unfrozen = unsafeDisableDeepFreeze; freeze = kl / kl unfrozen.');
console.log('client-node synced = its add handler saw the N-th object (start() resolves later, after the watch request is answered).');
console.log('updates: ms from the first patch sent (32 in flight) to the M-th update parsed/delivered; the JSON has the lag after the last patch was acknowledged.');

console.log(
  JSON.stringify({
    benchmark: 'cache-informer',
    kubernetes: env.binaries?.kubernetesVersion ?? 'existing',
    node: process.version,
    rounds: ROUNDS,
    updates: UPDATES,
    sizes: results.map((r) => ({
      n: r.n,
      m: r.m,
      createMs: ms(r.createMs),
      avgObjectBytes: Math.round(r.avgObjectBytes),
      median: Object.fromEntries(
        APPROACHES.map((a) => [
          a,
          {
            syncMs: ms(med(r, a, 'syncMs')),
            heapPerObject: Math.round(med(r, a, 'heapPerObject')),
            updatesMs: ms(med(r, a, 'updatesMs')),
            updatesLagMs: ms(med(r, a, 'updatesLagMs')),
            ...(a === 'raw' ? { heapPerObjectStripped: Math.round(med(r, a, 'heapPerObjectStripped')) } : {}),
            ...(a === 'clientNode' ? { startResolvedMs: ms(med(r, a, 'startResolvedMs')) } : {}),
          },
        ]),
      ),
      samples: Object.fromEntries(
        APPROACHES.map((a) => [a, r.samples[a].map((s) => Object.fromEntries(Object.entries(s).map(([k, v]) => [k, ms(v as number)])))]),
      ),
    })),
    rows,
  }),
);
