/**
 * The fleet operator's controllers on a fleet of fakes, as a user's unit
 * tests run them: the host and every member are `@kubeloop/testing` fake API
 * servers (the host with the CRD as shipped), engaged through
 * `manualProvider`. Every member converges and reports; a copy edited or
 * deleted by hand is put back; a new generation, a moved namespace and a
 * deleted FleetConfig reach every member; a member that leaves loses its
 * status entry, one that joins catches up and gains one.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { isNotFound, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createLogger, createManager } from '@kubeloop/manager';
import { manualProvider } from '@kubeloop/manager/fleet';
import { builtinScheme, ConfigMap } from '@kubeloop/scheme';
import { createFakeApiServer, eventually } from '@kubeloop/testing';
import type { FakeApiServer } from '@kubeloop/testing';
import { FLEETCONFIG_LABEL, FleetConfig, setupFleetOperator } from '../src/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const scheme = builtinScheme.extend(FleetConfig);
const crd = load(readFileSync(join(root, 'crd', 'fleetconfigs.fleet-demo.io.yaml'), 'utf8')) as object;

const fakes: FakeApiServer[] = [];
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()));
});
function fake(): FakeApiServer {
  const f = createFakeApiServer();
  fakes.push(f);
  return f;
}

/** A member's copy: its data, or undefined when there is none. */
async function copyIn(client: Client, namespace: string, name: string): Promise<Record<string, string> | undefined> {
  try {
    return { ...(await client.get(ConfigMap, { namespace, name })).data };
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** `cluster:syncedGeneration:Synced status` of each status entry, sorted. */
async function statusOf(host: Client, name: string): Promise<string[]> {
  const config = await host.get(FleetConfig, { name });
  return (config.status?.members ?? []).map((m) => `${m.cluster}:${m.syncedGeneration ?? '-'}:${m.conditions?.find((c) => c.type === 'Synced')?.status ?? '?'}`).sort();
}

describe('the fleet operator on a fleet of fakes', () => {
  it('copies a FleetConfig into every member, puts hand edits back, reports per member and follows members that leave and join', async () => {
    const host = fake();
    await host.installCRDs([crd]);
    const members = { a: fake(), b: fake(), c: fake() };
    const clients = { a: members.a.client(), b: members.b.client(), c: members.c.client() };
    const hostClient = host.client({ scheme, fieldOwner: 'test' });
    const manager = createManager({ transport: host.createTransport(), scheme, fieldOwner: 'fleet-operator', logger: createLogger({ level: 'silent' }) });
    const provider = manualProvider();
    const fleet = setupFleetOperator(manager, { provider });
    const changes: string[] = [];
    fleet.onClusterChange((c) => changes.push(`${c.type} ${c.cluster}`));
    await provider.engage('a', { transport: members.a.createTransport() });
    await provider.engage('b', { transport: members.b.createTransport() });
    const stop = new AbortController();
    const running = manager.start(stop.signal);
    try {
      await hostClient.create({ apiVersion: 'fleet-demo.io/v1alpha1', kind: 'FleetConfig', metadata: { name: 'policy' }, spec: { namespace: 'team-a', data: { level: '1' } } });
      // Every member converges (its namespace created), and reports generation 1 synced.
      for (const m of ['a', 'b'] as const) await eventually(async () => expect(await copyIn(clients[m], 'team-a', 'policy')).toEqual({ level: '1' }), { message: `the copy in ${m}` });
      await eventually(async () => expect(await statusOf(hostClient, 'policy')).toEqual(['a:1:True', 'b:1:True']));
      const copyA = await clients.a.get(ConfigMap, { namespace: 'team-a', name: 'policy' });
      expect(copyA.metadata?.labels?.[FLEETCONFIG_LABEL]).toBe('policy');
      // Each entry is its member's own field manager's: members never overwrite each other.
      const managers = (await hostClient.get(FleetConfig, { name: 'policy' })).metadata?.managedFields?.map((f) => f.manager) ?? [];
      expect(managers).toEqual(expect.arrayContaining(['fleet-operator/a', 'fleet-operator/b']));

      // Changed by hand in a, deleted by hand in b: both put back (the member's own events).
      await clients.a.patch(ConfigMap, { namespace: 'team-a', name: 'policy' }, mergePatch({ data: { level: 'tampered', extra: 'x' } }));
      await clients.b.delete(ConfigMap, { namespace: 'team-a', name: 'policy' });
      for (const m of ['a', 'b'] as const) await eventually(async () => expect(await copyIn(clients[m], 'team-a', 'policy')).toEqual({ level: '1' }), { message: `the copy in ${m} put back` });

      // A new generation reaches every member and its report.
      await hostClient.patch(FleetConfig, { name: 'policy' }, mergePatch({ spec: { data: { level: '2' } } }));
      for (const m of ['a', 'b'] as const) await eventually(async () => expect(await copyIn(clients[m], 'team-a', 'policy')).toEqual({ level: '2' }));
      await eventually(async () => expect(await statusOf(hostClient, 'policy')).toEqual(['a:2:True', 'b:2:True']));

      // b leaves: its status entry goes, a's stays; its copy is left as it was (nothing reaches it any more).
      await provider.disengage('b');
      await eventually(async () => expect(await statusOf(hostClient, 'policy')).toEqual(['a:2:True']));
      expect(changes).toContain('disengaged b');

      // c joins: it catches up from the host's FleetConfigs and reports.
      await provider.engage('c', { transport: members.c.createTransport() });
      await eventually(async () => expect(await copyIn(clients.c, 'team-a', 'policy')).toEqual({ level: '2' }));
      await eventually(async () => expect(await statusOf(hostClient, 'policy')).toEqual(['a:2:True', 'c:2:True']));

      // The namespace moves: the old copies go, new ones come.
      await hostClient.patch(FleetConfig, { name: 'policy' }, mergePatch({ spec: { namespace: 'team-b' } }));
      for (const m of ['a', 'c'] as const) {
        await eventually(async () => expect(await copyIn(clients[m], 'team-b', 'policy')).toEqual({ level: '2' }));
        await eventually(async () => expect(await copyIn(clients[m], 'team-a', 'policy')).toBeUndefined());
      }
      await eventually(async () => expect(await statusOf(hostClient, 'policy')).toEqual(['a:3:True', 'c:3:True']));

      // Deleted: every member's copy goes. b, gone from the fleet, keeps the copy it had.
      await hostClient.delete(FleetConfig, { name: 'policy' });
      for (const m of ['a', 'c'] as const) await eventually(async () => expect(await copyIn(clients[m], 'team-b', 'policy')).toBeUndefined());
      expect(await copyIn(clients.b, 'team-a', 'policy')).toEqual({ level: '2' });
    } finally {
      stop.abort();
      await running;
    }
    expect(fleet.clusters()).toEqual([]);
  });
});
