import { setTimeout as sleep } from 'node:timers/promises';
import { it } from 'vitest';
import { isNotFound } from '@kubeloop/client';
import { installCRDs, startApiProxy } from '@kubeloop/envtest';
import { createLogger, Result } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';
import { testCRD } from '../../../test/support/crds.js';
import { eventually, LogCapture, newNamespace, readyz, run, testClient, testManager } from './support.js';

it('measures a deleted CRD under a running manager', { timeout: 300_000 }, async () => {
  const WINDOW = Number(process.env['WINDOW_MS'] ?? 90_000);
  const client = testClient();
  const ns = await newNamespace(client, 'measure');
  const proxy = await startApiProxy(testKubeConfig());
  const group = `${uniqueName('m')}.kubeloop.test`;
  const crd = testCRD(group, 'Gizmo');
  await installCRDs(testKubeConfig(), [crd]);
  const Gizmo = { apiVersion: `${group}/v1`, kind: 'Gizmo' };
  const logs = new LogCapture();
  const m = testManager(ns, { kubeConfig: proxy.kubeConfig, healthProbeBindAddress: '127.0.0.1:0', logger: createLogger({ level: 'info', destination: logs }) });
  const seen: string[] = [];
  m.controller().named('gizmos').for(Gizmo).complete((req) => { seen.push(req.name); return Result.done(); });
  const r = run(m);
  await client.create({ ...Gizmo, metadata: { name: 'g1', namespace: ns } });
  await eventually(() => seen, (s) => s.includes('g1'), 'g1');
  await client.delete(Gizmo, { namespace: ns, name: 'g1' });
  await client.delete({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, { name: crd.metadata.name });
  await eventually(() => client.get({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' }, { name: crd.metadata.name }).then(() => false, (e: unknown) => isNotFound(e)), (g) => g, 'gone', 60_000);
  const since = Date.now();
  const linesBefore = logs.lines().length;
  const heapBefore = process.memoryUsage().heapUsed;
  await sleep(WINDOW);
  const reqs = proxy.requests.filter((q) => q.at >= since);
  const byClass = (f: (p: string) => boolean) => reqs.filter((q) => f(q.path)).length;
  const newLines = logs.lines().slice(linesBefore);
  const ready = await readyz(m);
  const out = {
    windowMs: WINDOW,
    resourceRequests: byClass((p) => p.startsWith(`/apis/${group}/`)),
    resourceStatuses: [...new Set(reqs.filter((q) => q.path.startsWith(`/apis/${group}/`)).map((q) => q.status))],
    discoveryRequests: byClass((p) => p === '/api' || p === '/apis' || p === `/apis/${group}` || p === `/apis/${group}/v1`),
    allRequests: reqs.length,
    warnOrErrorLines: newLines.filter((l) => (l['level'] as number) >= 40).length,
    logLines: newLines.length,
    sampleMsgs: [...new Set(newLines.map((l) => String(l['msg'])))].slice(0, 5),
    readyzStatus: ready.status,
    readyzControllers: ready.body.split('\n').filter((l) => l.includes('controllers') || l.includes('informers')),
    informers: m.cache.informers().map((i) => i.kind),
    controller: m.controllers()[0],
  };
  console.log('MEASURE', JSON.stringify(out, null, 1));
  const fs = await import('node:fs');
  fs.writeFileSync(process.env['MEASURE_OUT'] ?? '/tmp/crdlife/measure.json', JSON.stringify(out, null, 1));
  await r.stop();
  await proxy.close();
  client.transport.close();
});
