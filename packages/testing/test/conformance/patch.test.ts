/** Conformance: merge, JSON and strategic merge patches, on envtest and on the fake. */
import { describe, expect, it } from 'vitest';
import { jsonPatch, mergeFrom, mergePatch, strategicMergePatch } from '@kubeloop/client';
import { ConfigMap, Deployment } from '@kubeloop/scheme';
import { BACKENDS, useBackend, Widget } from './backends.js';
import { configMap, deployment, expectStatus, raw, widget } from './support.js';

type Container = { name: string; image: string; env?: { name: string; value?: string }[]; ports?: { containerPort: number; protocol?: string; name?: string }[] };

function containersOf(d: { spec?: { template?: { spec?: { containers?: unknown } } } }): Container[] {
  return (d.spec?.template?.spec?.containers ?? []) as Container[];
}

describe.each(BACKENDS)('patches ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  it('a patch whose result the Go type cannot hold is 422 quoting the result as the patch library encodes it: what the patch went into sorted, what it did not touch in its Go field order, a JSON patch\'s values in its own order', async () => {
    const ns = h().namespace;
    const name = h().name('s');
    const path = `/api/v1/namespaces/${ns}/secrets/${name}`;
    await raw(h(), 'POST', `/api/v1/namespaces/${ns}/configmaps`, { body: { metadata: { name: `${name}-o` } } });
    const owner = { apiVersion: 'v1', kind: 'ConfigMap', name: 'o', uid: '22222222-2222-4222-8222-222222222222', controller: true, blockOwnerDeletion: true };
    await raw(h(), 'POST', `/api/v1/namespaces/${ns}/secrets`, { body: { metadata: { name, labels: { a: 'b' }, annotations: { z: '1', b: '2' }, finalizers: ['x/y'], ownerReferences: [owner] }, data: { y: 'YQ==' } } });
    const got = (await raw(h(), 'GET', path)).body;
    const m = got['metadata'] as Record<string, unknown>;
    const mf = (m['managedFields'] as Record<string, unknown>[])[0]!;
    const q = JSON.stringify;
    const entries = `[{"manager":${q(mf['manager'])},"operation":"Update","apiVersion":"v1","time":${q(mf['time'])},"fieldsType":"FieldsV1","fieldsV1":${q(mf['fieldsV1'])}}]`;
    const owners = `[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"${owner.uid}","controller":true,"blockOwnerDeletion":true}]`;
    const quoted = async (contentType: string, body: unknown): Promise<string> => {
      const res = await raw(h(), 'PATCH', path, { body, contentType, query: { dryRun: 'All' } });
      expect(res.status).toBe(422);
      const value = /^ "" is invalid: patch: Invalid value: (".*"): illegal base64 data at input byte \d+$/s.exec(String(res.body['message']));
      expect(value, String(res.body['message'])).not.toBeNull();
      return JSON.parse(value![1]!) as string;
    };
    // a merge patch into data only: metadata untouched, in ObjectMeta's field order
    expect(await quoted('application/merge-patch+json', { data: { x: 'not base64!' } })).toBe(
      `{"apiVersion":"v1","data":{"x":"not base64!","y":"YQ=="},"kind":"Secret","metadata":{"name":${q(name)},"namespace":${q(ns)},"uid":${q(m['uid'])},"resourceVersion":${q(m['resourceVersion'])},"creationTimestamp":${q(m['creationTimestamp'])},"labels":{"a":"b"},"annotations":{"b":"2","z":"1"},"ownerReferences":${owners},"finalizers":["x/y"],"managedFields":${entries}},"type":"Opaque"}`,
    );
    // into metadata too: metadata sorted, its owner references and managed fields still in their field order
    const sortedMeta = (labels: string, annotations = '{"b":"2","z":"1"}'): string =>
      `{"annotations":${annotations},"creationTimestamp":${q(m['creationTimestamp'])},"finalizers":["x/y"],"labels":${labels},"managedFields":${entries},"name":${q(name)},"namespace":${q(ns)},"ownerReferences":${owners},"resourceVersion":${q(m['resourceVersion'])},"uid":${q(m['uid'])}}`;
    expect(await quoted('application/merge-patch+json', { metadata: { labels: { c: 'd' } }, data: { x: 'not base64!' } })).toBe(
      `{"apiVersion":"v1","data":{"x":"not base64!","y":"YQ=="},"kind":"Secret","metadata":${sortedMeta('{"a":"b","c":"d"}')},"type":"Opaque"}`,
    );
    // a JSON patch: the containers on its paths sorted, the value it adds in its own order
    expect(await quoted('application/json-patch+json', [{ op: 'add', path: '/metadata/annotations', value: { z: 'q', a: 'r' } }, { op: 'add', path: '/data/x', value: '%' }])).toBe(
      `{"apiVersion":"v1","data":{"x":"%","y":"YQ=="},"kind":"Secret","metadata":${sortedMeta('{"a":"b"}', '{"z":"q","a":"r"}')},"type":"Opaque"}`,
    );
  });

  it('a Deployment patched into a value its Go type cannot hold is quoted with the members the patch did not touch in their Go field order, down to its containers', async () => {
    const client = h().client();
    const d = await client.create(deployment(h().namespace, h().name('d'), [{ name: 'app', image: 'app:v1', ports: [{ containerPort: 80, name: 'http' }], env: [{ name: 'E', value: 'v' }] }]));
    const path = `/apis/apps/v1/namespaces/${h().namespace}/deployments/${d.metadata.name}`;
    const quoted = async (contentType: string, body: unknown): Promise<Record<string, unknown>> => {
      const res = await raw(h(), 'PATCH', path, { body, contentType, query: { dryRun: 'All' } });
      const value = /^ "" is invalid: patch: Invalid value: (".*"): json: cannot unmarshal /s.exec(String(res.body['message']));
      expect([res.status, value !== null], String(res.body['message'])).toEqual([422, true]);
      return JSON.parse(JSON.parse(value![1]!) as string) as Record<string, unknown>;
    };
    type Node = Record<string, Record<string, unknown>>;
    const keysOf = (o: unknown): string[] => Object.keys(o as Record<string, unknown>);
    const template = ['metadata', 'spec'];
    const podSpec = ['containers', 'restartPolicy', 'terminationGracePeriodSeconds', 'dnsPolicy', 'securityContext', 'schedulerName'];
    const container = ['name', 'image', 'ports', 'env', 'resources', 'terminationMessagePath', 'terminationMessagePolicy', 'imagePullPolicy'];
    const structOrder = ['replicas', 'selector', 'template', 'strategy', 'revisionHistoryLimit', 'progressDeadlineSeconds'];
    // the patch went into metadata only: spec untouched, in DeploymentSpec's order all the way down
    const untouched = (await quoted('application/merge-patch+json', { metadata: { labels: { a: 1 } } })) as Node;
    expect(keysOf(untouched)).toEqual(['apiVersion', 'kind', 'metadata', 'spec', 'status']);
    expect(keysOf(untouched['spec'])).toEqual(structOrder);
    const tpl = untouched['spec']!['template'] as Node;
    const app = (tpl['spec']!['containers'] as Node[])[0]!;
    expect([keysOf(tpl), keysOf(tpl['spec']), keysOf(app)]).toEqual([template, podSpec, container]);
    expect(keysOf((app['ports'] as unknown as unknown[])[0])).toEqual(['name', 'containerPort', 'protocol']);
    expect(keysOf(untouched['spec']!['strategy'])).toEqual(['type', 'rollingUpdate']);
    expect(keysOf((untouched['spec']!['strategy'] as Node)['rollingUpdate'])).toEqual(['maxUnavailable', 'maxSurge']);
    // into spec: spec sorted, what is under it untouched still in field order
    const into = (await quoted('application/json-patch+json', [{ op: 'replace', path: '/spec/replicas', value: '3' }])) as Node;
    expect(keysOf(into['spec'])).toEqual([...structOrder].sort());
    expect(keysOf((into['spec']!['template'] as Node)['spec'])).toEqual(podSpec);
  });

  it('a patch leaving two bad values is refused for the one the server\'s decoder meets first: in the patched bytes\' order for a merge or JSON patch (what it went into sorted), in the Go field order for a strategic merge patch', async () => {
    const d = await h().client().create(deployment(h().namespace, h().name('d')));
    const path = `/apis/apps/v1/namespaces/${h().namespace}/deployments/${d.metadata.name}`;
    const detail = async (contentType: string, body: unknown): Promise<string> => {
      const res = await raw(h(), 'PATCH', path, { body, contentType, query: { dryRun: 'All' } });
      expect(res.status).toBe(422);
      return String(res.body['message']).replace(/^.*": /s, '');
    };
    const paused = 'json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool';
    expect(await detail('application/json-patch+json', [{ op: 'add', path: '/spec/replicas', value: 'x' }, { op: 'replace', path: '/spec/paused', value: '1' }])).toBe(paused);
    expect(await detail('application/merge-patch+json', { spec: { replicas: 'x', paused: '1' } })).toBe(paused);
    expect(await detail('application/strategic-merge-patch+json', { spec: { paused: '1', replicas: 'x' } })).toBe('unrecognized type: int32');
  });

  it('a value of the wrong JSON type in a field whose Go type decodes itself (Time, MicroTime, IntOrString, Quantity) is refused in that type\'s own words: a 500 from the apply\'s conversion, a 422 from a strategic merge patch\'s, a merge patch\'s decode in encoding/json\'s', async () => {
    const ns = h().namespace;
    const lease = h().name('l');
    const service = h().name('s');
    const pod = h().name('p');
    expect((await raw(h(), 'POST', `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`, { body: { metadata: { name: lease }, spec: { holderIdentity: 'a' } } })).status).toBe(201);
    expect((await raw(h(), 'POST', `/api/v1/namespaces/${ns}/services`, { body: { metadata: { name: service }, spec: { ports: [{ port: 80, targetPort: 8080 }] } } })).status).toBe(201);
    expect((await raw(h(), 'POST', `/api/v1/namespaces/${ns}/pods`, { body: { metadata: { name: pod }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } })).status).toBe(201);
    const APPLY = 'application/apply-patch+yaml';
    const MERGE = 'application/merge-patch+json';
    const answer = async (path: string, contentType: string, body: unknown): Promise<[number, string]> => {
      const res = await raw(h(), 'PATCH', path, { body, contentType, query: contentType === APPLY ? { fieldManager: 'm', force: 'true', dryRun: 'All' } : { dryRun: 'All' } });
      // a merge patch's 422 quotes the whole patched object first: what follows it is the decoder's words
      return [res.status, contentType === APPLY ? String(res.body['message']) : String(res.body['message']).replace(/^.*": /s, '')];
    };
    const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${lease}`;
    const leaseBody = (spec: Record<string, unknown>): Record<string, unknown> => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: lease }, spec });
    const converted = (name: string, gvk: string, why: string): string => `failed to convert new object (/${name}; ${gvk}) to proper version: unable to convert unstructured object to ${gvk}: ${why}`;
    const LEASE = 'coordination.k8s.io/v1, Kind=Lease';
    expect(await answer(leasePath, APPLY, leaseBody({ acquireTime: 5 }))).toEqual([500, converted(lease, LEASE, 'json: cannot unmarshal number into Go value of type string')]);
    expect(await answer(leasePath, APPLY, leaseBody({ acquireTime: true }))).toEqual([500, converted(lease, LEASE, 'json: cannot unmarshal bool into Go value of type string')]);
    expect(await answer(leasePath, APPLY, leaseBody({ renewTime: 5 }))).toEqual([500, converted(lease, LEASE, 'json: cannot unmarshal number into Go value of type string')]);
    expect(await answer(leasePath, MERGE, { spec: { acquireTime: 5 } })).toEqual([422, 'json: cannot unmarshal number into Go struct field LeaseSpec.spec.acquireTime of type string']);
    expect(await answer(leasePath, MERGE, { spec: { renewTime: true } })).toEqual([422, 'json: cannot unmarshal bool into Go struct field LeaseSpec.spec.renewTime of type string']);
    const servicePath = `/api/v1/namespaces/${ns}/services/${service}`;
    const ports = (targetPort: unknown): Record<string, unknown> => ({ apiVersion: 'v1', kind: 'Service', metadata: { name: service }, spec: { ports: [{ port: 80, targetPort }] } });
    for (const [value, words] of [[true, 'bool'], [1.5, 'number 1.5'], [3000000000, 'number 3000000000']] as const) {
      expect(await answer(servicePath, APPLY, ports(value))).toEqual([500, converted(service, '/v1, Kind=Service', `json: cannot unmarshal ${words} into Go value of type int32`)]);
    }
    // a strategic merge patch's result goes through the same converter
    expect(await answer(servicePath, 'application/strategic-merge-patch+json', { spec: { ports: [{ port: 80, targetPort: true }] } })).toEqual([422, 'json: cannot unmarshal bool into Go value of type int32']);
    expect(await answer(leasePath, 'application/strategic-merge-patch+json', { spec: { acquireTime: 5 } })).toEqual([422, 'json: cannot unmarshal number into Go value of type string']);
    expect(await answer(servicePath, MERGE, { spec: { ports: [{ port: 80, targetPort: true }] } })).toEqual([422, 'json: cannot unmarshal bool into Go struct field ServicePort.spec.ports.targetPort of type int32']);
    expect(await answer(servicePath, MERGE, { spec: { ports: [{ port: 80, targetPort: 1.5 }] } })).toEqual([422, 'json: cannot unmarshal number 1.5 into Go struct field ServicePort.spec.ports.targetPort of type int32']);
    const podPath = `/api/v1/namespaces/${ns}/pods/${pod}`;
    const QUANTITY = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    const cpu = (value: unknown): Record<string, unknown> => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name: pod }, spec: { containers: [{ name: 'c', image: 'nginx', resources: { limits: { cpu: value } } }] } });
    expect(await answer(podPath, APPLY, cpu(true))).toEqual([500, converted(pod, '/v1, Kind=Pod', QUANTITY)]);
    expect(await answer(podPath, MERGE, { spec: { containers: [{ name: 'c', image: 'nginx', resources: { limits: { cpu: true } } }] } })).toEqual([422, QUANTITY]);
    // a list or a map: an apply of a quantity stops at its typed patch object (a scalar to it), an int-or-string's goes
    // on to its own decoding; a merge patch's decode hands the list to the quantity, which words it as any other bad
    // text, and the map to the int-or-string's int32
    const typed = (name: string, gvk: string, path: string, got: string): string => `failed to create typed patch object (/${name}; ${gvk}): ${path}: expected any scalar, got ${got}`;
    expect(await answer(podPath, APPLY, cpu(['x']))).toEqual([500, typed(pod, '/v1, Kind=Pod', '.spec.containers[name="c"].resources.limits.cpu', '&{[x]}')]);
    expect(await answer(podPath, MERGE, { spec: { containers: [{ name: 'c', image: 'nginx', resources: { limits: { cpu: ['x'] } } }] } })).toEqual([422, QUANTITY]);
    expect(await answer(servicePath, APPLY, ports({ a: 1 }))).toEqual([500, converted(service, '/v1, Kind=Service', 'json: cannot unmarshal object into Go value of type int32')]);
    expect(await answer(servicePath, MERGE, { spec: { ports: [{ port: 80, targetPort: { a: 1 } }] } })).toEqual([422, 'json: cannot unmarshal object into Go struct field ServicePort.spec.ports.targetPort of type int32']);
  });

  describe('merge patch', () => {
    it('adds and replaces fields; null removes one', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm'), { a: '1', b: '1' }));
      const patched = await client.patch(cm, mergePatch({ data: { a: '2', b: null, c: '3' } }));
      expect(patched.data).toEqual({ a: '2', c: '3' });
    });

    it('replaces arrays whole', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w'), { tags: ['a', 'b'] }));
      const patched = await client.patch(w, mergePatch({ spec: { tags: ['c'] } }));
      expect(patched.spec?.tags).toEqual(['c']);
    });

    it('with the current resourceVersion succeeds; with a stale one is 409 Conflict', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm'), { a: '1' }));
      const first = await client.patch(cm, mergePatch({ metadata: { resourceVersion: cm.metadata.resourceVersion }, data: { a: '2' } }));
      expect(first.data).toEqual({ a: '2' });
      await expectStatus(client.patch(cm, mergePatch({ metadata: { resourceVersion: cm.metadata.resourceVersion }, data: { a: '3' } })), 409, 'Conflict');
    });

    it('mergeFrom with optimisticLock conflicts when the object moved on', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm'), { a: '1' }));
      const before = structuredClone(cm);
      await client.patch(cm, mergePatch({ data: { other: 'x' } }));
      const after = { ...cm, data: { a: '2' } };
      await expectStatus(client.patch(cm, mergeFrom(before, after, { optimisticLock: true })), 409, 'Conflict');
      const plain = await client.patch(cm, mergeFrom(before, after));
      expect(plain.data).toEqual({ a: '2', other: 'x' });
    });

    it('of a missing object is 404 NotFound', async () => {
      await expectStatus(h().client().patch(ConfigMap, { namespace: h().namespace, name: h().name('absent') }, mergePatch({ data: { a: '1' } })), 404, 'NotFound');
    });

    it('that changes nothing keeps the resourceVersion', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm'), { a: '1' }));
      const same = await client.patch(cm, mergePatch({ data: { a: '1' } }));
      expect(same.metadata.resourceVersion).toBe(cm.metadata.resourceVersion);
    });

    it('that is not JSON is 400 BadRequest', async () => {
      const cm = await h().client().create(configMap(h().namespace, h().name('cm')));
      const res = await raw(h(), 'PATCH', `/api/v1/namespaces/${h().namespace}/configmaps/${cm.metadata.name}`, { body: '{not json', contentType: 'application/merge-patch+json' });
      expect(res.status).toBe(400);
    });

    it('of a metadata-only kind ref patches labels', async () => {
      const client = h().client();
      const name = h().name('cm');
      await client.create(configMap(h().namespace, name, { a: '1' }));
      await client.patch(ConfigMap, { namespace: h().namespace, name }, mergePatch({ metadata: { labels: { tier: 'web' } } }));
      const got = await client.get(ConfigMap, { namespace: h().namespace, name });
      expect(got.metadata?.labels).toEqual({ tier: 'web' });
      expect(got.data).toEqual({ a: '1' });
    });
  });

  describe('JSON patch', () => {
    it('applies add, replace and remove in order', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm'), { a: '1', b: '1' }));
      const patched = await client.patch(cm, jsonPatch([
        { op: 'add', path: '/data/c', value: '3' },
        { op: 'replace', path: '/data/a', value: '2' },
        { op: 'remove', path: '/data/b' },
      ]));
      expect(patched.data).toEqual({ a: '2', c: '3' });
    });

    it('a test operation guards the patch: it fails with 422 when the value differs', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm'), { a: '1' }));
      await expectStatus(client.patch(cm, jsonPatch([{ op: 'test', path: '/data/a', value: '0' }, { op: 'replace', path: '/data/a', value: '2' }])), 422, 'Invalid');
      const ok = await client.patch(cm, jsonPatch([{ op: 'test', path: '/data/a', value: '1' }, { op: 'replace', path: '/data/a', value: '2' }]));
      expect(ok.data).toEqual({ a: '2' });
    });

    it('removing a path that does not exist is 422', async () => {
      const cm = await h().client().create(configMap(h().namespace, h().name('cm'), { a: '1' }));
      await expectStatus(h().client().patch(cm, jsonPatch([{ op: 'remove', path: '/data/missing' }])), 422, 'Invalid');
    });

    it('edits a list by index', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w'), { tags: ['a', 'b'] }));
      const patched = await client.patch(w, jsonPatch([{ op: 'add', path: '/spec/tags/1', value: 'x' }]));
      expect(patched.spec?.tags).toEqual(['a', 'x', 'b']);
    });

    it('works on custom resources', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w'), { size: 1 }));
      const patched = await client.patch(w, jsonPatch([{ op: 'replace', path: '/spec/size', value: 4 }]));
      expect(patched.spec?.size).toBe(4);
      expect(patched.metadata.generation).toBe(2);
    });
  });

  describe('strategic merge patch', () => {
    it('merges containers by name', async () => {
      const client = h().client();
      const d = await client.create(deployment(h().namespace, h().name('d'), [{ name: 'app', image: 'app:v1' }, { name: 'sidecar', image: 'side:v1' }]));
      const patched = await client.patch(d, strategicMergePatch({ spec: { template: { spec: { containers: [{ name: 'app', image: 'app:v2' }] } } } }));
      expect(containersOf(patched).map((c) => `${c.name}=${c.image}`)).toEqual(['app=app:v2', 'sidecar=side:v1']);
    });

    it('adds a container with a new name', async () => {
      const client = h().client();
      const d = await client.create(deployment(h().namespace, h().name('d')));
      const patched = await client.patch(d, strategicMergePatch({ spec: { template: { spec: { containers: [{ name: 'extra', image: 'extra:v1' }] } } } }));
      expect(containersOf(patched).map((c) => c.name).sort()).toEqual(['app', 'extra']);
    });

    it('$patch: delete removes a container', async () => {
      const client = h().client();
      const d = await client.create(deployment(h().namespace, h().name('d'), [{ name: 'app', image: 'app:v1' }, { name: 'sidecar', image: 'side:v1' }]));
      const patched = await client.patch(d, strategicMergePatch({ spec: { template: { spec: { containers: [{ name: 'sidecar', $patch: 'delete' }] } } } }));
      expect(containersOf(patched).map((c) => c.name)).toEqual(['app']);
    });

    it('$patch: replace replaces the list', async () => {
      const client = h().client();
      const d = await client.create(deployment(h().namespace, h().name('d'), [{ name: 'app', image: 'app:v1' }, { name: 'sidecar', image: 'side:v1' }]));
      const patched = await client.patch(d, strategicMergePatch({ spec: { template: { spec: { containers: [{ $patch: 'replace' }, { name: 'only', image: 'only:v1' }] } } } }));
      expect(containersOf(patched).map((c) => c.name)).toEqual(['only']);
    });

    it('merges env by name inside a container', async () => {
      const client = h().client();
      const d = await client.create(deployment(h().namespace, h().name('d'), [{ name: 'app', image: 'app:v1', env: [{ name: 'A', value: '1' }, { name: 'B', value: '1' }] }]));
      const patched = await client.patch(d, strategicMergePatch({ spec: { template: { spec: { containers: [{ name: 'app', env: [{ name: 'B', value: '2' }, { name: 'C', value: '3' }] }] } } } }));
      const env = containersOf(patched)[0]!.env!;
      expect(Object.fromEntries(env.map((e) => [e.name, e.value]))).toEqual({ A: '1', B: '2', C: '3' });
    });

    it('merges container ports by containerPort', async () => {
      const client = h().client();
      const d = await client.create(deployment(h().namespace, h().name('d'), [{ name: 'app', image: 'app:v1', ports: [{ containerPort: 80, name: 'http', protocol: 'TCP' }] }]));
      const patched = await client.patch(d, strategicMergePatch({ spec: { template: { spec: { containers: [{ name: 'app', ports: [{ containerPort: 443, name: 'https', protocol: 'TCP' }] }] } } } }));
      expect(containersOf(patched)[0]!.ports!.map((p) => p.containerPort).sort()).toEqual([443, 80]);
    });

    it('merges finalizers as a set; $deleteFromPrimitiveList removes one', async () => {
      const client = h().client();
      const cm = await client.create({ ...configMap(h().namespace, h().name('cm')), metadata: { name: h().name('cm'), namespace: h().namespace, finalizers: ['example.com/a'] } });
      const added = await client.patch(cm, strategicMergePatch({ metadata: { finalizers: ['example.com/b', 'example.com/a'] } }));
      expect([...(added.metadata.finalizers ?? [])].sort()).toEqual(['example.com/a', 'example.com/b']);
      const removed = await client.patch(cm, strategicMergePatch({ metadata: { '$deleteFromPrimitiveList/finalizers': ['example.com/a'] } }));
      expect(removed.metadata.finalizers).toEqual(['example.com/b']);
      await client.patch(cm, mergePatch({ metadata: { finalizers: null } }));
    });

    it('null removes a map key, as in a merge patch', async () => {
      const client = h().client();
      const cm = await client.create(configMap(h().namespace, h().name('cm'), { a: '1', b: '2' }));
      const patched = await client.patch(cm, strategicMergePatch({ data: { a: null } }));
      expect(patched.data).toEqual({ b: '2' });
    });

    it('replaces lists with no merge key (container args) whole', async () => {
      const client = h().client();
      const d = await client.create(deployment(h().namespace, h().name('d'), [{ name: 'app', image: 'app:v1', args: ['a', 'b'] }]));
      const patched = await client.patch(d, strategicMergePatch({ spec: { template: { spec: { containers: [{ name: 'app', args: ['c'] }] } } } }));
      expect((containersOf(patched)[0] as unknown as { args: string[] }).args).toEqual(['c']);
    });

    it('on a custom resource is 415 UnsupportedMediaType', async () => {
      const w = await h().client().create(widget(h().namespace, h().name('w')));
      await expectStatus(h().client().patch(w, strategicMergePatch({ spec: { size: 2 } })), 415, 'UnsupportedMediaType');
      void Widget;
      void Deployment;
    });
  });

  it('a patch with an unknown content type is 415', async () => {
    const cm = await h().client().create(configMap(h().namespace, h().name('cm')));
    const res = await raw(h(), 'PATCH', `/api/v1/namespaces/${h().namespace}/configmaps/${cm.metadata.name}`, { body: '{}', contentType: 'application/x-nonsense' });
    expect(res.status).toBe(415);
  });
});
