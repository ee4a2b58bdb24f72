/**
 * Interning cached metadata strings (src/internal/intern.ts): an object's
 * content is exactly what it was, for any metadata; the pool stays bounded;
 * and on the real API server, objects cached with interning on equal the
 * ones cached with it off and the server's own (less managedFields).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createClient } from '@kubeloop/client';
import { ConfigMap } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { createInformerCache, isCacheError } from '../src/index.js';
import { POOL_LIMIT, internMetadata, poolSize } from '../src/internal/intern.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';

const text = fc.string({ maxLength: 300 });
const metadata = fc.record(
  {
    name: text,
    namespace: text,
    generateName: text,
    creationTimestamp: text,
    labels: fc.dictionary(text, text),
    annotations: fc.dictionary(text, text),
    finalizers: fc.array(text),
    ownerReferences: fc.array(fc.record({ apiVersion: text, kind: text, name: text, uid: text, controller: fc.boolean() }, { requiredKeys: ['apiVersion', 'kind', 'name', 'uid'] })),
  },
  { requiredKeys: [] },
);

describe('interning metadata strings', () => {
  it('leaves any object exactly as it was (same keys, values and order)', () => {
    fc.assert(
      fc.property(metadata, fc.dictionary(text, text), (meta, data) => {
        const obj = { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta, data };
        const before = JSON.stringify(obj);
        internMetadata(obj);
        expect(JSON.stringify(obj)).toBe(before);
      }),
      { numRuns: 300 },
    );
  });

  it('skips frozen parts instead of throwing', () => {
    const labels = Object.freeze({ app: 'web' });
    const obj = { metadata: { namespace: 'team-a', labels, ownerReferences: [Object.freeze({ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'u' })], finalizers: Object.freeze(['x']) } };
    expect(() => internMetadata(obj)).not.toThrow();
    expect(() => internMetadata(Object.freeze({ metadata: Object.freeze({ namespace: 'n' }) }))).not.toThrow();
    expect(obj.metadata.labels).toBe(labels);
  });

  it('the pool never holds more than its limit, however many distinct values pass', () => {
    for (let i = 0; i < POOL_LIMIT * 2 + 10; i++) internMetadata({ metadata: { labels: { run: `value-${i}` } } });
    expect(poolSize()).toBeGreaterThan(0);
    expect(poolSize()).toBeLessThanOrEqual(POOL_LIMIT);
  });

  it('internStrings must be a boolean (CacheError InvalidOptions naming it)', () => {
    const client = createClient({ kubeConfig: testKubeConfig(), fieldOwner: 'intern-test' });
    let err: unknown;
    try {
      createInformerCache({ client, internStrings: 'yes' as unknown as boolean });
    } catch (e) {
      err = e;
    }
    expect(isCacheError(err) && err.reason).toBe('InvalidOptions');
    expect((err as Error).message).toContain('internStrings');
  });

  it('on the API server: objects cached with interning equal those cached without it and the server\'s own', async ({ onTestFinished }) => {
    const client = createClient({ kubeConfig: testKubeConfig(), fieldOwner: 'intern-test' });
    const namespace = uniqueName('intern');
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    const owner = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owner', namespace } });
    for (let i = 0; i < 20; i++) {
      await client.create({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          generateName: 'shared-',
          namespace,
          labels: { app: 'intern-test', tier: i % 2 ? 'backend' : 'frontend', 'example.com/owner-team': 'storage' },
          annotations: { note: `object ${i}` },
          finalizers: ['example.com/keep'],
          ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid! }],
        },
        data: { size: `${i}Gi` },
      });
    }
    const cached = async (internStrings: boolean): Promise<Map<string, KubeObject>> => {
      const cache = createInformerCache({ client, namespaces: [namespace], internStrings });
      onTestFinished(() => cache.stop());
      const informer = await cache.getInformer(ConfigMap, { signal: AbortSignal.timeout(20_000) });
      return new Map([...informer.store.values()].map((o) => [o.metadata!.name!, o]));
    };
    const on = await cached(true);
    const off = await cached(false);
    const live = await client.list(ConfigMap, { namespace });
    expect(on.size).toBe(21);
    for (const obj of live.items) {
      const { managedFields: _dropped, ...meta } = obj.metadata!;
      const server = { ...obj, metadata: meta };
      expect(on.get(meta.name!)).toEqual(server);
      expect(off.get(meta.name!)).toEqual(server);
      expect(Object.isFrozen(on.get(meta.name!)!.metadata)).toBe(true);
    }
  }, 60_000);
});
