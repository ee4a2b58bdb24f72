/**
 * The seed's scenario, as JavaScript can express it: a thousand client
 * constructions and reads against the real API server, all sharing one
 * scheme, interleaved across awaits with registrations into builders and
 * extensions of that scheme. In Go this is where `AddToScheme` on a shared
 * global scheme crashed with "concurrent map read and map write".
 */
import { describe, expect, it } from 'vitest';
import { createClient, transportDiscovery, createTransport } from '@kubeloop/client';
import { createDynamicRESTMapper } from '@kubeloop/mapper';
import { builtinScheme, ConfigMap, createSchemeBuilder, defineKind } from '@kubeloop/scheme';
import { testKubeConfig, uniqueName } from './support/env.js';

describe('a shared scheme under concurrent client construction and registration', () => {
  it('never changes, and every client sees the same kinds', async () => {
    const kc = testKubeConfig();
    const shared = builtinScheme.extend(defineKind({ group: 'crd-demo.io', version: 'v1', kind: 'HardDisk', plural: 'harddisks', namespaced: true, listKind: 'HardDiskList' }));
    const before = JSON.stringify(shared.toJSON());
    const kindsBefore = shared.kinds().length;
    const transport = createTransport(kc, { qps: 0 });
    const mapper = createDynamicRESTMapper(transportDiscovery(transport));
    const name = uniqueName('shared');
    await createClient({ transport, mapper, scheme: shared }).create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default' }, data: { a: '1' } });

    const builder = createSchemeBuilder().include(shared);
    const seen = new Set<number>();
    const tasks = Array.from({ length: 1000 }, async (_, i) => {
      await new Promise((r) => setImmediate(r));
      if (i % 3 === 0) {
        // writers: register into a builder and extend the shared scheme (which returns a new one)
        const kind = defineKind({ group: `g${i}.kubeloop.dev`, version: 'v1', kind: `Kind${i}`, plural: `kind${i}s`, namespaced: true });
        builder.register(kind);
        await Promise.resolve();
        const extended = shared.extend(kind);
        expect(extended.has(kind)).toBe(true);
        expect(shared.has(kind)).toBe(false);
        return;
      }
      // readers: construct a client with the shared scheme and read through it
      const client = createClient({ transport, mapper, scheme: shared });
      seen.add(client.scheme.kinds().length);
      await Promise.resolve();
      const cm = await client.get(ConfigMap, { namespace: 'default', name });
      expect(cm.data).toEqual({ a: '1' });
      seen.add(client.scheme.kinds().length);
    });
    await Promise.all(tasks);
    expect([...seen]).toEqual([kindsBefore]);
    expect(JSON.stringify(shared.toJSON())).toBe(before);
    expect(builder.build().kinds().length).toBe(kindsBefore + 334);
    transport.close();
  });
});
