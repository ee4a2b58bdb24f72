/**
 * Discovery cost of @kubeloop/mapper's dynamic RESTMapper on a real API
 * server: requests (counted at the test proxy) and wall time for cold, warm,
 * concurrent, late-CRD and missing-kind lookups, with and without aggregated
 * discovery. Prints a table, then one JSON line of the figures.
 *
 *   pnpm bench:mapper        (from the repository root, after a build)
 */
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import { createDynamicRESTMapper } from '@kubeloop/mapper';
import type { DiscoveryClient, RESTMapper } from '@kubeloop/mapper';

const KINDS = [
  { group: '', kind: 'Pod' },
  { group: '', kind: 'ConfigMap' },
  { group: 'apps', kind: 'Deployment' },
  { group: 'apps', kind: 'StatefulSet' },
  { group: 'batch', kind: 'Job' },
  { group: 'coordination.k8s.io', kind: 'Lease' },
  { group: 'rbac.authorization.k8s.io', kind: 'Role' },
];

const env = createEnvironment();
await env.start();
const proxy = await startApiProxy(env.kubeConfig);
const discovery: DiscoveryClient = {
  async get(path, accept) {
    const res = await fetch(new URL(path, proxy.url), { headers: { accept } });
    return { status: res.status, contentType: res.headers.get('content-type') ?? undefined, body: await res.text() };
  },
};

interface Row {
  mode: string;
  case: string;
  lookups: number;
  requests: number;
  ms: number;
}
const rows: Row[] = [];

async function measure(mode: string, name: string, lookups: number, fn: () => Promise<unknown>): Promise<void> {
  proxy.clearRequests();
  const t0 = performance.now();
  await fn();
  rows.push({ mode, case: name, lookups, requests: proxy.count(), ms: Number((performance.now() - t0).toFixed(2)) });
}

const lookUpAll = (m: RESTMapper) => Promise.all(KINDS.map((k) => m.restMapping(k)));
let crdSeq = 0;

for (const aggregatedDiscovery of [true, false]) {
  const mode = aggregatedDiscovery ? 'aggregated' : 'legacy';
  let mapper = createDynamicRESTMapper(discovery, { aggregatedDiscovery });
  await measure(mode, 'cold: 7 kinds, 5 groups, 1 caller', KINDS.length, () => lookUpAll(mapper));
  await measure(mode, 'warm: 7 kinds x 1000', KINDS.length * 1000, async () => {
    for (let i = 0; i < 1000; i++) await lookUpAll(mapper);
  });
  mapper = createDynamicRESTMapper(discovery, { aggregatedDiscovery });
  await measure(mode, 'cold: 7 kinds, 100 concurrent callers', KINDS.length * 100, () =>
    Promise.all(Array.from({ length: 100 }, () => lookUpAll(mapper))),
  );
  const group = `bench${++crdSeq}-${Date.now()}.kubeloop.dev`;
  await env.installCRDs([
    {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `harddisks.${group}` },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural: 'harddisks', singular: 'harddisk', kind: 'HardDisk', listKind: 'HardDiskList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    },
  ]);
  await measure(mode, 'late CRD, 10 concurrent callers', 10, () =>
    Promise.all(Array.from({ length: 10 }, () => mapper.restMapping({ group, kind: 'HardDisk' }))),
  );
  await measure(mode, 'missing kind x100 (warm)', 100, async () => {
    for (let i = 0; i < 100; i++) await mapper.restMapping({ group: 'nope.kubeloop.dev', kind: 'Nothing' }).catch(() => undefined);
  });
}

await proxy.close();
await env.stop();

const pad = (s: string | number, n: number) => String(s).padEnd(n);
console.log(`${pad('mode', 11)}${pad('case', 40)}${pad('lookups', 9)}${pad('requests', 10)}ms`);
for (const r of rows) console.log(`${pad(r.mode, 11)}${pad(r.case, 40)}${pad(r.lookups, 9)}${pad(r.requests, 10)}${r.ms}`);
console.log(JSON.stringify({ benchmark: 'mapper-discovery', kubernetes: env.binaries?.kubernetesVersion ?? 'existing', rows }));
