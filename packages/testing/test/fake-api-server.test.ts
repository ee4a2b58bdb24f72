/**
 * What only the fake has: fault injection, the request log, the clock in
 * timestamps, kinds registered from descriptors, the validator seam,
 * `load`/`objects`, bookmarks on demand, ending watches, the optional
 * garbage collector and namespace controller, the loopback HTTP endpoint
 * (client-node, kubectl, a manager-style client from a KubeConfig), and bad
 * input that must not crash it.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, isClientError, isConflict, isInvalid, isNetworkError, isNotFound, isServerError, mergePatch } from '@kubeloop/client';
import { watchEventError } from '@kubeloop/client/internal';
import type { Client, WatchEvent } from '@kubeloop/client';
import { createInformerCache } from '@kubeloop/cache';
import { ConfigMap, Deployment, Namespace, defineKind } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { Type } from '@kubeloop/scheme/schema';
import { createFakeApiServer, createTestClock, eventually, isTestingError } from '../src/index.js';
import type { FakeApiServer } from '../src/index.js';

const run = promisify(execFile);
/** kubectl drives the fake below; as for the rest of the suite it is required: missing, the test fails saying so (it used to pass having checked nothing). */
async function requireKubectl(): Promise<void> {
  await run('kubectl', ['version', '--client']).catch((err: unknown) => {
    throw new Error(`kubectl is required by this test and could not be run (${err instanceof Error ? err.message : String(err)}): put kubectl on PATH`);
  });
}

interface Disk extends KubeObject {
  apiVersion?: 'storage.example.com/v1';
  kind?: 'Disk';
  spec?: { sizeGiB?: number; tier?: string };
  status?: { phase?: string };
}
const Disk = defineKind<Disk>({ group: 'storage.example.com', version: 'v1', kind: 'Disk', plural: 'disks', namespaced: true, listKind: 'DiskList' });

const fakes: FakeApiServer[] = [];
function fake(options?: Parameters<typeof createFakeApiServer>[0]): FakeApiServer {
  const f = createFakeApiServer(options);
  fakes.push(f);
  return f;
}
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()));
});

function cm(name: string, data: Record<string, string> = {}, namespace = 'default'): ConfigMap & { apiVersion: 'v1'; kind: 'ConfigMap' } {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data };
}

describe('fault injection', () => {
  it('an injected error answers with the Status the real server would send, for matching requests only', async () => {
    const f = fake();
    const client = f.client();
    await client.create(cm('a'));
    await client.create(cm('b'));
    f.inject({ verb: 'get', kind: 'ConfigMap', name: 'a' }, { error: 'NotFound' });
    const err = await client.get(ConfigMap, { namespace: 'default', name: 'a' }).catch((e: unknown) => e);
    expect(isNotFound(err)).toBe(true);
    expect(isClientError(err) && err.status?.message).toBe('configmaps "a" not found');
    expect((await client.get(ConfigMap, { namespace: 'default', name: 'b' })).metadata?.name).toBe('b');
  });

  it('times limits an injection; hits counts it; remove stops it', async () => {
    const f = fake();
    const client = f.client();
    const obj = await client.create(cm('a', { v: '1' }));
    const injection = f.inject({ verb: 'update', times: 2 }, { error: 'Conflict' });
    for (let i = 0; i < 2; i++) expect(isConflict(await client.update(obj).catch((e: unknown) => e))).toBe(true);
    await client.update({ ...obj, data: { v: '2' } });
    expect(injection.hits).toBe(2);
    const always = f.inject({ verb: 'get' }, { error: 'InternalError' });
    expect(isServerError(await client.get(ConfigMap, { namespace: 'default', name: 'a' }).catch((e: unknown) => e))).toBe(true);
    always.remove();
    await client.get(ConfigMap, { namespace: 'default', name: 'a' });
  });

  it('an injected failure carries out nothing', async () => {
    const f = fake();
    const client = f.client();
    f.inject({ verb: 'create', kind: 'ConfigMap' }, { error: 'Invalid' });
    expect(isInvalid(await client.create(cm('a')).catch((e: unknown) => e))).toBe(true);
    expect(f.objects({ group: '', plural: 'configmaps' })).toEqual([]);
  });

  it('a network fault rejects with a Network ClientError', async () => {
    const f = fake();
    const client = f.client();
    f.inject({ verb: 'list', times: 1 }, { network: true });
    expect(isNetworkError(await client.list(ConfigMap, { namespace: 'default' }).catch((e: unknown) => e))).toBe(true);
    await client.list(ConfigMap, { namespace: 'default' });
  });

  it('latency delays the answer', async () => {
    const f = fake();
    const client = f.client();
    f.inject({ verb: 'get', kind: 'Namespace' }, { delayMs: 120 });
    const started = performance.now();
    await client.get(Namespace, { name: 'default' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(100);
  });

  it('a custom Status and a function decide per request', async () => {
    const f = fake();
    const client = f.client();
    f.inject({ kind: 'ConfigMap' }, (r) => (r.name === 'teapot' ? { error: { code: 418, reason: 'Teapot', message: 'short and stout' } } : undefined));
    const err = await client.get(ConfigMap, { namespace: 'default', name: 'teapot' }).catch((e: unknown) => e);
    expect(isClientError(err) && [err.code, err.status?.message]).toEqual([418, 'short and stout']);
    expect(isNotFound(await client.get(ConfigMap, { namespace: 'default', name: 'other' }).catch((e: unknown) => e))).toBe(true);
  });

  it('subresource matching: "" is the main resource only', async () => {
    const f = fake();
    f.register(Disk, { status: true });
    const client = f.client({ fieldOwner: 't' });
    const d = await client.create({ apiVersion: 'storage.example.com/v1', kind: 'Disk', metadata: { name: 'd', namespace: 'default' }, spec: { sizeGiB: 1 } });
    f.inject({ verb: 'update', subresource: 'status' }, { error: 'Conflict' });
    expect(isConflict(await client.status().update({ ...d, status: { phase: 'Bound' } }).catch((e: unknown) => e))).toBe(true);
    await client.update({ ...d, spec: { sizeGiB: 2 } });
  });

  it('rejects bad arguments with a TestingError', () => {
    const f = fake();
    expect(() => f.inject({ times: -1 }, { error: 'NotFound' })).toThrow(expect.objectContaining({ name: 'TestingError', reason: 'InvalidArgument' }));
    expect(() => f.inject({}, { delayMs: Number.NaN })).toThrow(expect.objectContaining({ reason: 'InvalidArgument' }));
  });
});

describe('the request log', () => {
  it('records verb, kind, namespace, name and subresource of each resource request', async () => {
    const f = fake();
    const client = f.client();
    await client.create(cm('a'));
    await client.get(ConfigMap, { namespace: 'default', name: 'a' });
    const mine = f.requests.filter((r) => r.kind === 'ConfigMap').map((r) => `${r.verb} ${r.namespace ?? ''}/${r.name ?? ''}`);
    expect(mine).toEqual(['create default/', 'get default/a']);
  });

  it('keeps at most requestLogSize entries', async () => {
    const f = fake({ requestLogSize: 3 });
    const client = f.client();
    for (let i = 0; i < 5; i++) await client.get(Namespace, { name: 'default' });
    expect(f.requests).toHaveLength(3);
  });
});

describe('the clock', () => {
  it('timestamps come from the fake\'s clock', async () => {
    const clock = createTestClock({ start: '2030-01-01T00:00:00Z', frozen: true });
    const f = fake({ clock });
    const client = f.client({ fieldOwner: 'clock-test' });
    // with a field to own: an object created with none has its updates untracked, as on the server
    const a = await client.create(cm('a', { k: 'v' }));
    expect(a.metadata.creationTimestamp).toBe('2030-01-01T00:00:00Z');
    clock.advance(90_000);
    const b = await client.patch(a, mergePatch({ data: { x: '1' } }));
    expect(b.metadata.managedFields?.[0]?.time).toBe('2030-01-01T00:01:30Z');
    await client.update({ ...b, metadata: { ...b.metadata, finalizers: ['example.com/x'] } });
    clock.advance(30_000);
    await client.delete(b);
    const marked = await client.get(ConfigMap, { namespace: 'default', name: 'a' });
    expect(marked.metadata?.deletionTimestamp).toBe('2030-01-01T00:02:00Z');
    expect(f.requests.at(-1)?.at).toBe(Date.parse('2030-01-01T00:02:00Z'));
  });
});

describe('kinds', () => {
  it('register serves a kind from its descriptor, with a status subresource', async () => {
    const f = fake();
    f.register(Disk, { status: true, shortNames: ['dk'] });
    const client = f.client({ fieldOwner: 't' });
    const d = await client.create({ apiVersion: 'storage.example.com/v1', kind: 'Disk', metadata: { name: 'd', namespace: 'default' }, spec: { sizeGiB: 1 }, status: { phase: 'ignored' } });
    expect(d.status).toBeUndefined();
    const s = await client.status().update({ ...d, spec: { sizeGiB: 9 }, status: { phase: 'Bound' } });
    expect([s.spec?.sizeGiB, s.status?.phase]).toEqual([1, 'Bound']);
  });

  it('register needs the plural and scope', () => {
    const f = fake();
    const bare = defineKind({ group: 'x.example.com', version: 'v1', kind: 'Bare' });
    const err = (() => {
      try {
        f.register(bare);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(isTestingError(err) && err.reason).toBe('InvalidArgument');
  });

  it('selectable fields of a registered kind filter lists', async () => {
    const f = fake();
    f.register(Disk, { selectableFields: ['spec.tier'] });
    const client = f.client();
    for (const [name, tier] of [['fast', 'ssd'], ['slow', 'hdd']] as const) await client.create({ apiVersion: 'storage.example.com/v1', kind: 'Disk', metadata: { name, namespace: 'default' }, spec: { tier } });
    const list = await client.list(Disk, { namespace: 'default', fieldSelector: { 'spec.tier': 'ssd' } });
    expect(list.items.map((i) => i.metadata?.name)).toEqual(['fast']);
  });

  it('a validator answers 422 Invalid with its field problems (the schema seam)', async () => {
    const f = fake();
    f.register(Disk, { validate: (obj) => ((obj as Disk).spec?.sizeGiB ?? 0) > 0 ? [] : [{ field: 'spec.sizeGiB', value: (obj as Disk).spec?.sizeGiB ?? null, message: 'must be greater than 0' }] });
    const client = f.client();
    const err = await client.create({ apiVersion: 'storage.example.com/v1', kind: 'Disk', metadata: { name: 'd', namespace: 'default' }, spec: { sizeGiB: 0 } }).catch((e: unknown) => e);
    expect(isInvalid(err)).toBe(true);
    expect(isClientError(err) && err.status?.message).toBe('Disk.storage.example.com "d" is invalid: spec.sizeGiB: Invalid value: 0: must be greater than 0');
    expect(isClientError(err) && err.status?.details?.causes).toEqual([{ reason: 'FieldValueInvalid', message: 'Invalid value: 0: must be greater than 0', field: 'spec.sizeGiB' }]);
  });

  it('a schema-first kind is validated against its schema, pruned and defaulted as the API server would; schemaValidation: false turns it off', async () => {
    const Tape = defineKind({
      group: 'storage.example.com',
      version: 'v1',
      kind: 'Tape',
      plural: 'tapes',
      namespaced: true,
      schema: { spec: Type.Object({ lengthM: Type.Integer({ minimum: 1 }), vendor: Type.Optional(Type.String({ default: 'acme' })) }) },
    });
    const f = fake();
    f.register(Tape);
    const client = f.client();
    const bad = await client.create({ apiVersion: 'storage.example.com/v1', kind: 'Tape', metadata: { name: 'bad', namespace: 'default' }, spec: { lengthM: 0 } }).catch((e: unknown) => e);
    expect(isInvalid(bad)).toBe(true);
    expect((bad as Error).message).toContain('Tape.storage.example.com "bad" is invalid: spec.lengthM: Invalid value: 0: spec.lengthM in body should be greater than or equal to 1');
    const good = await client.create({ apiVersion: 'storage.example.com/v1', kind: 'Tape', metadata: { name: 'good', namespace: 'default' }, spec: { lengthM: 800, colour: 'black' } as never });
    expect(good.spec).toEqual({ lengthM: 800, vendor: 'acme' });

    const lax = fake();
    lax.register(Tape, { schemaValidation: false });
    const stored = await lax.client().create({ apiVersion: 'storage.example.com/v1', kind: 'Tape', metadata: { name: 'bad', namespace: 'default' }, spec: { lengthM: 0 } });
    expect(stored.spec).toEqual({ lengthM: 0 });
  });

  it('validate adds a validator to a built-in kind; it sees the old object on updates', async () => {
    const f = fake();
    const seen: (string | undefined)[] = [];
    f.validate(ConfigMap, (obj, old) => {
      seen.push(old?.metadata?.resourceVersion);
      return (obj as ConfigMap).data?.['forbidden'] ? [{ field: 'data.forbidden', message: 'not allowed', type: 'FieldValueForbidden' }] : [];
    });
    const client = f.client();
    const a = await client.create(cm('a'));
    expect(isInvalid(await client.update({ ...a, data: { forbidden: 'x' } }).catch((e: unknown) => e))).toBe(true);
    expect(seen).toEqual([undefined, a.metadata.resourceVersion]);
  });

  it('load creates objects and their namespaces; objects reads them back', async () => {
    const f = fake();
    await f.load([cm('a', { v: '1' }, 'team-a'), cm('b', {}, 'team-a')]);
    expect(f.objects(ConfigMap).map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`)).toEqual(['team-a/a', 'team-a/b']);
    expect(f.objects(Namespace).map((o) => o.metadata?.name)).toContain('team-a');
  });
});

describe('watches', () => {
  it('bookmark() sends a BOOKMARK to watches that allow them', async () => {
    const f = fake({ bookmarkIntervalMs: 0 });
    const client = f.client();
    const events = await client.watch(ConfigMap, { namespace: 'default', resourceVersion: f.resourceVersion, allowWatchBookmarks: true });
    await client.create(cm('a'));
    f.bookmark();
    const first: IteratorResult<WatchEvent<ConfigMap>, undefined> = await events.next();
    const second: IteratorResult<WatchEvent<ConfigMap>, undefined> = await events.next();
    await events.return?.();
    expect([first.value?.type, second.value?.type]).toEqual(['ADDED', 'BOOKMARK']);
    expect(second.value?.object.metadata?.resourceVersion).toBe(f.resourceVersion);
  });

  it('endWatches ends open watches normally; an informer re-watches without a relist', async () => {
    const f = fake();
    const client = f.client();
    // the LIST path, so that a relist shows as a second list (a streaming list would be a watch like the re-watch)
    const cache = createInformerCache({ client, reflector: { useWatchList: false } });
    try {
      await client.create(cm('a'));
      await cache.get(ConfigMap, { namespace: 'default', name: 'a' });
      f.endWatches();
      await client.create(cm('b'));
      await eventually(() => cache.get(ConfigMap, { namespace: 'default', name: 'b' }));
      const lists = f.requests.filter((r) => r.verb === 'list' && r.kind === 'ConfigMap').length;
      expect(lists).toBe(1);
    } finally {
      await cache.stop();
    }
  });

  it('after compact(), an informer that missed events relists and converges', async () => {
    const f = fake();
    const client = f.client();
    // the LIST path, so that the relist shows as a list
    const cache = createInformerCache({ client, reflector: { useWatchList: false } });
    try {
      await client.create(cm('a'));
      await cache.get(ConfigMap, { namespace: 'default', name: 'a' });
      const broken = f.inject({ verb: 'watch', kind: 'ConfigMap' }, { network: true });
      f.endWatches();
      await client.delete(ConfigMap, { namespace: 'default', name: 'a' });
      await client.create(cm('c'));
      f.compact();
      broken.remove();
      await eventually(async () => expect((await cache.list(ConfigMap, { namespace: 'default' })).items.map((i) => i.metadata?.name)).toEqual(['c']), { timeoutMs: 20_000 });
      expect(f.requests.filter((r) => r.verb === 'list' && r.kind === 'ConfigMap').length).toBeGreaterThanOrEqual(2);
    } finally {
      await cache.stop();
    }
  }, 30_000);

  it('beyond historyLimit the oldest changes are compacted: a watch from before them gets 410', async () => {
    const f = fake({ historyLimit: 10 });
    const client = f.client();
    const first = await client.create(cm('first'));
    for (let i = 0; i < 12; i++) await client.create(cm(`n${i}`));
    const old = await client.watch(ConfigMap, { namespace: 'default', resourceVersion: first.metadata.resourceVersion! });
    const gone: IteratorResult<WatchEvent<ConfigMap>, undefined> = await old.next();
    expect(gone.value?.type).toBe('ERROR');
    const recent = await client.watch(ConfigMap, { namespace: 'default', resourceVersion: String(Number(f.resourceVersion) - 3) });
    const next: IteratorResult<WatchEvent<ConfigMap>, undefined> = await recent.next();
    await recent.return?.();
    expect(next.value?.object.metadata?.name).toBe('n9');
    expect(() => createFakeApiServer({ historyLimit: 0 })).toThrow(expect.objectContaining({ reason: 'InvalidArgument' }));
  });

  it('a watch from before compact() gets an ERROR 410 Expired event', async () => {
    const f = fake();
    const client = f.client();
    const a = await client.create(cm('a'));
    await client.create(cm('b'));
    f.compact();
    const events = await client.watch(ConfigMap, { namespace: 'default', resourceVersion: a.metadata.resourceVersion! });
    const first: IteratorResult<WatchEvent<ConfigMap>, undefined> = await events.next();
    expect(first.value?.type).toBe('ERROR');
    const err = watchEventError(first.value as WatchEvent<unknown>);
    expect([err.code, err.reason]).toEqual([410, 'Expired']);
    expect((await events.next()).done).toBe(true);
  });
});

describe('controllers the fake can run', () => {
  async function owned(client: Client): Promise<{ owner: ConfigMap; dependent: ConfigMap }> {
    const owner = await client.create(cm('owner'));
    const dependent = await client.create({ ...cm('dependent'), metadata: { name: 'dependent', namespace: 'default', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid!, blockOwnerDeletion: true }] } });
    return { owner, dependent };
  }

  it('without a garbage collector, dependents of a deleted owner stay', async () => {
    const f = fake();
    const client = f.client();
    await owned(client);
    await client.delete(ConfigMap, { namespace: 'default', name: 'owner' });
    await new Promise((r) => setTimeout(r, 50));
    // Still there, still naming its deleted owner (a get of a deleted one rejects with NotFound).
    expect((await client.get(ConfigMap, { namespace: 'default', name: 'dependent' })).metadata?.ownerReferences?.map((o) => o.name)).toEqual(['owner']);
  });

  it('the garbage collector deletes dependents in the background', async () => {
    const f = fake({ garbageCollector: true });
    const client = f.client();
    await owned(client);
    await client.delete(ConfigMap, { namespace: 'default', name: 'owner' });
    await eventually(async () => expect(isNotFound(await client.get(ConfigMap, { namespace: 'default', name: 'dependent' }).catch((e: unknown) => e))).toBe(true));
  });

  it('the garbage collector completes a foreground deletion: dependents first, then the owner', async () => {
    const f = fake({ garbageCollector: true });
    const client = f.client();
    await owned(client);
    await client.delete(ConfigMap, { namespace: 'default', name: 'owner' }, { propagationPolicy: 'Foreground' });
    await eventually(async () => {
      expect(isNotFound(await client.get(ConfigMap, { namespace: 'default', name: 'owner' }).catch((e: unknown) => e))).toBe(true);
      expect(isNotFound(await client.get(ConfigMap, { namespace: 'default', name: 'dependent' }).catch((e: unknown) => e))).toBe(true);
    });
  });

  it('the garbage collector orphans: the dependent loses its owner reference and stays', async () => {
    const f = fake({ garbageCollector: true });
    const client = f.client();
    await owned(client);
    await client.delete(ConfigMap, { namespace: 'default', name: 'owner' }, { propagationPolicy: 'Orphan' });
    await eventually(async () => expect(isNotFound(await client.get(ConfigMap, { namespace: 'default', name: 'owner' }).catch((e: unknown) => e))).toBe(true));
    expect((await client.get(ConfigMap, { namespace: 'default', name: 'dependent' })).metadata?.ownerReferences).toBeUndefined();
  });

  it('the namespace controller empties a deleted namespace, then removes it', async () => {
    const f = fake({ namespaceController: true });
    const client = f.client();
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'doomed' } });
    await client.create(cm('a', {}, 'doomed'));
    await client.delete(Namespace, { name: 'doomed' });
    await eventually(async () => expect(isNotFound(await client.get(Namespace, { name: 'doomed' }).catch((e: unknown) => e))).toBe(true));
    expect(f.objects(ConfigMap).filter((o) => o.metadata?.namespace === 'doomed')).toEqual([]);
  });
});

describe('over HTTP', () => {
  it('a client built from the endpoint\'s KubeConfig works, watches included', async () => {
    const f = fake();
    const endpoint = await f.listen();
    expect(endpoint.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const client = createClient({ kubeConfig: endpoint.kubeConfig, fieldOwner: 'http' });
    const a = await client.apply({ ...cm('a', { v: '1' }) });
    const events = await client.watch(ConfigMap, { namespace: 'default', resourceVersion: a.metadata.resourceVersion! });
    await client.patch(a, mergePatch({ data: { v: '2' } }));
    const next: IteratorResult<WatchEvent<ConfigMap>, undefined> = await events.next();
    await events.return?.();
    expect([next.value?.type, next.value?.object.data?.['v']]).toEqual(['MODIFIED', '2']);
    await client.delete(a, { preconditions: { uid: a.metadata.uid! } });
    expect(f.objects(ConfigMap)).toEqual([]);
    client.transport.close();
    await endpoint.close();
  });

  it('a network fault over HTTP drops the connection', async () => {
    const f = fake();
    const endpoint = await f.listen();
    const client = createClient({ kubeConfig: endpoint.kubeConfig, transportOptions: { maxRetries: 0 } });
    f.inject({ verb: 'get', kind: 'Namespace', times: 1 }, { network: true });
    expect(isNetworkError(await client.get(Namespace, { name: 'default' }).catch((e: unknown) => e))).toBe(true);
    client.transport.close();
    await endpoint.close();
  });

  it('kubectl can create, list, get and delete through it', async () => {
    await requireKubectl();
    const f = fake();
    const endpoint = await f.listen();
    const dir = mkdtempSync(join(tmpdir(), 'kubeloop-fake-'));
    try {
      const kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, endpoint.kubeconfig);
      const k = (...args: string[]): Promise<{ stdout: string }> => run('kubectl', ['--kubeconfig', kubeconfig, ...args]);
      // kubectl's typed commands (create configmap, ...) send protobuf, which the fake answers with 415; manifests go as JSON
      const manifest = join(dir, 'cm.json');
      writeFileSync(manifest, JSON.stringify(cm('from-kubectl', { a: '1' })));
      await k('create', '--validate=false', '-f', manifest); // the fake serves no OpenAPI document
      expect((await k('get', 'configmaps', '-o', 'name')).stdout).toContain('configmap/from-kubectl');
      expect(JSON.parse((await k('get', 'configmap', 'from-kubectl', '-o', 'json')).stdout)).toMatchObject({ data: { a: '1' } });
      await k('label', 'configmap', 'from-kubectl', 'tier=web');
      expect(f.objects(ConfigMap)[0]?.metadata?.labels).toEqual({ tier: 'web' });
      writeFileSync(manifest, JSON.stringify(cm('from-kubectl', { a: '2' })));
      await k('apply', '--server-side', '--validate=false', '--field-manager', 'kubectl-test', '--force-conflicts', '-f', manifest);
      expect((f.objects(ConfigMap)[0] as ConfigMap | undefined)?.data).toEqual({ a: '2' });
      expect((await k('get', 'configmaps')).stdout).toMatch(/NAME\s+.*\n.*from-kubectl/);
      await k('delete', 'configmap', 'from-kubectl');
      expect(f.objects(ConfigMap)).toEqual([]);
      void Deployment;
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await endpoint.close();
    }
  }, 30_000);

  it('kubectl get all lists the workloads (discovery categories) and kubectl get <kind> <name> prints a Table row', async () => {
    await requireKubectl();
    const f = fake();
    const client = f.client();
    await client.create({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'default' }, spec: { selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1' }] } } } });
    await client.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'default' }, spec: { ports: [{ port: 80 }] } });
    await client.create(cm('not-a-workload', { a: '1' }));
    const endpoint = await f.listen();
    const dir = mkdtempSync(join(tmpdir(), 'kubeloop-fake-'));
    try {
      const kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, endpoint.kubeconfig);
      const k = (...args: string[]): Promise<{ stdout: string }> => run('kubectl', ['--kubeconfig', kubeconfig, ...args]);
      const all = (await k('get', 'all', '-n', 'default', '-o', 'name')).stdout.split('\n').filter(Boolean).sort();
      expect(all).toEqual(['deployment.apps/web', 'service/web']);
      const one = (await k('get', 'deployment', 'web', '-n', 'default')).stdout;
      expect(one).toMatch(/^NAME\s+AGE\nweb\s+\d+s\n$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await endpoint.close();
    }
  }, 30_000);
});

describe('bad input never crashes it', () => {
  it.each([
    ['a body that is not JSON', 'POST', '/api/v1/namespaces/default/configmaps', '{nope', 400],
    ['a JSON array body', 'POST', '/api/v1/namespaces/default/configmaps', '[]', 400],
    ['an empty body', 'POST', '/api/v1/namespaces/default/configmaps', '', 400],
    ['a malformed resourceVersion', 'GET', '/api/v1/namespaces/default/configmaps?resourceVersion=abc&resourceVersionMatch=Exact', undefined, 400],
    ['a path with too many segments', 'GET', '/api/v1/namespaces/default/configmaps/a/status/extra', undefined, 404],
    ['a limit that is not an integer', 'GET', '/api/v1/configmaps?limit=1.5', undefined, 400],
    ['a limit past int64', 'GET', '/api/v1/configmaps?limit=99999999999999999999', undefined, 400],
    ['a JSON patch that is not a list', 'PATCH', '/api/v1/namespaces/default/configmaps/x', '{}', 404],
  ])('%s', async (_what, method, path, body, status) => {
    const f = fake();
    const transport = f.createTransport();
    const [p, q] = (path).split('?');
    const query = Object.fromEntries(new URLSearchParams(q ?? ''));
    const res = await transport.request({ method: method as 'GET', path: p!, query, ...(body === undefined ? {} : { body: body }), contentType: method === 'PATCH' ? 'application/json-patch+json' : 'application/json' });
    expect(res.status).toBe(status);
    expect(JSON.parse(res.body)).toMatchObject({ kind: 'Status', code: status });
  });

  it('an unknown group: the plain-text 404 of kube-apiserver\'s mux, not a Status', async () => {
    const res = await fake().createTransport().request({ method: 'GET', path: '/apis/nope.example.com/v1/things' });
    expect({ status: res.status, body: res.body, type: res.headers['content-type'] }).toEqual({ status: 404, body: '404 page not found\n', type: 'text/plain; charset=utf-8' });
  });

  it('after close(), requests fail with a Network ClientError', async () => {
    const f = fake();
    const client = f.client();
    await client.get(Namespace, { name: 'default' }); // discovery done
    await f.close();
    expect(isNetworkError(await client.get(Namespace, { name: 'default' }).catch((e: unknown) => e))).toBe(true);
    await expect(f.listen()).rejects.toSatisfy(isTestingError);
  });
});
