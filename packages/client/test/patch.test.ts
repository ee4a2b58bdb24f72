/**
 * Patch constructors and mergeFrom: the computed patches, then each patch
 * type applied for real through the transport (ConfigMap; Deployment for
 * strategic merge), including the 409 an optimistic lock gives.
 */
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import type { V1ConfigMap, V1Deployment } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientError, isClientError, isConflict, isInvalid } from '../src/errors.js';
import { applyPatch, jsonPatch, jsonPointer, mergeFrom, mergePatch, patchContentType, strategicMergePatch } from '../src/patch.js';
import type { JsonPatchOperation, Patch, PatchType } from '../src/patch.js';
import { createTransport } from '../src/transport.js';
import type { Transport } from '../src/transport.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';

const parsed = (patch: Patch): unknown => JSON.parse(patch.data);

function thrown(fn: () => unknown): ClientError {
  try {
    fn();
  } catch (err) {
    expect(isClientError(err)).toBe(true);
    return err as ClientError;
  }
  throw new Error('expected a throw');
}

describe('patchContentType', () => {
  it.each([
    ['merge', 'application/merge-patch+json'],
    ['json', 'application/json-patch+json'],
    ['strategic', 'application/strategic-merge-patch+json'],
    ['apply', 'application/apply-patch+yaml'],
  ] as const)('%s → %s', (type, contentType) => {
    expect(patchContentType(type)).toBe(contentType);
  });

  it('rejects an unknown type with ClientError InvalidRequest', () => {
    expect(thrown(() => patchContentType('yaml' as PatchType)).reason).toBe('InvalidRequest');
  });
});

describe('constructors', () => {
  it('mergePatch, strategicMergePatch and applyPatch serialise an object', () => {
    expect(mergePatch({ data: { a: null } })).toEqual({ type: 'merge', data: '{"data":{"a":null}}' });
    expect(strategicMergePatch({ spec: { replicas: 2 } })).toEqual({ type: 'strategic', data: '{"spec":{"replicas":2}}' });
    expect(applyPatch({ apiVersion: 'v1', kind: 'ConfigMap' })).toEqual({ type: 'apply', data: '{"apiVersion":"v1","kind":"ConfigMap"}' });
  });

  it('refuse what is not an object', () => {
    expect(thrown(() => mergePatch([] as object)).reason).toBe('InvalidRequest');
    expect(thrown(() => strategicMergePatch(null as unknown as object)).message).toContain('got null');
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(thrown(() => mergePatch(cyclic)).message).toContain('cannot be serialised');
  });

  it('jsonPatch serialises operations and checks their shape', () => {
    const ops: JsonPatchOperation[] = [
      { op: 'test', path: '/metadata/resourceVersion', value: '7' },
      { op: 'add', path: '/data/a', value: 'x' },
      { op: 'remove', path: '/data/b' },
      { op: 'replace', path: '/data/c', value: null },
      { op: 'move', from: '/data/d', path: '/data/e' },
      { op: 'copy', from: '/data/e', path: '/data/f' },
    ];
    expect(jsonPatch(ops)).toEqual({ type: 'json', data: JSON.stringify(ops) });
    expect(thrown(() => jsonPatch([{ op: 'add', path: 'data/a', value: 1 }])).message).toContain('JSON pointer "path"');
    expect(thrown(() => jsonPatch([{ op: 'replace', path: '/a' } as unknown as JsonPatchOperation])).message).toContain('needs a "value"');
    expect(thrown(() => jsonPatch([{ op: 'move', path: '/a' } as unknown as JsonPatchOperation])).message).toContain('"from"');
    expect(thrown(() => jsonPatch([{ op: 'merge', path: '/a' } as unknown as JsonPatchOperation])).message).toContain('unknown "op"');
  });

  it('jsonPointer escapes "~" and "/" in segments', () => {
    expect(jsonPointer('metadata', 'labels', 'app.kubernetes.io/name')).toBe('/metadata/labels/app.kubernetes.io~1name');
    expect(jsonPointer('metadata', 'annotations', 'a~b/c')).toBe('/metadata/annotations/a~0b~1c');
    expect(jsonPointer('spec', 'containers', 0, 'image')).toBe('/spec/containers/0/image');
    expect(jsonPointer()).toBe('');
  });
});

describe('mergeFrom', () => {
  const before = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'a', namespace: 'ns', resourceVersion: '41', labels: { app: 'web', tier: 'front' }, annotations: { note: 'x' } },
    data: { keep: '1', change: 'old', drop: 'gone' },
    list: [1, 2, 3],
    nested: { deep: { a: 1, b: { c: true } } },
  };
  const clone = (): typeof before => structuredClone(before);

  it('no change at all is {}', () => {
    expect(mergeFrom(before, clone())).toEqual({ type: 'merge', data: '{}' });
  });

  it('sends changed and added fields, recursing into objects; unchanged fields are left out', () => {
    const after = clone();
    after.data.change = 'new';
    (after.data as Record<string, string>)['added'] = 'yes';
    after.metadata.labels.tier = 'back';
    expect(parsed(mergeFrom(before, after))).toEqual({ metadata: { labels: { tier: 'back' } }, data: { change: 'new', added: 'yes' } });
  });

  it('removed keys, at any depth, become null', () => {
    const after = clone() as Record<string, unknown> & typeof before;
    delete (after.data as Partial<typeof before.data>).drop;
    delete (after.nested.deep.b as Partial<typeof before.nested.deep.b>).c;
    delete (after.metadata as Partial<typeof before.metadata>).annotations;
    expect(parsed(mergeFrom(before, after))).toEqual({ metadata: { annotations: null }, data: { drop: null }, nested: { deep: { b: { c: null } } } });
  });

  it('a key set to undefined counts as removed; one undefined on both sides is no change', () => {
    const after = { ...clone(), data: { keep: '1', change: 'old', drop: undefined }, extra: undefined };
    expect(parsed(mergeFrom({ ...before, extra: undefined }, after))).toEqual({ data: { drop: null } });
  });

  it('arrays are replaced whole when they differ, and left out when equal', () => {
    const after = clone();
    after.list = [1, 2, 3, 4];
    expect(parsed(mergeFrom(before, after))).toEqual({ list: [1, 2, 3, 4] });
    const reordered = clone();
    reordered.list = [3, 2, 1];
    expect(parsed(mergeFrom(before, reordered))).toEqual({ list: [3, 2, 1] });
    expect(parsed(mergeFrom({ l: [{ a: 1 }, { b: [2] }] }, { l: [{ a: 1 }, { b: [2] }] }))).toEqual({});
    expect(parsed(mergeFrom({ l: [{ a: 1 }] }, { l: [{ a: 1, b: 2 }] }))).toEqual({ l: [{ a: 1, b: 2 }] });
  });

  it('a change of type replaces the value', () => {
    expect(parsed(mergeFrom({ a: { b: 1 }, c: 'x', d: [1] }, { a: 'flat', c: { nested: true }, d: { o: 1 } }))).toEqual({
      a: 'flat',
      c: { nested: true },
      d: { o: 1 },
    });
    expect(parsed(mergeFrom({ a: 1 }, { a: null }))).toEqual({ a: null });
    expect(parsed(mergeFrom({ a: null }, { a: null }))).toEqual({});
    expect(parsed(mergeFrom({ a: null }, { a: 0 }))).toEqual({ a: 0 });
  });

  it('optimisticLock adds before\'s resourceVersion, also to a no-op, and leaves both objects untouched', () => {
    const after = clone();
    after.data.change = 'new';
    const snapshot = JSON.stringify([before, after]);
    expect(parsed(mergeFrom(before, after, { optimisticLock: true }))).toEqual({ metadata: { resourceVersion: '41' }, data: { change: 'new' } });
    expect(parsed(mergeFrom(before, clone(), { optimisticLock: true }))).toEqual({ metadata: { resourceVersion: '41' } });

    const rvBefore = { metadata: { resourceVersion: '9' } };
    const grown = { metadata: { resourceVersion: '9', labels: { a: 'b' } } };
    expect(parsed(mergeFrom(rvBefore, grown, { optimisticLock: true }))).toEqual({ metadata: { labels: { a: 'b' }, resourceVersion: '9' } });
    expect(JSON.stringify([before, after])).toBe(snapshot);
    expect(grown.metadata).toEqual({ resourceVersion: '9', labels: { a: 'b' } });
  });

  it('optimisticLock without a resourceVersion on before is ClientError InvalidRequest', () => {
    expect(thrown(() => mergeFrom({ metadata: { name: 'a' } }, { metadata: { name: 'b' } }, { optimisticLock: true })).reason).toBe('InvalidRequest');
    expect(thrown(() => mergeFrom([] as object, {})).reason).toBe('InvalidRequest');
  });
});

describe('patches applied by the API server', () => {
  let transport: Transport;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let ns: string;

  /** PATCH (or any request) through the transport; a non-2xx answer throws the ClientError it stands for. */
  async function send<T>(method: 'GET' | 'PUT' | 'PATCH', path: string, patch?: Patch, query?: Record<string, string>): Promise<T> {
    const res = await transport.request({
      method,
      path,
      ...(query ? { query } : {}),
      ...(patch ? { contentType: patchContentType(patch.type), body: patch.data } : {}),
    });
    if (res.status < 200 || res.status > 299) throw ClientError.fromResponse(method, path, res.status, res.body);
    return JSON.parse(res.body) as T;
  }
  const cmPath = (name: string): string => `/api/v1/namespaces/${ns}/configmaps/${name}`;

  beforeAll(async () => {
    const kc = testKubeConfig();
    transport = createTransport(kc);
    core = kc.makeApiClient(CoreV1Api);
    apps = kc.makeApiClient(AppsV1Api);
    ns = uniqueName('patch');
    await core.createNamespace({ body: { metadata: { name: ns } } });
  });
  afterAll(async () => {
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    transport.close();
  });

  async function configMap(data: Record<string, string>, labels: Record<string, string> = {}): Promise<V1ConfigMap> {
    return core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: uniqueName('cm'), labels }, data } });
  }

  it('merge: adds, changes and (with null) removes fields', async () => {
    const cm = await configMap({ a: '1', b: '2' }, { app: 'web' });
    const out = await send<V1ConfigMap>('PATCH', cmPath(cm.metadata!.name!), mergePatch({ metadata: { labels: { tier: 'front' } }, data: { a: 'one', b: null, c: '3' } }));
    expect(out.data).toEqual({ a: 'one', c: '3' });
    expect(out.metadata?.labels).toEqual({ app: 'web', tier: 'front' });
  });

  it('json: operations in order, pointers escaped, and a failing test op is refused', async () => {
    const cm = await configMap({ a: '1', b: '2' });
    const name = cm.metadata!.name!;
    const out = await send<V1ConfigMap>(
      'PATCH',
      cmPath(name),
      jsonPatch([
        { op: 'test', path: '/data/a', value: '1' },
        { op: 'add', path: jsonPointer('metadata', 'labels'), value: {} },
        { op: 'add', path: jsonPointer('metadata', 'labels', 'app.kubernetes.io/name'), value: 'web' },
        { op: 'move', from: '/data/b', path: '/data/moved' },
        { op: 'replace', path: '/data/a', value: 'one' },
      ]),
    );
    expect(out.data).toEqual({ a: 'one', moved: '2' });
    expect(out.metadata?.labels).toEqual({ 'app.kubernetes.io/name': 'web' });

    const err = await send('PATCH', cmPath(name), jsonPatch([{ op: 'test', path: '/data/a', value: 'stale' }])).catch((e: unknown) => e);
    expect(isClientError(err)).toBe(true);
    expect((err as ClientError).code).toBe(422);
    expect(isInvalid(err)).toBe(true);
  });

  it('strategic: merges a Deployment\'s containers by name, where a merge patch replaces the list', async () => {
    const name = uniqueName('deploy');
    const labels = { app: name };
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              containers: [
                { name: 'app', image: 'registry.example/app:v1' },
                { name: 'sidecar', image: 'registry.example/sidecar:v1' },
              ],
            },
          },
        },
      },
    });
    const path = `/apis/apps/v1/namespaces/${ns}/deployments/${name}`;
    const bump = { spec: { template: { spec: { containers: [{ name: 'app', image: 'registry.example/app:v2' }] } } } };

    const strategic = await send<V1Deployment>('PATCH', path, strategicMergePatch(bump));
    expect(strategic.spec?.template.spec?.containers.map((c) => [c.name, c.image])).toEqual([
      ['app', 'registry.example/app:v2'],
      ['sidecar', 'registry.example/sidecar:v1'],
    ]);

    const merged = await send<V1Deployment>('PATCH', path, mergePatch(bump));
    expect(merged.spec?.template.spec?.containers.map((c) => [c.name, c.image])).toEqual([['app', 'registry.example/app:v2']]);
  });

  it('apply: server-side apply with a field manager creates, then owns the fields it sent', async () => {
    const name = uniqueName('applied');
    const intent = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { mode: 'on' } };
    const created = await send<V1ConfigMap>('PATCH', cmPath(name), applyPatch(intent), { fieldManager: 'kubeloop-test' });
    expect(created.data).toEqual({ mode: 'on' });
    const owner = created.metadata?.managedFields?.find((m) => m.manager === 'kubeloop-test');
    expect(owner?.operation).toBe('Apply');
    expect(JSON.stringify(owner?.fieldsV1)).toContain('f:mode');

    // dropping a field from the intent removes it, since this manager owned it
    const updated = await send<V1ConfigMap>('PATCH', cmPath(name), applyPatch({ ...intent, data: { level: 'high' } }), { fieldManager: 'kubeloop-test' });
    expect(updated.data).toEqual({ level: 'high' });

    // another manager changing an owned field conflicts, unless it forces
    const other = applyPatch({ ...intent, data: { level: 'low' } });
    const err = await send('PATCH', cmPath(name), other, { fieldManager: 'someone-else' }).catch((e: unknown) => e);
    expect(isConflict(err)).toBe(true);
    const forced = await send<V1ConfigMap>('PATCH', cmPath(name), other, { fieldManager: 'someone-else', force: 'true' });
    expect(forced.data).toEqual({ level: 'low' });
  });

  it('mergeFrom: the computed patch turns the live object into after', async () => {
    const before = await configMap({ keep: '1', change: 'old', drop: 'x' }, { app: 'web' });
    const after = structuredClone(before);
    after.data = { keep: '1', change: 'new', added: 'y' };
    after.metadata!.labels = { app: 'web', tier: 'front' };
    const out = await send<V1ConfigMap>('PATCH', cmPath(before.metadata!.name!), mergeFrom(before, after));
    expect(out.data).toEqual(after.data);
    expect(out.metadata?.labels).toEqual(after.metadata?.labels);
  });

  it('mergeFrom with optimisticLock: applies on an unchanged object, 409 Conflict after a concurrent change', async () => {
    const before = await configMap({ n: '0' });
    const name = before.metadata!.name!;
    const after = { ...before, data: { n: '1' } };
    const ok = await send<V1ConfigMap>('PATCH', cmPath(name), mergeFrom(before, after, { optimisticLock: true }));
    expect(ok.data).toEqual({ n: '1' });

    // `before` is now stale: someone else's write (ours above) moved the resourceVersion on
    const lost = { ...before, data: { n: 'lost update' } };
    const err = await send('PATCH', cmPath(name), mergeFrom(before, lost, { optimisticLock: true })).catch((e: unknown) => e);
    expect(isConflict(err)).toBe(true);
    expect((err as ClientError).code).toBe(409);
    // without the lock the same patch would have overwritten the newer value
    const live = await send<V1ConfigMap>('GET', cmPath(name));
    expect(live.data).toEqual({ n: '1' });
  });
});
