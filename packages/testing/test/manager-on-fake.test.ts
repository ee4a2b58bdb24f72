/**
 * A manager, unchanged, on the fake: built from the KubeConfig of the fake's
 * loopback endpoint, its informers sync, its controller reconciles, owned
 * objects and events appear, and a child deleted behind its back is put back
 * (the `owns` watch). The test uses the kit's helpers as a user would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isNotFound } from '@kubeloop/client';
import { createCluster, createLogger, createManager, createOrUpdate, Result, setControllerReference } from '@kubeloop/manager';
import type { Manager } from '@kubeloop/manager';
import { ConfigMap, Lease } from '@kubeloop/scheme';
import { collectEvents, createFakeApiServer, eventually } from '../src/index.js';
import type { FakeApiServer, FakeHttpEndpoint } from '../src/index.js';

let fake: FakeApiServer;
let endpoint: FakeHttpEndpoint;
let manager: Manager;
const stop = new AbortController();
let running: Promise<void>;

beforeAll(async () => {
  fake = createFakeApiServer();
  endpoint = await fake.listen();
  manager = createManager({ kubeConfig: endpoint.kubeConfig, fieldOwner: 'copier', logger: createLogger({ level: 'silent' }) });
  const recorder = manager.recorderFor('copier');
  manager
    .controller()
    .for(ConfigMap)
    .owns(ConfigMap)
    .complete(async (req) => {
      if (req.name.endsWith('-copy')) return Result.done(); // copies are not copied again
      const source = await manager.client.get(ConfigMap, { namespace: req.namespace!, name: req.name }).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      if (!source) return Result.done();
      const copy: ConfigMap & { apiVersion: 'v1'; kind: 'ConfigMap' } = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${req.name}-copy`, namespace: req.namespace! } };
      const op = await createOrUpdate(manager.client, copy, (c) => {
        c.data = { ...source.data };
        setControllerReference(source, c);
      });
      if (op !== 'unchanged') recorder.event(source, 'Normal', 'Copied', 'Reconcile', `copy ${op}`);
      return Result.done();
    });
  running = manager.start(stop.signal);
});

afterAll(async () => {
  stop.abort();
  await running;
  await endpoint.close();
  await fake.close();
});

describe('a manager on the fake', () => {
  it('reconciles: the copy appears, owned by the source, and an event is recorded', async () => {
    const client = fake.client({ fieldOwner: 'test' });
    const events = await collectEvents(client, { namespace: 'default', regarding: { name: 'settings' } });
    await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'default' }, data: { mode: 'on' } });
    const copy = await eventually(() => client.get(ConfigMap, { namespace: 'default', name: 'settings-copy' }));
    expect(copy.data).toEqual({ mode: 'on' });
    expect(copy.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'ConfigMap', name: 'settings', controller: true });
    const event = await events.waitFor((e) => e.reason === 'Copied');
    expect(event.note).toBe('copy created');
    await events.stop();
  });

  it('a second manager with leader election takes the Lease, and gives it back when it stops', async () => {
    const elected = createManager({
      kubeConfig: endpoint.kubeConfig,
      fieldOwner: 'elected',
      logger: createLogger({ level: 'silent' }),
      leaderElection: { name: 'copier-leader', namespace: 'default', identity: 'replica-1', releaseOnCancel: true },
    });
    const stopElected = new AbortController();
    const run = elected.start(stopElected.signal);
    const client = fake.client();
    const lease = await eventually(async () => {
      const got = await client.get(Lease, { namespace: 'default', name: 'copier-leader' });
      expect(got.spec?.holderIdentity).toBe('replica-1');
      return got;
    });
    expect(lease.spec?.leaseDurationSeconds).toBe(15);
    await eventually(() => elected.isLeader());
    stopElected.abort();
    await run;
    const released = await client.get(Lease, { namespace: 'default', name: 'copier-leader' });
    expect(released.spec?.holderIdentity ?? '').toBe('');
  });

  it('follows changes, and puts back a copy deleted behind its back', async () => {
    const client = fake.client({ fieldOwner: 'test' });
    const source = await client.get(ConfigMap, { namespace: 'default', name: 'settings' });
    await client.update({ ...source, data: { mode: 'off' } });
    await eventually(async () => expect((await client.get(ConfigMap, { namespace: 'default', name: 'settings-copy' })).data).toEqual({ mode: 'off' }));
    await client.delete(ConfigMap, { namespace: 'default', name: 'settings-copy' });
    await eventually(async () => expect((await client.get(ConfigMap, { namespace: 'default', name: 'settings-copy' })).data).toEqual({ mode: 'off' }));
  });
});

describe('a manager on the fake\'s in-memory transport (createCluster({ transport }))', () => {
  it('reconciles without any socket: informers, controller, owned objects, events', async () => {
    const memoryFake = createFakeApiServer();
    const cluster = createCluster({ transport: memoryFake.createTransport(), fieldOwner: 'in-memory', logger: createLogger({ level: 'silent' }) });
    const m = createManager({ cluster, logger: createLogger({ level: 'silent' }) });
    const recorder = m.recorderFor('in-memory');
    m.controller()
      .for(ConfigMap)
      .complete(async (req) => {
        if (req.name.endsWith('-copy')) return Result.done();
        const source = await m.client.get(ConfigMap, { namespace: req.namespace!, name: req.name });
        const copy: ConfigMap & { apiVersion: 'v1'; kind: 'ConfigMap' } = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${req.name}-copy`, namespace: req.namespace! } };
        await createOrUpdate(m.client, copy, (c) => {
          c.data = { ...source.data };
          setControllerReference(source, c);
        });
        recorder.event(source, 'Normal', 'Copied', 'Reconcile', 'copied');
        return Result.done();
      });
    const stopMemory = new AbortController();
    const run = m.start(stopMemory.signal);
    try {
      const client = memoryFake.client({ fieldOwner: 'test' });
      const events = await collectEvents(client, { regarding: { name: 'in-memory' } });
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'in-memory', namespace: 'default' }, data: { a: '1' } });
      const copy = await eventually(() => client.get(ConfigMap, { namespace: 'default', name: 'in-memory-copy' }));
      expect(copy.data).toEqual({ a: '1' });
      await events.waitFor((e) => e.reason === 'Copied');
      await events.stop();
    } finally {
      stopMemory.abort();
      await run;
      await memoryFake.close();
    }
  });
});
