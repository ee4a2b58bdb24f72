/**
 * The manager's `namespaces` as controller-runtime's `DefaultNamespaces`: a
 * map of namespaces to settings of their own. The cache holds each
 * namespace's objects under its own selector, a namespace left out is not
 * cached, and the permissions name Roles in exactly those namespaces.
 */
import { describe, expect, it } from 'vitest';
import { ConfigMap } from '@kubeloop/scheme';
import { createManager, isManagerError } from '../src/index.js';
import { eventually, newNamespace, testClient } from './support.js';
import { testKubeConfig } from '../../../test/support/env.js';

describe('namespaces with settings of their own', () => {
  it('caches each namespace under its own selector, nothing elsewhere, and asks for Roles in those namespaces', async () => {
    const client = testClient();
    const [selected, whole, outside] = [await newNamespace(client, 'nss-sel'), await newNamespace(client, 'nss-all'), await newNamespace(client, 'nss-out')];
    for (const ns of [selected, whole, outside]) {
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: ns, name: 'web', labels: { app: 'web' } } });
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: ns, name: 'db', labels: { app: 'db' } } });
    }
    const manager = createManager({ kubeConfig: testKubeConfig(), namespaces: { [selected]: { labelSelector: 'app=web' }, [whole]: {} }, metricsBindAddress: '0', healthProbeBindAddress: '' });
    manager.controller().named('cms').for(ConfigMap).complete(() => Promise.resolve());
    const stop = new AbortController();
    const running = manager.start(stop.signal);
    try {
      const cached = async (): Promise<string[]> => (await manager.client.list(ConfigMap, {})).items.map((c) => `${c.metadata?.namespace}/${c.metadata?.name}`).filter((k) => [selected, whole, outside].some((ns) => k.startsWith(`${ns}/`))).sort();
      await eventually(cached, (keys) => keys.length === 3, 'the cache to hold what the settings select');
      expect(await cached()).toEqual([`${selected}/web`, `${whole}/db`, `${whole}/web`].sort());
      const roles = manager.permissions().filter((p) => p.resource === 'configmaps');
      expect(roles.length).toBeGreaterThan(0);
      for (const p of roles) expect([...(p.namespaces ?? [])].sort()).toEqual([selected, whole].sort());
    } finally {
      stop.abort();
      await running;
    }
  });

  it('a map whose settings are not objects is refused, naming the option', () => {
    let err: unknown;
    try {
      createManager({ kubeConfig: testKubeConfig(), namespaces: { team: 'app=web' } as never });
    } catch (e) {
      err = e;
    }
    expect(isManagerError(err) && err.message).toMatch(/namespaces.*a map of names to settings/);
  });
});
