/**
 * createOrUpdate reads through the client it is given: with the manager's
 * cached client an unchanged object costs no request at all, and a change
 * costs exactly the write (counted at envtest's recording proxy).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { createCluster, createLogger, createOrUpdate } from '../../src/index.js';
import type { Cluster } from '../../src/index.js';
import { testKubeConfig } from '../../../../test/support/env.js';
import { eventually, newNamespace, testClient } from '../support.js';

let proxy: ApiProxy;
let cluster: Cluster;
let ns: string;

beforeAll(async () => {
  const live = testClient();
  ns = await newNamespace(live, 'cou');
  live.transport.close();
  proxy = await startApiProxy(testKubeConfig());
  cluster = createCluster({ kubeConfig: proxy.kubeConfig, namespaces: [ns], fieldOwner: 'cou-test', logger: createLogger({ level: 'silent' }) });
});
afterAll(async () => {
  await cluster.stop();
  await proxy.close();
});

describe('createOrUpdate through the cached client', () => {
  it('creates, then makes no request while nothing changes, and only the update when something does', async () => {
    const desired = (): ConfigMap & { apiVersion: 'v1'; kind: 'ConfigMap' } => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: ns } });
    expect(await createOrUpdate(cluster.client, desired(), (c) => (c.data = { a: '1' }))).toBe('created');
    await eventually(() => cluster.client.get(ConfigMap, { namespace: ns, name: 'settings' }), (cm) => cm.data?.['a'] === '1', 'the cache to see the create');
    proxy.clearRequests();
    for (let i = 0; i < 5; i++) expect(await createOrUpdate(cluster.client, desired(), (c) => (c.data = { a: '1' }))).toBe('unchanged');
    expect(proxy.requests.filter((r) => r.path.includes('/configmaps')).map((r) => `${r.method} ${r.path}`)).toEqual([]);
    expect(await createOrUpdate(cluster.client, desired(), (c) => (c.data = { a: '2' }))).toBe('updated');
    expect(proxy.requests.filter((r) => r.path.includes('/configmaps') && r.method !== 'GET').map((r) => r.method)).toEqual(['PUT']);
    expect(proxy.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/configmaps/settings'))).toEqual([]);
  });
});
