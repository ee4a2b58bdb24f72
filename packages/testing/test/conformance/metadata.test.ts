/** Conformance: generation, managed fields, what built-in strategies set, list encoding, on envtest and on the fake. */
import { describe, expect, it } from 'vitest';
import { mergePatch } from '@kubeloop/client';
import type { WatchEvent } from '@kubeloop/client';
import { ConfigMap, Deployment, Namespace, Pod } from '@kubeloop/scheme';
import type { Secret } from '@kubeloop/scheme';
import { BACKENDS, Gadget, useBackend, Widget } from './backends.js';
import { collect, configMap, deployment, fieldsByManager, raw, widget } from './support.js';

const TEMPLATE = { metadata: { labels: { app: 'x' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } };
const JOB_TEMPLATE = { metadata: { labels: { app: 'x' } }, spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } };

/** Built-in kinds, a valid object of each, and what the server answers a create with (generation; status, its timestamps left out). */
const STRATEGIES: { kind: string; object: (ns: string, name: string) => Record<string, unknown>; generation: number | undefined; afterLabel: number | undefined; status: unknown }[] = [
  { kind: 'Deployment', object: (ns, name) => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: ns }, spec: { selector: { matchLabels: { app: 'x' } }, template: TEMPLATE } }), generation: 1, afterLabel: 1, status: {} },
  { kind: 'StatefulSet', object: (ns, name) => ({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name, namespace: ns }, spec: { selector: { matchLabels: { app: 'x' } }, serviceName: 'svc', template: TEMPLATE } }), generation: 1, afterLabel: 1, status: { replicas: 0, availableReplicas: 0 } },
  { kind: 'DaemonSet', object: (ns, name) => ({ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name, namespace: ns }, spec: { selector: { matchLabels: { app: 'x' } }, template: TEMPLATE } }), generation: 1, afterLabel: 1, status: { currentNumberScheduled: 0, numberMisscheduled: 0, desiredNumberScheduled: 0, numberReady: 0 } },
  { kind: 'ReplicaSet', object: (ns, name) => ({ apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: { name, namespace: ns }, spec: { selector: { matchLabels: { app: 'x' } }, template: TEMPLATE } }), generation: 1, afterLabel: 1, status: { replicas: 0 } },
  { kind: 'Job', object: (ns, name) => ({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name, namespace: ns }, spec: { template: JOB_TEMPLATE } }), generation: 1, afterLabel: 1, status: {} },
  { kind: 'CronJob', object: (ns, name) => ({ apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name, namespace: ns }, spec: { schedule: '* * * * *', jobTemplate: { spec: { template: JOB_TEMPLATE } } } }), generation: 1, afterLabel: 1, status: {} },
  { kind: 'Service', object: (ns, name) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: ns }, spec: { ports: [{ port: 80 }] } }), generation: undefined, afterLabel: undefined, status: { loadBalancer: {} } },
  { kind: 'PodDisruptionBudget', object: (ns, name) => ({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name, namespace: ns }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'x' } } } }), generation: 1, afterLabel: 1, status: { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 } },
  { kind: 'HorizontalPodAutoscaler', object: (ns, name) => ({ apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: { name, namespace: ns }, spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'd' }, maxReplicas: 3 } }), generation: 1, afterLabel: 1, status: { desiredReplicas: 0, currentMetrics: null } },
  { kind: 'PersistentVolumeClaim', object: (ns, name) => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: ns }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }), generation: undefined, afterLabel: undefined, status: { phase: 'Pending' } },
  { kind: 'NetworkPolicy', object: (ns, name) => ({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace: ns }, spec: { podSelector: {} } }), generation: 1, afterLabel: 1, status: undefined },
  { kind: 'EndpointSlice', object: (ns, name) => ({ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name, namespace: ns }, addressType: 'IPv4', endpoints: [] }), generation: 1, afterLabel: 2, status: undefined },
  { kind: 'Lease', object: (ns, name) => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace: ns }, spec: {} }), generation: undefined, afterLabel: undefined, status: undefined },
  { kind: 'Role', object: (ns, name) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name, namespace: ns }, rules: [] }), generation: undefined, afterLabel: undefined, status: undefined },
  { kind: 'ServiceAccount', object: (ns, name) => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } }), generation: undefined, afterLabel: undefined, status: undefined },
];

describe.each(BACKENDS)('metadata the server keeps ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  it.each(STRATEGIES)('$kind: generation and status on create, generation after a label change', async ({ object, generation, afterLabel, status }) => {
    const client = h().client();
    const created = (await client.create(object(h().namespace, h().name('obj')) as never)) as { metadata: { generation?: number }; status?: unknown };
    expect(created.metadata.generation).toBe(generation);
    expect(created.status).toEqual(status);
    const relabelled = (await client.patch(created as never, mergePatch({ metadata: { labels: { probe: 'yes' } } }))) as { metadata: { generation?: number } };
    expect(relabelled.metadata.generation).toBe(afterLabel);
  });

  describe('equality as the server sees it', () => {
    /** The same object with every map's keys in reverse order (what a JavaScript spread may do). */
    const reversed = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(reversed);
      if (typeof value !== 'object' || value === null) return value;
      return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reversed(v)]));
    };

    it.each([
      { kind: 'Widget', ref: Widget, make: (ns: string, name: string) => widget(ns, name, { size: 2, color: 'red', ports: [{ name: 'a', port: 1 }], nested: { x: 1, y: { p: 'q', r: 's' } } }) },
      { kind: 'ConfigMap', ref: ConfigMap, make: (ns: string, name: string) => configMap(ns, name, { a: '1', b: '2', c: '3' }, { one: '1', two: '2' }) },
      { kind: 'Deployment', ref: Deployment, make: (ns: string, name: string) => deployment(ns, name, [{ name: 'app', image: 'app:v1', env: [{ name: 'A', value: 'a' }] }]) },
    ])('$kind: an update that only reorders keys is a no-op (resourceVersion, generation, no event)', async ({ ref, make }) => {
      const client = h().client();
      const created = (await client.create(make(h().namespace, h().name('eq')) as never)) as { metadata: { name: string; resourceVersion: string; generation?: number } };
      const events = await client.watch(ref as typeof Widget, {
        namespace: h().namespace,
        fieldSelector: { 'metadata.name': created.metadata.name },
        resourceVersion: created.metadata.resourceVersion,
      });
      const updated = (await client.update(reversed(created) as never)) as { metadata: { resourceVersion: string; generation?: number } };
      expect(updated.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
      expect(updated.metadata.generation).toBe(created.metadata.generation);
      // a real change afterwards is the first event the watch sees
      const labelled = (await client.patch(created as never, mergePatch({ metadata: { labels: { marker: 'yes' } } }))) as { metadata: { resourceVersion: string } };
      const seen: WatchEvent<Widget>[] = await collect(events, (s) => s.length >= 1);
      expect(seen.map((e) => [e.type, e.object.metadata?.resourceVersion])).toEqual([['MODIFIED', labelled.metadata.resourceVersion]]);
    });
  });

  describe('generation', () => {
    it('a ConfigMap has none', async () => {
      const cm = await h().client().create(configMap(h().namespace, h().name('cm')));
      expect(cm.metadata.generation).toBeUndefined();
    });

    it('a Deployment starts at 1 and moves on spec changes only', async () => {
      const client = h().client();
      const d = await client.create(deployment(h().namespace, h().name('d')));
      expect(d.metadata.generation).toBe(1);
      const relabelled = await client.patch(d, mergePatch({ metadata: { labels: { a: 'b' } } }));
      expect(relabelled.metadata.generation).toBe(1);
      const scaled = await client.patch(d, mergePatch({ spec: { replicas: 3 } }));
      expect(scaled.metadata.generation).toBe(2);
      const statusWritten = await client.status().patch(scaled, mergePatch({ status: { observedGeneration: 2 } }));
      expect(statusWritten.metadata.generation).toBe(2);
    });

    it('a custom resource starts at 1 and moves on spec changes, not on metadata or status', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w')));
      expect(w.metadata.generation).toBe(1);
      const annotated = await client.patch(w, mergePatch({ metadata: { annotations: { note: 'x' } } }));
      expect(annotated.metadata.generation).toBe(1);
      const status = await client.status().patch(w, mergePatch({ status: { phase: 'Ready' } }));
      expect(status.metadata.generation).toBe(1);
      const changed = await client.patch(w, mergePatch({ spec: { size: 5 } }));
      expect(changed.metadata.generation).toBe(2);
    });

    it('a custom resource without a status subresource counts status changes too', async () => {
      const client = h().client();
      const g = await client.create({ apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Gadget', metadata: { name: h().name('g') }, spec: { a: 1 } });
      const changed = await client.patch(g, mergePatch({ status: { seen: true } }));
      expect(changed.metadata.generation).toBe(2);
      expect((await client.get(Gadget, { name: g.metadata.name })).status).toEqual({ seen: true });
      await client.delete(g);
    });

    it('an update that changes nothing leaves generation and resourceVersion alone', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w'), { size: 2 }));
      const same = await client.patch(w, mergePatch({ spec: { size: 2 } }));
      expect(same.metadata.generation).toBe(1);
      expect(same.metadata.resourceVersion).toBe(w.metadata.resourceVersion);
    });
  });

  describe('managed fields', () => {
    it('a create records the field manager, operation Update, and the fields it set', async () => {
      const client = h().client('creator');
      const cm = await client.create(configMap(h().namespace, h().name('cm'), { a: '1' }, { app: 'x' }));
      expect(cm.metadata.managedFields).toHaveLength(1);
      expect(cm.metadata.managedFields?.[0]).toMatchObject({
        manager: 'creator',
        operation: 'Update',
        apiVersion: 'v1',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { '.': {}, 'f:a': {} }, 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } } },
      });
      expect(cm.metadata.managedFields?.[0]?.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    });

    it('a second manager that changes a field owns it; the first keeps the rest', async () => {
      const name = h().name('cm');
      await h().client('first').create(configMap(h().namespace, name, { a: '1', b: '1' }));
      const patched = await h().client('second').patch(ConfigMap, { namespace: h().namespace, name }, mergePatch({ data: { b: '2' } }));
      const byManager = fieldsByManager(patched);
      expect(byManager).toEqual({ first: { 'f:data': { '.': {}, 'f:a': {} } }, second: { 'f:data': { 'f:b': {} } } });
    });

    it('status writes are recorded with subresource status', async () => {
      const client = h().client('statuser');
      const w = await client.create(widget(h().namespace, h().name('w')));
      const s = await client.status().patch(w, mergePatch({ status: { phase: 'Ready' } }));
      const entry = s.metadata.managedFields?.find((m) => m.subresource === 'status');
      expect(entry).toMatchObject({ manager: 'statuser', operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': { '.': {}, 'f:phase': {} } } });
    });
  });

  describe('what built-in strategies set', () => {
    it('a Namespace gets its name label, the kubernetes finalizer and phase Active', async () => {
      const client = h().client();
      const name = h().name('ns');
      const ns = await client.create<Namespace>({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      expect(ns.metadata.labels).toEqual({ 'kubernetes.io/metadata.name': name });
      expect(ns.spec?.finalizers).toEqual(['kubernetes']);
      expect(ns.status?.phase).toBe('Active');
      await client.delete(Namespace, { name });
    });

    it('a Pod starts Pending', async () => {
      const pod = await h().client().create<Pod>({ apiVersion: 'v1', kind: 'Pod', metadata: { name: h().name('pod'), namespace: h().namespace }, spec: { containers: [{ name: 'c', image: 'busybox' }] } });
      expect(pod.status?.phase).toBe('Pending');
      expect(pod.metadata.generation).toBe(1);
      void Pod;
    });

    it('a Secret\'s stringData is written into data as base64', async () => {
      const s = await h().client().create<Secret>({ apiVersion: 'v1', kind: 'Secret', metadata: { name: h().name('s'), namespace: h().namespace }, stringData: { user: 'admin' } });
      expect(s.data).toEqual({ user: Buffer.from('admin').toString('base64') });
      expect(s.stringData).toBeUndefined();
    });

    it('a Deployment created with status gets none (status is the controller\'s)', async () => {
      const d = await h().client().create({ ...deployment(h().namespace, h().name('d')), status: { replicas: 7 } });
      expect(d.status?.replicas).toBeUndefined();
      void Deployment;
    });

    it('a custom resource with a status subresource created with status gets none', async () => {
      const w = await h().client().create({ ...widget(h().namespace, h().name('w')), status: { phase: 'Forged' } });
      expect(w.status).toBeUndefined();
      void Widget;
    });
  });

  describe('list encoding', () => {
    it('built-in list items leave out apiVersion and kind; the list names its kind', async () => {
      const name = h().name('cm');
      await h().client().create(configMap(h().namespace, name));
      const res = await raw(h(), 'GET', `/api/v1/namespaces/${h().namespace}/configmaps`, { query: { fieldSelector: `metadata.name=${name}` } });
      expect(res.body['kind']).toBe('ConfigMapList');
      expect(res.body['apiVersion']).toBe('v1');
      const item = (res.body['items'] as Record<string, unknown>[])[0]!;
      expect(item['kind']).toBeUndefined();
      expect(item['apiVersion']).toBeUndefined();
    });

    it('custom resource list items name apiVersion and kind', async () => {
      const name = h().name('w');
      await h().client().create(widget(h().namespace, name));
      const res = await raw(h(), 'GET', `/apis/conformance.kubeloop.dev/v1/namespaces/${h().namespace}/widgets`, { query: { fieldSelector: `metadata.name=${name}` } });
      expect(res.body['kind']).toBe('WidgetList');
      expect((res.body['items'] as Record<string, unknown>[])[0]).toMatchObject({ apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Widget' });
    });

    it('the client fills apiVersion and kind into built-in list items', async () => {
      const name = h().name('cm');
      await h().client().create(configMap(h().namespace, name));
      const list = await h().client().list(ConfigMap, { namespace: h().namespace, fieldSelector: { 'metadata.name': name } });
      expect(list.items[0]).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap' });
    });
  });
});
