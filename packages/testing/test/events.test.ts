/** collectEvents on the fake (the conformance suite runs it on envtest too): filters, updates, waitFor's failure message, stop. */
import { afterAll, describe, expect, it } from 'vitest';
import { createFakeApiServer, collectEvents, isTestingError } from '../src/index.js';

const fake = createFakeApiServer();
const client = fake.client();
afterAll(() => fake.close());

function event(name: string, reason: string, regarding: { kind: string; name: string }, namespace = 'default'): never {
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: { name, namespace },
    eventTime: fake.clock.microTimestamp(),
    reportingController: 'kubeloop.dev/test',
    reportingInstance: 'test-1',
    action: 'Reconcile',
    reason,
    note: `${reason} ${regarding.name}`,
    type: 'Normal',
    regarding: { apiVersion: 'v1', namespace, ...regarding },
  } as never;
}

describe('collectEvents', () => {
  it('collects existing and new events about the object asked for, and only those', async () => {
    await client.create(event('old', 'Created', { kind: 'ConfigMap', name: 'a' }));
    const events = await collectEvents(client, { namespace: 'default', regarding: { kind: 'ConfigMap', name: 'a' } });
    await client.create(event('new', 'Synced', { kind: 'ConfigMap', name: 'a' }));
    await client.create(event('other', 'Synced', { kind: 'ConfigMap', name: 'b' }));
    await events.waitFor((e) => e.reason === 'Synced');
    expect(events.events.map((e) => e.metadata?.name)).toEqual(['old', 'new']);
    await events.stop();
  });

  it('filters by reason', async () => {
    const events = await collectEvents(client, { reason: 'Deleted' });
    await client.create(event('del', 'Deleted', { kind: 'Pod', name: 'p' }));
    expect((await events.waitFor()).metadata?.name).toBe('del');
    await events.stop();
  });

  it('keeps the latest state of an event that is updated (series)', async () => {
    const events = await collectEvents(client, { regarding: { name: 'series' } });
    const e = await client.create(event('series-1', 'Backoff', { kind: 'Pod', name: 'series' }));
    await client.update({ ...(e as object), series: { count: 2, lastObservedTime: fake.clock.microTimestamp() } } as never);
    await events.waitFor((x) => x.series?.count === 2);
    expect(events.events).toHaveLength(1);
    await events.stop();
  });

  it('waitFor fails with what it did see', async () => {
    await using events = await collectEvents(client, { regarding: { name: 'a' } });
    const err = await events.waitFor((e) => e.reason === 'Never', { timeoutMs: 100 }).catch((e: unknown) => e);
    expect(isTestingError(err) && err.reason).toBe('ConditionNotMet');
    expect((err as Error).message).toContain('no matching event among 2: ');
    expect((err as Error).message).toContain('Created Created a');
    expect((err as Error).message).toContain('Synced Synced a');
  });
});
