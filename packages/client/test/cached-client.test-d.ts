/**
 * Reads served from a cache are deeply read-only in the types (the cache
 * shares frozen objects), writes accept them as they are, and `mutableCopy`
 * gives a changeable copy. Live reads stay mutable.
 */
import { describe, expectTypeOf, it } from 'vitest';
import { ConfigMap, Deployment } from '@kubeloop/scheme';
import { createClient, mergePatch, mutableCopy } from '../src/index.js';
import type { CachedClient, Client, DeepReadonly, Fetched, Reader } from '../src/index.js';

declare const cached: CachedClient;
declare const live: Client;
declare const cache: Reader;

describe('cached reads are read-only', () => {
  it('createClient with a cache gives a CachedClient, without one a Client', () => {
    expectTypeOf(createClient({ transport: live.transport, cache })).toEqualTypeOf<CachedClient>();
    expectTypeOf(createClient({ transport: live.transport })).toEqualTypeOf<Client>();
  });

  it('a cached object cannot be changed at any depth', async () => {
    const cm = await cached.get(ConfigMap, { namespace: 'a', name: 'b' });
    expectTypeOf(cm).toEqualTypeOf<DeepReadonly<Fetched<ConfigMap>>>();
    // @ts-expect-error cached objects are shared: no assignment
    cm.data = {};
    // @ts-expect-error nor deeper down
    cm.metadata!.labels!['x'] = 'y';
    const d = await cached.get(Deployment, { namespace: 'a', name: 'b' });
    // @ts-expect-error nor arrays
    d.spec!.template.spec!.containers[0] = { name: 'sidecar' };
    const list = await cached.list(ConfigMap);
    // @ts-expect-error list items too
    list.items[0]!.data = {};
  });

  it('writes take cached objects as they are', async () => {
    const cm = await cached.get(ConfigMap, { namespace: 'a', name: 'b' });
    expectTypeOf(cached.update(cm)).resolves.toMatchTypeOf<{ metadata: object }>();
    expectTypeOf(cached.patch(cm, mergePatch({ data: { a: '1' } }))).resolves.toMatchTypeOf<{ metadata: object }>();
    expectTypeOf(cached.delete(cm)).resolves.toEqualTypeOf<void>();
    expectTypeOf(cached.status().update(cm)).resolves.toMatchTypeOf<{ metadata: object }>();
  });

  it('mutableCopy gives a changeable copy with the same shape', async () => {
    const cm = await cached.get(ConfigMap, { namespace: 'a', name: 'b' });
    const next = mutableCopy(cm);
    next.data = { a: '1' };
    next.metadata!.labels = { x: 'y' };
    expectTypeOf(next).toMatchTypeOf<Fetched<ConfigMap>>();
    expectTypeOf(live.update(next)).resolves.toMatchTypeOf<ConfigMap>();
  });

  it('live reads stay mutable', async () => {
    const cm = await live.get(ConfigMap, { namespace: 'a', name: 'b' });
    cm.data = { changed: 'yes' };
    expectTypeOf(cm).toEqualTypeOf<Fetched<ConfigMap>>();
  });
});
