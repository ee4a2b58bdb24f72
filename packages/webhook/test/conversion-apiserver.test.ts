/**
 * Conversion through the real kube-apiserver: a two-version CRD (v1: size in
 * GiB; v2: size as value + unit) with webhook conversion served by this
 * process. Objects created at either version read back at both, before and
 * after the storage version moves from v1 to v2; a conversion that fails is
 * reported with its message.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, isClientError } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { installCRDs, installWebhooks } from '@kubeloop/envtest';
import type { CustomResourceDefinitionLike, InstalledWebhooks } from '@kubeloop/envtest';
import { builtinScheme, CustomResourceDefinition, defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { conversionWebhook, createWebhookServer, defineConversion, spoke, staticCertificate } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';

const group = `${uniqueName('conv')}.webhook.kubeloop.dev`;
const crdName = `volumes.${group}`;

interface VolumeV1 extends KubeObject {
  apiVersion?: string;
  kind?: 'Volume';
  spec: { sizeGiB: number };
}
interface VolumeV2 extends KubeObject {
  apiVersion?: string;
  kind?: 'Volume';
  spec: { size: { value: number; unit: 'Mi' | 'Gi' | 'Ti' } };
}
const base = { group, kind: 'Volume' as const, plural: 'volumes', namespaced: true, listKind: 'VolumeList' };
const V1 = defineKind<VolumeV1>({ ...base, version: 'v1' });
const V2 = defineKind<VolumeV2>({ ...base, version: 'v2' });

const FACTOR = { Mi: 1 / 1024, Gi: 1, Ti: 1024 } as const;
const conversion = defineConversion(V2, [
  spoke<VolumeV1, VolumeV2>(V1, {
    toHub: (v) => ({ spec: { size: { value: v.spec.sizeGiB, unit: 'Gi' } } }),
    fromHub: (v) => {
      const gib = v.spec.size.value * FACTOR[v.spec.size.unit];
      if (!Number.isInteger(gib)) throw new Error(`${v.spec.size.value}${v.spec.size.unit} is not a whole number of GiB`);
      return { spec: { sizeGiB: gib } };
    },
  }),
]);

function crd(storage: 'v1' | 'v2'): CustomResourceDefinitionLike {
  const version = (name: 'v1' | 'v2', spec: Record<string, unknown>) => ({
    name,
    served: true,
    storage: name === storage,
    schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: spec } } } },
  });
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: crdName },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: 'volumes', singular: 'volume', kind: 'Volume', listKind: 'VolumeList' },
      versions: [
        version('v1', { sizeGiB: { type: 'integer' } }),
        version('v2', { size: { type: 'object', properties: { value: { type: 'number' }, unit: { type: 'string', enum: ['Mi', 'Gi', 'Ti'] } } } }),
      ],
    },
  };
}

const kc = testKubeConfig();
let client: Client;
let hooks: InstalledWebhooks;
const ac = new AbortController();
let serving: Promise<void>;
const ns = uniqueName('conv');

beforeAll(async () => {
  await installCRDs(kc, [crd('v1')]);
  hooks = await installWebhooks(kc, { conversionCRDs: [crdName] });
  const server = createWebhookServer({ host: hooks.host, port: hooks.port, certificates: staticCertificate({ certPem: hooks.certPem, keyPem: hooks.keyPem }) });
  server.register(conversionWebhook([conversion]));
  serving = server.start(ac.signal);
  await server.listening();
  client = createClient({ kubeConfig: kc, scheme: builtinScheme.extend(V1, V2), fieldOwner: 'webhook-test' });
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});

afterAll(async () => {
  ac.abort();
  await serving;
  await hooks?.uninstall();
});

const v1 = (name: string, sizeGiB: number) => ({ apiVersion: `${group}/v1`, kind: 'Volume' as const, metadata: { name, namespace: ns }, spec: { sizeGiB } });
const v2 = (name: string, value: number, unit: 'Mi' | 'Gi' | 'Ti') => ({ apiVersion: `${group}/v2`, kind: 'Volume' as const, metadata: { name, namespace: ns }, spec: { size: { value, unit } } });

async function both(): Promise<{ atV1: Map<string, VolumeV1['spec']>; atV2: Map<string, VolumeV2['spec']> }> {
  const [l1, l2] = await Promise.all([client.list(V1, { namespace: ns }), client.list(V2, { namespace: ns })]);
  for (const item of l1.items) expect(item.apiVersion).toBe(`${group}/v1`);
  for (const item of l2.items) expect(item.apiVersion).toBe(`${group}/v2`);
  return {
    atV1: new Map(l1.items.map((i) => [i.metadata!.name!, i.spec])),
    atV2: new Map(l2.items.map((i) => [i.metadata!.name!, i.spec])),
  };
}

async function storedAtV2(): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const probe = await client.create(v2(uniqueName('probe'), 1, 'Ti'));
    await client.delete(probe);
    if (probe.spec.size.unit === 'Ti') return;
    if (attempt === 100) throw new Error('the API server did not store Volumes at v2 within 10 s of the switch');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('conversion through the API server', () => {
  it('serves objects created at v1 and at v2 in both versions, across a storage version switch', async () => {
    await client.create(v1('a-v1', 10));
    await client.create(v2('b-v2', 2048, 'Mi'));
    expect((await client.get(V2, { namespace: ns, name: 'a-v1' })).spec).toEqual({ size: { value: 10, unit: 'Gi' } });
    expect((await client.get(V1, { namespace: ns, name: 'b-v2' })).spec).toEqual({ sizeGiB: 2 });

    // Move storage to v2 (keeping the webhook conversion), then write more at each version.
    const current = await client.apiReader.get(CustomResourceDefinition, { name: crdName });
    await client.update({ ...current, spec: { ...current.spec, versions: current.spec.versions.map((v) => ({ ...v, storage: v.name === 'v2' })) } });
    // The API server's handler for the resource picks the new storage version up asynchronously: until
    // it has, a v2 object is stored as v1 and reads back in Gi. Wait until 1 Ti round-trips as 1 Ti.
    await storedAtV2();
    await client.create(v1('c-v1', 3));
    await client.create(v2('d-v2', 1, 'Ti'));
    // b-v2 was stored as v1 (converted on write); rewriting it stores it as v2.
    const b = await client.get(V2, { namespace: ns, name: 'b-v2' });
    await client.update(b);

    const { atV1, atV2 } = await both();
    expect(Object.fromEntries(atV1)).toEqual({ 'a-v1': { sizeGiB: 10 }, 'b-v2': { sizeGiB: 2 }, 'c-v1': { sizeGiB: 3 }, 'd-v2': { sizeGiB: 1024 } });
    expect(Object.fromEntries(atV2)).toEqual({
      'a-v1': { size: { value: 10, unit: 'Gi' } },
      'b-v2': { size: { value: 2, unit: 'Gi' } },
      'c-v1': { size: { value: 3, unit: 'Gi' } },
      'd-v2': { size: { value: 1, unit: 'Ti' } },
    });
    const stored = await client.apiReader.get(CustomResourceDefinition, { name: crdName });
    expect([...(stored.status?.storedVersions ?? [])].sort()).toEqual(['v1', 'v2']);
  });

  it('reports a failed conversion with its message', async () => {
    await client.create(v2('odd', 1536, 'Mi'));
    const err: unknown = await client.get(V1, { namespace: ns, name: 'odd' }).catch((e: unknown) => e);
    expect(isClientError(err)).toBe(true);
    expect((err as Error).message).toContain('1536Mi is not a whole number of GiB');
    expect((await client.get(V2, { namespace: ns, name: 'odd' })).spec).toEqual({ size: { value: 1536, unit: 'Mi' } });
  });
});
