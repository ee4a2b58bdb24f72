/**
 * The shared control plane (started by the global setup) and envtest's own
 * lifecycle: start failures, timeouts, port races, restarts, clean stops.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { CoreV1Api, CustomObjectsApi, KubeConfig, Watch } from '@kubernetes/client-node';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createEnvironment, isEnvtestError } from '../src/index.js';
import type { EnvtestError } from '../src/index.js';
import { testKubeConfig, testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { testCRD } from '../../../test/support/crds.js';

const SIZE_SCHEMA = { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'string' } } } } };

async function rejection(p: Promise<unknown>): Promise<EnvtestError> {
  try {
    await p;
  } catch (err) {
    if (isEnvtestError(err)) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the shared control plane', () => {
  it('serves a ConfigMap through create, get, list, watch and delete', async () => {
    const kc = testKubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const name = uniqueName('cm');
    const events: { type: string; name: string; data?: Record<string, string> }[] = [];
    const watch = new Watch(kc);
    const list0 = await core.listNamespacedConfigMap({ namespace: 'default' });
    const ended = new Promise<void>((resolve) => {
      void watch
        .watch(
          '/api/v1/namespaces/default/configmaps',
          { resourceVersion: list0.metadata?.resourceVersion, fieldSelector: `metadata.name=${name}` },
          (type: string, obj: V1ConfigMap) => {
            events.push({ type, name: obj.metadata?.name ?? '', ...(obj.data ? { data: obj.data } : {}) });
            if (type === 'DELETED') resolve();
          },
          () => resolve(),
        )
        .then((req) => ended.finally(() => req.abort()));
    });

    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name }, data: { a: '1' } } });
    const got = await core.readNamespacedConfigMap({ namespace: 'default', name });
    expect(got.data).toEqual({ a: '1' });
    await core.replaceNamespacedConfigMap({ namespace: 'default', name, body: { ...got, data: { a: '2' } } });
    const list = await core.listNamespacedConfigMap({ namespace: 'default', fieldSelector: `metadata.name=${name}` });
    expect(list.items.map((i) => i.data)).toEqual([{ a: '2' }]);
    await core.deleteNamespacedConfigMap({ namespace: 'default', name });
    await ended;
    expect(events).toEqual([
      { type: 'ADDED', name, data: { a: '1' } },
      { type: 'MODIFIED', name, data: { a: '2' } },
      { type: 'DELETED', name, data: { a: '2' } },
    ]);
    await expect(core.readNamespacedConfigMap({ namespace: 'default', name })).rejects.toMatchObject({ code: 404 });
  });

  it('installs a CRD that serves custom resources at once', async () => {
    const kc = testKubeConfig();
    const group = `${uniqueName('g')}.envtest.kubeloop.dev`;
    const env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
    await env.start();
    await env.installCRDs([testCRD(group, 'HardDisk', { schema: SIZE_SCHEMA })]);
    const custom = kc.makeApiClient(CustomObjectsApi);
    await custom.createNamespacedCustomObject({
      group,
      version: 'v1',
      namespace: 'default',
      plural: 'harddisks',
      body: { apiVersion: `${group}/v1`, kind: 'HardDisk', metadata: { name: 'disk-a' }, spec: { size: '10Gi' } },
    });
    const read = (await custom.getNamespacedCustomObject({ group, version: 'v1', namespace: 'default', plural: 'harddisks', name: 'disk-a' })) as {
      spec: { size: string };
    };
    expect(read.spec.size).toBe('10Gi');
    // Installing again updates in place.
    await env.installCRDs([testCRD(group, 'HardDisk', { schema: SIZE_SCHEMA })]);
    await env.stop();
  });

  it('installs the CRDs of a kustomize directory (kustomization.yaml skipped) with their x-kubernetes-* keywords intact', async () => {
    const kc = testKubeConfig();
    const group = `${uniqueName('g')}.envtest.kubeloop.dev`;
    const dir = await mkdtemp(join(tmpdir(), 'envtest-crd-'));
    try {
      const yaml = [
        'apiVersion: apiextensions.k8s.io/v1',
        'kind: CustomResourceDefinition',
        `metadata: { name: ports.${group} }`,
        'spec:',
        `  group: ${group}`,
        '  scope: Namespaced',
        '  names: { plural: ports, singular: port, kind: Port, listKind: PortList }',
        '  versions:',
        '    - name: v1',
        '      served: true',
        '      storage: true',
        '      schema:',
        '        openAPIV3Schema:',
        '          type: object',
        '          properties:',
        '            spec:',
        '              type: object',
        '              properties:',
        '                port: { x-kubernetes-int-or-string: true }',
        '                tags: { type: array, items: { type: string }, x-kubernetes-list-type: set }',
      ].join('\n');
      await writeFile(join(dir, 'ports.yaml'), `${yaml}\n`);
      // A scaffold's config/crd is a kustomize directory: its kustomization.yaml is skipped, not refused.
      await writeFile(join(dir, 'kustomization.yaml'), 'resources:\n  - ports.yaml\n');
      const env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
      await env.start();
      await env.installCRDs([dir]);
      const custom = kc.makeApiClient(CustomObjectsApi);
      await custom.createNamespacedCustomObject({ group, version: 'v1', namespace: 'default', plural: 'ports', body: { apiVersion: `${group}/v1`, kind: 'Port', metadata: { name: 'p' }, spec: { port: 'http', tags: ['a'] } } });
      // the list type survived: a duplicate in the set is refused
      await expect(
        custom.createNamespacedCustomObject({ group, version: 'v1', namespace: 'default', plural: 'ports', body: { apiVersion: `${group}/v1`, kind: 'Port', metadata: { name: 'q' }, spec: { tags: ['a', 'a'] } } }),
      ).rejects.toMatchObject({ code: 422 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('rejects a CRD file that is not a CRD, naming the file', async () => {
    const env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
    await env.start();
    const err = await rejection(env.installCRDs([{ metadata: { name: 'x' } } as never]));
    expect(err.reason).toBe('CRDInstallFailed');
    const missing = await rejection(env.installCRDs(['/no/such/crd.yaml']));
    expect(missing.message).toContain('/no/such/crd.yaml');
  });

  it('writes an admin kubeconfig that client-node loads', () => {
    const kc = new KubeConfig();
    kc.loadFromFile(testKubeconfigPath());
    expect(kc.getCurrentUser()?.name).toMatch(/admin/);
    expect(kc.getCurrentCluster()?.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });
});

describe('existing cluster mode', () => {
  it('connects to the cluster in a kubeconfig without starting anything', async () => {
    const env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
    await env.start();
    expect(env.existingCluster).toBe(true);
    expect(env.server).toBe(testKubeConfig().getCurrentCluster()?.server);
    expect(env.dir).toBeUndefined();
    const err = await rejection(env.restartApiServer());
    expect(err.reason).toBe('InvalidState');
    await env.stop();
  });

  it('turns a malformed kubeconfig into a clear error', async () => {
    const { writeFile, mkdtemp } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const path = join(await mkdtemp(join(tmpdir(), 'kc-')), 'config');
    await writeFile(path, 'clusters: [this is: not valid');
    const err = await rejection(createEnvironment({ useExistingCluster: true, kubeconfigPath: path }).start());
    expect(err.reason).toBe('InvalidOptions');
    expect(err.message).toContain(path);
  });
});

describe('a local control plane of its own', () => {
  it('starts, restarts the API server keeping data, and stops leaving nothing behind', async () => {
    const env = createEnvironment();
    await env.start();
    const dir = env.dir!;
    const core = env.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'kept' }, data: { k: 'v' } } });
    const server = env.server;

    await env.restartApiServer();
    expect(env.server).toBe(server);
    const again = await env.kubeConfig.makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: 'default', name: 'kept' });
    expect(again.data).toEqual({ k: 'v' });

    const pgids = (await import('node:fs')).readFileSync(`${dir}/pgids`, 'utf8').split(' ').map(Number);
    expect(pgids.length).toBe(2);
    expect(pgids.every(alive)).toBe(true);
    await env.stop();
    expect(pgids.some(alive)).toBe(false);
    expect(existsSync(dir)).toBe(false);
    await env.stop(); // twice is fine
  });

  it('reports a component that fails to start with the tail of its log', async () => {
    const env = createEnvironment({ apiServerFlags: { 'no-such-flag': 'x' } });
    const err = await rejection(env.start());
    expect(err.reason).toBe('StartFailed');
    expect(err.message).toContain('kube-apiserver');
    expect(err.logTail).toMatch(/unknown flag: --no-such-flag/);
    expect(env.dir).toBeUndefined();
  });

  it('honours the start timeout', async () => {
    const env = createEnvironment({ startTimeoutMs: 1 });
    const err = await rejection(env.start());
    expect(err.reason).toBe('Timeout');
    // The limit is per component; on a loaded machine etcd's first probe, already under way, can still succeed.
    expect(err.message).toMatch(/(etcd|kube-apiserver) was not ready within 1 ms/);
  });

  it('retries with new ports when a port is taken before the component binds it', async () => {
    // Hold a port, and force etcd onto it: every attempt loses the race.
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as { port: number }).port;
    const lines: string[] = [];
    const env = createEnvironment({
      etcdFlags: { 'listen-client-urls': `http://127.0.0.1:${port}` },
      portAttempts: 3,
      log: (l) => lines.push(l),
    });
    const err = await rejection(env.start());
    holder.close();
    expect(err.reason).toBe('StartFailed');
    expect(err.logTail).toMatch(/address already in use/);
    expect(lines.filter((l) => l.includes('retrying with new ports'))).toHaveLength(2);
  });
});
