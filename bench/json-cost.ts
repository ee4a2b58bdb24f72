/**
 * What lossless JSON costs on the hot paths: `parseJson` (an int64 past 2^53
 * read as a bigint) against plain `JSON.parse`, and `stringifyJson` (a
 * bigint written as digits) against plain `JSON.stringify`, on the texts the
 * client decodes most: one watch line of a ConfigMap as the API server
 * sends it (managedFields, labels, annotations; ~1.3 KB), a Pod's watch line
 * (~5 KB), and a list page of 500 ConfigMaps (~0.6 MB). Each input is
 * measured as the API server writes it (no 16-digit run: the fast path) and
 * with one int64 past 2^53 in it (the reviver path). No API server needed:
 * the texts are made here.
 *
 * Each flag set runs in its own child process: V8's defaults, and the
 * shipped flags (`--max-semi-space-size=1 --no-opt --no-maglev`, as the
 * example's scripts/dev.sh and the scaffold's Dockerfile run an operator).
 * A child warms each case up, then times batches (performance.now) and
 * reports the median µs per operation over --rounds batches. "The scan" is
 * what parseJson adds on its fast path (the regular expressions that look
 * for a 16-digit number), timed alone because on a loaded machine the
 * difference of two parse timings is lost in their noise. Prints a
 * table, then one JSON line.
 *
 *   pnpm bench:json                    (from the repository root, after a build)
 *   pnpm bench:json --rounds=15 --ms=200
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseJson, stringifyJson } from '@kubeloop/scheme';

const SHIPPED_FLAGS = '--max-semi-space-size=1 --no-opt --no-maglev';

function param(name: string, fallback: string): string {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function configMap(i: number): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: `settings-${i}`,
      namespace: 'team-a',
      uid: `5f0c6a2e-8d1b-4c3e-9a7f-${String(100000000000 + i).slice(-12)}`,
      resourceVersion: String(4823761 + i),
      creationTimestamp: '2026-12-05T03:25:11Z',
      labels: { 'app.kubernetes.io/name': 'web', 'app.kubernetes.io/part-of': 'shop', tier: 'frontend' },
      annotations: { 'kubeloop.dev/owner': 'platform', 'config.kubernetes.io/origin': 'path: overlays/prod/settings.yaml' },
      managedFields: [
        {
          manager: 'kubectl-client-side-apply',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-12-05T03:25:11Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:data': { '.': {}, 'f:mode': {}, 'f:replicas': {}, 'f:url': {} }, 'f:metadata': { 'f:labels': { '.': {}, 'f:app.kubernetes.io/name': {}, 'f:tier': {} } } },
        },
      ],
    },
    data: { mode: 'on', replicas: '3', url: `https://shop.example.com/api/v1/items?page=${i}`, 'config.yaml': 'server:\n  port: 8080\n  timeoutSeconds: 30\n' },
  };
}

function pod(): Record<string, unknown> {
  const container = (name: string): Record<string, unknown> => ({
    name,
    image: `registry.example.com/shop/${name}:v1.42.3`,
    ports: [{ containerPort: 8080, name: 'http', protocol: 'TCP' }],
    env: Array.from({ length: 8 }, (_, k) => ({ name: `SETTING_${k}`, value: `value-${k}` })),
    resources: { limits: { cpu: '500m', memory: '512Mi' }, requests: { cpu: '100m', memory: '128Mi' } },
    volumeMounts: [{ name: 'config', mountPath: '/etc/shop' }, { name: 'kube-api-access-x7k2p', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }],
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: 'IfNotPresent',
  });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...(configMap(1)['metadata'] as object), name: 'web-7d9f8c6b5-x2k4q', ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9f8c6b5', uid: '0b8e1f3a-2c4d-4e6f-8a9b-1c2d3e4f5a6b', controller: true, blockOwnerDeletion: true }] },
    spec: { containers: [container('web'), container('sidecar')], restartPolicy: 'Always', terminationGracePeriodSeconds: 30, dnsPolicy: 'ClusterFirst', serviceAccountName: 'web', nodeName: 'node-3', priority: 0 },
    status: { phase: 'Running', podIP: '10.0.3.17', hostIP: '192.168.1.13', startTime: '2026-12-05T03:25:11Z', conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({ type, status: 'True', lastTransitionTime: '2026-12-05T03:25:14Z' })) },
  };
}

interface Case {
  readonly name: string;
  readonly text: string;
  readonly value: unknown;
}

function cases(): Case[] {
  const watchLine = (object: Record<string, unknown>): string => JSON.stringify({ type: 'MODIFIED', object });
  const list = (items: Record<string, unknown>[]): string => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: '4824261' }, items });
  const withBig = (text: string): string => text.replace('"replicas":"3"', '"replicas":"3","bytes":9007199254740993');
  const withBigPod = (text: string): string => text.replace('"priority":0', '"priority":0,"bytes":9007199254740993');
  const cm = watchLine(configMap(1));
  const p = watchLine(pod());
  const l = list(Array.from({ length: 500 }, (_, i) => configMap(i)));
  return [
    { name: 'ConfigMap watch line', text: cm, value: parseJson(cm) },
    { name: 'ConfigMap watch line, one int64 > 2^53', text: withBig(cm), value: parseJson(withBig(cm)) },
    { name: 'Pod watch line', text: p, value: parseJson(p) },
    { name: 'Pod watch line, one int64 > 2^53', text: withBigPod(p), value: parseJson(withBigPod(p)) },
    { name: 'list of 500 ConfigMaps', text: l, value: parseJson(l) },
    { name: 'list of 500 ConfigMaps, one int64 > 2^53', text: withBig(l), value: parseJson(withBig(l)) },
  ];
}

/** µs per call of `fn`, median over `rounds` batches of about `ms` each. */
function time(fn: () => unknown, rounds: number, ms: number): number {
  let n = 1;
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn();
    const took = performance.now() - t0;
    if (took >= ms / 4) {
      n = Math.max(1, Math.round((n * ms) / took));
      break;
    }
    n *= 2;
  }
  const per: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) fn();
    per.push(((performance.now() - t0) * 1000) / n);
  }
  return median(per);
}

type Row = { case: string; bytes: number; parse: number; scan: number; parseJson: number; stringify: number | null; stringifyJson: number };

/** What parseJson adds on its fast path: the two tests of packages/scheme/src/json.ts (kept the same here). */
const LONG_NUMBER = /[:,[ \t\n\r]-?\d{16}/;
const LONG_NUMBER_FIRST = /^-?\d{16}/;

function child(): void {
  const rounds = Number(param('rounds', '9'));
  const ms = Number(param('ms', '150'));
  const rows: Row[] = [];
  for (const c of cases()) {
    const hasBig = c.text.includes('9007199254740993');
    rows.push({
      case: c.name,
      bytes: c.text.length,
      parse: time(() => JSON.parse(c.text), rounds, ms),
      scan: time(() => LONG_NUMBER.test(c.text) || LONG_NUMBER_FIRST.test(c.text), rounds, ms),
      parseJson: time(() => parseJson(c.text), rounds, ms),
      // JSON.stringify throws on a bigint: no floor for those
      stringify: hasBig ? null : time(() => JSON.stringify(c.value), rounds, ms),
      stringifyJson: time(() => stringifyJson(c.value), rounds, ms),
    });
  }
  process.stdout.write(`${JSON.stringify(rows)}\n`);
}

function run(flags: string): Promise<Row[]> {
  return new Promise((resolve, reject) => {
    const args = [...(flags ? flags.split(' ') : []), fileURLToPath(import.meta.url), '--child', ...process.argv.slice(2)];
    const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.once('error', reject);
    p.once('close', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!) as Row[]) : reject(new Error(`child exited ${code}`))));
  });
}

async function main(): Promise<void> {
  if (process.argv.includes('--child')) return child();
  const results: Record<string, Row[]> = {};
  for (const [label, flags] of [['V8 defaults', ''], ['shipped flags', SHIPPED_FLAGS]] as const) results[label] = await run(flags);
  const f = (n: number): string => (n >= 100 ? n.toFixed(0) : n.toFixed(2));
  console.log('| flags | text | bytes | JSON.parse µs | the scan µs (× parse) | parseJson µs (×) | JSON.stringify µs | stringifyJson µs (×) |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  for (const [label, rows] of Object.entries(results)) {
    for (const r of rows) {
      const sx = r.stringify === null ? '' : ` (${(r.stringifyJson / r.stringify).toFixed(2)}x)`;
      console.log(`| ${label} | ${r.case} | ${r.bytes} | ${f(r.parse)} | ${f(r.scan)} (${(r.scan / r.parse).toFixed(2)}x) | ${f(r.parseJson)} (${(r.parseJson / r.parse).toFixed(2)}x) | ${r.stringify === null ? 'throws' : f(r.stringify)} | ${f(r.stringifyJson)}${sx} |`);
    }
  }
  console.log(JSON.stringify({ bench: 'json-cost', results }));
}

await main();
