/**
 * Conformance: the rest of the stack on each backend: discovery as the
 * mapper reads it, CRDs coming and going, the informer cache, and the
 * kit's own helpers (test namespaces, eventually, the event collector).
 */
import { describe, expect, it } from 'vitest';
import { isNoKindMatch, mergePatch } from '@kubeloop/client';
import { createInformerCache } from '@kubeloop/cache';
import { AGGREGATED_DISCOVERY_ACCEPT } from '@kubeloop/mapper';
import { ConfigMap, CustomResourceDefinition, defineKind, Namespace } from '@kubeloop/scheme';
import { collectEvents, createTestNamespace, eventually } from '../../src/index.js';
import { BACKENDS, GROUP, useBackend, Widget } from './backends.js';
import { configMap, expectStatus, raw } from './support.js';

describe.each(BACKENDS)('the stack on the backend ($backend)', ({ backend }) => {
  const h = useBackend(backend);

  describe('discovery', () => {
    it('/apis answers aggregated discovery when asked for it', async () => {
      const res = await raw(h(), 'GET', '/apis', { accept: AGGREGATED_DISCOVERY_ACCEPT });
      expect(res.contentType).toContain('as=APIGroupDiscoveryList');
      expect(res.body['kind']).toBe('APIGroupDiscoveryList');
      const groups = (res.body['items'] as { metadata: { name: string } }[]).map((g) => g.metadata.name);
      expect(groups).toEqual(expect.arrayContaining(['apps', 'batch', 'coordination.k8s.io', GROUP]));
    });

    it('/api answers the legacy APIVersions document for plain JSON', async () => {
      const res = await raw(h(), 'GET', '/api');
      expect(res.body).toMatchObject({ kind: 'APIVersions', versions: ['v1'] });
    });

    it('a group-version lists its resources and their subresources', async () => {
      const res = await raw(h(), 'GET', `/apis/${GROUP}/v1`);
      const names = (res.body['resources'] as { name: string }[]).map((r) => r.name);
      expect(names).toEqual(expect.arrayContaining(['widgets', 'widgets/status', 'widgets/scale', 'gadgets']));
      expect(names).not.toContain('gadgets/status');
    });

    it('the mapper resolves built-in and custom kinds with their scope', async () => {
      const mapper = h().client().mapper;
      expect(await mapper.restMapping({ group: 'apps', kind: 'Deployment' })).toMatchObject({ resource: { resource: 'deployments' }, scope: 'Namespaced' });
      expect(await mapper.restMapping({ group: '', kind: 'Namespace' })).toMatchObject({ scope: 'Cluster' });
      expect(await mapper.restMapping({ group: GROUP, kind: 'Gadget' })).toMatchObject({ resource: { resource: 'gadgets' }, scope: 'Cluster' });
    });

    it('a kind nobody serves is NoKindMatch', async () => {
      const err = await h().client().get({ apiVersion: `${GROUP}/v1`, kind: 'Nonexistent' }, { namespace: h().namespace, name: 'x' }).catch((e: unknown) => e);
      expect(isNoKindMatch(err)).toBe(true);
    });

    it('/version names a git version', async () => {
      const res = await raw(h(), 'GET', '/version');
      expect(res.body['gitVersion']).toMatch(/^v1\.\d+/);
    });
  });

  describe('CRDs', () => {
    function crd(group: string): Record<string, unknown> {
      return {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: `things.${group}` },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural: 'things', singular: 'thing', kind: 'Thing', listKind: 'ThingList' },
          versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
        },
      };
    }

    it('a created CRD becomes Established and its kind is served; deleting it removes its objects', async () => {
      const client = h().client();
      const group = `${h().name('t')}.conformance.kubeloop.dev`;
      const Thing = defineKind({ group, version: 'v1', kind: 'Thing', plural: 'things', namespaced: true });
      await client.create(crd(group) as never);
      const established = await eventually(async () => {
        const got = await client.get(CustomResourceDefinition, { name: `things.${group}` });
        const ok = got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
        expect(ok).toBe(true);
        return got;
      });
      expect(established.status?.acceptedNames?.kind).toBe('Thing');
      const thing = await eventually(() => client.create({ apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'one', namespace: h().namespace }, spec: { a: 1 } }), { timeoutMs: 15_000 });
      expect(thing.metadata.uid).toBeTruthy();
      await client.delete(CustomResourceDefinition, { name: `things.${group}` });
      await eventually(async () => {
        await expectStatus(client.get(CustomResourceDefinition, { name: `things.${group}` }), 404, 'NotFound');
      }, { timeoutMs: 30_000 });
      await eventually(async () => {
        const err = await h().client().get(Thing, { namespace: h().namespace, name: 'one' }).catch((e: unknown) => e);
        expect(isNoKindMatch(err) || (err as { code?: number }).code === 404).toBe(true);
      }, { timeoutMs: 15_000 });
    }, 60_000);
  });

  describe('a CRD with two served versions', () => {
    it('serves one object at both versions, apiVersion following the path', async () => {
      const client = h().client();
      const group = `${h().name('mv')}.conformance.kubeloop.dev`;
      const schema = { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } };
      await client.create({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: `things.${group}` },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural: 'things', singular: 'thing', kind: 'Thing', listKind: 'ThingList' },
          versions: [
            { name: 'v1', served: true, storage: true, schema },
            { name: 'v2', served: true, storage: false, schema },
          ],
        },
      } as never);
      const created = await eventually(() => client.create({ apiVersion: `${group}/v1`, kind: 'Thing', metadata: { name: 'one', namespace: h().namespace }, spec: { a: 1 } }), { timeoutMs: 15_000 });
      const v2 = await eventually(() => client.get({ apiVersion: `${group}/v2`, kind: 'Thing' }, { namespace: h().namespace, name: 'one' }), { timeoutMs: 15_000 });
      expect(v2.apiVersion).toBe(`${group}/v2`);
      expect(v2['spec']).toEqual({ a: 1 });
      expect(v2.metadata?.uid).toBe(created.metadata.uid);
      const list = await client.list({ apiVersion: `${group}/v2`, kind: 'Thing' }, { namespace: h().namespace });
      expect(list.items.map((i) => i.apiVersion)).toEqual([`${group}/v2`]);
      await client.delete(CustomResourceDefinition, { name: `things.${group}` });
    }, 60_000);
  });

  describe('informer cache', () => {
    it('syncs, follows changes and deletes, and serves reads without requests', async () => {
      const client = h().client();
      const run = h().name('inf');
      await client.create(configMap(h().namespace, `${run}-a`, { v: '1' }, { run }));
      const cache = createInformerCache({ client, byKind: [{ kind: ConfigMap, options: { namespaces: [h().namespace], labelSelector: { run } } }] });
      try {
        const first = await cache.get(ConfigMap, { namespace: h().namespace, name: `${run}-a` });
        expect(first.data).toEqual({ v: '1' });
        await client.patch(first, mergePatch({ data: { v: '2' } }));
        await client.create(configMap(h().namespace, `${run}-b`, {}, { run }));
        await eventually(async () => {
          expect((await cache.get(ConfigMap, { namespace: h().namespace, name: `${run}-a` })).data).toEqual({ v: '2' });
          expect((await cache.list(ConfigMap, { namespace: h().namespace, labelSelector: { run } })).items).toHaveLength(2);
        });
        await client.delete(ConfigMap, { namespace: h().namespace, name: `${run}-a` });
        await eventually(async () => expect((await cache.list(ConfigMap, { namespace: h().namespace, labelSelector: { run } })).items.map((i) => i.metadata?.name)).toEqual([`${run}-b`]));
      } finally {
        await cache.stop();
      }
    });
  });

  describe('the kit\'s helpers', () => {
    it('createTestNamespace makes a fresh namespace and deletes it', async () => {
      const client = h().client();
      const ns = await createTestNamespace(client, { prefix: 'kit' });
      expect(ns.name).toMatch(/^kit-[0-9a-f]{8}$/);
      expect((await client.get(Namespace, { name: ns.name })).status?.phase).toBe('Active');
      await ns.delete();
      await ns.delete();
      const after = await client.get(Namespace, { name: ns.name }).catch(() => undefined);
      expect(after === undefined || after.metadata?.deletionTimestamp !== undefined).toBe(true);
    });

    it('collectEvents sees events recorded about an object', async () => {
      const client = h().client();
      const events = await collectEvents(client, { namespace: h().namespace, regarding: { kind: 'Widget', name: 'w-events' } });
      try {
        await client.create({
          apiVersion: 'events.k8s.io/v1',
          kind: 'Event',
          metadata: { name: h().name('ev'), namespace: h().namespace },
          eventTime: new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z'),
          reportingController: 'kubeloop.dev/conformance',
          reportingInstance: 'conformance-1',
          action: 'Reconcile',
          reason: 'Synced',
          note: 'all good',
          type: 'Normal',
          regarding: { apiVersion: `${GROUP}/v1`, kind: 'Widget', name: 'w-events', namespace: h().namespace },
        } as never);
        const seen = await events.waitFor((e) => e.reason === 'Synced', { timeoutMs: 10_000 });
        expect(seen.note).toBe('all good');
      } finally {
        await events.stop();
      }
      void Widget;
    });
  });
});
