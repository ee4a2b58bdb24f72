/**
 * The API server's warnings, on envtest: a CRD whose v1beta1 is deprecated
 * answers every request for it with a Warning header. The cluster logs each
 * distinct text once, counts every one in kubeloop_client_warnings_total,
 * hands each to the caller's onWarning, and with warningsAsErrors refuses
 * the answer with a ClientError Warning.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { isClientError } from '@kubeloop/client';
import type { ApiWarning } from '@kubeloop/client';
import { createEnvironment } from '@kubeloop/envtest';
import type { Environment } from '@kubeloop/envtest';
import { createCluster, createLogger } from '../src/index.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { testCRD } from '../../../test/support/crds.js';

const DEPRECATION = 'v1beta1 Gizmo is deprecated; use v1';
let env: Environment;
let group: string;

beforeAll(async () => {
  env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  group = `${uniqueName('w')}.kubeloop.dev`;
  const crd = testCRD(group, 'Gizmo', { versions: [{ name: 'v1', storage: true }, { name: 'v1beta1', storage: false }] });
  const versions = crd.spec.versions.map((v) => (v.name === 'v1beta1' ? { ...v, deprecated: true, deprecationWarning: DEPRECATION } : v));
  await env.installCRDs([{ ...crd, spec: { ...crd.spec, versions } }]);
});

afterAll(async () => {
  await env?.stop();
});

describe('API server warnings', () => {
  it('a deprecated version: logged once, counted every time, handed to the caller', async () => {
    const out = new PassThrough();
    const lines: string[] = [];
    out.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
    const registry = new Registry();
    const seen: ApiWarning[] = [];
    const cluster = createCluster({ kubeConfig: env.kubeConfig, registry, logger: createLogger({ destination: out }), transportOptions: { onWarning: (w) => seen.push(w) } });
    try {
      for (let i = 0; i < 3; i++) await cluster.apiReader.list({ apiVersion: `${group}/v1beta1`, kind: 'Gizmo' }, { namespace: 'default' });
      await cluster.apiReader.list({ apiVersion: `${group}/v1`, kind: 'Gizmo' }, { namespace: 'default' }); // no warning
      expect(seen.map((w) => [w.code, w.text])).toEqual([
        [299, DEPRECATION],
        [299, DEPRECATION],
        [299, DEPRECATION],
      ]);
      expect(seen[0]!.path).toContain(`/apis/${group}/v1beta1/`);
      const logged = lines.map((l) => JSON.parse(l) as { msg: string; warning?: string }).filter((l) => l.warning !== undefined);
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({ warning: DEPRECATION, msg: 'the API server warned (logged once per text)' });
      const metric = await registry.getSingleMetric('kubeloop_client_warnings_total')!.get();
      expect(metric.values).toEqual([expect.objectContaining({ labels: { code: '299' }, value: 3 })]);
    } finally {
      await cluster.stop();
    }
  });

  it('warningsAsErrors: the answer is a ClientError Warning naming the text', async () => {
    const cluster = createCluster({ kubeConfig: env.kubeConfig, logger: createLogger({ destination: new PassThrough() }), transportOptions: { warningsAsErrors: true } });
    try {
      let err: unknown;
      try {
        await cluster.apiReader.list({ apiVersion: `${group}/v1beta1`, kind: 'Gizmo' }, { namespace: 'default' });
      } catch (e) {
        err = e;
      }
      expect(isClientError(err) && err.reason).toBe('Warning');
      expect((err as Error).message).toContain(DEPRECATION);
      await expect(cluster.apiReader.list({ apiVersion: `${group}/v1`, kind: 'Gizmo' }, { namespace: 'default' })).resolves.toMatchObject({ items: [] });
    } finally {
      await cluster.stop();
    }
  });
});
