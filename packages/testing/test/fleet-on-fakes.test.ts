/**
 * A fleet on fakes, as a user's unit tests run one: the host and every
 * member are fake API servers, engaged through `manualProvider` with their
 * in-memory transports. Members converge, one leaves, a new one joins and
 * catches up from the host's objects; `onClusterChange` tells each of them.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { isAlreadyExists, isNotFound } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import { createLogger, createManager, Result } from '@kubeloop/manager';
import { createFleet, everyCluster, manualProvider } from '@kubeloop/manager/fleet';
import { ConfigMap } from '@kubeloop/scheme';
import { createFakeApiServer, eventually } from '../src/index.js';
import type { FakeApiServer } from '../src/index.js';

const fakes: FakeApiServer[] = [];
const fake = (): FakeApiServer => {
  const f = createFakeApiServer();
  fakes.push(f);
  return f;
};
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()));
});

async function copyIn(client: Client, name: string): Promise<string | undefined> {
  try {
    return (await client.get(ConfigMap, { namespace: 'default', name })).data?.['level'];
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

describe('a fleet of fakes', () => {
  it('copies a host object into every member, leaves a member that goes and catches up one that joins', async () => {
    const host = fake();
    const members = { a: fake(), b: fake(), c: fake() };
    const clients = { a: members.a.client(), b: members.b.client(), c: members.c.client() };
    const manager = createManager({ transport: host.createTransport(), fieldOwner: 'fleet-fake', logger: createLogger({ level: 'silent' }) });
    const provider = manualProvider();
    const fleet = createFleet(manager, { provider, clusters: { fieldOwner: 'fleet-fake' } });
    const changes: string[] = [];
    fleet.onClusterChange(({ type, cluster }) => changes.push(`${type} ${cluster}`));
    fleet
      .controller()
      .named('copy')
      .for(ConfigMap)
      .watchesHost(ConfigMap, everyCluster())
      .complete(async (req, ctx) => {
        const source = await ctx.host.client.get(ConfigMap, { namespace: req.namespace!, name: req.name }).catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
        if (!source) return Result.done();
        await ctx.client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: req.namespace!, name: req.name }, data: { ...source.data } }).catch(async (err: unknown) => {
          if (!isAlreadyExists(err)) throw err;
          const copy = await ctx.client.get(ConfigMap, { namespace: req.namespace!, name: req.name });
          if (copy.data?.['level'] !== source.data?.['level']) await ctx.client.update({ ...copy, data: { ...source.data } });
        });
        return Result.done();
      });
    await provider.engage('a', { transport: members.a.createTransport() });
    await provider.engage('b', { transport: members.b.createTransport() });
    const stop = new AbortController();
    const running = manager.start(stop.signal);
    try {
      const hostClient = host.client();
      await hostClient.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'default', name: 'policy' }, data: { level: '1' } });
      for (const m of ['a', 'b'] as const) await eventually(async () => expect(await copyIn(clients[m], 'policy')).toBe('1'));
      // A member's copy edited behind the fleet's back is put back (its own event, its own queue).
      const tampered = await clients.a.get(ConfigMap, { namespace: 'default', name: 'policy' });
      await clients.a.update({ ...tampered, data: { level: 'x' } });
      await eventually(async () => expect(await copyIn(clients.a, 'policy')).toBe('1'));

      expect(changes).toEqual(['engaged a', 'engaged b']);
      await provider.disengage('b');
      expect(changes).toEqual(['engaged a', 'engaged b', 'disengaged b']);
      // A re-engage (a new target under the same name) is told as engaged, never as a departure.
      await provider.engage('a', { transport: members.a.createTransport() });
      expect(changes.slice(3)).toEqual(['engaged a']);
      await provider.engage('c', { transport: members.c.createTransport() });
      await eventually(async () => expect(await copyIn(clients.c, 'policy')).toBe('1'));
      expect([...fleet.clusters()].sort()).toEqual(['a', 'c']);
      const policy = await hostClient.get(ConfigMap, { namespace: 'default', name: 'policy' });
      await hostClient.update({ ...policy, data: { level: '2' } });
      for (const m of ['a', 'c'] as const) await eventually(async () => expect(await copyIn(clients[m], 'policy')).toBe('2'));
      expect(await copyIn(clients.b, 'policy')).toBe('1');
    } finally {
      stop.abort();
      await running;
    }
    expect(fleet.clusters()).toEqual([]);
    expect(changes.slice(4).sort()).toEqual(['disengaged a', 'disengaged c', 'engaged c']);
  });
});
