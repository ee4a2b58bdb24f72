/** Conformance: server-side apply and field ownership, on envtest and on the fake. */
import { describe, expect, it } from 'vitest';
import { isConflict, mergePatch } from '@kubeloop/client';
import { ConfigMap, Deployment } from '@kubeloop/scheme';
import { BACKENDS, useBackend, Widget } from './backends.js';
import { configMap, deployment, expectStatus, fieldsByManager, raw, widget } from './support.js';

function owners(obj: { metadata?: { managedFields?: { manager?: string; operation?: string; subresource?: string }[] } }): string[] {
  return (obj.metadata?.managedFields ?? []).map((m) => `${m.manager}/${m.operation}${m.subresource ? `/${m.subresource}` : ''}`).sort();
}

describe.each(BACKENDS)('server-side apply ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  it('creates the object, owned by the applier with operation Apply', async () => {
    const client = h().client('applier');
    const applied = await client.apply(configMap(h().namespace, h().name('cm'), { a: '1' }));
    expect(applied.data).toEqual({ a: '1' });
    expect(applied.metadata.managedFields).toEqual([expect.objectContaining({ manager: 'applier', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { 'f:a': {} } } })]);
  });

  it('answers 201 when it creates and 200 when it updates', async () => {
    const name = h().name('cm');
    const path = `/api/v1/namespaces/${h().namespace}/configmaps/${name}`;
    const body = configMap(h().namespace, name, { a: '1' });
    const first = await raw(h(), 'PATCH', path, { body, contentType: 'application/apply-patch+yaml', query: { fieldManager: 'raw' } });
    expect(first.status).toBe(201);
    const second = await raw(h(), 'PATCH', path, { body: { ...body, data: { a: '2' } }, contentType: 'application/apply-patch+yaml', query: { fieldManager: 'raw' } });
    expect(second.status).toBe(200);
  });

  it('takes YAML bodies', async () => {
    const name = h().name('cm');
    const yaml = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${h().namespace}\ndata:\n  mode: yaml\n`;
    const res = await raw(h(), 'PATCH', `/api/v1/namespaces/${h().namespace}/configmaps/${name}`, { body: yaml, contentType: 'application/apply-patch+yaml', query: { fieldManager: 'yaml' } });
    expect(res.status).toBe(201);
    expect((await h().client().get(ConfigMap, { namespace: h().namespace, name })).data).toEqual({ mode: 'yaml' });
  });

  it('the same configuration again changes nothing', async () => {
    const client = h().client('applier');
    const cfg = configMap(h().namespace, h().name('cm'), { a: '1' });
    const first = await client.apply(cfg);
    const second = await client.apply(cfg);
    expect(second.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
  });

  it('a second manager setting another value is 409 Conflict naming the owner and the field', async () => {
    const name = h().name('cm');
    await h().client('alpha').apply(configMap(h().namespace, name, { a: '1' }));
    const err = await expectStatus(h().client('beta').apply(configMap(h().namespace, name, { a: '2' })), 409, 'Conflict');
    expect(isConflict(err)).toBe(true);
    expect(err.status?.message).toBe('Apply failed with 1 conflict: conflict with "alpha": .data.a');
    expect(err.status?.details?.causes).toEqual([{ reason: 'FieldManagerConflict', message: 'conflict with "alpha"', field: '.data.a' }]);
  });

  it('conflicts are listed leaves first at each level, then subtrees (a field set\'s order, not the paths\' text order)', async () => {
    const name = h().name('w');
    await h().client('alpha').apply(widget(h().namespace, name, { replicas: 1, ports: [{ name: 'http', port: 80 }] }));
    const err = await expectStatus(h().client('beta').apply(widget(h().namespace, name, { replicas: 2, ports: [{ name: 'http', port: 81 }] })), 409, 'Conflict');
    // By text `.spec.ports[...]` would come first; the server lists the leaf `.spec.replicas` before the `ports` subtree.
    expect(err.status?.details?.causes?.map((c) => c.field)).toEqual(['.spec.replicas', '.spec.ports[name="http"].port']);
  });

  it('a second manager setting the same value shares ownership', async () => {
    const name = h().name('cm');
    await h().client('alpha').apply(configMap(h().namespace, name, { a: '1' }));
    const shared = await h().client('beta').apply(configMap(h().namespace, name, { a: '1' }));
    expect(owners(shared)).toEqual(['alpha/Apply', 'beta/Apply']);
  });

  it('an applier that leaves out a list item\'s defaulted key field (a container port without protocol) sets the same item: the same values share ownership, no conflict', async () => {
    const name = h().name('d');
    const containers = [{ name: 'app', image: 'app:v1', ports: [{ containerPort: 80 }] }];
    await h().client('updater').create(deployment(h().namespace, name, containers));
    const shared = await h().client('applier').apply(deployment(h().namespace, name, containers));
    expect((await h().client().get(Deployment, { namespace: h().namespace, name })).spec?.template.spec?.containers[0]?.ports).toEqual([{ containerPort: 80, protocol: 'TCP' }]);
    expect(owners(shared)).toEqual(['applier/Apply', 'updater/Update']);
  });

  it('force takes the field from its owner', async () => {
    const name = h().name('cm');
    await h().client('alpha').apply(configMap(h().namespace, name, { a: '1', b: '1' }));
    const forced = await h().client('beta').apply(configMap(h().namespace, name, { a: '2' }), { force: true });
    expect(forced.data).toEqual({ a: '2', b: '1' });
    const fields = fieldsByManager(forced);
    expect(fields).toEqual({ alpha: { 'f:data': { 'f:b': {} } }, beta: { 'f:data': { 'f:a': {} } } });
  });

  it('a field the applier stops applying is removed when no one else owns it', async () => {
    const client = h().client('applier');
    const name = h().name('cm');
    await client.apply(configMap(h().namespace, name, { a: '1', b: '1' }));
    const after = await client.apply(configMap(h().namespace, name, { a: '1' }));
    expect(after.data).toEqual({ a: '1' });
  });

  it('a field the applier stops applying stays when another manager also owns it', async () => {
    const name = h().name('cm');
    await h().client('alpha').apply(configMap(h().namespace, name, { a: '1', b: '1' }));
    await h().client('beta').apply(configMap(h().namespace, name, { b: '1' }));
    const after = await h().client('alpha').apply(configMap(h().namespace, name, { a: '1' }));
    expect(after.data).toEqual({ a: '1', b: '1' });
  });

  it('conflicts with a field an update set, naming the updater', async () => {
    const name = h().name('cm');
    await h().client('updater').create(configMap(h().namespace, name, { a: '1' }));
    const err = await expectStatus(h().client('applier').apply(configMap(h().namespace, name, { a: '2' })), 409, 'Conflict');
    expect(err.status?.message).toContain('conflict with "updater"');
  });

  it('an update after an apply takes the fields it changes', async () => {
    const name = h().name('cm');
    await h().client('applier').apply(configMap(h().namespace, name, { a: '1', b: '1' }));
    const patched = await h().client('patcher').patch(ConfigMap, { namespace: h().namespace, name }, mergePatch({ data: { a: '2' } }));
    const fields = fieldsByManager(patched);
    expect(fields).toEqual({ applier: { 'f:data': { 'f:b': {} } }, patcher: { 'f:data': { 'f:a': {} } } });
  });

  it('labels of two appliers live side by side', async () => {
    const name = h().name('cm');
    const base = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: h().namespace } };
    await h().client('alpha').apply({ ...base, metadata: { ...base.metadata, labels: { a: '1' } } });
    const both = await h().client('beta').apply({ ...base, metadata: { ...base.metadata, labels: { b: '2' } } });
    expect(both.metadata.labels).toEqual({ a: '1', b: '2' });
  });

  it('an empty map one applier set and the server dropped conflicts with another applier setting it', async () => {
    const name = h().name('cm');
    await h().client('alpha').apply(configMap(h().namespace, name, {}));
    const err = await expectStatus(h().client('beta').apply(configMap(h().namespace, name, {})), 409, 'Conflict');
    expect(err.status?.message).toBe('Apply failed with 1 conflict: conflict with "alpha": .data');
  });

  it('an empty map applied over one an updater filled changes nothing there: no conflict, and forced or not the updater keeps it (found by the differential fuzzer)', async () => {
    for (const force of [false, true]) {
      const name = h().name('cm');
      const base = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: h().namespace } };
      await h().client('updater').create({ ...base, metadata: { ...base.metadata, annotations: { n: '1' } }, data: { a: '1' } });
      const applied = await h().client('alpha').apply({ ...base, metadata: { ...base.metadata, annotations: {} }, data: {} }, { force });
      expect(applied.data).toEqual({ a: '1' });
      expect(applied.metadata.annotations).toEqual({ n: '1' });
      expect(fieldsByManager(applied)).toEqual({
        alpha: { 'f:data': {}, 'f:metadata': { 'f:annotations': {} } },
        updater: { 'f:data': { '.': {}, 'f:a': {} }, 'f:metadata': { 'f:annotations': { '.': {}, 'f:n': {} } } },
      });
      // it changed nothing: its new entry has no time
      expect(applied.metadata.managedFields?.find((m) => m.manager === 'alpha')?.time).toBeUndefined();
    }
  });

  it('containers of two appliers merge by name', async () => {
    const name = h().name('d');
    await h().client('alpha').apply(deployment(h().namespace, name, [{ name: 'app', image: 'app:v1' }]));
    const both = await h().client('beta').apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: h().namespace },
      spec: { template: { spec: { containers: [{ name: 'sidecar', image: 'side:v1' }] } } },
    });
    expect((both.spec?.template?.spec?.containers ?? []).map((c) => c.name).sort()).toEqual(['app', 'sidecar']);
    void Deployment;
  });

  it('records a Deployment\'s fields as kube-apiserver does: atomic selector, containers, env and ports by key', async () => {
    const name = h().name('d');
    const applied = await h().client('a').apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: h().namespace, labels: { x: '1' } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'd' } },
        template: { metadata: { labels: { app: 'd' } }, spec: { containers: [{ name: 'app', image: 'a:1', ports: [{ containerPort: 80, protocol: 'TCP' }], env: [{ name: 'E', value: '1' }] }] } },
      },
    });
    expect(fieldsByManager(applied)).toEqual({
      a: {
        'f:metadata': { 'f:labels': { 'f:x': {} } },
        'f:spec': {
          'f:replicas': {},
          'f:selector': {},
          'f:template': {
            'f:metadata': { 'f:labels': { 'f:app': {} } },
            'f:spec': {
              'f:containers': {
                'k:{"name":"app"}': {
                  '.': {},
                  'f:env': { 'k:{"name":"E"}': { '.': {}, 'f:name': {}, 'f:value': {} } },
                  'f:image': {},
                  'f:name': {},
                  'f:ports': { 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {}, 'f:protocol': {} } },
                },
              },
            },
          },
        },
      },
    });
  });

  it('an item of an atomic struct type (a LocalObjectReference in imagePullSecrets) is recorded whole: its key and nothing under it', async () => {
    const d = deployment(h().namespace, h().name('d'));
    (d.spec['template'] as { spec: Record<string, unknown> }).spec['imagePullSecrets'] = [{ name: 'pull' }];
    const created = await h().client('creator').create(d);
    const spec = ((fieldsByManager(created)['creator'] as Record<string, Record<string, Record<string, Record<string, unknown>>>>)['f:spec']!['f:template']!['f:spec'])!;
    expect(spec['f:imagePullSecrets']).toEqual({ '.': {}, 'k:{"name":"pull"}': {} });
    const applied = await h().client('applier').apply({ ...d, spec: { ...d.spec, template: { ...(d.spec['template'] as object), spec: { containers: [{ name: 'app', image: 'app:v1' }], imagePullSecrets: [{ name: 'pull' }] } } } });
    const mine = ((fieldsByManager(applied)['applier'] as Record<string, Record<string, Record<string, Record<string, unknown>>>>)['f:spec']!['f:template']!['f:spec'])!;
    expect(mine['f:imagePullSecrets']).toEqual({ 'k:{"name":"pull"}': {} });
  });

  it('a container the applier alone applied goes when it stops applying it', async () => {
    const name = h().name('d');
    const client = h().client('a');
    await client.apply(deployment(h().namespace, name, [{ name: 'app', image: 'a:1' }, { name: 'side', image: 's:1' }]));
    const after = await client.apply(deployment(h().namespace, name, [{ name: 'app', image: 'a:1' }]));
    expect((after.spec?.['template'] as { spec: { containers: { name: string }[] } }).spec.containers.map((c) => c.name)).toEqual(['app']);
  });

  it('a list-type map of a custom resource merges by key across appliers', async () => {
    const name = h().name('w');
    await h().client('alpha').apply(widget(h().namespace, name, { ports: [{ name: 'http', port: 80 }] }));
    const both = await h().client('beta').apply(widget(h().namespace, name, { ports: [{ name: 'https', port: 443 }] }));
    expect(((both.spec?.['ports'] ?? []) as { name: string }[]).map((p) => p.name).sort()).toEqual(['http', 'https']);
  });

  it('a list-type map merged by apply keeps the order structured-merge-diff gives it', async () => {
    const ports = (names: string[]): { name: string; port: number }[] => names.map((n) => ({ name: n, port: 1 }));
    const names = (w: { spec?: Record<string, unknown> }): string[] => ((w.spec?.['ports'] ?? []) as { name: string }[]).map((p) => p.name);
    const first = h().name('w');
    await h().client('alpha').apply(widget(h().namespace, first, { ports: ports(['a', 'b', 'c']) }));
    expect(names(await h().client('beta').apply(widget(h().namespace, first, { ports: ports(['c', 'a']) })))).toEqual(['b', 'c', 'a']);
    const second = h().name('w');
    await h().client('alpha').apply(widget(h().namespace, second, { ports: ports(['a', 'b', 'c']) }));
    expect(names(await h().client('beta').apply(widget(h().namespace, second, { ports: ports(['d', 'a']) })))).toEqual(['d', 'a', 'b', 'c']);
  });

  it('an atomic list (no list type) is owned whole: another value conflicts', async () => {
    const name = h().name('w');
    await h().client('alpha').apply(widget(h().namespace, name, { tags: ['a'] }));
    const err = await expectStatus(h().client('beta').apply(widget(h().namespace, name, { tags: ['b'] })), 409, 'Conflict');
    expect(err.status?.message).toContain('.spec.tags');
  });

  it('a stale resourceVersion in the configuration is 409 Conflict', async () => {
    const client = h().client('applier');
    const name = h().name('cm');
    const first = await client.apply(configMap(h().namespace, name, { a: '1' }));
    await client.apply(configMap(h().namespace, name, { a: '2' }));
    const stale = configMap(h().namespace, name, { a: '3' });
    await expectStatus(client.apply({ ...stale, metadata: { ...stale.metadata, resourceVersion: first.metadata.resourceVersion! } } as typeof stale), 409, 'Conflict');
  });

  it('without a field manager is 422 Invalid', async () => {
    const name = h().name('cm');
    const res = await raw(h(), 'PATCH', `/api/v1/namespaces/${h().namespace}/configmaps/${name}`, { body: configMap(h().namespace, name), contentType: 'application/apply-patch+yaml' });
    expect(res.status).toBe(422);
    expect(res.body['reason']).toBe('Invalid');
  });

  it('with a name that differs from the path is 400 BadRequest', async () => {
    const res = await raw(h(), 'PATCH', `/api/v1/namespaces/${h().namespace}/configmaps/${h().name('one')}`, {
      body: configMap(h().namespace, 'another'),
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'x' },
    });
    expect(res.status).toBe(400);
  });

  it('to the status subresource changes status only, recorded with subresource status', async () => {
    const name = h().name('w');
    await h().client('owner').apply(widget(h().namespace, name, { size: 1 }));
    const cfg = { ...widget(h().namespace, name, { size: 99 }), status: { phase: 'Ready' } };
    const after = await h().client('status-writer').status().apply(cfg);
    expect(after.status).toEqual({ phase: 'Ready' });
    expect(after.spec).toEqual({ size: 1 });
    expect(owners(after)).toEqual(['owner/Apply', 'status-writer/Apply/status']);
  });

  it('to the main resource ignores status', async () => {
    const name = h().name('w');
    const applied = await h().client('owner').apply({ ...widget(h().namespace, name, { size: 1 }), status: { phase: 'Forged' } });
    expect(applied.status).toBeUndefined();
    void Widget;
  });

  it('conditions of two status appliers merge by type', async () => {
    const name = h().name('w');
    await h().client('owner').apply(widget(h().namespace, name));
    await h().client('a').status().apply({ ...widget(h().namespace, name), status: { conditions: [{ type: 'Ready', status: 'True' }] } });
    const both = await h().client('b').status().apply({ ...widget(h().namespace, name), status: { conditions: [{ type: 'Synced', status: 'False' }] } });
    expect((both.status?.conditions ?? []).map((c) => c.type).sort()).toEqual(['Ready', 'Synced']);
  });

  it('an owner reference is owned whole: a second applier shares it at the same value and conflicts over any other field of it; an apply that changes nothing records its applier without a time', async () => {
    const ns = h().namespace;
    const name = h().name('c');
    const owner = (await raw(h(), 'POST', `/api/v1/namespaces/${ns}/configmaps`, { body: { metadata: { name: h().name('owner') } } })).body as { metadata: { name: string; uid: string } };
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', name: owner.metadata.name, uid: owner.metadata.uid };
    const applied = (who: string, extra: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> =>
      raw(h(), 'PATCH', `/api/v1/namespaces/${ns}/configmaps/${name}`, {
        body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ownerReferences: [{ ...ref, ...extra }] } }),
        contentType: 'application/apply-patch+yaml',
        query: { fieldManager: who },
      });
    expect((await applied('a', { controller: true })).status).toBe(201);
    const shared = await applied('b', { controller: true });
    expect(shared.status).toBe(200);
    const entries = (shared.body['metadata'] as { managedFields: { manager: string; time?: string; fieldsV1: unknown }[] }).managedFields;
    expect(entries.map((e) => [e.manager, e.time === undefined])).toEqual([['b', true], ['a', false]]);
    expect(entries[0]!.fieldsV1).toEqual({ 'f:metadata': { 'f:ownerReferences': { [`k:{"uid":"${ref.uid}"}`]: {} } } });
    for (const extra of [{ controller: false }, { controller: true, blockOwnerDeletion: true }, { controller: true, name: 'other' }]) {
      const res = await applied('c', extra);
      expect(res.status).toBe(409);
      expect(res.body['message']).toBe(`Apply failed with 2 conflicts: conflicts with "a":\n- .metadata.ownerReferences[uid="${ref.uid}"]\nconflicts with "b":\n- .metadata.ownerReferences[uid="${ref.uid}"]`);
    }
    // forced, the applied reference replaces the live one whole: a field it leaves out goes (found by the differential fuzzer)
    const forced = await raw(h(), 'PATCH', `/api/v1/namespaces/${ns}/configmaps/${name}`, {
      body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ownerReferences: [{ ...ref, blockOwnerDeletion: true }] } }),
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'c', force: 'true' },
    });
    expect(forced.status).toBe(200);
    expect((forced.body['metadata'] as Record<string, unknown>)['ownerReferences']).toEqual([{ ...ref, blockOwnerDeletion: true }]);
  });

  it('an object created with nothing to own has no managed fields; its updates are not tracked, and its first apply finds what it holds owned by before-first-apply', async () => {
    const ns = h().namespace;
    const name = h().name('bare');
    const created = await raw(h(), 'POST', `/api/v1/namespaces/${ns}/configmaps`, { body: { metadata: { name } }, query: { fieldManager: 'creator' } });
    expect((created.body['metadata'] as Record<string, unknown>)['managedFields']).toBeUndefined();
    const updated = await raw(h(), 'PUT', `/api/v1/namespaces/${ns}/configmaps/${name}`, { body: { metadata: { name, labels: { team: 'a' } }, data: { k: 'v' } }, query: { fieldManager: 'updater' } });
    expect(updated.status).toBe(200);
    expect((updated.body['metadata'] as Record<string, unknown>)['managedFields']).toBeUndefined();
    const res = await raw(h(), 'PATCH', `/api/v1/namespaces/${ns}/configmaps/${name}`, {
      body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { team: 'b' } }, data: { k: 'w' } }),
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'applier' },
    });
    expect(res.status).toBe(409);
    expect(res.body['message']).toBe('Apply failed with 2 conflicts: conflicts with "before-first-apply" using v1:\n- .data.k\n- .metadata.labels.team');
    const forced = await raw(h(), 'PATCH', `/api/v1/namespaces/${ns}/configmaps/${name}`, {
      body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { team: 'b' } } }),
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'applier', force: 'true' },
    });
    expect(forced.status).toBe(200);
    expect(fieldsByManager(forced.body as never)).toEqual({ 'before-first-apply': { 'f:data': { '.': {}, 'f:k': {} }, 'f:metadata': { 'f:labels': {} } }, applier: { 'f:metadata': { 'f:labels': { 'f:team': {} } } } });
  });

  it('a map value applied as null is kept as an empty value of the map\'s type (data, labels, annotations, a Secret\'s stringData), and owned', async () => {
    const ns = h().namespace;
    const cm = h().name('nul');
    const applied = await raw(h(), 'PATCH', `/api/v1/namespaces/${ns}/configmaps/${cm}`, {
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: cm, labels: { a: null, b: '1' }, annotations: { a: null } }, data: { a: null, b: '1' } },
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'm' },
    });
    expect(applied.status).toBe(201);
    const got = await h().client('reader').get(ConfigMap, { namespace: ns, name: cm });
    expect(got.data).toEqual({ a: '', b: '1' });
    expect(got.metadata?.labels).toEqual({ a: '', b: '1' });
    expect(got.metadata?.annotations).toEqual({ a: '' });
    expect(fieldsByManager(applied.body as never)['m']).toEqual({ 'f:data': { 'f:a': {}, 'f:b': {} }, 'f:metadata': { 'f:annotations': { 'f:a': {} }, 'f:labels': { 'f:a': {}, 'f:b': {} } } });
    const secret = h().name('nul');
    const s = await raw(h(), 'PATCH', `/api/v1/namespaces/${ns}/secrets/${secret}`, {
      body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: secret }, stringData: { a: null, b: 'x' } },
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'm' },
    });
    expect(s.status).toBe(201);
    expect((s.body as { data?: unknown }).data).toEqual({ a: '', b: 'eA==' });
  });

  it('a custom resource stores what its schema prunes from an apply: read pruned, the next write that changes nothing still writes, an apply keeping it writes every time', async () => {
    const ns = h().namespace;
    const name = h().name('w');
    const path = `/apis/conformance.kubeloop.dev/v1/namespaces/${ns}/widgets/${name}`;
    const rvOf = (res: { body: Record<string, unknown> }): number => Number((res.body['metadata'] as { resourceVersion: string }).resourceVersion);
    // a list item's undeclared field (Widget's spec.ports items do not keep unknown fields)
    const cfg = { ...widget(ns, name, { replicas: 0, ports: [{ name: 'grpc', port: 1, note: 'pruned' }] }) };
    const apply = () => raw(h(), 'PATCH', path, { body: cfg, contentType: 'application/apply-patch+yaml', query: { fieldManager: 'alpha' } });
    const merge = (body: unknown, sub = '') => raw(h(), 'PATCH', `${path}${sub}`, { body, contentType: 'application/merge-patch+json' });
    const created = await apply();
    expect({ status: created.status, spec: created.body['spec'] }).toEqual({ status: 201, spec: { replicas: 0, ports: [{ name: 'grpc', port: 1 }] } });
    // a patch that changes nothing visible writes once (the stored bytes held the pruned field), then no more
    const first = await merge({});
    expect(rvOf(first)).toBeGreaterThan(rvOf(created));
    expect(rvOf(await merge({}))).toBe(rvOf(first));
    // the same apply again: a new resourceVersion each time
    const again = await apply();
    expect(rvOf(again)).toBeGreaterThan(rvOf(first));
    const third = await apply();
    expect(rvOf(third)).toBeGreaterThan(rvOf(again));
    // a scale to the replicas it has (found by the differential fuzzer: the server's watch saw a MODIFIED the fake did not send)
    const scaled = await merge({ spec: { replicas: 0 } }, '/scale');
    expect(scaled.status).toBe(200);
    const read = await raw(h(), 'GET', path);
    expect(rvOf(read)).toBeGreaterThan(rvOf(third));
    expect(read.body['spec']).toEqual({ replicas: 0, ports: [{ name: 'grpc', port: 1 }] });
    expect(rvOf(await merge({ spec: { replicas: 0 } }, '/scale'))).toBe(rvOf(read));
  });

  it('a custom resource applied with empty labels and annotations stores them unread: the next write that changes nothing still writes, once', async () => {
    const ns = h().namespace;
    const name = h().name('w');
    const path = `/apis/conformance.kubeloop.dev/v1/namespaces/${ns}/widgets/${name}`;
    const rvOf = (res: { body: Record<string, unknown> }): number => Number((res.body['metadata'] as { resourceVersion: string }).resourceVersion);
    const cfg = { ...widget(ns, name, { color: 'red' }), metadata: { name, namespace: ns, labels: {}, annotations: {} } };
    const created = await raw(h(), 'PATCH', path, { body: cfg, contentType: 'application/apply-patch+yaml', query: { fieldManager: 'alpha' } });
    expect(created.status).toBe(201);
    expect(created.body['metadata']).not.toHaveProperty('labels');
    expect(fieldsByManager(created.body as never)['alpha']).toEqual({ 'f:metadata': { 'f:annotations': {}, 'f:labels': {} }, 'f:spec': { 'f:color': {} } });
    const merge = () => raw(h(), 'PATCH', path, { body: {}, contentType: 'application/merge-patch+json' });
    const first = await merge();
    expect(rvOf(first)).toBeGreaterThan(rvOf(created));
    expect(rvOf(await merge())).toBe(rvOf(first));
  });

  it('an apply whose map list repeats a key is the typed converter\'s 500, once per repeat; an update storing one owns the repeated key alone', async () => {
    const ns = h().namespace;
    const name = h().name('d');
    const path = `/apis/apps/v1/namespaces/${ns}/deployments/${name}`;
    const withContainer = (container: Record<string, unknown>) => ({ ...deployment(ns, name, [container as { name: string; image: string }]), metadata: { name } });
    const applied = await raw(h(), 'PATCH', path, {
      body: withContainer({ name: 'c', image: 'i', env: [{ name: 'A', value: '1' }, { name: 'A', value: '2' }, { name: 'A' }], ports: [{ containerPort: 80 }, { containerPort: 80, hostPort: 1 }] }),
      contentType: 'application/apply-patch+yaml',
      query: { fieldManager: 'alpha' },
    });
    // several problems in the order the server meets them, which is Go's map order: compared as a set
    const [head, ...lines] = String(applied.body['message']).split('\n');
    expect({ status: applied.status, head, lines: lines.sort() }).toEqual({
      status: 500,
      head: `failed to create typed patch object (/${name}; apps/v1, Kind=Deployment): errors:`,
      lines: ['  .spec.template.spec.containers[name="c"].env: duplicate entries for key [name="A"]', '  .spec.template.spec.containers[name="c"].env: duplicate entries for key [name="A"]', '  .spec.template.spec.containers[name="c"].ports: duplicate entries for key [containerPort=80,protocol="TCP"]'],
    });
    const created = await raw(h(), 'POST', `/apis/apps/v1/namespaces/${ns}/deployments`, { body: withContainer({ name: 'c', image: 'i', env: [{ name: 'A', value: '1' }, { name: 'A', value: '2' }, { name: 'B', value: '3' }] }) });
    expect(created.status).toBe(201);
    const [entry] = (created.body['metadata'] as { managedFields: { fieldsV1: unknown }[] }).managedFields;
    const fields = entry!.fieldsV1 as { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': Record<string, { 'f:env': unknown }> } } } };
    expect(fields['f:spec']['f:template']['f:spec']['f:containers']['k:{"name":"c"}']!['f:env']).toEqual({ '.': {}, 'k:{"name":"A"}': {}, 'k:{"name":"B"}': { '.': {}, 'f:name': {}, 'f:value': {} } });
  });

  it('conflicts with one manager\'s updates through the scale subresource and of the main resource: grouped in the order of the managers\' identifiers (the subresource\'s first)', async () => {
    const ns = h().namespace;
    const name = h().name('w');
    const path = `/apis/conformance.kubeloop.dev/v1/namespaces/${ns}/widgets/${name}`;
    await h().client('owner').create(widget(ns, name, { color: 'red', replicas: 1 }));
    expect((await raw(h(), 'PATCH', `${path}/scale`, { body: { spec: { replicas: 2 } }, contentType: 'application/merge-patch+json', query: { fieldManager: 'owner' } })).status).toBe(200);
    const res = await raw(h(), 'PATCH', path, { body: widget(ns, name, { color: 'blue', replicas: 3 }), contentType: 'application/apply-patch+yaml', query: { fieldManager: 'beta' } });
    expect({ status: res.status, message: res.body['message'] }).toEqual({
      status: 409,
      message: 'Apply failed with 2 conflicts: conflicts with "owner" with subresource "scale" using conformance.kubeloop.dev/v1:\n- .spec.replicas\nconflicts with "owner" using conformance.kubeloop.dev/v1:\n- .spec.color',
    });
  });
});
