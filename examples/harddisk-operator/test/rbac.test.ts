/**
 * The example operator under exactly the role `kubeloop generate rbac` wrote
 * (rbac/role.yaml): a ServiceAccount token bound to it, the manager's every
 * request recorded by the envtest proxy on the way. With the whole role the
 * operator leads, is ready, binds, resizes and releases disks, records
 * events and reviews metrics callers, and the recording shows no request the
 * role denies. With any one rule removed, something a user would notice
 * breaks, or readiness names the missing permission.
 *
 * Its own control plane, with the OwnerReferencesPermissionEnforcement
 * admission plugin on (as OpenShift runs it): there, an owner reference with
 * blockOwnerDeletion needs `update` on the owner's `finalizers`, so that rule
 * is needed too.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAllYaml } from '@kubernetes/client-node';
import { createClient, isNotFound, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createEnvironment, startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy, Environment } from '@kubeloop/envtest';
import { createShardRing } from '@kubeloop/leaderelection';
import { createLogger, createManager, ringLeadership, ringShardFilter } from '@kubeloop/manager';
import type { Manager } from '@kubeloop/manager';
import { auditRequests } from '@kubeloop/manager/rbac';
import type { RoleManifest } from '@kubeloop/manager/rbac';
import { ConfigMap, builtinScheme } from '@kubeloop/scheme';
import { HardDisk, setupHardDiskController } from '../src/index.js';
import { uniqueName } from '../../../test/support/env.js';
import { serviceAccountKubeConfig } from '../../../test/support/service-account.js';
import { httpsGet } from '../../../test/support/net.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const scheme = builtinScheme.extend(HardDisk);
const generated = loadAllYaml(readFileSync(join(root, 'rbac', 'role.yaml'), 'utf8')) as RoleManifest[];
const WAIT_MS = 8_000;

let env: Environment;
let admin: Client;
const systemNamespace = uniqueName('hd-system');

beforeAll(async () => {
  env = createEnvironment({ crds: [join(root, 'crd')], apiServerFlags: { 'enable-admission-plugins': 'OwnerReferencesPermissionEnforcement' } });
  await env.start();
  admin = createClient({ kubeConfig: env.kubeConfig, scheme, fieldOwner: 'rbac-e2e' });
  await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: systemNamespace } });
}, 120_000);
afterAll(async () => {
  await env?.stop();
});


/** A running operator: a manager whose requests go through a proxy holding only a ServiceAccount's token. */
interface Run {
  readonly manager: Manager;
  readonly proxy: ApiProxy;
  readonly token: string;
  stop(): Promise<void>;
}

/**
 * The operator as ServiceAccount `sa`, bound to `roles` (renamed uniquely; the Lease Role is in the
 * roles' own namespace): leader-elected, or `sharded` as main.ts runs it with --shard-ring (a
 * ring of one member, whose Leases are in the same namespace).
 */
async function runAs(roles: readonly RoleManifest[], sharded = false): Promise<Run> {
  const name = uniqueName('hd-op');
  const asServiceAccount = await serviceAccountKubeConfig(admin, env.kubeConfig, { name, namespace: systemNamespace, roles });
  const proxy = await startApiProxy(asServiceAccount);
  const leaseNamespace = roles.find((r) => r.kind === 'Role')?.metadata.namespace ?? 'default';
  const timing = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };
  const ring = sharded ? createShardRing({ client: createClient({ kubeConfig: proxy.kubeConfig }), namespace: leaseNamespace, name, identity: 'a', ...timing }) : undefined;
  const manager = createManager({
    kubeConfig: proxy.kubeConfig,
    scheme,
    fieldOwner: 'harddisk-operator',
    logger: createLogger({ level: 'silent' }),
    metricsBindAddress: '127.0.0.1:0',
    healthProbeBindAddress: '127.0.0.1:0',
    secureMetrics: {},
    ...(ring
      ? {
          leadership: ringLeadership(ring),
          cache: { byKind: [{ kind: HardDisk, options: { shard: ringShardFilter(ring) } }, { kind: ConfigMap, options: { shard: ringShardFilter(ring, 'controller-owner') } }] },
        }
      : { leaderElection: { name, namespace: leaseNamespace, ...timing } }),
  });
  setupHardDiskController(manager, 'explicit', ring ? { shard: { ring } } : {});
  const stop = new AbortController();
  const running = manager.start(stop.signal).catch(() => undefined);
  return {
    manager,
    proxy,
    token: asServiceAccount.getCurrentUser()!.token!,
    async stop() {
      stop.abort();
      await running;
      await proxy.close();
    },
  };
}

async function until(check: () => Promise<boolean> | boolean): Promise<boolean> {
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    if (await Promise.resolve(check()).catch(() => false)) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}


async function readyz(run: Run): Promise<{ status: number; body: string }> {
  const res = await fetch(`${run.manager.healthUrl}/readyz?verbose`);
  return { status: res.status, body: await res.text() };
}

/**
 * What a user would check, in order, stopping at the first that fails: the
 * manager leads, is ready, binds a disk (owned ConfigMap, Ready status,
 * event), reviews a metrics caller (403 for a token without `get /metrics`,
 * not 500), resizes, and releases the disk on delete. Returns what failed.
 */
async function userChecks(run: Run): Promise<string | undefined> {
  if (!(await until(() => run.manager.isLeader()))) return 'never became leader';
  if (!(await until(async () => (await readyz(run)).status === 200))) return `not ready: ${(await readyz(run)).body.replace(/\s+/g, ' ')}`;
  const ns = uniqueName('hd-rbac');
  await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  await admin.create({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk', metadata: { name: 'd1', namespace: ns }, spec: { size: '10Gi', storageClass: 'fast' } });
  const key = { namespace: ns, name: 'd1' };
  if (!(await until(async () => (await admin.get(HardDisk, key)).status?.phase === 'Bound'))) {
    const d = await admin.get(HardDisk, key);
    return `disk not Bound: ${JSON.stringify(d.status ?? {})}`;
  }
  const cm = await admin.get(ConfigMap, { namespace: ns, name: 'd1-disk' }).catch(() => undefined);
  if (cm?.metadata?.ownerReferences?.[0]?.blockOwnerDeletion !== true) return 'no owned ConfigMap';
  const eventsSeen = await until(async () => {
    const events = await admin.list({ apiVersion: 'events.k8s.io/v1', kind: 'Event' }, { namespace: ns });
    return events.items.some((e) => (e as { reason?: string }).reason === 'Provisioned');
  });
  if (!eventsSeen) return 'no Provisioned event';
  const scrape = await httpsGet(`${run.manager.metricsUrl}/metrics`, { token: run.token });
  if (scrape.status !== 403) return `metrics caller not reviewed: ${scrape.status} ${scrape.body.trim()}`;
  await admin.patch(HardDisk, key, mergePatch({ spec: { size: '20Gi' } }));
  if (!(await until(async () => (await admin.get(ConfigMap, { namespace: ns, name: 'd1-disk' })).data?.['size'] === '20Gi'))) return 'not resized';
  await admin.delete(HardDisk, key);
  const released = await until(async () => {
    const gone = await admin.get(HardDisk, key).then(() => false, (e: unknown) => isNotFound(e));
    const cmGone = await admin.get(ConfigMap, { namespace: ns, name: 'd1-disk' }).then(() => false, (e: unknown) => isNotFound(e));
    return gone && cmGone;
  });
  if (!released) return 'disk not released on delete';
  return undefined;
}

describe('the example operator under the generated role', () => {
  it('does everything a user checks, and the recording shows no request the role denies', async () => {
    const run = await runAs(generated);
    try {
      expect(await userChecks(run)).toBeUndefined();
      const forbidden = run.proxy.requests.filter((r) => r.status === 403);
      expect(forbidden.map((r) => `${r.method} ${r.url}`)).toEqual([]);
      const { denied, unused } = auditRequests(generated, run.proxy.requests);
      expect(denied.map((d) => `${d.method} ${d.url}`)).toEqual([]);
      // Grants no request used: `finalizers` is checked by admission, never requested; the rest are
      // verbs held for paths these checks do not take (a status read, an update after a conflict).
      const unusedWholeRules = generated.flatMap((role) =>
        role.rules.filter((rule) => (rule.resources ?? rule.nonResourceURLs ?? []).every((res) => rule.verbs.every((v) => unused.some((u) => u.resource.endsWith(`/${res}`) && u.verb === v)))).map((rule) => (rule.resources ?? []).join(',')),
      );
      expect(unusedWholeRules).toEqual(['harddisks/finalizers']);
    } finally {
      await run.stop();
    }
  }, 90_000);

  it('sharded (a shard ring as leadership, as main.ts runs with --shard-ring): the same checks, and no request the role denies, its Lease deleted on stop included', async () => {
    const run = await runAs(generated, true);
    try {
      expect(await userChecks(run)).toBeUndefined();
    } finally {
      await run.stop();
    }
    const leases = run.proxy.requests.filter((r) => r.url.includes('/leases'));
    // The ring listed the members, created its own Lease, renewed it and deleted it when stopped.
    expect(new Set(leases.map((r) => r.method))).toEqual(new Set(['GET', 'POST', 'PUT', 'DELETE']));
    expect(run.proxy.requests.filter((r) => r.status === 403).map((r) => `${r.method} ${r.url}`)).toEqual([]);
    expect(auditRequests(generated, run.proxy.requests).denied.map((d) => `${d.method} ${d.url}`)).toEqual([]);
  }, 90_000);

  const removals = generated.flatMap((role, r) =>
    role.rules.map((rule, i) => ({ r, i, resource: (rule.resources ?? rule.nonResourceURLs ?? []).join(','), label: `${role.kind} ${(rule.resources ?? rule.nonResourceURLs ?? []).join(',')} ${rule.verbs.join(',')}` })),
  );
  // What a user sees with each rule gone: a missing read in readiness, named; a missing write in what the operator fails to do.
  const symptom: Record<string, RegExp> = {
    configmaps: /^not ready: .*informers failed: not synced: ConfigMap.v1 \(GET \/api\/v1\/configmaps: 403 Forbidden: .*cannot list resource "configmaps"/,
    harddisks: /^not ready: .*informers failed: not synced: HardDisk.crd-demo.io\/v1 \(GET .*403 Forbidden: .*cannot list resource "harddisks"/,
    'harddisks/finalizers': /^disk not Bound/,
    'harddisks/status': /^disk not Bound/,
    events: /^no Provisioned event$/,
    leases: /^never became leader$/,
    tokenreviews: /^metrics caller not reviewed: 500 the token could not be reviewed: .*403 Forbidden/,
    subjectaccessreviews: /^metrics caller not reviewed: 500 access could not be reviewed: .*403 Forbidden/,
  };

  it('knows a symptom for every rule', () => {
    expect(removals.map((x) => x.resource).sort()).toEqual(Object.keys(symptom).sort());
  });

  it.each(removals)('without the rule $label, a user would notice', async ({ r, i, resource }) => {
    const roles = generated.map((role, ri) => (ri === r ? { ...role, rules: role.rules.filter((_, ii) => ii !== i) } : role));
    const run = await runAs(roles);
    try {
      const failure = await userChecks(run);
      expect(failure).toMatch(symptom[resource]!);
    } finally {
      await run.stop();
    }
  }, 90_000);
});
