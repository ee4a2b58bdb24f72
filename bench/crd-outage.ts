/**
 * CRDs deleted and installed again under a running manager, on a real
 * control plane: what the manager sends to the API server and logs while its
 * controllers wait for their CRDs, what `/readyz` says, and how long after a
 * reinstall every object is reconciled again.
 *
 * K controllers, each the `for` of its own CRD with M objects, in one
 * manager behind the envtest proxy (which counts every request). The CRDs
 * are deleted (their objects go with them); once every controller waits,
 * for W seconds: requests for the kinds' resources (lists, watches),
 * discovery requests (`/api`, `/apis`, the groups' documents), log lines at
 * warn or above, and `/readyz`. Then the CRDs are installed again and the M
 * objects of each re-created: the time until all K x M are reconciled.
 *
 *   pnpm bench:crd                          (from the repository root, after a build; K = 10, M = 50, W = 60 s)
 *   pnpm bench:crd --kinds=20 --objects=20 --window=120
 */
import { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import { createClient } from '@kubeloop/client';
import { createLogger, createManager, Result } from '@kubeloop/manager';

const { values } = parseArgs({ options: { kinds: { type: 'string' }, objects: { type: 'string' }, window: { type: 'string' } } });
const K = Number(values.kinds ?? 10);
const M = Number(values.objects ?? 50);
const WINDOW_MS = Number(values.window ?? 60) * 1000;
const CRD = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' };

const env = createEnvironment();
await env.start();
const proxy = await startApiProxy(env.kubeConfig);
const client = createClient({ kubeConfig: env.kubeConfig });
const ns = `crd-bench-${Date.now()}`;
await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });

const kinds = Array.from({ length: K }, (_, i) => {
  const group = `k${i}-${Date.now()}.kubeloop.bench`;
  return {
    group,
    ref: { apiVersion: `${group}/v1`, kind: 'Part' },
    crd: {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `parts.${group}` },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural: 'parts', singular: 'part', kind: 'Part', listKind: 'PartList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    },
  };
});

let lines: { level: number; msg: string }[] = [];
const logs = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as { level: number; msg: string });
    done();
  },
});

async function until(what: string, ok: () => boolean | Promise<boolean>, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function createObjects(round: string): Promise<void> {
  for (const k of kinds) {
    await Promise.all(Array.from({ length: M }, (_, j) => client.create({ ...k.ref, metadata: { name: `${round}-${j}`, namespace: ns } })));
  }
}

await env.installCRDs(kinds.map((k) => k.crd));
const manager = createManager({ kubeConfig: proxy.kubeConfig, namespaces: [ns], healthProbeBindAddress: '127.0.0.1:0', logger: createLogger({ level: 'info', destination: logs }) });
const reconciled = new Set<string>();
for (const [i, k] of kinds.entries()) {
  manager
    .controller()
    .named(`parts-${i}`)
    .for(k.ref)
    .complete((req) => {
      reconciled.add(`${i}/${req.name}`);
      return Result.done();
    });
}
const stop = new AbortController();
const running = manager.start(stop.signal);
await createObjects('a');
await until('the first objects reconciled', () => reconciled.size === K * M);

// Delete every CRD; wait until every controller waits for its CRD.
for (const k of kinds) await client.delete(CRD, { name: k.crd.metadata.name });
const deleted = performance.now();
await until('every controller to wait for its CRD', () => manager.controllers().every((c) => c.forKindMissing));
const noticedMs = performance.now() - deleted;
for (const k of kinds) await until(`CRD ${k.group} gone`, () => client.get(CRD, { name: k.crd.metadata.name }).then(() => false, () => true));

const since = Date.now();
lines = [];
await new Promise((r) => setTimeout(r, WINDOW_MS));
const during = proxy.requests.filter((r) => r.at >= since);
const groups = kinds.map((k) => `/apis/${k.group}`);
const resource = during.filter((r) => groups.some((g) => r.path.startsWith(`${g}/`))).length;
const discovery = during.filter((r) => r.path === '/api' || r.path === '/apis' || groups.includes(r.path)).length;
const warned = lines.filter((l) => l.level >= 40).length;
const ready = await fetch(`${manager.healthUrl!}/readyz?verbose`);
const readyBody = await ready.text();
const informersLeft = manager.cache.informers().length;

// Installed again: every object re-created is reconciled.
reconciled.clear();
const reinstalled = performance.now();
await env.installCRDs(kinds.map((k) => k.crd));
await createObjects('b');
await until('every re-created object reconciled', () => reconciled.size === K * M);
const backMs = performance.now() - reinstalled;

const figures = {
  kinds: K,
  objectsPerKind: M,
  windowS: WINDOW_MS / 1000,
  noticedMs: Math.round(noticedMs),
  resourceRequests: resource,
  discoveryRequests: discovery,
  discoveryPerMinute: Number(((discovery * 60_000) / WINDOW_MS).toFixed(1)),
  warnLines: warned,
  readyzStatus: ready.status,
  readyzSaysWaiting: readyBody.includes('waits for the CRD of'),
  informersLeft,
  allReconciledAfterReinstallMs: Math.round(backMs),
};
console.log(`CRDs deleted under a running manager: ${K} controllers, ${M} objects each, ${WINDOW_MS / 1000} s of waiting`);
console.table([
  { measure: 'every controller waiting, after the deletes began', value: `${figures.noticedMs} ms` },
  { measure: 'requests for the kinds\' resources while waiting', value: resource },
  { measure: 'discovery requests while waiting', value: `${discovery} (${figures.discoveryPerMinute}/min)` },
  { measure: 'log lines at warn or above while waiting', value: warned },
  { measure: '/readyz', value: `${ready.status}${figures.readyzSaysWaiting ? ' (says: waits for the CRD)' : ''}` },
  { measure: 'informers left in the cache', value: informersLeft },
  { measure: 'reinstall to every re-created object reconciled', value: `${figures.allReconciledAfterReinstallMs} ms` },
]);
console.log(JSON.stringify(figures));

stop.abort();
await running;
for (const k of kinds) await client.delete(CRD, { name: k.crd.metadata.name }).catch(() => undefined);
client.transport.close();
await proxy.close();
await env.stop();
