/**
 * The dynamic RESTMapper against the real API server, with every discovery
 * request counted at the test proxy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy, Environment } from '@kubeloop/envtest';
import { createDynamicRESTMapper, isMapperError, isNoKindMatch, isNoResourceMatch, isAmbiguousResource } from '../src/index.js';
import type { DynamicRESTMapper, DynamicRESTMapperOptions, RESTMapper } from '../src/index.js';
import { kubeConfigDiscovery } from '../../../test/support/discovery.js';
import { testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { testCRD } from '../../../test/support/crds.js';

let env: Environment;
let proxy: ApiProxy;

beforeAll(async () => {
  env = createEnvironment({ useExistingCluster: true, kubeconfigPath: testKubeconfigPath() });
  await env.start();
  proxy = await startApiProxy(env.kubeConfig);
});
afterAll(async () => {
  await proxy.close();
  await env.stop();
});

async function newMapper(options: DynamicRESTMapperOptions = {}): Promise<DynamicRESTMapper> {
  const mapper = createDynamicRESTMapper(await kubeConfigDiscovery(proxy.kubeConfig), options);
  proxy.clearRequests();
  return mapper;
}

const KINDS = [
  { group: '', kind: 'Pod', resource: 'pods', scope: 'Namespaced' },
  { group: '', kind: 'Namespace', resource: 'namespaces', scope: 'Cluster' },
  { group: 'apps', kind: 'Deployment', resource: 'deployments', scope: 'Namespaced' },
  { group: 'apps', kind: 'StatefulSet', resource: 'statefulsets', scope: 'Namespaced' },
  { group: 'batch', kind: 'Job', resource: 'jobs', scope: 'Namespaced' },
  { group: 'coordination.k8s.io', kind: 'Lease', resource: 'leases', scope: 'Namespaced' },
  { group: 'rbac.authorization.k8s.io', kind: 'ClusterRole', resource: 'clusterroles', scope: 'Cluster' },
] as const;
const GROUP_VERSIONS = new Set(KINDS.map((k) => `${k.group}/v1`)).size; // 5

async function lookUpAll(mapper: RESTMapper, callers: number): Promise<void> {
  await Promise.all(
    Array.from({ length: callers }, (_, i) =>
      Promise.all(
        [...KINDS.slice(i % KINDS.length), ...KINDS.slice(0, i % KINDS.length)].map(async (k) => {
          const m = await mapper.restMapping({ group: k.group, kind: k.kind });
          expect(m.resource).toEqual({ group: k.group, version: 'v1', resource: k.resource });
          expect(m.scope).toBe(k.scope);
        }),
      ),
    ),
  );
}

describe('cold, warm and concurrent lookups', () => {
  it('with aggregated discovery: 7 kinds over 5 groups from 50 concurrent callers cost 2 requests', async () => {
    const mapper = await newMapper();
    await lookUpAll(mapper, 50);
    expect(proxy.requests.map((r) => r.path).sort()).toEqual(['/api', '/apis']);
    expect(proxy.requests.every((r) => r.accept?.includes('as=APIGroupDiscoveryList'))).toBe(true);

    proxy.clearRequests();
    await lookUpAll(mapper, 50);
    expect(proxy.count()).toBe(0);
  });

  it('a warm lookup is the answer discovery already gave (the same frozen mapping, no request) until invalidate()', async () => {
    const mapper = await newMapper();
    const first = await mapper.restMapping({ group: 'apps', kind: 'Deployment' });
    proxy.clearRequests();
    const again = await mapper.restMapping({ group: 'apps', kind: 'Deployment' });
    expect(again).toBe(first);
    expect(Object.isFrozen(again)).toBe(true);
    // restMappings hands each caller an array of its own.
    const mine = await mapper.restMappings({ group: 'apps', kind: 'Deployment' });
    mine.length = 0;
    expect((await mapper.restMappings({ group: 'apps', kind: 'Deployment' })).map((m) => m.resource.resource)).toEqual(['deployments']);
    expect(proxy.count()).toBe(0);
    mapper.invalidate();
    const after = await mapper.restMapping({ group: 'apps', kind: 'Deployment' });
    expect(after).not.toBe(first);
    expect(after).toEqual(first);
    expect(proxy.requests.map((r) => r.path).sort()).toEqual(['/apis']);
  });

  it('without aggregated discovery: 2 + one request per group-version needed, whatever the concurrency', async () => {
    for (const callers of [1, 50]) {
      const mapper = await newMapper({ aggregatedDiscovery: false });
      await lookUpAll(mapper, callers);
      expect(proxy.count()).toBe(2 + GROUP_VERSIONS);
      expect(proxy.count((r) => r.path === '/apis/apps/v1')).toBe(1);
      proxy.clearRequests();
      await lookUpAll(mapper, callers);
      expect(proxy.count()).toBe(0);
    }
  });

  it('answers the reverse lookups: resource to kind, singular, scope', async () => {
    const mapper = await newMapper();
    expect(await mapper.kindFor({ resource: 'deployments' })).toEqual({ group: 'apps', version: 'v1', kind: 'Deployment' });
    expect(await mapper.kindFor({ resource: 'deployment', group: 'apps' })).toEqual({ group: 'apps', version: 'v1', kind: 'Deployment' });
    expect(await mapper.resourceFor({ resource: 'configmaps' })).toEqual({ group: '', version: 'v1', resource: 'configmaps' });
    expect(await mapper.resourceSingularizer('endpoints')).toBe('endpoints');
    expect(await mapper.resourceSingularizer('leases')).toBe('lease');
    expect(await mapper.isNamespaced({ group: '', version: 'v1', kind: 'Node' })).toBe(false);
    const pod = await mapper.restMapping({ group: '', kind: 'Pod' });
    expect(pod.subresources).toEqual(expect.arrayContaining(['status', 'eviction', 'log']));
    expect(pod.verbs).toEqual(expect.arrayContaining(['get', 'list', 'watch', 'create']));
    // `events` is served by the core group and by events.k8s.io.
    const err = await mapper.resourceFor({ resource: 'events' }).catch((e: unknown) => e);
    expect(isAmbiguousResource(err)).toBe(true);
    expect(await mapper.resourceFor({ resource: 'events', group: 'events.k8s.io' })).toEqual({ group: 'events.k8s.io', version: 'v1', resource: 'events' });
    expect(proxy.count()).toBe(2);
  });

  it('legacy and aggregated discovery give the same mappings', async () => {
    const aggregated = await newMapper();
    const legacy = await newMapper({ aggregatedDiscovery: false });
    for (const k of KINDS) {
      expect(await legacy.restMappings({ group: k.group, kind: k.kind })).toEqual(await aggregated.restMappings({ group: k.group, kind: k.kind }));
    }
  });
});

describe('misses', () => {
  it('a kind that does not exist, looked up 100 times, costs at most 1 request on a warm mapper and is a typed error', async () => {
    const mapper = await newMapper();
    await mapper.restMapping({ group: 'apps', kind: 'Deployment' });
    proxy.clearRequests();
    for (let i = 0; i < 100; i++) {
      const err = await mapper.restMapping({ group: 'nope.kubeloop.dev', kind: 'Nothing' }).catch((e: unknown) => e);
      expect(isNoKindMatch(err)).toBe(true);
      expect(isMapperError(err) && err.message).toContain('"Nothing" in group "nope.kubeloop.dev"');
    }
    expect(proxy.count()).toBe(1);
    const missingResource = await mapper.resourceFor({ resource: 'nothings' }).catch((e: unknown) => e);
    expect(isNoResourceMatch(missingResource)).toBe(true);
  });

  it('a cold miss costs the group list only; 100 more cost nothing', async () => {
    const mapper = await newMapper();
    for (let i = 0; i < 100; i++) {
      await expect(mapper.restMapping({ group: 'nope.kubeloop.dev', kind: 'Nothing' })).rejects.toMatchObject({ reason: 'NoKindMatch' });
    }
    expect(proxy.count()).toBeLessThanOrEqual(2);
    expect(proxy.requests.map((r) => r.path)).toEqual(['/apis']);
  });

  it('the negative cache expires', async () => {
    let now = 1_000_000;
    const mapper = await newMapper({ negativeCacheTtlMs: 5000, now: () => now });
    await mapper.restMapping({ group: 'apps', kind: 'Deployment' });
    proxy.clearRequests();
    await expect(mapper.restMapping({ group: 'nope.kubeloop.dev', kind: 'Nothing' })).rejects.toThrow();
    await expect(mapper.restMapping({ group: 'nope.kubeloop.dev', kind: 'Nothing' })).rejects.toThrow();
    expect(proxy.count()).toBe(1);
    now += 5001;
    await expect(mapper.restMapping({ group: 'nope.kubeloop.dev', kind: 'Nothing' })).rejects.toThrow();
    expect(proxy.count()).toBe(2);
  });
});

describe('CRDs that change after the mapper has loaded', () => {
  it('a CRD installed after start resolves with one extra request (aggregated) and concurrent misses share it', async () => {
    const group = `${uniqueName('late')}.kubeloop.dev`;
    const mapper = await newMapper();
    await mapper.restMapping({ group: 'apps', kind: 'Deployment' });
    await env.installCRDs([testCRD(group, 'HardDisk', { versions: [{ name: 'v1' }] })]);
    proxy.clearRequests();
    const results = await Promise.all(Array.from({ length: 20 }, () => mapper.restMapping({ group, kind: 'HardDisk' })));
    expect(results.every((m) => m.resource.resource === 'harddisks' && m.scope === 'Namespaced')).toBe(true);
    expect(proxy.requests.map((r) => r.path)).toEqual(['/apis']);
  });

  it('without aggregated discovery, a late CRD costs the group list plus its group-version', async () => {
    const group = `${uniqueName('late')}.kubeloop.dev`;
    const mapper = await newMapper({ aggregatedDiscovery: false });
    await mapper.restMapping({ group: 'apps', kind: 'Deployment' });
    await env.installCRDs([testCRD(group, 'HardDisk', { versions: [{ name: 'v1' }] })]);
    proxy.clearRequests();
    await mapper.restMapping({ group, kind: 'HardDisk' });
    expect(proxy.requests.map((r) => r.path)).toEqual(['/apis', `/apis/${group}/v1`]);
  });

  it('a version-less lookup sees a version added after the group was cached (controller-runtime #3542)', async () => {
    for (const aggregatedDiscovery of [true, false]) {
      const group = `${uniqueName('ver')}.kubeloop.dev`;
      await env.installCRDs([testCRD(group, 'Disk', { versions: [{ name: 'v1' }] })]);
      const mapper = await newMapper({ aggregatedDiscovery });
      expect((await mapper.restMapping({ group, kind: 'Disk' })).resource.version).toBe('v1');
      // A second kind of the same group, served only at a version the mapper has not seen.
      await env.installCRDs([testCRD(group, 'Volume', { versions: [{ name: 'v2' }] })]);
      const m = await mapper.restMapping({ group, kind: 'Volume' });
      expect(m.resource).toEqual({ group, version: 'v2', resource: 'volumes' });
      // The first kind still maps, and an explicit lookup of the new version works too.
      expect((await mapper.restMapping({ group, kind: 'Disk' })).resource.version).toBe('v1');
      expect((await mapper.restMapping({ group, kind: 'Volume' }, 'v2')).scope).toBe('Namespaced');
    }
  });

  it('a group-version that answers 404 is dropped, not an error for the whole group', async () => {
    const group = `${uniqueName('gone')}.kubeloop.dev`;
    await env.installCRDs([testCRD(group, 'Shelf', { versions: [{ name: 'v1' }, { name: 'v2', storage: false }] })]);
    const mapper = await newMapper({ aggregatedDiscovery: false });
    // Load the group list while both versions are served, but not the group's documents.
    await mapper.restMapping({ group: 'apps', kind: 'Deployment' });
    // Stop serving v2.
    await env.installCRDs([testCRD(group, 'Shelf', { versions: [{ name: 'v1' }, { name: 'v2', served: false, storage: false }] })]);
    await waitFor(async () => (await fetchStatus(`/apis/${group}/v2`)) === 404);
    const mappings = await mapper.restMappings({ group, kind: 'Shelf' });
    expect(mappings.map((m) => m.resource.version)).toEqual(['v1']);
    await expect(mapper.restMapping({ group, kind: 'Shelf' }, 'v2')).rejects.toMatchObject({ reason: 'NoKindMatch' });
  });
});

describe('forget', () => {
  for (const aggregatedDiscovery of [true, false]) {
    it(`drops one kind whose CRD was deleted: its next lookup asks once and misses, the others stay (${aggregatedDiscovery ? 'aggregated' : 'legacy'} discovery)`, async () => {
      const group = `${uniqueName('forget')}.kubeloop.dev`;
      await env.installCRDs([testCRD(group, 'Crate'), testCRD(group, 'Pallet')]);
      const mapper = await newMapper({ aggregatedDiscovery });
      expect((await mapper.restMapping({ group, kind: 'Crate' })).resource.resource).toBe('crates');
      expect((await mapper.restMapping({ group, kind: 'Pallet' })).resource.resource).toBe('pallets');
      await deleteCRD(`crates.${group}`);
      await waitFor(async () => (await fetchStatus(`/apis/${group}/v1/crates`)) === 404);
      // Without forget the stale mapping stands (nothing told the mapper).
      expect((await mapper.restMapping({ group, kind: 'Crate' })).resource.resource).toBe('crates');
      mapper.forget({ group, kind: 'Crate' });
      proxy.clearRequests();
      // Pallet still maps, from memory.
      expect((await mapper.restMapping({ group, kind: 'Pallet' })).resource.resource).toBe('pallets');
      expect(proxy.count()).toBe(0);
      await expect(mapper.restMapping({ group, kind: 'Crate' })).rejects.toMatchObject({ reason: 'NoKindMatch' });
      // The group list once, and (legacy) the group-version's document once.
      expect(proxy.count()).toBeLessThanOrEqual(aggregatedDiscovery ? 1 : 2);
      // The miss is remembered: asking again costs nothing.
      await expect(mapper.restMapping({ group, kind: 'Crate' })).rejects.toMatchObject({ reason: 'NoKindMatch' });
      expect(proxy.count()).toBeLessThanOrEqual(aggregatedDiscovery ? 1 : 2);
      await deleteCRD(`pallets.${group}`);
    });
  }
});

describe('no lock across the network', () => {
  it('a lookup of a known group completes while another group is being rediscovered', async () => {
    const mapper = await newMapper();
    await mapper.restMapping({ group: 'apps', kind: 'Deployment' });
    proxy.clearRequests();
    proxy.delay(1500);
    let missSettled = false;
    const miss = mapper.restMapping({ group: 'slow.kubeloop.dev', kind: 'Slow' }).catch(() => undefined).finally(() => {
      missSettled = true;
    });
    await new Promise((r) => setTimeout(r, 50)); // the refresh is now in flight
    expect(proxy.count()).toBe(1);
    const known = await mapper.restMapping({ group: 'batch', kind: 'Job' });
    expect(known.resource.resource).toBe('jobs');
    expect(missSettled).toBe(false);
    proxy.delay(0);
    await miss;
    expect(missSettled).toBe(true);
  });
});

describe('discovery failures', () => {
  it('a server error is a DiscoveryFailed error, and the next lookup tries again', async () => {
    let calls = 0;
    const mapper = createDynamicRESTMapper({
      get: (path) => {
        calls++;
        return Promise.resolve(
          calls === 1
            ? { status: 503, contentType: 'text/plain', body: 'storage is (re)initializing' }
            : { status: 200, contentType: 'application/json', body: path === '/api' ? '{"versions":["v1"]}' : '{"groups":[]}' },
        );
      },
    });
    const err = await mapper.restMapping({ group: 'apps', kind: 'Deployment' }).catch((e: unknown) => e);
    expect(isMapperError(err) && err.reason).toBe('DiscoveryFailed');
    expect(String(err)).toContain('503');
    // The failure was not remembered: the next lookup asks again, and gets an answer.
    await expect(mapper.restMapping({ group: 'apps', kind: 'Deployment' })).rejects.toMatchObject({ reason: 'NoKindMatch' });
    expect(calls).toBe(2);
  });

  it('a malformed document is a DiscoveryFailed error naming the path', async () => {
    const mapper = createDynamicRESTMapper({
      get: () => Promise.resolve({ status: 200, contentType: 'application/json', body: '{"groups": ' }),
    });
    await expect(mapper.restMapping({ group: 'apps', kind: 'Deployment' })).rejects.toMatchObject({
      reason: 'DiscoveryFailed',
      message: expect.stringContaining('/apis: malformed document') as unknown,
    });
  });

  it('a network failure is a DiscoveryFailed error with the cause kept', async () => {
    const cause = new Error('connect ECONNREFUSED 127.0.0.1:1');
    const mapper = createDynamicRESTMapper({ get: () => Promise.reject(cause) });
    const err = await mapper.restMapping({ group: '', kind: 'Pod' }).catch((e: unknown) => e);
    expect(isMapperError(err) && err.cause).toBe(cause);
  });
});

async function deleteCRD(name: string): Promise<void> {
  const res = await fetch(new URL(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`, proxy.url), { method: 'DELETE' });
  if (res.status !== 200 && res.status !== 202) throw new Error(`DELETE CRD ${name}: ${res.status}`);
}

async function fetchStatus(path: string): Promise<number> {
  return (await fetch(new URL(path, proxy.url))).status;
}

/** Until the server has acted (a deleted CRD no longer served takes over 20 s with four test files side by side on 2 cores). */
async function waitFor(check: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}
