/**
 * CPU per request: what one sequential request to the API server costs the
 * client process in CPU time (user + system, `process.cpuUsage`), for a GET,
 * a merge PATCH and a POST + DELETE of a ConfigMap against envtest, side by
 * side in one run:
 *
 * - floor: no framework, `node:https` with a keep-alive agent, the body
 *   read with 'data'/'end' and parsed with JSON.parse (the least any
 *   Node client can do);
 * - client-node: `@kubernetes/client-node`'s CoreV1Api;
 * - transport: kubeloop's `createTransport(...).request()`, bodies parsed
 *   with JSON.parse (the layer every kubeloop request goes through);
 * - client: kubeloop's `createClient` (`get`, `patch` with `mergePatch`,
 *   `create` + `delete`).
 *
 * Each variant runs in its own child process, once with V8's defaults and
 * once with the node flags the example's scripts/dev.sh and the scaffold's
 * Dockerfile ship (`--max-semi-space-size=1 --no-opt --no-maglev`: no
 * optimizing compilers, so every JavaScript operation per request costs
 * more). A child warms up (--warmup requests of each kind), then measures
 * --n sequential requests of each kind; the rounds (--rounds) interleave
 * every variant and flag set, and the medians over rounds are reported, in
 * µs of CPU per request and as ratios to the floor with the same flags.
 * Wall time is not reported: on a shared machine it measures the load.
 * Prints a table, then one JSON line.
 *
 *   pnpm bench:request                         (from the repository root, after a build)
 *   pnpm bench:request --n=2000 --rounds=5 --only=floor,transport
 *   REQUEST_NODE_FLAGS="--max-semi-space-size=1" pnpm bench:request   (another flag set instead of the shipped one)
 *   REQUEST_BASELINE=/path/to/other/checkout pnpm bench:request --only=floor,transport,client
 *       (adds transport@base and client@base: the same, from another built checkout's
 *       packages/client and packages/scheme, e.g. main before a change: before and after in one run)
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as KubeloopClient from '@kubeloop/client';
import type * as KubeloopScheme from '@kubeloop/scheme';

const NAMESPACE = 'default';
/** The ConfigMap every GET and PATCH reads (made by the parent). */
const OBJECT = 'bench-request';
const BASELINE = process.env['REQUEST_BASELINE'];
const VARIANTS = ['floor', 'client-node', 'transport', 'client', ...(BASELINE ? (['transport@base', 'client@base'] as const) : [])] as const;
type Variant = 'floor' | 'client-node' | 'transport' | 'client' | 'transport@base' | 'client@base';
const OPS = ['get', 'patch', 'create+delete'] as const;
type Op = (typeof OPS)[number];
/** The flags the example's scripts/dev.sh and the scaffold's Dockerfile run an operator with. */
const SHIPPED_FLAGS = '--max-semi-space-size=1 --no-opt --no-maglev';

function param(name: string, fallback: string): string {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** One request of each kind for a variant: `i` makes each PATCH and each created name differ. */
type Ops = Record<Op, (i: number) => Promise<unknown>>;

async function opsFor(variant: Variant, kubeconfigPath: string, name: string, prefix: string): Promise<Ops> {
  const path = `/api/v1/namespaces/${NAMESPACE}/configmaps`;
  const created = (i: number): string => `${prefix}-${i}`;
  const body = (i: number): string => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: created(i), namespace: NAMESPACE }, data: { a: '1' } });
  /** The three operations over a raw `send(method, path, contentType?, body?)`: the floor's and kubeloop's transport's. */
  const overRaw = (send: (method: 'GET' | 'PATCH' | 'POST' | 'DELETE', p: string, contentType?: string, payload?: string) => Promise<unknown>): Ops => ({
    get: () => send('GET', `${path}/${name}`),
    patch: (i) => send('PATCH', `${path}/${name}`, 'application/merge-patch+json', JSON.stringify({ data: { a: String(i) } })),
    'create+delete': async (i) => {
      await send('POST', path, 'application/json', body(i));
      await send('DELETE', `${path}/${created(i)}`);
    },
  });
  if (variant === 'floor') {
    const kc = readFileSync(kubeconfigPath, 'utf8');
    const field = (k: string): Buffer => Buffer.from(new RegExp(`${k}: (\\S+)`).exec(kc)![1]!, 'base64');
    const server = /server: (\S+)/.exec(kc)![1]!;
    const agent = new Agent({ keepAlive: true, maxSockets: 64, ca: field('certificate-authority-data'), cert: field('client-certificate-data'), key: field('client-key-data') });
    const send = (method: string, p: string, contentType?: string, payload?: string): Promise<unknown> =>
      new Promise((resolve, reject) => {
        const headers: Record<string, string> = { accept: 'application/json' };
        if (payload !== undefined) {
          headers['content-type'] = contentType!;
          headers['content-length'] = String(Buffer.byteLength(payload));
        }
        const req = httpsRequest(server + p, { method, agent, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
            if ((res.statusCode ?? 0) >= 300) reject(new Error(`${method} ${p}: ${res.statusCode}`));
            else resolve(parsed);
          });
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(payload);
      });
    return overRaw(send);
  }
  if (variant === 'client-node') {
    const { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    return {
      get: () => core.readNamespacedConfigMap({ name, namespace: NAMESPACE }),
      patch: (i) => core.patchNamespacedConfigMap({ name, namespace: NAMESPACE, body: { data: { a: String(i) } } }, merge),
      'create+delete': async (i) => {
        await core.createNamespacedConfigMap({ namespace: NAMESPACE, body: { metadata: { name: created(i) }, data: { a: '1' } } });
        await core.deleteNamespacedConfigMap({ name: created(i), namespace: NAMESPACE });
      },
    };
  }
  const base = variant.endsWith('@base');
  const module = (pkg: string, spec: string): string => (base ? join(BASELINE!, 'packages', pkg, 'dist', 'index.js') : spec);
  const { createClient, createTransport, loadKubeConfig, mergePatch } = (await import(module('client', '@kubeloop/client'))) as typeof KubeloopClient;
  const config = loadKubeConfig(kubeconfigPath);
  if (variant.startsWith('transport')) {
    const t = createTransport(config);
    const send = async (method: 'GET' | 'PATCH' | 'POST' | 'DELETE', p: string, contentType?: string, payload?: string): Promise<unknown> => {
      const res = await t.request({ method, path: p, ...(payload !== undefined ? { body: payload, contentType: contentType! } : {}) });
      if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status}`);
      return JSON.parse(res.body) as unknown;
    };
    return overRaw(send);
  }
  const { ConfigMap, builtinScheme } = (await import(module('scheme', '@kubeloop/scheme'))) as typeof KubeloopScheme;
  const client = createClient({ kubeConfig: config, scheme: builtinScheme, fieldOwner: 'bench-request' });
  const key = { namespace: NAMESPACE, name };
  return {
    get: () => client.get(ConfigMap, key),
    patch: (i) => client.patch(ConfigMap, key, mergePatch({ data: { a: String(i) } })),
    'create+delete': async (i) => {
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: created(i), namespace: NAMESPACE }, data: { a: '1' } });
      await client.delete(ConfigMap, { namespace: NAMESPACE, name: created(i) });
    },
  };
}

/** In a child: warm up, then measure each kind of request; prints one JSON line of µs per request. */
async function child(variant: Variant, kubeconfigPath: string, n: number, warmup: number): Promise<void> {
  const ops = await opsFor(variant, kubeconfigPath, OBJECT, `bench-request-${process.pid}`);
  const out: Record<string, number> = {};
  let seq = 0;
  for (const op of OPS) {
    for (let i = 0; i < warmup; i++) await ops[op](seq++);
    const before = process.cpuUsage();
    for (let i = 0; i < n; i++) await ops[op](seq++);
    const used = process.cpuUsage(before);
    // create+delete is two requests
    out[op] = (used.user + used.system) / n / (op === 'create+delete' ? 2 : 1);
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
  process.exit(0);
}

function runChild(variant: Variant, flags: string[], kubeconfigPath: string, n: number, warmup: number): Promise<Record<Op, number>> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...flags, fileURLToPath(import.meta.url), `--child=${variant}`, `--kubeconfig=${kubeconfigPath}`, `--n=${n}`, `--warmup=${warmup}`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    p.on('error', reject);
    p.on('exit', (code) => {
      const line = stdout.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`${variant} (${flags.join(' ') || 'no flags'}) exited ${code}: ${stdout}`));
      else resolve(JSON.parse(line) as Record<Op, number>);
    });
  });
}

async function main(): Promise<void> {
  const n = Math.max(1, Number.parseInt(param('n', '1000'), 10));
  const warmup = Math.max(0, Number.parseInt(param('warmup', '300'), 10));
  const rounds = Math.max(1, Number.parseInt(param('rounds', '3'), 10));
  const only = param('only', VARIANTS.join(',')).split(',') as Variant[];
  if (BASELINE) for (const v of ['transport@base', 'client@base'] as const) if (!only.includes(v) && only.includes(v.replace('@base', '') as Variant)) only.push(v);
  const unknown = only.filter((v) => !(VARIANTS as readonly string[]).includes(v));
  if (unknown.length > 0) throw new Error(`--only: unknown variant(s) ${unknown.join(', ')}; known: ${VARIANTS.join(', ')}`);
  if (!only.includes('floor')) only.unshift('floor');
  const shipped = (process.env['REQUEST_NODE_FLAGS'] ?? SHIPPED_FLAGS).split(/\s+/).filter(Boolean);
  const flagSets: { label: string; flags: string[] }[] = [
    { label: 'V8 defaults', flags: [] },
    { label: shipped.join(' '), flags: shipped },
  ];
  const log = (line: string): void => void process.stderr.write(`[bench:request] ${line}\n`);

  const { createEnvironment } = await import('@kubeloop/envtest');
  const env = createEnvironment();
  await env.start();
  const { createClient } = await import('@kubeloop/client');
  await createClient({ kubeConfig: env.kubeConfig, fieldOwner: 'bench-request' }).create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: OBJECT, namespace: NAMESPACE }, data: { a: '0' } });
  const samples = new Map<string, Record<Op, number>[]>();
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const set of flagSets) {
        for (const variant of only) {
          const r = await runChild(variant, set.flags, env.kubeconfigPath, n, warmup);
          log(`round ${round} ${set.label} ${variant}: ${OPS.map((op) => `${op} ${r[op].toFixed(0)} µs`).join(', ')}`);
          const k = `${set.label}|${variant}`;
          samples.set(k, [...(samples.get(k) ?? []), r]);
        }
      }
    }
  } finally {
    await env.stop();
  }

  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const results: { flags: string; variant: Variant; op: Op; usPerRequest: number; ratioToFloor: number }[] = [];
  console.log(`\nCPU per request (user + system), µs, median of ${rounds} rounds of ${n} sequential requests after ${warmup} warm-up; load average ${load}\n`);
  for (const set of flagSets) {
    console.log(`node flags: ${set.label}`);
    console.log(`| variant | ${OPS.map((op) => `${op} µs | ×floor`).join(' | ')} |`);
    console.log(`|---|${OPS.map(() => '---:|---:').join('|')}|`);
    const floor = samples.get(`${set.label}|floor`)!;
    for (const variant of only) {
      const rows = samples.get(`${set.label}|${variant}`)!;
      const cells = OPS.map((op) => {
        const us = median(rows.map((r) => r[op]));
        const ratio = us / median(floor.map((r) => r[op]));
        results.push({ flags: set.label, variant, op, usPerRequest: Math.round(us), ratioToFloor: Number(ratio.toFixed(2)) });
        return `${us.toFixed(0)} | ${ratio.toFixed(2)}x`;
      });
      console.log(`| ${variant} | ${cells.join(' | ')} |`);
    }
    console.log('');
  }
  console.log(JSON.stringify({ bench: 'request-cost', n, warmup, rounds, load, results }));
}

const childVariant = param('child', '');
if (childVariant) await child(childVariant as Variant, param('kubeconfig', ''), Number(param('n', '1000')), Number(param('warmup', '300')));
else await main();
