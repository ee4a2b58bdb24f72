/**
 * The Website controller against a real API server (started once per run by
 * test/support/global-setup.ts): the manager runs the controllers exactly as
 * src/main.ts does, and the test checks what lands in the cluster. The test
 * manager records every request the manager makes; the last test checks
 * them against config/rbac/role.yaml (written by `pnpm generate`), so a
 * write a controller makes but does not declare fails here, not in the
 * cluster.
 */
import 'reflect-metadata';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createClient, isNotFound, loadKubeConfig, retryOnConflict } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { ConfigMap, builtinScheme } from '@kubeloop/scheme';
import { eventually } from '@kubeloop/testing';
import { startTestManager } from '@kubeloop/testing/manager';
import type { TestManager } from '@kubeloop/testing/manager';
import { WEBSITE_FINALIZER, Website } from '../src/apis/index.js';
import { configMapNameOf, setupControllers } from '../src/controllers/index.js';

const scheme = builtinScheme.extend(Website);
const namespace = `test-${Date.now().toString(36)}`;
const kubeConfig = loadKubeConfig(inject('kubeconfigPath'));
let client: Client;
let tm: TestManager;

beforeAll(async () => {
  client = createClient({ kubeConfig, scheme, fieldOwner: 'website-test' });
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  tm = await startTestManager({ backend: kubeConfig, scheme, fieldOwner: '{{name}}', namespaces: [namespace], setup: setupControllers });
});

afterAll(async () => {
  await tm?.stop();
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
    // Read, change, write, and again if the controller wrote in between (its finalizer or status): 409 Conflict.
    await retryOnConflict(async () => {
      const latest = await client.get(Website, { namespace, name: site.metadata.name });
      await client.update({ ...latest, spec: { ...latest.spec, title: 'Blog & News' } });
    });
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

  it('made no request config/rbac/role.yaml would deny (run after the others: it audits what they made happen)', () => {
    const audit = tm.auditPermissions(fileURLToPath(new URL('../config/rbac/role.yaml', import.meta.url)));
    expect(audit.denied.map((d) => `${d.method} ${d.url}`)).toEqual([]);
  });
});
