/** The typed client infers its return types from descriptors, refs and objects. */
import { describe, expectTypeOf, it } from 'vitest';
import { ConfigMap, Deployment, Namespace } from '@kubeloop/scheme';
import type { ObjectList, ObjectMeta } from '@kubeloop/scheme';
import { metadataOnly } from '../src/index.js';
import type { Client, Fetched, PartialObjectMetadata } from '../src/index.js';
import type { Unstructured } from '../src/internal-api.js';
import type { WatchEvent } from '../src/watch.js';

declare const client: Client;

describe('typed client inference', () => {
  it('a descriptor types get and list', () => {
    expectTypeOf(client.get(ConfigMap, { namespace: 'a', name: 'b' })).resolves.toEqualTypeOf<Fetched<ConfigMap>>();
    expectTypeOf(client.get(Deployment, { namespace: 'a', name: 'b' })).resolves.toEqualTypeOf<Fetched<Deployment>>();
    expectTypeOf(client.list(Namespace)).resolves.toEqualTypeOf<ObjectList<Fetched<Namespace>>>();
  });

  it('a read object names its kind, so it can be written back as it is', async () => {
    const cm = await client.get(ConfigMap, { namespace: 'a', name: 'b' });
    expectTypeOf(cm.kind).toEqualTypeOf<'ConfigMap'>();
    expectTypeOf(cm.apiVersion).toEqualTypeOf<'v1'>();
    expectTypeOf(client.update(cm)).resolves.toMatchTypeOf<ConfigMap>();
    const [first] = (await client.list(ConfigMap)).items;
    if (first) expectTypeOf(client.delete(first)).resolves.toEqualTypeOf<void>();
  });

  it('timestamps are strings, as on the wire', async () => {
    const cm = await client.get(ConfigMap, { namespace: 'a', name: 'b' });
    expectTypeOf(cm.metadata?.creationTimestamp).toEqualTypeOf<string | undefined>();
  });

  it('an apiVersion/kind ref is unstructured; metadataOnly is PartialObjectMetadata', () => {
    expectTypeOf(client.get({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' }, { name: 'x' })).resolves.toEqualTypeOf<Unstructured>();
    expectTypeOf(client.get(metadataOnly(ConfigMap), { namespace: 'a', name: 'b' })).resolves.toEqualTypeOf<PartialObjectMetadata>();
  });

  it('writes return what was given, with full server metadata', async () => {
    const created = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'y' }, data: { a: '1' } });
    expectTypeOf(created.data).toEqualTypeOf<{ a: string }>();
    expectTypeOf(created.metadata).toMatchTypeOf<ObjectMeta>();
    expectTypeOf(created.metadata.uid).toEqualTypeOf<string | undefined>();
  });

  it('writes need apiVersion and kind', () => {
    // @ts-expect-error: an object without apiVersion/kind cannot be created
    void client.create({ metadata: { name: 'x' } });
  });

  it('watch yields typed events', async () => {
    const events = await client.watch(ConfigMap, { namespace: 'a' });
    expectTypeOf(events).toEqualTypeOf<AsyncIterableIterator<WatchEvent<Fetched<ConfigMap>>>>();
  });
});
