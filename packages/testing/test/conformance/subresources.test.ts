/** Conformance: the status and scale subresources, on envtest and on the fake. */
import { describe, expect, it } from 'vitest';
import { mergePatch } from '@kubeloop/client';
import { Deployment } from '@kubeloop/scheme';
import { BACKENDS, Gadget, useBackend, Widget } from './backends.js';
import { deployment, expectStatus, raw, widget } from './support.js';

interface Scale {
  kind: string;
  apiVersion: string;
  metadata: { name: string; resourceVersion: string };
  spec: { replicas: number };
  status: { replicas: number; selector?: string };
}

describe.each(BACKENDS)('subresources ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  describe('status', () => {
    it('a status update writes status and ignores spec', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w'), { size: 1 }));
      const after = await client.status().update({ ...w, spec: { size: 50 }, status: { phase: 'Ready' } });
      expect(after.status).toEqual({ phase: 'Ready' });
      expect(after.spec).toEqual({ size: 1 });
    });

    it('a status update ignores labels', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w')));
      const after = await client.status().update({ ...w, metadata: { ...w.metadata, labels: { sneaky: 'yes' } }, status: { phase: 'Ready' } });
      expect(after.metadata.labels).toBeUndefined();
    });

    it('a main-resource update writes spec and ignores status', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w'), { size: 1 }));
      const withStatus = await client.status().update({ ...w, status: { phase: 'Ready' } });
      const after = await client.update({ ...withStatus, spec: { size: 2 }, status: { phase: 'Tampered' } });
      expect(after.spec).toEqual({ size: 2 });
      expect(after.status).toEqual({ phase: 'Ready' });
    });

    it('a status patch merges into status', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w')));
      await client.status().patch(w, mergePatch({ status: { phase: 'Ready', replicas: 1 } }));
      const after = await client.status().patch(w, mergePatch({ status: { replicas: 2 } }));
      expect((after as Widget).status).toEqual({ phase: 'Ready', replicas: 2 });
    });

    it('a status update with a stale resourceVersion is 409 Conflict', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w')));
      await client.status().update({ ...w, status: { phase: 'A' } });
      await expectStatus(client.status().update({ ...w, status: { phase: 'B' } }), 409, 'Conflict');
    });

    it('GET of the status subresource answers the whole object', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w'), { size: 3 }));
      const got = await client.status().get<{ spec: unknown; kind: string }>(Widget, { namespace: h().namespace, name: w.metadata.name });
      expect(got.kind).toBe('Widget');
      expect(got.spec).toEqual({ size: 3 });
    });

    it('a kind without a status subresource answers 404 on /status', async () => {
      const client = h().client();
      const name = h().name('g');
      const g = await client.create({ apiVersion: 'conformance.kubeloop.dev/v1', kind: 'Gadget', metadata: { name }, spec: {} });
      await expectStatus(client.status().update({ ...g, status: { x: 1 } }), 404, 'NotFound');
      await client.delete(Gadget, { name });
    });

    it('a status update of a missing object is 404 NotFound', async () => {
      await expectStatus(h().client().status().update({ ...widget(h().namespace, h().name('absent')), status: { phase: 'x' } }), 404, 'NotFound');
    });

    it('a Deployment\'s status update ignores spec; its update ignores status', async () => {
      const client = h().client();
      const d = await client.create(deployment(h().namespace, h().name('d')));
      const s = await client.status().update({ ...d, spec: { ...d.spec, replicas: 9 }, status: { replicas: 1, observedGeneration: 1 } });
      expect(s.spec?.replicas).toBe(1);
      expect(s.status?.replicas).toBe(1);
      const u = await client.update({ ...s, status: { replicas: 5 } });
      expect(u.status?.replicas).toBe(1);
      void Deployment;
    });
  });

  describe('scale', () => {
    it('GET of a custom resource\'s scale reads the replicas paths', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w'), { replicas: 2 }));
      const scale = await client.subResource('scale').get<Scale>(Widget, { namespace: h().namespace, name: w.metadata.name });
      expect(scale).toMatchObject({ kind: 'Scale', apiVersion: 'autoscaling/v1', metadata: { name: w.metadata.name }, spec: { replicas: 2 } });
    });

    it('an update of scale sets spec.replicas', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w'), { replicas: 1 }));
      const scale = await client.subResource('scale').get<Scale>(Widget, { namespace: h().namespace, name: w.metadata.name });
      await client.subResource('scale').update(w, { body: { ...scale, spec: { replicas: 4 } } });
      expect((await client.get(Widget, { namespace: h().namespace, name: w.metadata.name })).spec?.replicas).toBe(4);
    });

    it('a merge patch of a Deployment\'s scale sets its replicas', async () => {
      const client = h().client();
      const d = await client.create(deployment(h().namespace, h().name('d')));
      await client.subResource('scale').patch(d, mergePatch({ spec: { replicas: 3 } }));
      const scaled = await client.get(Deployment, { namespace: h().namespace, name: d.metadata.name });
      expect(scaled.spec?.replicas).toBe(3);
      expect(scaled.metadata?.generation).toBe(2);
    });

    it('a Deployment\'s scale names its selector', async () => {
      const client = h().client();
      const name = h().name('d');
      await client.create(deployment(h().namespace, name));
      const res = await raw(h(), 'GET', `/apis/apps/v1/namespaces/${h().namespace}/deployments/${name}/scale`);
      expect(res.body).toMatchObject({ kind: 'Scale', spec: { replicas: 1 }, status: { selector: `app=${name}` } });
    });

    it('a scale update with a stale resourceVersion is 409 Conflict', async () => {
      const client = h().client();
      const w = await client.create(widget(h().namespace, h().name('w'), { replicas: 1 }));
      const scale = await client.subResource('scale').get<Scale>(Widget, { namespace: h().namespace, name: w.metadata.name });
      await client.patch(w, mergePatch({ spec: { size: 9 } }));
      await expectStatus(client.subResource('scale').update(w, { body: { ...scale, spec: { replicas: 4 } } }), 409, 'Conflict');
    });
  });

  it('metadata written through /status: kept on a Pod (not its owner references), kept but labels on a Deployment, dropped on a custom resource', async () => {
    const client = h().client();
    const ns = h().namespace;
    const meta = { labels: { x: 'y' }, annotations: { n: '1' } };
    const pod = await client.create({ apiVersion: 'v1', kind: 'Pod', metadata: { name: h().name('p'), namespace: ns }, spec: { containers: [{ name: 'c', image: 'i' }] } });
    const p = await raw(h(), 'PATCH', `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}/status`, { contentType: 'application/merge-patch+json', body: { metadata: { ...meta, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: '00000000-0000-0000-0000-000000000001' }] } } });
    expect(p.body['metadata']).toMatchObject(meta);
    expect((p.body['metadata'] as Record<string, unknown>)['ownerReferences']).toBeUndefined();
    const d = await client.create(deployment(ns, h().name('d')));
    const dr = await raw(h(), 'PATCH', `/apis/apps/v1/namespaces/${ns}/deployments/${d.metadata.name}/status`, { contentType: 'application/merge-patch+json', body: { metadata: meta, status: { replicas: 2 } } });
    expect((dr.body['metadata'] as Record<string, unknown>)['annotations']).toEqual({ n: '1' });
    expect((dr.body['metadata'] as Record<string, unknown>)['labels']).toBeUndefined();
    const w = await client.create(widget(ns, h().name('w')));
    const wr = await raw(h(), 'PATCH', `/apis/conformance.kubeloop.dev/v1/namespaces/${ns}/widgets/${w.metadata.name}/status`, { contentType: 'application/merge-patch+json', body: { metadata: meta, status: { phase: 'Ready' } } });
    expect((wr.body['metadata'] as Record<string, unknown>)['labels']).toBeUndefined();
    expect((wr.body['metadata'] as Record<string, unknown>)['annotations']).toBeUndefined();
  });
});
