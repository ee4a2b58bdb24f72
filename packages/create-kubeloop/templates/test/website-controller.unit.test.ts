/**
 * The Website controller on the fake API server of @kubeloop/testing: in
 * memory, no control plane, a new API per file in well under a millisecond.
 * The same client, informers and manager run on it as on a real cluster;
 * the Website's schema is enforced as the API server would. For faults a
 * real server will not produce on demand, inject them (`fake.inject`).
 * Admission webhooks, CEL rules and RBAC need a real API server: see
 * website-controller.test.ts (envtest).
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@kubeloop/client';
import { ConfigMap, builtinScheme } from '@kubeloop/scheme';
import { createFakeApiServer, eventually } from '@kubeloop/testing';
import type { FakeApiServer } from '@kubeloop/testing';
import { startTestManager } from '@kubeloop/testing/manager';
import type { TestManager } from '@kubeloop/testing/manager';
import { WEBSITE_FINALIZER, Website } from '../src/apis/index.js';
import { configMapNameOf, setupWebsiteController } from '../src/controllers/index.js';

const scheme = builtinScheme.extend(Website);
let fake: FakeApiServer;
let client: Client;
let tm: TestManager;

beforeAll(async () => {
  fake = createFakeApiServer();
  fake.register(Website, { status: true });
  client = fake.client({ scheme, fieldOwner: 'website-test' });
  tm = await startTestManager({ backend: fake, scheme, fieldOwner: '{{name}}', setup: (manager) => setupWebsiteController(manager) });
});

afterAll(async () => {
  await tm.stop();
  await fake.close();
});

function website(name: string, title: string) {
  return { apiVersion: '{{group}}/v1' as const, kind: 'Website' as const, metadata: { name, namespace: 'default' }, spec: { title } };
}

describe('the Website controller (fake API server)', () => {
  it('publishes the page and reports Ready', async () => {
    await client.create(website('home', 'Home'));
    const site = await eventually(async () => {
      const site = await client.get(Website, { namespace: 'default', name: 'home' });
      expect(site.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
      return site;
    });
    expect(site.metadata?.finalizers).toContain(WEBSITE_FINALIZER);
    const cm = await client.get(ConfigMap, { namespace: 'default', name: configMapNameOf('home') });
    expect(cm.data?.['index.html']).toContain('<h1>Home</h1>');
  });

  it('retries when writing status fails, and gets there in the end', async () => {
    const failing = fake.inject({ kind: 'Website', subresource: 'status', times: 2 }, { error: 'InternalError' });
    const failed = tm.waitForReconcile({ namespace: 'default', name: 'flaky' }, { results: ['error'] });
    await client.create(website('flaky', 'Flaky'));
    expect((await failed).result).toBe('error');
    await eventually(async () => {
      const site = await client.get(Website, { namespace: 'default', name: 'flaky' });
      expect(site.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    }, { timeoutMs: 15_000 });
    expect(failing.hits).toBe(2);
  });
});
