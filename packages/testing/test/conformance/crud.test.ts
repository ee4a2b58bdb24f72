/** Conformance: create, get, update, delete and their errors, on envtest and on the fake. */
import { describe, expect, it } from 'vitest';
import { isAlreadyExists, isConflict, isNotFound, mergePatch } from '@kubeloop/client';
import { ConfigMap, Secret } from '@kubeloop/scheme';
import { BACKENDS, Gadget, useBackend, Widget } from './backends.js';
import { configMap, expectStatus, raw, widget } from './support.js';

describe.each(BACKENDS)('create, get, update, delete ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  describe('create', () => {
    it('stores the object and answers with uid, resourceVersion and creationTimestamp', async () => {
      const { client, namespace } = { client: h().client(), namespace: h().namespace };
      const created = await client.create(configMap(namespace, h().name('cm'), { a: '1' }));
      expect(created.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
      expect(created.metadata.resourceVersion).toMatch(/^\d+$/);
      expect(created.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      const got = await client.get(ConfigMap, { namespace, name: created.metadata.name });
      expect(got.data).toEqual({ a: '1' });
      expect(got.metadata?.resourceVersion).toBe(created.metadata.resourceVersion);
      expect(got.metadata?.uid).toBe(created.metadata.uid);
    });

    it('answers 201 Created', async () => {
      const res = await raw(h(), 'POST', `/api/v1/namespaces/${h().namespace}/configmaps`, { body: configMap(h().namespace, h().name('cm')) });
      expect(res.status).toBe(201);
      expect(res.body['kind']).toBe('ConfigMap');
    });

    it('a name that exists is 409 AlreadyExists with the Status details', async () => {
      const client = h().client();
      const name = h().name('dup');
      await client.create(configMap(h().namespace, name));
      const err = await expectStatus(client.create(configMap(h().namespace, name)), 409, 'AlreadyExists');
      expect(isAlreadyExists(err)).toBe(true);
      expect(err.status?.message).toBe(`configmaps "${name}" already exists`);
      expect(err.status?.details).toMatchObject({ name, kind: 'configmaps' });
    });

    it('a custom resource that exists is AlreadyExists naming resource.group', async () => {
      const client = h().client();
      const name = h().name('w');
      await client.create(widget(h().namespace, name));
      const err = await expectStatus(client.create(widget(h().namespace, name)), 409, 'AlreadyExists');
      expect(err.status?.message).toBe(`widgets.conformance.kubeloop.dev "${name}" already exists`);
      expect(err.status?.details).toMatchObject({ name, group: 'conformance.kubeloop.dev', kind: 'widgets' });
    });

    it('generateName makes a unique name from the prefix', async () => {
      const client = h().client();
      const a = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'gen-', namespace: h().namespace } });
      const b = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { generateName: 'gen-', namespace: h().namespace } });
      expect(a.metadata.name).toMatch(/^gen-[a-z0-9]{5}$/);
      expect(b.metadata.name).not.toBe(a.metadata.name);
      expect(a.metadata.generateName).toBe('gen-');
    });

    it('neither name nor generateName is 422 Invalid on metadata.name', async () => {
      const res = await raw(h(), 'POST', `/api/v1/namespaces/${h().namespace}/configmaps`, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: {} } });
      expect(res.status).toBe(422);
      expect(res.body['reason']).toBe('Invalid');
      const causes = (res.body['details'] as { causes: { field: string; reason: string }[] }).causes;
      expect(causes).toContainEqual(expect.objectContaining({ field: 'metadata.name', reason: 'FieldValueRequired' }));
    });

    it('an invalid name is 422 Invalid', async () => {
      const err = await expectStatus(h().client().create(configMap(h().namespace, 'Not_Valid')), 422, 'Invalid');
      expect(err.status?.details?.causes?.[0]?.field).toBe('metadata.name');
      expect(err.message).toContain('RFC 1123');
    });

    it('an invalid label value is 422 Invalid', async () => {
      const err = await expectStatus(h().client().create(configMap(h().namespace, h().name('cm'), {}, { app: 'not a valid value' })), 422, 'Invalid');
      expect(err.status?.details?.causes?.[0]?.field).toBe('metadata.labels');
    });

    it('an invalid label key is 422 Invalid', async () => {
      await expectStatus(h().client().create(configMap(h().namespace, h().name('cm'), {}, { 'bad key!': 'x' })), 422, 'Invalid');
    });

    it('an owner reference without uid is 422 Invalid', async () => {
      const obj = { ...configMap(h().namespace, h().name('cm')), metadata: { name: h().name('cm'), namespace: h().namespace, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: '' }] } };
      const err = await expectStatus(h().client().create(obj), 422, 'Invalid');
      expect(err.status?.details?.causes?.some((c) => c.field === 'metadata.ownerReferences[0].uid')).toBe(true);
    });

    it('two controller owner references are 422 Invalid', async () => {
      const ref = (uid: string): { apiVersion: string; kind: string; name: string; uid: string; controller: boolean } => ({ apiVersion: 'v1', kind: 'ConfigMap', name: uid, uid, controller: true });
      const obj = { ...configMap(h().namespace, h().name('cm')), metadata: { name: h().name('cm'), namespace: h().namespace, ownerReferences: [ref('a'), ref('b')] } };
      await expectStatus(h().client().create(obj), 422, 'Invalid');
    });

    it('in a namespace that does not exist is 404 NotFound naming the namespace', async () => {
      const missing = h().name('nope');
      const err = await expectStatus(h().client().create(configMap(missing, 'cm')), 404, 'NotFound');
      expect(err.status?.message).toBe(`namespaces "${missing}" not found`);
      expect(err.status?.details).toMatchObject({ name: missing, kind: 'namespaces' });
    });

    it('a body namespace that differs from the path is 400 BadRequest', async () => {
      const res = await raw(h(), 'POST', `/api/v1/namespaces/${h().namespace}/configmaps`, { body: configMap('other', h().name('cm')) });
      expect(res.status).toBe(400);
      expect(res.body['reason']).toBe('BadRequest');
    });

    it('a body of another kind is 400 BadRequest', async () => {
      const res = await raw(h(), 'POST', `/api/v1/namespaces/${h().namespace}/configmaps`, { body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'x' } } });
      expect(res.status).toBe(400);
    });

    it('server-set metadata in the body is replaced', async () => {
      const obj = { ...configMap(h().namespace, h().name('cm')), metadata: { name: h().name('cm'), namespace: h().namespace, uid: 'mine', resourceVersion: '', creationTimestamp: '2001-01-01T00:00:00Z' } };
      const created = await h().client().create(obj);
      expect(created.metadata.uid).not.toBe('mine');
      expect(created.metadata.creationTimestamp).not.toBe('2001-01-01T00:00:00Z');
    });

    it('a cluster-scoped custom resource is created, read and deleted without a namespace', async () => {
      const client = h().client();
      const name = h().name('gadget');
      const created = await client.create({ apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Gadget', metadata: { name }, spec: { a: 1 } });
      expect(created.metadata.namespace).toBeUndefined();
      expect((await client.get(Gadget, { name })).spec).toEqual({ a: 1 });
      await client.delete(Gadget, { name });
      await expectStatus(client.get(Gadget, { name }), 404, 'NotFound');
    });

    it('dry run answers the object but stores nothing', async () => {
      const client = h().client();
      const name = h().name('dry');
      const answered = await client.create(configMap(h().namespace, name, { a: '1' }), { dryRun: true });
      expect(answered.metadata.name).toBe(name);
      expect(answered.metadata.uid).toBeTruthy();
      await expectStatus(client.get(ConfigMap, { namespace: h().namespace, name }), 404, 'NotFound');
    });
  });

  describe('get', () => {
    it('a missing object is 404 NotFound with the Status the server sends', async () => {
      const err = await expectStatus(h().client().get(ConfigMap, { namespace: h().namespace, name: 'missing' }), 404, 'NotFound');
      expect(isNotFound(err)).toBe(true);
      expect(err.status).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'configmaps "missing" not found', reason: 'NotFound', details: { name: 'missing', kind: 'configmaps' }, code: 404 });
    });

    it('a missing custom resource is NotFound naming resource.group', async () => {
      const err = await expectStatus(h().client().get(Widget, { namespace: h().namespace, name: 'missing' }), 404, 'NotFound');
      expect(err.status?.message).toBe('widgets.conformance.kubeloop.dev "missing" not found');
    });

    it('an unknown resource path is 404', async () => {
      const res = await raw(h(), 'GET', `/api/v1/namespaces/${h().namespace}/nosuchthings`);
      expect(res.status).toBe(404);
    });

    it('a built-in object names its apiVersion and kind', async () => {
      const res = await raw(h(), 'GET', '/api/v1/namespaces/default');
      expect(res.body).toMatchObject({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
    });
  });

  describe('update', () => {
    it('with the current resourceVersion stores the change under a newer resourceVersion', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm'), { a: '1' }));
      cm.data = { a: '2' };
      const updated = await client.update(cm);
      expect(Number(updated.metadata.resourceVersion)).toBeGreaterThan(Number(cm.metadata.resourceVersion));
      expect((await client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name })).data).toEqual({ a: '2' });
    });

    it('with a stale resourceVersion is 409 Conflict', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm'), { a: '1' }));
      await client.update({ ...cm, data: { a: '2' } });
      const err = await expectStatus(client.update({ ...cm, data: { a: '3' } }), 409, 'Conflict');
      expect(isConflict(err)).toBe(true);
      expect(err.status?.message).toBe(`Operation cannot be fulfilled on configmaps "${cm.metadata.name}": the object has been modified; please apply your changes to the latest version and try again`);
      expect(err.status?.details).toMatchObject({ name: cm.metadata.name, kind: 'configmaps' });
    });

    it('of a custom resource with a stale resourceVersion is Conflict naming resource.group', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w')));
      await client.update({ ...w, spec: { size: 2 } });
      const err = await expectStatus(client.update({ ...w, spec: { size: 3 } }), 409, 'Conflict');
      expect(err.status?.message).toContain(`widgets.conformance.kubeloop.dev "${w.metadata.name}"`);
    });

    it('of a built-in kind without a resourceVersion is unconditional', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm'), { a: '1' }));
      await client.update({ ...cm, data: { a: '2' } });
      const { resourceVersion: _rv, ...metadata } = cm.metadata;
      const updated = await client.update({ ...cm, metadata, data: { a: '3' } });
      expect(updated.data).toEqual({ a: '3' });
    });

    it('of a custom resource without a resourceVersion is 422 Invalid', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w')));
      const { resourceVersion: _rv, ...metadata } = w.metadata;
      const err = await expectStatus(client.update({ ...w, metadata, spec: { size: 9 } }), 422, 'Invalid');
      expect(err.status?.details?.causes?.[0]?.field).toBe('metadata.resourceVersion');
    });

    it('of a missing object is 404 NotFound', async () => {
      await expectStatus(h().client().update(configMap(h().namespace, h().name('absent'))), 404, 'NotFound');
    });

    it('with a body name that differs from the path is 400 BadRequest', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm')));
      const res = await raw(h(), 'PUT', `/api/v1/namespaces/${h().namespace}/configmaps/${cm.metadata.name}`, { body: { ...cm, metadata: { ...cm.metadata, name: 'other' } } });
      expect(res.status).toBe(400);
      expect(res.body['reason']).toBe('BadRequest');
    });

    it('that changes nothing keeps the resourceVersion', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm'), { a: '1' }));
      const again = await client.update(cm);
      expect(again.metadata.resourceVersion).toBe(cm.metadata.resourceVersion);
    });

    it('with another uid is 409 Conflict (a precondition)', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm')));
      const err = await expectStatus(client.update({ ...cm, metadata: { ...cm.metadata, uid: '00000000-0000-0000-0000-000000000000' } }), 409, 'Conflict');
      expect(err.message).toContain('Precondition failed: UID in precondition');
    });

    it('cannot change creationTimestamp', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm')));
      const updated = await client.update({ ...cm, metadata: { ...cm.metadata, creationTimestamp: '2001-01-01T00:00:00Z' }, data: { x: '1' } });
      expect(updated.metadata.creationTimestamp).toBe(cm.metadata.creationTimestamp);
    });

    it('dry run answers the change but stores nothing', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm'), { a: '1' }));
      const answered = await client.update({ ...cm, data: { a: '2' } }, { dryRun: true });
      expect(answered.data).toEqual({ a: '2' });
      const got = await client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name });
      expect(got.data).toEqual({ a: '1' });
      expect(got.metadata?.resourceVersion).toBe(cm.metadata.resourceVersion);
    });

    it('of an immutable ConfigMap\'s data is 422 Invalid; its labels may change', async () => {
      const client = h().client();
      const cm = await client.create({ ...configMap(h().namespace, h().name('cm'), { a: '1' }), immutable: true });
      await expectStatus(client.update({ ...cm, data: { a: '2' } }), 422, 'Invalid');
      const relabelled = await client.update({ ...cm, metadata: { ...cm.metadata, labels: { x: 'y' } } });
      expect(relabelled.metadata.labels).toEqual({ x: 'y' });
    });

    it('an immutable ConfigMap cannot be made mutable', async () => {
      const client = h().client();
      const cm = await client.create({ ...configMap(h().namespace, h().name('cm'), { a: '1' }), immutable: true });
      await expectStatus(client.update({ ...cm, immutable: false }), 422, 'Invalid');
    });

    it('a Secret\'s type never changes: another is 422 naming it, one left out is Opaque again (found by the differential fuzzer)', async () => {
      const ns = h().namespace;
      const name = h().name('s');
      const path = `/api/v1/namespaces/${ns}/secrets/${name}`;
      await raw(h(), 'POST', `/api/v1/namespaces/${ns}/secrets`, { body: { metadata: { name }, type: 'example.com/t', data: { a: 'YQ==' } } });
      const changed = await raw(h(), 'PATCH', path, { body: { type: 'Opaque', data: { b: 'Yg==' } }, contentType: 'application/merge-patch+json' });
      expect([changed.status, changed.body['message']]).toEqual([422, `Secret "${name}" is invalid: type: Invalid value: "Opaque": field is immutable`]);
      const left = await raw(h(), 'PUT', path, { body: { metadata: { name }, data: { a: 'YQ==' } } });
      expect([left.status, left.body['message']]).toEqual([422, `Secret "${name}" is invalid: type: Invalid value: "Opaque": field is immutable`]);
      // an Opaque one updated without its type stays as it is
      const plain = h().name('s');
      await raw(h(), 'POST', `/api/v1/namespaces/${ns}/secrets`, { body: { metadata: { name: plain }, data: { a: 'YQ==' } } });
      const same = await raw(h(), 'PUT', `/api/v1/namespaces/${ns}/secrets/${plain}`, { body: { metadata: { name: plain }, data: { a: 'Yg==' } } });
      expect([same.status, same.body['type']]).toEqual([200, 'Opaque']);
    });
  });

  describe('delete', () => {
    it('removes the object; a second delete is 404 NotFound', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm')));
      await client.delete(cm);
      await expectStatus(client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name }), 404, 'NotFound');
      await expectStatus(client.delete(cm), 404, 'NotFound');
    });

    it('answers a Status Success naming the object (a built-in kind)', async () => {
      const cm = await h().client().create(configMap(h().namespace, h().name('cm')));
      const res = await raw(h(), 'DELETE', `/api/v1/namespaces/${h().namespace}/configmaps/${cm.metadata.name}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name: cm.metadata.name, kind: 'configmaps', uid: cm.metadata.uid } });
    });

    it('answers the object while finalizers hold it', async () => {
      const base = configMap(h().namespace, h().name('cm'));
      const cm = await h().client().create({ ...base, metadata: { ...base.metadata, finalizers: ['example.com/hold'] } });
      const res = await raw(h(), 'DELETE', `/api/v1/namespaces/${h().namespace}/configmaps/${cm.metadata.name}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ kind: 'ConfigMap', metadata: { name: cm.metadata.name, finalizers: ['example.com/hold'] } });
      await h().client().patch(cm, mergePatch({ metadata: { finalizers: null } }));
    });

    it('a uid precondition that does not hold is 409 Conflict and deletes nothing', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm')));
      const err = await expectStatus(client.delete(cm, { preconditions: { uid: '00000000-0000-0000-0000-000000000000' } }), 409, 'Conflict');
      expect(err.status?.message).toBe(
        `Operation cannot be fulfilled on ConfigMap "${cm.metadata.name}": the UID in the precondition (00000000-0000-0000-0000-000000000000) does not match the UID in record (${cm.metadata.uid!}). The object might have been deleted and then recreated`,
      );
      await client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name });
    });

    it('a resourceVersion precondition that does not hold is 409 Conflict', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm')));
      await client.patch(cm, mergePatch({ data: { b: '1' } }));
      const err = await expectStatus(client.delete(cm, { preconditions: { resourceVersion: cm.metadata.resourceVersion! } }), 409, 'Conflict');
      expect(err.message).toContain(`the ResourceVersion in the precondition (${cm.metadata.resourceVersion!}) does not match the ResourceVersion in record`);
    });

    it('preconditions that hold delete', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm')));
      await client.delete(cm, { preconditions: { uid: cm.metadata.uid!, resourceVersion: cm.metadata.resourceVersion! } });
      await expectStatus(client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name }), 404, 'NotFound');
    });

    it('dry run deletes nothing', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm')));
      await client.delete(cm, { dryRun: true });
      // Still there, the same object (a get of a deleted one rejects with NotFound).
      expect((await client.get(ConfigMap, { namespace: h().namespace, name: cm.metadata.name })).metadata?.uid).toBe(cm.metadata.uid);
    });

    it('deleteAllOf deletes what the label selector matches, and only that', async () => {
      const client = h().client();
      const run = h().name('run');
      for (const [i, keep] of [false, false, true].entries()) await client.create(configMap(h().namespace, `${run}-${i}`, {}, { run, keep: String(keep) }));
      await client.deleteAllOf(ConfigMap, { namespace: h().namespace, labelSelector: { run, keep: 'false' } });
      const left = await client.list(ConfigMap, { namespace: h().namespace, labelSelector: { run } });
      expect(left.items.map((i) => i.metadata?.name)).toEqual([`${run}-2`]);
    });

    it('deleteAllOf by field selector deletes the named object', async () => {
      const client = h().client();
      const name = h().name('cm');
      await client.create(configMap(h().namespace, name));
      await client.deleteAllOf(ConfigMap, { namespace: h().namespace, fieldSelector: { 'metadata.name': name } });
      await expectStatus(client.get(ConfigMap, { namespace: h().namespace, name }), 404, 'NotFound');
    });
  });

  describe('methods and paths', () => {
    it('POST to an object is 405 MethodNotAllowed', async () => {
      const res = await raw(h(), 'POST', `/api/v1/namespaces/${h().namespace}/configmaps/x`, { body: configMap(h().namespace, 'x') });
      expect(res.status).toBe(405);
      expect(res.body['reason']).toBe('MethodNotAllowed');
    });

    it('PUT to a collection is 405 MethodNotAllowed', async () => {
      const res = await raw(h(), 'PUT', `/api/v1/namespaces/${h().namespace}/configmaps`, { body: configMap(h().namespace, 'x') });
      expect(res.status).toBe(405);
    });

    it('a subresource a kind does not have is 404', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm')));
      const res = await raw(h(), 'GET', `/api/v1/namespaces/${h().namespace}/configmaps/${cm.metadata.name}/status`);
      expect(res.status).toBe(404);
    });

    it('resourceVersions come from one counter across kinds', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm')));
      const secret = await client.create({ apiVersion: 'v1', kind: 'Secret', metadata: { name: h().name('s'), namespace: h().namespace }, stringData: { a: 'b' } });
      const w = await client.create(widget(h().namespace, h().name('w')));
      expect(Number(secret.metadata.resourceVersion)).toBeGreaterThan(Number(cm.metadata.resourceVersion));
      expect(Number(w.metadata.resourceVersion)).toBeGreaterThan(Number(secret.metadata.resourceVersion));
      void Secret;
    });

    it('a deleted and recreated name gets a new uid', async () => {
      const client = h().client();
      const name = h().name('cm');
      const first = await client.create(configMap(h().namespace, name));
      await client.delete(first);
      const second = await client.create(configMap(h().namespace, name));
      expect(second.metadata.uid).not.toBe(first.metadata.uid);
    });
  });
});
