/**
 * startTestManager and waitForReconcile, on both backends (the fake and the
 * real API server envtest started): the same test body sets up a copying
 * controller, waits for the reconcile of the object it creates, sees a
 * failing reconcile named in the timeout message, and stops the manager.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { rolesFor } from '@kubeloop/manager/rbac';
import { createClient, isNotFound } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createOrUpdate, Result } from '@kubeloop/manager';
import type { Manager } from '@kubeloop/manager';
import { ConfigMap } from '@kubeloop/scheme';
import { createFakeApiServer, eventually, isTestingError } from '../src/index.js';
import type { FakeApiServer } from '../src/index.js';
import { startTestManager, waitForReconcile } from '../src/manager.js';
import type { TestManager } from '../src/manager.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';

/** Copies ConfigMap `x` to `x-copy`; `broken` always fails. */
function setupCopier(manager: Manager): void {
  manager
    .controller()
    .named('copier')
    .for(ConfigMap)
    .complete(async (req) => {
      if (req.name === 'broken') throw new Error('boom');
      if (req.name.endsWith('-copy')) return Result.done();
      const source = await manager.client.get(ConfigMap, { namespace: req.namespace!, name: req.name }).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      if (!source) return Result.done();
      const copy: ConfigMap & { apiVersion: 'v1'; kind: 'ConfigMap' } = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${req.name}-copy`, namespace: req.namespace! } };
      await createOrUpdate(manager.client, copy, (c) => {
        c.data = { ...source.data };
      });
      return Result.done();
    });
}

describe.each([{ backend: 'fake' as const }, { backend: 'envtest' as const }])('a test manager on $backend', ({ backend }) => {
  let fake: FakeApiServer | undefined;
  let client: Client;
  let tm: TestManager;
  const ns = backend === 'fake' ? 'default' : uniqueName('tm');

  beforeAll(async () => {
    if (backend === 'fake') {
      fake = createFakeApiServer();
      client = fake.client({ fieldOwner: 'test' });
    } else {
      client = createClient({ kubeConfig: testKubeConfig(), fieldOwner: 'test' });
      await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    }
    tm = await startTestManager({ backend: fake ?? testKubeConfig(), namespaces: [ns], setup: setupCopier });
  });

  afterAll(async () => {
    await tm?.stop();
    await fake?.close();
  });

  it('starts with every controller synced, and waits for the reconcile of an object it is told of', async () => {
    expect(tm.manager.controllers().map((c) => [c.name, c.synced])).toEqual([['copier', true]]);
    const reconciled = tm.waitForReconcile({ namespace: ns, name: 'settings' });
    const created = await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: ns }, data: { mode: 'on' } });
    const report = await reconciled;
    expect(report).toMatchObject({ controller: 'copier', request: { namespace: ns, name: 'settings' }, result: 'success' });
    expect(report.durationMs).toBeGreaterThan(0);
    // the reconcile is over: its write is there, no polling needed
    expect((await client.get(ConfigMap, { namespace: ns, name: 'settings-copy' })).data).toEqual({ mode: 'on' });
    // an object works as the target too
    const again = tm.waitForReconcile(created);
    await client.update({ ...created, data: { mode: 'off' } });
    await again;
    expect((await client.get(ConfigMap, { namespace: ns, name: 'settings-copy' })).data).toEqual({ mode: 'off' });
  });

  it('times out with the reconciles it saw, errors included', async () => {
    const waiting = waitForReconcile(tm.manager, { namespace: ns, name: 'broken', controller: 'copier' }, { timeoutMs: 1_500 });
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'broken', namespace: ns } });
    const err = await waiting.then(() => undefined, (e: unknown) => e);
    expect(isTestingError(err) && err.reason).toBe('ConditionNotMet');
    expect((err as Error).message).toMatch(new RegExp(`^waitForReconcile ${ns}/broken \\(controller copier\\): no success within 1500 ms; saw only: copier: error \\(boom\\)`));
    // asking for errors finds the next failing attempt (the key is retried with backoff)
    const failed = await waitForReconcile(tm.manager, { namespace: ns, name: 'broken' }, { results: ['error'], timeoutMs: 10_000 });
    expect((failed.error as Error).message).toBe('boom');
  });

  it('field indexes of the cache answer lists by an indexed value', async () => {
    // An index whose name is no field of the object: only the index can answer it.
    await tm.manager.cache.indexField(ConfigMap, 'modeUpper', (cm) => (cm.data?.['mode'] ? [cm.data['mode'].toUpperCase()] : []));
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'indexed', namespace: ns }, data: { mode: 'loud' } });
    const found = await eventually(async () => {
      const list = await tm.manager.client.list(ConfigMap, { namespace: ns, fieldSelector: 'modeUpper=LOUD' });
      // the copier copies it, data and all; 'settings' (mode off) is not LOUD
      expect(list.items.map((c) => c.metadata?.name).sort()).toEqual(['indexed', 'indexed-copy']);
      return list;
    });
    expect(found.items.every((c) => c.data?.['mode'] === 'loud')).toBe(true);
  });

  it('records the manager’s requests and audits them against roles: undeclared writes are denied', async () => {
    // Watches are recorded with their answer.
    expect(tm.requests.some((r) => r.method === 'GET' && /\/configmaps\?.*watch=(true|1)/.test(r.url) && r.status === 200)).toBe(true);
    // The copier writes ConfigMaps but declares no permission: its own permissions() grant only reads and events.
    const denied = [...new Set(tm.auditPermissions().denied.map((d) => `${d.attributes.verb} ${d.attributes.resource}`))].sort();
    expect(denied).toContain('create configmaps');
    expect(denied.every((d) => /^(create|update|patch) configmaps$/.test(d))).toBe(true);
    // Granted, nothing is denied; the same roles from a file, as generate rbac writes one.
    const roles = rolesFor([...tm.manager.permissions(), { group: '', resource: 'configmaps', verbs: ['create', 'update', 'patch'], namespaces: [ns], reason: 'copier writes' }], { name: 'copier' });
    expect(tm.auditPermissions(roles).denied).toEqual([]);
    const dir = mkdtempSync(join(tmpdir(), 'kubeloop-audit-'));
    try {
      const file = join(dir, 'role.yaml');
      writeFileSync(file, roles.map((r) => stringify(r)).join('---\n'));
      expect(tm.auditPermissions(file).denied).toEqual([]);
      writeFileSync(file, 'kind: ConfigMap\n');
      expect(() => tm.auditPermissions(file)).toThrow(/holds no ClusterRole or Role/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a listener that throws harms nothing', async () => {
    const off = tm.manager.onReconcile(() => {
      throw new Error('listener bug');
    });
    try {
      const reconciled = tm.waitForReconcile({ namespace: ns, name: 'other' });
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other', namespace: ns } });
      expect((await reconciled).result).toBe('success');
    } finally {
      off();
    }
  });
});

describe('startTestManager', () => {
  it('fails with what the controllers wait for when they cannot sync', async () => {
    const fake = createFakeApiServer();
    try {
      const Missing = { group: 'nowhere.example.com', version: 'v1', kind: 'Ghost', plural: 'ghosts', namespaced: true, apiVersion: 'nowhere.example.com/v1' } as const;
      const err = await startTestManager({
        backend: fake,
        startTimeoutMs: 1_000,
        setup: (m) => m.controller().named('ghosts').for(Missing as never).complete(() => Result.done()),
      }).then(() => undefined, (e: unknown) => e);
      expect(isTestingError(err) && err.reason).toBe('ConditionNotMet');
      expect((err as Error).message).toContain("the test manager's controllers did not sync within 1000 ms: ghosts waiting for");
    } finally {
      await fake.close();
    }
  });
});
