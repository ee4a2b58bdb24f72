/**
 * The Website controller against a real API server (started once per run by
 * test/support/global-setup.ts): the manager runs the controller exactly as
 * src/main.ts does, and the test checks what lands in the cluster.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createClient, isNotFound, loadKubeConfig } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createLogger, createManager } from '@kubeloop/manager';
import { ConfigMap, builtinScheme } from '@kubeloop/scheme';
import { WEBSITE_FINALIZER, Website } from '../src/apis/index.js';
import { configMapNameOf, setupWebsiteController } from '../src/controllers/index.js';
import { eventually } from '@kubeloop/testing';

const scheme = builtinScheme.extend(Website);
const namespace = `test-${Date.now().toString(36)}`;
const kubeConfig = loadKubeConfig(inject('kubeconfigPath'));
let client: Client;
const stop = new AbortController();
let running: Promise<void>;

beforeAll(async () => {
  client = createClient({ kubeConfig, scheme, fieldOwner: 'website-test' });
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  const manager = createManager({ kubeConfig, scheme, fieldOwner: '{{name}}', namespaces: [namespace], logger: createLogger({ level: 'warn' }) });
  setupWebsiteController(manager);
  running = manager.start(stop.signal);
});

afterAll(async () => {
  stop.abort();
  await running;
});

function website(name: string, title: string) {
  return { apiVersion: '{{group}}/v1' as const, kind: 'Website' as const, metadata: { name, namespace }, spec: { title } };
}

describe('the Website controller', () => {
  it('publishes the page in an owned ConfigMap and reports Ready', async () => {
    const created = await client.create(website('home', 'Home'));
    const cm = await eventually(async () => {
      const cm = await client.get(ConfigMap, { namespace, name: configMapNameOf('home') });
      expect(cm.data?.['index.html']).toContain('<h1>Home</h1>');
      return cm;
    });
    expect(cm.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Website', name: 'home', uid: created.metadata?.uid, controller: true });
    const ready = await eventually(async () => {
      const site = await client.get(Website, { namespace, name: 'home' });
      const condition = site.status?.conditions?.find((c) => c.type === 'Ready');
      expect(condition?.status).toBe('True');
      return site;
    });
    expect(ready.metadata?.finalizers).toContain(WEBSITE_FINALIZER);
    expect(ready.status?.configMapName).toBe(configMapNameOf('home'));
  });

  it('follows spec changes', async () => {
    const site = await client.create(website('blog', 'Blog'));
    await eventually(async () => expect((await client.get(ConfigMap, { namespace, name: configMapNameOf('blog') })).data?.['index.html']).toContain('Blog'));
    const latest = await client.get(Website, { namespace, name: site.metadata!.name! });
    await client.update({ ...latest, spec: { ...latest.spec, title: 'Blog & News' } });
    await eventually(async () => expect((await client.get(ConfigMap, { namespace, name: configMapNameOf('blog') })).data?.['index.html']).toContain('Blog &#38; News'));
  });

  it('runs the finalizer and lets the Website go on delete', async () => {
    await client.create(website('gone', 'Gone'));
    await eventually(async () => expect((await client.get(Website, { namespace, name: 'gone' })).metadata?.finalizers).toContain(WEBSITE_FINALIZER));
    await client.delete(Website, { namespace, name: 'gone' });
    await eventually(async () => {
      const err = await client.get(Website, { namespace, name: 'gone' }).then(() => undefined, (e: unknown) => e);
      expect(isNotFound(err)).toBe(true);
    });
  });

  it('rejects what the schema forbids, on the API server', async () => {
    const err = await client.create({ ...website('bad', 'x'), spec: { title: '' } }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(String(err)).toMatch(/title/);
  });
});
