/**
 * One child process of `pnpm bench:probes` (bench/probes.ts compiles this file
 * to .mjs, so Node's type stripper is not in the child's memory, and runs it
 * under each flag set): does one probe once and prints one JSON line.
 *
 *   node [flags] probe-child.mjs get https|https-raw-headers|http2 '{"server":…,"ca":…,"cert":…,"key":…,"path":…,"n":2000,"warmup":300}'
 *       CPU (user + system) per sequential GET of one object, µs, and the process's RSS after them
 *   node --expose-gc [flags] probe-child.mjs intern interned|not-interned '{"n":10000}'
 *       heap bytes per ConfigMap held by a kubeloop Informer, with and without `internStrings`
 *   node --expose-gc [flags] probe-child.mjs builtins node:worker_threads,node:assert '{"after":"node:https"}'
 *       what loading those builtins adds to a process that has loaded `after`
 *   node [flags] probe-child.mjs ops query|timer|clone-small|clone-configmap '{"n":200000,"warmup":20000}'
 *       CPU (user + system) per operation, µs
 *   node [flags] probe-child.mjs gc-observer without|with '{"chunks":4000,"objects":2000}'
 *       CPU of an allocation loop, with and without prom-client's `nodejs_gc_duration_seconds` observer, and its collections
 */
import { readFileSync } from 'node:fs';
import type { ClientHttp2Session } from 'node:http2';
import type { Agent } from 'node:https';
import type { KubeObject, ObjectList } from '@kubeloop/scheme';
import type { WatchEvent } from '@kubeloop/client';

const [probe, variant, json] = process.argv.slice(2);
const options = JSON.parse(json ?? '{}') as Record<string, unknown>;
const say = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

/** VmRSS, RssAnon and RssFile of this process, bytes. */
function status(): { rss: number; anon: number; file: number } {
  const text = readFileSync('/proc/self/status', 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), anon: kb('RssAnon'), file: kb('RssFile') };
}

/** Three full collections after a moment (finalizers, weak callbacks), then the heap in use. */
async function settledHeap(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  await new Promise((r) => setTimeout(r, 50));
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

// --- get: one GET at a time, three ways ------------------------------------------------

async function get(): Promise<void> {
  const { server, ca, cert, key, path } = options as { server: string; ca: string; cert: string; key: string; path: string };
  const n = Number(options['n']);
  const warmup = Number(options['warmup']);
  const url = new URL(server);
  let once: () => Promise<unknown>;
  let session: ClientHttp2Session | undefined;
  let agent: Agent | undefined;
  if (variant === 'http2') {
    const http2 = await import('node:http2');
    const s = http2.connect(server, { ca, cert, key });
    session = s;
    once = () =>
      new Promise((resolve, reject) => {
        const req = s.request({ ':method': 'GET', ':path': path, accept: 'application/json' });
        const chunks: Buffer[] = [];
        let status = 0;
        req.on('response', (headers) => (status = Number(headers[':status'])));
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
          if (status >= 300) reject(new Error(`GET ${path}: ${status}`));
          else resolve(parsed);
        });
        req.on('error', reject);
        req.end();
      });
  } else {
    const https = await import('node:https');
    const a = new https.Agent({ keepAlive: true, maxSockets: 64, ca, cert, key });
    agent = a;
    // The same request either way but for the headers: an object (Node validates each name and value, keeps a
    // map and adds Host itself) or a raw array of name, value, ... (sent as given: Host must be in it).
    const headers = variant === 'https-raw-headers' ? ['accept', 'application/json', 'host', url.host] : { accept: 'application/json' };
    once = () =>
      new Promise((resolve, reject) => {
        const req = https.request({ host: url.hostname, port: url.port, path, method: 'GET', agent: a, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
            if ((res.statusCode ?? 0) >= 300) reject(new Error(`GET ${path}: ${res.statusCode}`));
            else resolve(parsed);
          });
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end();
      });
  }
  for (let i = 0; i < warmup; i++) await once();
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) await once();
  const used = process.cpuUsage(before);
  const s = status();
  say({ usPerRequest: (used.user + used.system) / n, rss: s.rss, anon: s.anon, file: s.file });
  session?.close();
  agent?.destroy();
}

// --- intern: heap per cached ConfigMap --------------------------------------------------

/**
 * A ConfigMap as the API server returns it, shaped like bench:memory's (four short data values) with three
 * labels, an owner reference and one managedFields entry; 100 objects per creation second.
 */
function configMapJson(i: number): string {
  const name = `cm-${String(i).padStart(6, '0')}`;
  const created = new Date(Date.UTC(2026, 11, 7, 0, 0, Math.floor(i / 100))).toISOString().replace('.000Z', 'Z');
  return JSON.stringify({
    metadata: {
      name,
      namespace: 'bench-probes',
      uid: crypto.randomUUID(),
      resourceVersion: String(1000 + i),
      creationTimestamp: created,
      labels: { app: 'bench-probes', shard: String(i % 16), tier: i % 2 ? 'fast' : 'standard' },
      ownerReferences: [{ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', name: `disk-${String(i).padStart(6, '0')}`, uid: crypto.randomUUID(), controller: true, blockOwnerDeletion: true }],
      managedFields: [
        {
          manager: 'harddisk-operator',
          operation: 'Apply',
          apiVersion: 'v1',
          time: created,
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:data': { 'f:iops': {}, 'f:medium': {}, 'f:size': {}, 'f:storageClass': {} }, 'f:metadata': { 'f:labels': { 'f:app': {}, 'f:shard': {}, 'f:tier': {} }, 'f:ownerReferences': {} } },
        },
      ],
    },
    data: { size: `${10 + (i % 90)}Gi`, storageClass: i % 2 ? 'fast' : 'standard', medium: 'ssd', iops: '16000' },
  });
}

async function intern(): Promise<void> {
  const n = Number(options['n']);
  const PAGE = 500;
  const { Informer } = await import('@kubeloop/cache');
  type ConfigMapObject = KubeObject & { data?: Record<string, string> };
  // Pages of the list as JSON text, parsed when asked for, as the client's list does; the watch waits.
  const lw = {
    list: ({ continue: token }: { continue?: string }): Promise<ObjectList<ConfigMapObject>> => {
      const start = token ? Number(token) : 0;
      const end = Math.min(n, start + PAGE);
      const items = Array.from({ length: end - start }, (_, k) => configMapJson(start + k)).join(',');
      const more = end < n ? `,"continue":"${end}"` : '';
      return Promise.resolve(JSON.parse(`{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"${1000 + n}"${more}},"items":[${items}]}`) as ObjectList<ConfigMapObject>);
    },
    watch: ({ signal }: { signal: AbortSignal }): Promise<AsyncIterableIterator<WatchEvent<ConfigMapObject>>> =>
      Promise.resolve({
        [Symbol.asyncIterator]() {
          return this;
        },
        next: () => new Promise<IteratorResult<WatchEvent<ConfigMapObject>>>((resolve) => signal.addEventListener('abort', () => resolve({ done: true, value: undefined }), { once: true })),
      }),
  };
  const informer = new Informer<ConfigMapObject>([{ lw, namespace: 'bench-probes' }], { internStrings: variant === 'interned', reflector: { useWatchList: false } });
  const before = await settledHeap();
  informer.start();
  await informer.waitForSync();
  const after = await settledHeap();
  say({ bytesPerObject: (after - before) / n, objects: informer.store.size });
  await informer.stop();
}

// --- builtins: what loading some builtins adds -----------------------------------------------

async function builtins(): Promise<void> {
  const after = typeof options['after'] === 'string' ? options['after'] : '';
  for (const m of after.split(',').filter(Boolean)) await import(m);
  await settledHeap();
  const s0 = status();
  const h0 = await settledHeap();
  for (const m of (variant ?? '').split(',').filter(Boolean)) await import(m);
  const h1 = await settledHeap();
  const s1 = status();
  say({ rss: s1.rss - s0.rss, anon: s1.anon - s0.anon, file: s1.file - s0.file, heap: h1 - h0, rssBefore: s0.rss });
}

// --- ops: CPU per single operation ---------------------------------------------------------

/** What the client's transport does to build a query string (packages/client's encodeQuery): append the defined values. */
function encodeQuery(query: Record<string, string | number | boolean | undefined>): string {
  let params: URLSearchParams | undefined;
  for (const k of Object.keys(query)) {
    const v = query[k];
    if (v !== undefined) (params ??= new URLSearchParams()).append(k, String(v));
  }
  return params ? `?${params.toString()}` : '';
}

function ops(): void {
  const n = Number(options['n']);
  const warmup = Number(options['warmup']);
  let sink = 0;
  let once: () => void;
  if (variant === 'query') {
    // A paginated, label-selected list: what an informer's list sends.
    const query = { labelSelector: 'app=bench-probes,tier in (fast,standard)', limit: 500, continue: undefined, resourceVersion: '123456', resourceVersionMatch: 'NotOlderThan' };
    once = () => void (sink += encodeQuery(query).length);
  } else if (variant === 'timer') {
    // A request's timeout: set, then cleared when the answer comes.
    const noop = (): void => undefined;
    once = () => clearTimeout(setTimeout(noop, 30_000));
  } else if (variant === 'clone-small' || variant === 'clone-configmap') {
    // A small object (a key and a few fields), or a ConfigMap as the API server returns it (the intern probe's, ~1.2 KB of JSON).
    const obj = variant === 'clone-small' ? { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-000001', namespace: 'bench-probes', resourceVersion: '1001' } } : (JSON.parse(configMapJson(1)) as object);
    once = () => void (sink += Object.keys(structuredClone(obj)).length);
  } else throw new Error(`ops: unknown variant ${variant}`);
  for (let i = 0; i < warmup; i++) once();
  const before = process.cpuUsage();
  for (let i = 0; i < n; i++) once();
  const used = process.cpuUsage(before);
  say({ usPerOp: (used.user + used.system) / n, sink });
}

// --- gc-observer: what prom-client's GC histogram costs per collection --------------------------

async function gcObserver(): Promise<void> {
  const chunks = Number(options['chunks']);
  const objects = Number(options['objects']);
  let count: (() => Promise<number>) | undefined;
  if (variant === 'with') {
    // prom-client as the manager has it (its dependency, its own files): a registry and the default GC metric.
    const { createRequire } = await import('node:module');
    const require = createRequire(import.meta.resolve('@kubeloop/manager'));
    const Registry = require('prom-client/lib/registry.js') as new () => { getSingleMetric(name: string): { get(): Promise<{ values: { metricName?: string; value: number }[] }> } | undefined };
    const gcMetric = require('prom-client/lib/metrics/gc.js') as (registry: unknown) => void;
    const registry = new Registry();
    gcMetric(registry);
    count = async () => ((await registry.getSingleMetric('nodejs_gc_duration_seconds')!.get()).values.filter((v) => v.metricName === 'nodejs_gc_duration_seconds_count').reduce((a, v) => a + v.value, 0));
  } else if (variant !== 'without') throw new Error(`gc-observer: unknown variant ${variant}`);
  // Short-lived objects in chunks, the event loop turned between them (the observer's entries are delivered
  // there), a few kept a while so some survive a scavenge.
  let kept: unknown[] = [];
  const chunk = (c: number): void => {
    const made: unknown[] = [];
    for (let i = 0; i < objects; i++) made.push({ name: `cm-${c}-${i}`, data: { size: `${i % 90}Gi`, medium: 'ssd' }, labels: [c, i] });
    kept.push(made[c % objects]);
    if (kept.length > 200) kept = [];
  };
  for (let c = 0; c < chunks / 10; c++) chunk(c);
  await new Promise((r) => setImmediate(r));
  const counted0 = count ? await count() : 0;
  const before = process.cpuUsage();
  const t0 = performance.now();
  for (let c = 0; c < chunks; c++) {
    chunk(c);
    await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setTimeout(r, 10));
  const used = process.cpuUsage(before);
  const wallMs = performance.now() - t0;
  const collections = count ? (await count()) - counted0 : null;
  say({ cpuMs: (used.user + used.system) / 1000, wallMs, collections, kept: kept.length });
}

if (probe === 'get') await get();
else if (probe === 'intern') await intern();
else if (probe === 'builtins') await builtins();
else if (probe === 'ops') ops();
else if (probe === 'gc-observer') await gcObserver();
else throw new Error(`unknown probe ${probe}`);
