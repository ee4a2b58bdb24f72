/** createTestNamespace on the fake (the conformance suite runs it on envtest too): names, labels, disposal, bad prefixes. */
import { afterAll, describe, expect, it } from 'vitest';
import { isNotFound } from '@kubeloop/client';
import { Namespace } from '@kubeloop/scheme';
import { createFakeApiServer, createTestNamespace, isTestingError } from '../src/index.js';

const fake = createFakeApiServer({ namespaceController: true });
const client = fake.client();
afterAll(() => fake.close());

describe('createTestNamespace', () => {
  it('makes a unique, labelled namespace', async () => {
    const a = await createTestNamespace(client);
    const b = await createTestNamespace(client);
    expect(a.name).toMatch(/^test-[0-9a-f]{8}$/);
    expect(b.name).not.toBe(a.name);
    expect((await client.get(Namespace, { name: a.name })).metadata?.labels).toMatchObject({ 'kubeloop.dev/test-namespace': 'true' });
  });

  it('takes labels of its own', async () => {
    const ns = await createTestNamespace(client, { labels: { suite: 'unit' } });
    expect((await client.get(Namespace, { name: ns.name })).metadata?.labels).toEqual({ suite: 'unit', 'kubernetes.io/metadata.name': ns.name });
  });

  it('is deleted at the end of an await using block', async () => {
    let name = '';
    {
      await using ns = await createTestNamespace(client, { prefix: 'scoped' });
      name = ns.name;
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: name } });
    }
    await new Promise((r) => setTimeout(r, 20));
    expect(isNotFound(await client.get(Namespace, { name }).catch((e: unknown) => e))).toBe(true);
  });

  it.each(['Upper', 'with_underscore', '-dash', 'x'.repeat(55)])('rejects the prefix %j', async (prefix) => {
    await expect(createTestNamespace(client, { prefix })).rejects.toSatisfy((e: unknown) => isTestingError(e) && e.reason === 'InvalidArgument');
  });
});
