/**
 * The fleet operator under exactly the roles `kubeloop generate rbac` wrote:
 * the host as a ServiceAccount bound to rbac/role.yaml, the member as
 * another ServiceAccount bound to rbac/member-role.yaml, each behind an
 * envtest proxy that records every request. The member joins through its
 * kubeconfig Secret (the provider's Secret reads are in the host role), its
 * copy is made (namespace included), put back after a hand delete, its
 * status entry written and dropped when its Secret goes; no request is
 * refused (403) and none falls outside the roles. The shared control plane
 * is both host and member (two identities, two roles): no plane of its own.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load, loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, isAlreadyExists, isNotFound } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { installCRDs, startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy } from '@kubeloop/envtest';
import { createLogger, createManager } from '@kubeloop/manager';
import { auditRequests } from '@kubeloop/manager/rbac';
import type { RoleManifest } from '@kubeloop/manager/rbac';
import { builtinScheme, ConfigMap, Secret } from '@kubeloop/scheme';
import { eventually } from '@kubeloop/testing';
import { FleetConfig, setupFleetOperator } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';
import { serviceAccountKubeConfig } from '../../../test/support/service-account.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const scheme = builtinScheme.extend(FleetConfig);
const hostRoles = loadAll(readFileSync(join(root, 'rbac', 'role.yaml'), 'utf8')) as RoleManifest[];
const memberRoles = loadAll(readFileSync(join(root, 'rbac', 'member-role.yaml'), 'utf8')) as RoleManifest[];
const SYSTEM = 'fleet-system';

let admin: Client;
const proxies: ApiProxy[] = [];
beforeAll(async () => {
  await installCRDs(testKubeConfig(), [join(root, 'crd')]);
  admin = createClient({ kubeConfig: testKubeConfig(), scheme, fieldOwner: 'fleet-rbac-test' });
  await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: SYSTEM } }).catch((err: unknown) => {
    if (!isAlreadyExists(err)) throw err;
  });
});
afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
  admin?.transport.close();
});

/** A proxy to the shared plane that speaks as a new ServiceAccount bound to `roles` (each renamed uniquely). */
async function asServiceAccount(roles: readonly RoleManifest[]): Promise<ApiProxy> {
  const name = uniqueName('fleet-op');
  const kc = await serviceAccountKubeConfig(admin, testKubeConfig(), { name, namespace: SYSTEM, roles });
  const proxy = await startApiProxy(kc);
  proxies.push(proxy);
  return proxy;
}

describe('the fleet operator under its generated roles', () => {
  it('joins a member, copies, puts back, reports and drops the entry with no request refused, host and member alike', async () => {
    expect(memberRoles.map((r) => r.metadata.name)).toEqual(['fleet-operator-member']);
    const host = await asServiceAccount(hostRoles);
    const member = await asServiceAccount(memberRoles);
    const selector = uniqueName('rbac');
    const manager = createManager({
      kubeConfig: host.kubeConfig,
      scheme,
      fieldOwner: 'fleet-operator',
      logger: createLogger({ level: 'silent' }),
      leaderElection: { name: uniqueName('fleet-operator'), namespace: SYSTEM, leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 },
    });
    setupFleetOperator(manager, { memberSelector: `fleet-rbac-test=${selector}` });
    const stop = new AbortController();
    const running = manager.start(stop.signal);
    const cluster = uniqueName('m');
    const name = uniqueName('policy');
    const namespace = uniqueName('team');
    const entry = async (): Promise<string | undefined> => {
      const config = await admin.get(FleetConfig, { name });
      const m = config.status?.members?.find((e) => e.cluster === cluster);
      return m ? `${m.syncedGeneration}:${m.conditions?.find((c) => c.type === 'Synced')?.status}` : undefined;
    };
    const copy = (): Promise<Record<string, string> | undefined> => admin.get(ConfigMap, { namespace, name }).then((c) => ({ ...c.data }), (err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    try {
      const kubeconfig = { apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'member', cluster: { server: member.url } }], users: [{ name: 'member', user: {} }], contexts: [{ name: 'member', context: { cluster: 'member', user: 'member' } }], 'current-context': 'member' };
      expect(load(JSON.stringify(kubeconfig))).toEqual(kubeconfig);
      await admin.create({ apiVersion: 'v1', kind: 'Secret', metadata: { namespace: SYSTEM, name: cluster, labels: { 'fleet-rbac-test': selector } }, data: { kubeconfig: Buffer.from(JSON.stringify(kubeconfig)).toString('base64') } });
      await admin.create({ apiVersion: 'fleet-demo.io/v1alpha1', kind: 'FleetConfig', metadata: { name }, spec: { namespace, data: { level: '1' } } });
      await eventually(async () => expect(await copy()).toEqual({ level: '1' }), { timeoutMs: 30_000, message: 'the copy in the member' });
      await eventually(async () => expect(await entry()).toBe('1:True'), { timeoutMs: 15_000 });
      await admin.delete(ConfigMap, { namespace, name });
      await eventually(async () => expect(await copy()).toEqual({ level: '1' }), { timeoutMs: 15_000, message: 'the copy put back' });
      await admin.delete(Secret, { namespace: SYSTEM, name: cluster });
      await eventually(async () => expect(await entry()).toBeUndefined(), { timeoutMs: 15_000, message: 'the entry dropped' });
    } finally {
      stop.abort();
      await running.catch(() => undefined);
      await admin.delete(FleetConfig, { name }).catch(() => undefined);
    }
    for (const [proxy, roles] of [[host, hostRoles], [member, memberRoles]] as const) {
      expect(proxy.requests.length).toBeGreaterThan(0);
      expect(proxy.requests.filter((r) => r.status === 403).map((r) => `${r.method} ${r.url}`)).toEqual([]);
      expect(auditRequests(roles, proxy.requests).denied.map((d) => `${d.method} ${d.url}`)).toEqual([]);
    }
    // The member identity wrote in the member: the copy and its namespace.
    expect(member.requests.some((r) => r.method === 'POST' && r.path === '/api/v1/namespaces')).toBe(true);
  });
});
