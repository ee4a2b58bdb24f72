/**
 * The client against the real API server: every verb in each form, on a
 * built-in kind and on a CRD.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinScheme, ConfigMap, Deployment, Namespace, Pod, Secret } from '@kubeloop/scheme';
import type { ObjectList } from '@kubeloop/scheme';
import { ClientError, createClient, isAlreadyExists, isClientError, isConflict, isInvalid, isNoKindMatch, isNotFound, isTimeout, metadataOnly } from '../src/index.js';
import type { Client, Reader } from '../src/index.js';
import type { Unstructured } from '../src/internal-api.js';
import { mergeFrom, mergePatch, jsonPatch, strategicMergePatch } from '../src/patch.js';
import { retryOnConflict } from '../src/retry.js';
import { uniqueName } from '../../../test/support/env.js';
import { fixture, nonDiscovery } from './support.js';
import type { Fixture } from './support.js';

let f: Fixture;
let client: Client;
let ns: string;

beforeAll(async () => {
  f = await fixture();
  client = createClient({ kubeConfig: f.proxy.kubeConfig, scheme: builtinScheme.extend(f.HardDisk), fieldOwner: 'kubeloop-test' });
  ns = uniqueName('client');
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});
afterAll(async () => {
  await f.close();
});

const cm = (name: string, data: Record<string, string> = {}, labels?: Record<string, string>) => ({
  apiVersion: 'v1' as const,
  kind: 'ConfigMap' as const,
  metadata: { name, namespace: ns, ...(labels ? { labels } : {}) },
  data,
});

describe('typed form (ConfigMap)', () => {
  it('creates, gets, lists, updates, patches and deletes', async () => {
    const created = await client.create(cm('a', { k: '1' }, { app: 'web' }));
    expect(created.metadata?.uid).toBeTruthy();
    expect(typeof created.metadata?.creationTimestamp).toBe('string');

    const got = await client.get(ConfigMap, { namespace: ns, name: 'a' });
    expect(got.data).toEqual({ k: '1' });

    const list = await client.list(ConfigMap, { namespace: ns, labelSelector: { app: 'web' } });
    expect(list.items.map((i) => i.metadata?.name)).toEqual(['a']);
    // the API server leaves apiVersion/kind out of built-in list items; the client fills them in
    expect(list.items.map((i) => `${i.apiVersion}/${i.kind}`)).toEqual(['v1/ConfigMap']);
    expect((await client.list(ConfigMap, { namespace: ns, limit: 1 })).items[0]?.kind).toBe('ConfigMap');
    expect(list.metadata?.resourceVersion).toBeTruthy();

    const updated = await client.update({ ...got, apiVersion: 'v1', kind: 'ConfigMap', data: { k: '2' } });
    expect(updated.data).toEqual({ k: '2' });

    const merged = await client.patch({ ...updated, apiVersion: 'v1', kind: 'ConfigMap' }, mergePatch({ data: { extra: 'x' } }));
    expect(merged.data).toEqual({ k: '2', extra: 'x' });
    const jsonPatched = await client.patch(ConfigMap, { namespace: ns, name: 'a' }, jsonPatch([{ op: 'remove', path: '/data/extra' }]));
    expect(jsonPatched.data).toEqual({ k: '2' });
    const fromDiff = await client.patch({ ...jsonPatched, apiVersion: 'v1', kind: 'ConfigMap' }, mergeFrom(jsonPatched, { ...jsonPatched, data: { k: '3' } }, { optimisticLock: true }));
    expect(fromDiff.data).toEqual({ k: '3' });

    await client.delete({ ...fromDiff, apiVersion: 'v1', kind: 'ConfigMap' });
    const err = await client.get(ConfigMap, { namespace: ns, name: 'a' }).catch((e: unknown) => e);
    expect(isNotFound(err)).toBe(true);
    expect(isClientError(err) && err.status?.details?.name).toBe('a');
  });

  it('pages through a list of 7 with limit 3: three pages, continue tokens, and listAll', async () => {
    const label = { batch: uniqueName('p') };
    for (let i = 0; i < 7; i++) await client.create(cm(`page-${i}`, { i: String(i) }, label));
    const pages: ObjectList<ConfigMap>[] = [];
    let cont: string | undefined;
    do {
      const page = await client.list(ConfigMap, { namespace: ns, labelSelector: label, limit: 3, ...(cont ? { continue: cont } : {}) });
      pages.push(page);
      cont = page.metadata?.continue || undefined;
    } while (cont);
    expect(pages.map((p) => p.items.length)).toEqual([3, 3, 1]);
    const names: string[] = [];
    for await (const item of client.listAll(ConfigMap, { namespace: ns, labelSelector: label, pageSize: 3 })) names.push(item.metadata!.name!);
    expect(names.sort()).toEqual(Array.from({ length: 7 }, (_, i) => `page-${i}`));
    // Without a limit the pages are joined.
    const all = await client.list(ConfigMap, { namespace: ns, labelSelector: label });
    expect(all.items).toHaveLength(7);
    expect(all.metadata?.continue).toBeUndefined();
    await client.deleteAllOf(ConfigMap, { namespace: ns, labelSelector: label });
    expect((await client.list(ConfigMap, { namespace: ns, labelSelector: label })).items).toHaveLength(0);
  });

  it('field selectors and all-namespace lists', async () => {
    await client.create(cm('fs-target'));
    const one = await client.list(ConfigMap, { fieldSelector: { 'metadata.name': 'fs-target', 'metadata.namespace': ns } });
    expect(one.items.map((i) => `${i.metadata?.namespace}/${i.metadata?.name}`)).toEqual([`${ns}/fs-target`]);
  });

  it('dry-run writes leave nothing behind', async () => {
    const dry = await client.create(cm('dry', { a: '1' }), { dryRun: true });
    expect(dry.metadata?.name).toBe('dry');
    await expect(client.get(ConfigMap, { namespace: ns, name: 'dry' })).rejects.toSatisfy(isNotFound);
    await client.create(cm('dry2'));
    await client.delete(ConfigMap, { namespace: ns, name: 'dry2' }, { dryRun: true });
    expect((await client.get(ConfigMap, { namespace: ns, name: 'dry2' })).metadata?.name).toBe('dry2');
  });

  it('a stale resourceVersion is a 409 Conflict, and retryOnConflict recovers', async () => {
    const base = await client.create(cm('stale', { n: '0' }));
    await client.update({ ...base, apiVersion: 'v1', kind: 'ConfigMap', data: { n: '1' } });
    const err = await client.update({ ...base, apiVersion: 'v1', kind: 'ConfigMap', data: { n: 'stale' } }).catch((e: unknown) => e);
    expect(isConflict(err)).toBe(true);
    expect((err as ClientError).code).toBe(409);
    let attempts = 0;
    await retryOnConflict(async () => {
      attempts++;
      const current = attempts === 1 ? base : await client.get(ConfigMap, { namespace: ns, name: 'stale' });
      await client.update({ ...current, apiVersion: 'v1', kind: 'ConfigMap', data: { n: '2' } });
    });
    expect(attempts).toBe(2);
    expect((await client.get(ConfigMap, { namespace: ns, name: 'stale' })).data).toEqual({ n: '2' });
  });

  it('typed errors: AlreadyExists, Invalid, with the server Status', async () => {
    await client.create(cm('dup'));
    const dup = await client.create(cm('dup')).catch((e: unknown) => e);
    expect(isAlreadyExists(dup)).toBe(true);
    const invalid = await client.create(cm('NOT_A_DNS_NAME')).catch((e: unknown) => e);
    expect(isInvalid(invalid)).toBe(true);
    expect((invalid as ClientError).status?.details?.causes?.[0]?.field).toBe('metadata.name');
  });
});

describe('bad input is refused before any request', () => {
  it('a namespace on a cluster-scoped kind, none on a namespaced get, no name, unknown kind', async () => {
    await client.get(Namespace, { name: 'default' }); // warm discovery
    f.proxy.clearRequests();
    const onCluster = await client.get(Namespace, { namespace: 'x', name: 'default' }).catch((e: unknown) => e);
    expect(isClientError(onCluster) && onCluster.reason).toBe('InvalidRequest');
    expect(String(onCluster)).toContain('cluster-scoped');
    const noNs = await client.get(ConfigMap, { name: 'x' }).catch((e: unknown) => e);
    expect(String(noNs)).toContain('needs a namespace');
    const noName = await client.get(ConfigMap, { namespace: ns, name: '' }).catch((e: unknown) => e);
    expect(isClientError(noName) && noName.reason).toBe('InvalidRequest');
    const noKind = await client.create({ metadata: { name: 'x' } } as never).catch((e: unknown) => e);
    expect(isClientError(noKind) && noKind.reason).toBe('InvalidRequest');
    const badName = await client.get(ConfigMap, { namespace: ns, name: '../secrets' }).catch((e: unknown) => e);
    expect(isClientError(badName) && badName.reason).toBe('InvalidRequest');
    expect(f.proxy.count()).toBe(0);
    const unknown = await client.get({ apiVersion: 'nope.kubeloop.dev/v1', kind: 'Nothing' }, { namespace: ns, name: 'x' }).catch((e: unknown) => e);
    expect(isNoKindMatch(unknown)).toBe(true);
    expect(nonDiscovery(f.proxy)).toBe(0);
  });
});

describe('unstructured form (a CRD the scheme does not know)', () => {
  it('creates, reads, lists, patches, updates status and deletes plain JSON', async () => {
    const apiVersion = `${f.group}/v1`;
    const ref = { apiVersion, kind: 'HardDisk' };
    const created = await client.create<Unstructured>({ apiVersion, kind: 'HardDisk', metadata: { name: 'disk', namespace: ns }, spec: { size: '10Gi' } });
    expect(created['spec']).toEqual({ size: '10Gi' });
    const got = await client.get(ref, { namespace: ns, name: 'disk' });
    expect(got.kind).toBe('HardDisk');
    expect(got['spec']).toEqual({ size: '10Gi' });
    expect((await client.list(ref, { namespace: ns })).items).toHaveLength(1);

    const patched = await client.patch(ref, { namespace: ns, name: 'disk' }, mergePatch({ spec: { storageClass: 'fast' } }));
    expect(patched['spec']).toEqual({ size: '10Gi', storageClass: 'fast' });

    // status subresource: the main endpoint ignores status, the subresource sets it
    const withStatus = await client.status().update({ ...patched, status: { phase: 'Bound' } });
    expect(withStatus['status']).toEqual({ phase: 'Bound' });
    const ignored = await client.update({ ...withStatus, status: { phase: 'Ignored' }, spec: { size: '20Gi' } });
    expect(ignored['status']).toEqual({ phase: 'Bound' });
    const statusPatched = await client.status().patch(ignored, mergePatch({ status: { phase: 'Released' } }));
    expect(statusPatched['status']).toEqual({ phase: 'Released' });
    const statusGot = await client.status().get<Unstructured>(ref, { namespace: ns, name: 'disk' });
    expect(statusGot['status']).toEqual({ phase: 'Released' });
    const statusApplied = await client.status().apply({ apiVersion, kind: 'HardDisk', metadata: { name: 'disk', namespace: ns }, status: { phase: 'Applied' } }, { force: true });
    expect(statusApplied['status']).toEqual({ phase: 'Applied' });

    await client.delete(ref, { namespace: ns, name: 'disk' });
    await expect(client.get(ref, { namespace: ns, name: 'disk' })).rejects.toSatisfy(isNotFound);
  });

  it('the typed descriptor of the same CRD works the same way', async () => {
    const created = await client.create({ apiVersion: `${f.group}/v1`, kind: 'HardDisk', metadata: { name: 'typed', namespace: ns }, spec: { size: '1Gi' } });
    const got = await client.get(f.HardDisk, { namespace: ns, name: 'typed' });
    expect(got.spec?.size).toBe('1Gi');
    expect(got.metadata?.uid).toBe(created.metadata?.uid);
    await client.deleteAllOf(f.HardDisk, { namespace: ns });
    expect((await client.list(f.HardDisk, { namespace: ns })).items).toHaveLength(0);
  });
});

describe('metadata-only form', () => {
  it('gets, lists, watches, patches and deletes metadata without the payload', async () => {
    await client.create(cm('meta', { big: 'x'.repeat(1000) }, { app: 'meta' }));
    const meta = await client.get(metadataOnly(ConfigMap), { namespace: ns, name: 'meta' });
    expect(meta.kind).toBe('PartialObjectMetadata');
    expect(meta.metadata?.labels).toEqual({ app: 'meta' });
    expect(JSON.stringify(meta)).not.toContain('xxxx');

    const list = await client.list(metadataOnly(ConfigMap), { namespace: ns, labelSelector: { app: 'meta' } });
    expect(list.kind).toBe('PartialObjectMetadataList');
    expect(list.items.map((i) => i.metadata?.name)).toEqual(['meta']);

    const events = await client.watch(metadataOnly(ConfigMap), { namespace: ns, resourceVersion: list.metadata!.resourceVersion!, labelSelector: { app: 'meta' } });
    const patched = await client.patch(metadataOnly(ConfigMap), { namespace: ns, name: 'meta' }, mergePatch({ metadata: { annotations: { seen: 'yes' } } }));
    expect(patched.kind).toBe('PartialObjectMetadata');
    expect(patched.metadata?.annotations).toEqual({ seen: 'yes' });
    const first = await events.next();
    expect(first.value).toMatchObject({ type: 'MODIFIED', object: { kind: 'PartialObjectMetadata', metadata: { name: 'meta' } } });
    expect(JSON.stringify(first.value)).not.toContain('xxxx');
    await events.return?.();

    await client.delete(metadataOnly(ConfigMap), { namespace: ns, name: 'meta' });
    await expect(client.get(ConfigMap, { namespace: ns, name: 'meta' })).rejects.toSatisfy(isNotFound);
  });
});

describe('server-side apply', () => {
  it('records ownership, conflicts between two field owners, and force takes over', async () => {
    const name = 'ssa';
    const a = createClient({ kubeConfig: f.proxy.kubeConfig, fieldOwner: 'owner-a' });
    const b = createClient({ kubeConfig: f.proxy.kubeConfig, fieldOwner: 'owner-b' });
    await a.apply(cm(name, { shared: 'a', onlyA: '1' }));
    await b.apply(cm(name, { onlyB: '2' }));
    const both = await client.get(ConfigMap, { namespace: ns, name });
    expect(both.data).toEqual({ shared: 'a', onlyA: '1', onlyB: '2' });
    expect(both.metadata?.managedFields?.map((m) => m.manager).sort()).toEqual(['owner-a', 'owner-b']);

    const conflict = await b.apply(cm(name, { onlyB: '2', shared: 'b' })).catch((e: unknown) => e);
    expect(isConflict(conflict)).toBe(true);
    expect(String(conflict)).toContain('owner-a');

    const forced = await b.apply(cm(name, { onlyB: '2', shared: 'b' }), { force: true });
    expect(forced.data).toEqual({ shared: 'b', onlyA: '1', onlyB: '2' });
    // owner-a no longer owns `shared`: dropping onlyA from its config removes it, shared stays b
    const after = await a.apply(cm(name, {}));
    expect(after.data).toEqual({ shared: 'b', onlyB: '2' });
  });

  it('refuses to apply without a field owner (never a hard-coded one)', async () => {
    const anonymous = createClient({ kubeConfig: f.proxy.kubeConfig });
    const err = await anonymous.apply(cm('no-owner')).catch((e: unknown) => e);
    expect(isClientError(err) && err.reason).toBe('InvalidRequest');
    expect(String(err)).toContain('field owner');
    await anonymous.apply(cm('per-call-owner', { a: '1' }), { fieldManager: 'per-call' });
    const got = await client.get(ConfigMap, { namespace: ns, name: 'per-call-owner' });
    expect(got.metadata?.managedFields?.[0]?.manager).toBe('per-call');
  });
});

describe('subresources and strategic merge on built-ins', () => {
  const deployment = (name: string) => ({
    apiVersion: 'apps/v1' as const,
    kind: 'Deployment' as const,
    metadata: { name, namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image: 'busybox' }, { name: 'side', image: 'busybox' }] } },
    },
  });

  it('scale get and update; strategic merge keeps the other containers', async () => {
    await client.create(deployment('web'));
    const scale = await client.subResource('scale').get<{ spec: { replicas: number }; metadata: { resourceVersion: string } }>(Deployment, { namespace: ns, name: 'web' });
    expect(scale.spec.replicas).toBe(1);
    await client.subResource('scale').update(
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: ns } },
      { body: { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: 'web', namespace: ns }, spec: { replicas: 3 } } },
    );
    expect((await client.get(Deployment, { namespace: ns, name: 'web' })).spec?.replicas).toBe(3);

    const patched = await client.patch(Deployment, { namespace: ns, name: 'web' }, strategicMergePatch({ spec: { template: { spec: { containers: [{ name: 'main', image: 'nginx' }] } } } }));
    expect(patched.spec?.template.spec?.containers.map((c) => `${c.name}=${c.image}`)).toEqual(['main=nginx', 'side=busybox']);
  });

  it('a strategic merge patch on a custom resource is refused by the server with a typed error', async () => {
    await client.create({ apiVersion: `${f.group}/v1`, kind: 'HardDisk', metadata: { name: 'smp', namespace: ns }, spec: { size: '1Gi' } });
    const err = await client.patch(f.HardDisk, { namespace: ns, name: 'smp' }, strategicMergePatch({ spec: { size: '2Gi' } })).catch((e: unknown) => e);
    expect(isClientError(err) && err.code).toBe(415);
  });

  it('evicts a pod', async () => {
    await client.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'evictee', namespace: ns }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
    await client.subResource('eviction').create(
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'evictee', namespace: ns } },
      { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'evictee', namespace: ns } },
    );
    // No kubelet runs: the pod is deleted at once (no grace to wait for) or marked for deletion.
    const after = await client.get(Pod, { namespace: ns, name: 'evictee' }).catch((e: unknown) => e);
    expect(isNotFound(after) || typeof (after as { metadata?: { deletionTimestamp?: string } }).metadata?.deletionTimestamp === 'string').toBe(true);
  });
});

describe('watch', () => {
  it('from a resourceVersion sees later changes, in order, and a BOOKMARK when asked', async () => {
    const list = await client.list(ConfigMap, { namespace: ns });
    const events = await client.watch(ConfigMap, { namespace: ns, resourceVersion: list.metadata!.resourceVersion!, fieldSelector: { 'metadata.name': 'watched' } });
    const created = await client.create(cm('watched', { v: '1' }));
    await client.patch({ ...created, apiVersion: 'v1', kind: 'ConfigMap' }, mergePatch({ data: { v: '2' } }));
    await client.delete(ConfigMap, { namespace: ns, name: 'watched' });
    const seen: string[] = [];
    for await (const e of events) {
      seen.push(`${e.type}:${e.object.data?.['v'] ?? ''}`);
      if (e.type === 'DELETED') break;
    }
    expect(seen).toEqual(['ADDED:1', 'MODIFIED:2', 'DELETED:2']);

    const initial = await client.watch(ConfigMap, { namespace: ns, sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: true });
    let bookmark: { metadata?: { annotations?: Record<string, string>; resourceVersion?: string } } | undefined;
    for await (const e of initial) {
      if (e.type === 'BOOKMARK') {
        bookmark = e.object;
        break;
      }
    }
    expect(bookmark?.metadata?.annotations?.['k8s.io/initial-events-end']).toBe('true');
    expect(bookmark?.metadata?.resourceVersion).toBeTruthy();
  });

  it('a watch the server refuses is a typed error', async () => {
    const err = await client.watch(ConfigMap, { namespace: ns, fieldSelector: 'no.such.field=1' }).catch((e: unknown) => e);
    expect(isClientError(err) && err.code).toBe(400);
  });
});

describe('the cached-read router', () => {
  /** A Reader that serves from a map and counts its calls. */
  function countingCache(): Reader & { calls: number } {
    const cache = {
      calls: 0,
      get: (kind: unknown, key: { name: string }) => {
        cache.calls++;
        return Promise.resolve({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: key.name, annotations: { from: 'cache' } } });
      },
      list: () => {
        cache.calls++;
        return Promise.resolve({ items: [] });
      },
    };
    return cache as unknown as Reader & { calls: number };
  }

  it('cached kinds cost no request, uncached kinds exactly one, writes always go to the server', async () => {
    const cache = countingCache();
    const routed = createClient({ kubeConfig: f.proxy.kubeConfig, cache, uncached: [Secret], fieldOwner: 'router' });
    await routed.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: ns }, stringData: { k: 'v' } });
    f.proxy.clearRequests();

    const fromCache = await routed.get(ConfigMap, { namespace: ns, name: 'anything' });
    expect(fromCache.metadata?.annotations).toEqual({ from: 'cache' });
    await routed.list(ConfigMap, { namespace: ns });
    expect(f.proxy.count()).toBe(0);
    expect(cache.calls).toBe(2);

    const secret = await routed.get(Secret, { namespace: ns, name: 's' });
    expect(secret.metadata?.name).toBe('s');
    expect(f.proxy.count()).toBe(1);

    // unstructured reads are live by default
    f.proxy.clearRequests();
    await routed.list({ apiVersion: `${f.group}/v1`, kind: 'HardDisk' }, { namespace: ns });
    expect(nonDiscovery(f.proxy)).toBe(1);
    expect(cache.calls).toBe(2);

    // writes are live even for cached kinds; the API reader is always live
    f.proxy.clearRequests();
    await routed.create(cm('router-write'));
    await routed.apiReader.get(ConfigMap, { namespace: ns, name: 'router-write' });
    expect(nonDiscovery(f.proxy)).toBe(2);
    expect(cache.calls).toBe(2);
  });

  it('unstructured reads use the cache when asked to', async () => {
    const cache = countingCache();
    const routed = createClient({ kubeConfig: f.proxy.kubeConfig, cache, cacheUnstructured: true });
    f.proxy.clearRequests();
    await routed.get({ apiVersion: `${f.group}/v1`, kind: 'HardDisk' }, { namespace: ns, name: 'x' });
    expect(cache.calls).toBe(1);
    expect(f.proxy.count()).toBe(0);
  });
});

describe('per-call deadlines (leader election passes one per attempt)', () => {
  it('timeoutMs on a call bounds each of its requests, whatever the transport default; without it the same call succeeds', async () => {
    await client.create(cm('deadline'));
    await client.get(ConfigMap, { namespace: ns, name: 'deadline' }); // mapping cached: only the GET itself goes through the delay
    f.proxy.delay(1_500);
    try {
      const err = await client.get(ConfigMap, { namespace: ns, name: 'deadline' }, { timeoutMs: 200 }).catch((e: unknown) => e);
      expect(isTimeout(err) && err.reason).toBe('ClientTimeout');
      const late = await client.update({ ...cm('deadline', { v: '1' }) }, { timeoutMs: 200 }).catch((e: unknown) => e);
      expect(isClientError(late) && late.reason).toBe('ClientTimeout');
      expect((await client.get(ConfigMap, { namespace: ns, name: 'deadline' })).metadata?.name).toBe('deadline');
    } finally {
      f.proxy.delay(0);
    }
  });
});

describe('configuration errors', () => {
  it('a client needs a kubeConfig or a transport', () => {
    expect(() => createClient({})).toThrow(ClientError);
  });
});
