/**
 * A manager whose cache follows namespaces chosen by a label selector, run
 * on the real API server as a user bound only to the roles its own
 * `permissions()` produce: it needs list and watch on namespaces (which the
 * roles carry, with the reason), and with them it reconciles what is in a
 * namespace labelled while it runs. Without that rule its cache cannot
 * start: the API server refuses the namespace list.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, loadKubeConfig, mergePatch } from '@kubeloop/client';
import type { Client, RestConfig } from '@kubeloop/client';
import { createInformerCache } from '@kubeloop/cache';
import { ConfigMap, Namespace } from '@kubeloop/scheme';
import { createLogger, createManager, Result } from '../../src/index.js';
import { rolesFor } from '../../src/rbac/index.js';
import type { PermissionRequirement, RoleManifest } from '../../src/rbac/index.js';
import { eventually, newNamespace, run, testClient } from '../support.js';
import { testKubeconfigPath, uniqueName } from '../../../../test/support/env.js';

const RBAC = 'rbac.authorization.k8s.io/v1';

describe('a cache that follows namespaces by label, under the roles its manager asks for', () => {
  let admin: Client;
  const key = `scope.kubeloop.dev/${uniqueName('rbac')}`;
  const made: { kind: string; name: string }[] = [];
  const namespaces: string[] = [];

  /** Bind `user` to the ClusterRole of `needs`. */
  async function grant(user: string, needs: readonly PermissionRequirement[]): Promise<RoleManifest> {
    const name = uniqueName('ns-follower');
    const [role] = rolesFor(needs, { name });
    await admin.create({ ...role!, rules: role!.rules.map((r) => ({ ...r })) } as never);
    await admin.create({ apiVersion: RBAC, kind: 'ClusterRoleBinding', metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }] } as never);
    made.push({ kind: 'ClusterRoleBinding', name }, { kind: 'ClusterRole', name });
    return role!;
  }

  const as = (user: string): RestConfig => ({ ...loadKubeConfig(testKubeconfigPath()), impersonate: { user } });

  beforeAll(() => {
    admin = testClient('rbac-ns-selector-test');
  });
  afterAll(async () => {
    for (const m of made) await admin.delete({ apiVersion: RBAC, kind: m.kind }, { name: m.name }).catch(() => undefined);
    for (const ns of namespaces) await admin.delete(Namespace, { name: ns }).catch(() => undefined);
  });

  it('permissions() adds list and watch on namespaces; bound to just that, the manager reconciles a namespace labelled while it runs', async () => {
    const user = uniqueName('follower');
    const options = { cache: { namespaceSelector: `${key}=on` }, logger: createLogger({ level: 'silent' }), fieldOwner: 'rbac-ns-selector-test' } as const;
    const offline = createManager({ kubeConfig: as(user), ...options });
    offline.controller().for(ConfigMap).complete(() => Result.done());
    const needs = offline.permissions();
    expect(needs).toContainEqual({ group: '', resource: 'namespaces', verbs: ['list', 'watch'], reason: 'the cache follows the namespaces its namespaceSelector chooses' });
    const role = await grant(user, needs);
    expect(role.rules).toContainEqual({ apiGroups: [''], resources: ['namespaces'], verbs: ['list', 'watch'] });

    const reconciled = new Set<string>();
    const manager = createManager({ kubeConfig: as(user), ...options });
    manager
      .controller()
      .for(ConfigMap)
      .complete((request) => {
        reconciled.add(`${request.namespace}/${request.name}`);
        return Result.done();
      });
    const running = run(manager);
    try {
      const ns = await newNamespace(admin, 'rbac-follow');
      namespaces.push(ns);
      await admin.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: ns } });
      await eventually(() => manager.cache.informerInfo(ConfigMap)?.synced, (s) => s === true, 'the ConfigMap cache to sync under the generated role');
      expect(reconciled.has(`${ns}/settings`)).toBe(false); // not selected yet
      await admin.patch(Namespace, { name: ns }, mergePatch({ metadata: { labels: { [key]: 'on' } } }));
      await eventually(() => reconciled.has(`${ns}/settings`), (r) => r, 'the ConfigMap in the labelled namespace reconciled', 30_000);
    } finally {
      await running.stop();
    }
  });

  it('without that rule, the cache cannot start: the API server refuses the namespace list, and the cache says so', async () => {
    const user = uniqueName('no-ns');
    await grant(user, [{ group: '', resource: 'configmaps', verbs: ['get', 'list', 'watch'], reason: 'reads' }]);
    const errors: unknown[] = [];
    const cache = createInformerCache({ client: createClient({ kubeConfig: as(user) }), namespaceSelector: `${key}=on`, onError: (_kind, err) => errors.push(err) });
    try {
      const err = await cache.list(ConfigMap, { signal: AbortSignal.timeout(5_000) }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      await eventually(() => errors.map(String).join('\n'), (text) => /forbidden/i.test(text) && text.includes('namespaces'), 'the Forbidden on namespaces reported');
    } finally {
      await cache.stop();
    }
  });
});
