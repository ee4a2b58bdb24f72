/**
 * Conformance: the server's per-kind facts, which the fake reads from
 * src/internal/kind-facts.generated.ts (regenerated from kube-apiserver by
 * scripts/kind-facts.mjs, checked current by test/kind-facts.test.ts):
 * which kinds a PUT of a missing name creates, the name rules per kind
 * (CronJob 52 characters, label-named kinds 63, path-named kinds such as a
 * core Event anything but `/` and `%`), generateName cut at 58; and the
 * per-kind answers the widened fuzzer found beside them (a core Event's
 * `null` times, a LimitRange's defaults, the v1 Endpoints deprecation
 * warning, two controller owner references).
 */
import { describe, expect, it } from 'vitest';
import { KIND_FACTS } from '../../src/internal/kind-facts.generated.js';
import { BACKENDS, useBackend } from './backends.js';
import { raw } from './support.js';

const VERSIONS: Record<string, string> = {
  '': 'v1',
  apps: 'v1',
  batch: 'v1',
  'coordination.k8s.io': 'v1',
  'discovery.k8s.io': 'v1',
  'events.k8s.io': 'v1',
  'networking.k8s.io': 'v1',
  policy: 'v1',
  'rbac.authorization.k8s.io': 'v1',
  'storage.k8s.io': 'v1',
  'admissionregistration.k8s.io': 'v1',
  'apiextensions.k8s.io': 'v1',
  autoscaling: 'v2',
};
const PLURALS: Record<string, string> = { Endpoints: 'endpoints', NetworkPolicy: 'networkpolicies', IngressClass: 'ingressclasses', StorageClass: 'storageclasses', PodDisruptionBudget: 'poddisruptionbudgets' };
const CLUSTER = new Set(['Namespace', 'Node', 'PersistentVolume', 'MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'IngressClass', 'StorageClass']);

/** Every kind the facts name, with its collection path. */
const KINDS = Object.entries(KIND_FACTS).map(([key, fact]) => {
  const [group, kind] = key.split('/') as [string, string];
  const plural = PLURALS[kind] ?? `${kind.toLowerCase()}s`;
  const base = group ? `/apis/${group}/${VERSIONS[group]!}` : '/api/v1';
  return { key, group, kind, createOnUpdate: fact.createOnUpdate, apiVersion: group ? `${group}/${VERSIONS[group]!}` : 'v1', path: CLUSTER.has(kind) ? `${base}/${plural}` : `${base}/namespaces/{ns}/${plural}` };
});

const CRONJOB = { apiVersion: 'batch/v1', kind: 'CronJob', spec: { schedule: '*/5 * * * *', jobTemplate: { spec: { template: { spec: { restartPolicy: 'OnFailure', containers: [{ name: 'c', image: 'busybox' }] } } } } } };
const STATEFULSET = { apiVersion: 'apps/v1', kind: 'StatefulSet', spec: { selector: { matchLabels: { app: 'p' } }, template: { metadata: { labels: { app: 'p' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } } } };

describe.each(BACKENDS)('per-kind facts ($backend)', ({ backend }) => {
  const h = useBackend(backend);
  const at = (path: string): string => path.replace('{ns}', h().namespace);

  it.each(KINDS)('$key: a PUT of a missing name creates it: $createOnUpdate', async (k) => {
    const res = await raw(h(), 'PUT', `${at(k.path)}/facts-absent`, { query: { dryRun: 'All' }, body: { apiVersion: k.apiVersion, kind: k.kind, metadata: { name: 'facts-absent' } } });
    expect(res.status === 404, JSON.stringify(res.body).slice(0, 200)).toBe(!k.createOnUpdate);
  });

  it('a Lease is created by a PUT, and answers 201', async () => {
    const res = await raw(h(), 'PUT', `/apis/coordination.k8s.io/v1/namespaces/${h().namespace}/leases/by-put`, { body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'by-put' }, spec: { holderIdentity: 'me' } } });
    expect(res.status).toBe(201);
    expect((await raw(h(), 'GET', `/apis/coordination.k8s.io/v1/namespaces/${h().namespace}/leases/by-put`)).body['spec']).toEqual({ holderIdentity: 'me' });
  });

  it.each([
    { what: 'a CronJob of 52 characters', body: CRONJOB, path: '/apis/batch/v1/namespaces/{ns}/cronjobs', length: 52, problem: undefined },
    { what: 'a CronJob of 53 characters', body: CRONJOB, path: '/apis/batch/v1/namespaces/{ns}/cronjobs', length: 53, problem: 'must be no more than 52 characters' },
    { what: 'a CronJob of 254 characters (told both bounds)', body: CRONJOB, path: '/apis/batch/v1/namespaces/{ns}/cronjobs', length: 254, problem: 'must be no more than 253 characters', also: 'must be no more than 52 characters' },
    { what: 'a StatefulSet of 64 characters', body: STATEFULSET, path: '/apis/apps/v1/namespaces/{ns}/statefulsets', length: 64, problem: 'must be no more than 63 characters' },
    { what: 'a ConfigMap of 253 characters', body: { apiVersion: 'v1', kind: 'ConfigMap' }, path: '/api/v1/namespaces/{ns}/configmaps', length: 253, problem: undefined },
    { what: 'a core Event of 300 characters (path-named)', body: { apiVersion: 'v1', kind: 'Event' }, path: '/api/v1/namespaces/{ns}/events', length: 300, problem: undefined },
  ] as { what: string; body: Record<string, unknown>; path: string; length: number; problem: string | undefined; also?: string }[])('$what: $problem', async (c) => {
    const name = `a${'b'.repeat(c.length - 1)}`;
    const res = await raw(h(), 'POST', at(c.path), { query: { dryRun: 'All' }, body: { ...c.body, metadata: { name } } });
    const causes = ((res.body['details'] as { causes?: { field: string; message: string }[] } | undefined)?.causes ?? []).filter((x) => x.field === 'metadata.name');
    expect(causes.map((x) => x.message)).toEqual([c.problem, c.also].filter((p) => p !== undefined).map((p) => `Invalid value: "${name}": ${p}`));
  });

  it('a core Event may be named with a colon; a Service may not hold a dot', async () => {
    expect((await raw(h(), 'POST', `/api/v1/namespaces/${h().namespace}/events`, { query: { dryRun: 'All' }, body: { apiVersion: 'v1', kind: 'Event', metadata: { name: 'a:b' }, involvedObject: { kind: 'ConfigMap', name: 'a', namespace: h().namespace } } })).status).toBe(201);
    const svc = await raw(h(), 'POST', `/api/v1/namespaces/${h().namespace}/services`, { query: { dryRun: 'All' }, body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'a.b' }, spec: { ports: [{ port: 80 }] } } });
    expect(svc.body['message']).toBe('Service "a.b" is invalid: metadata.name: Invalid value: "a.b": must not contain dots');
  });

  it('a generateName is cut at 58 characters before the 5 random ones', async () => {
    const prefix = `g${'h'.repeat(69)}`;
    const res = await raw(h(), 'POST', `/apis/coordination.k8s.io/v1/namespaces/${h().namespace}/leases`, { query: { dryRun: 'All' }, body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { generateName: prefix } } });
    const name = String((res.body['metadata'] as { name: string }).name);
    expect({ status: res.status, length: name.length, start: name.slice(0, 58) }).toEqual({ status: 201, length: 63, start: prefix.slice(0, 58) });
  });

  it('a core Event carries its unset times as null, owned by no one', async () => {
    const res = await raw(h(), 'POST', `/api/v1/namespaces/${h().namespace}/events`, { body: { apiVersion: 'v1', kind: 'Event', metadata: { name: 'ev' }, involvedObject: { kind: 'ConfigMap', name: 'a', namespace: h().namespace }, reason: 'Made' } });
    expect({ firstTimestamp: res.body['firstTimestamp'], lastTimestamp: res.body['lastTimestamp'], eventTime: res.body['eventTime'] }).toEqual({ firstTimestamp: null, lastTimestamp: null, eventTime: null });
    const managed = (res.body['metadata'] as { managedFields: { fieldsV1: unknown }[] }).managedFields;
    expect(managed.map((m) => m.fieldsV1)).toEqual([{ 'f:involvedObject': {}, 'f:reason': {} }]);
  });

  it('a LimitRange\'s container item defaults its limit from max and its request from the limit, then from min', async () => {
    const res = await raw(h(), 'POST', `/api/v1/namespaces/${h().namespace}/limitranges`, {
      query: { dryRun: 'All' },
      body: { apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'lr' }, spec: { limits: [{ type: 'Container', max: { cpu: '1' }, min: { memory: '1Mi' } }, { type: 'Pod', max: { cpu: '2' } }] } },
    });
    expect((res.body['spec'] as { limits: unknown[] }).limits).toEqual([
      { type: 'Container', max: { cpu: '1' }, min: { memory: '1Mi' }, default: { cpu: '1' }, defaultRequest: { cpu: '1', memory: '1Mi' } },
      { type: 'Pod', max: { cpu: '2' } },
    ]);
  });

  it('v1 Endpoints warns that it is deprecated, on errors too', async () => {
    const res = await raw(h(), 'GET', `/api/v1/namespaces/${h().namespace}/endpoints/missing`);
    expect({ status: res.status, warning: res.warning }).toEqual({ status: 404, warning: '299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"' });
  });

  it('two controller owner references are named in the error', async () => {
    const owner = (name: string, uid: string): Record<string, unknown> => ({ apiVersion: 'v1', kind: 'ConfigMap', name, uid, controller: true });
    const res = await raw(h(), 'POST', `/api/v1/namespaces/${h().namespace}/configmaps`, {
      query: { dryRun: 'All' },
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'owned', ownerReferences: [owner('one', '11111111-1111-4111-8111-111111111111'), owner('two', '22222222-2222-4222-8222-222222222222'), owner('three', '33333333-3333-4333-8333-333333333333')] } },
    });
    const causes = (res.body['details'] as { causes: { message: string }[] }).causes.map((c) => c.message.replace(/^Invalid value: \[.*\]: /, ''));
    expect(causes).toEqual(['Only one reference can have Controller set to true. Found "true" in references for ConfigMap/one and ConfigMap/two', 'Only one reference can have Controller set to true. Found "true" in references for ConfigMap/one and ConfigMap/three']);
  });
});
