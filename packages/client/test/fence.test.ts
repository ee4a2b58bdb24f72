/**
 * Write fences against the real API server: a write inside `runFenced` is
 * refused once its fence says so (by the fence's own check, whatever its
 * signal), a write in flight when the fence is revoked is cut and never
 * lands (the proxy holds it: a slow link), reads are never fenced, nor is
 * work run `outsideFence`, and the fence follows the async work a scope
 * starts (a timer), not the client it was made with.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { createClient, currentFence, isFenced, mergePatch, outsideFence, runFenced } from '../src/index.js';
import type { Client, WriteFence } from '../src/index.js';
import { uniqueName } from '../../../test/support/env.js';
import { fixture } from './support.js';
import type { Fixture } from './support.js';

let f: Fixture;
let admin: Client;
let ns: string;

/** A fence revoked by hand; `silent` revokes its check without aborting its signal (a clock-only revocation). */
function handFence(): WriteFence & { revoke(why: string, silent?: boolean): void } {
  const controller = new AbortController();
  let why: string | undefined;
  return {
    signal: controller.signal,
    revoked: () => why,
    revoke(reason, silent = false) {
      why = reason;
      if (!silent) controller.abort(new Error(reason));
    },
  };
}

const cm = (name: string) => ({ apiVersion: 'v1' as const, kind: 'ConfigMap' as const, metadata: { name, namespace: ns }, data: { v: '0' } });
const value = async (name: string): Promise<string | undefined> => (await admin.get(ConfigMap, { namespace: ns, name })).data?.['v'];

beforeAll(async () => {
  f = await fixture();
  admin = createClient({ kubeConfig: f.env.kubeConfig, fieldOwner: 'fence-test' });
  ns = uniqueName('fence');
  await admin.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});
afterAll(async () => {
  await admin.delete({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns }).catch(() => undefined);
  await f.close();
});

describe('runFenced', () => {
  it('sends writes while the fence holds and refuses them, typed, once its check says so, even with its signal never aborted', async () => {
    const client = createClient({ kubeConfig: f.env.kubeConfig, fieldOwner: 'fence-test' });
    await admin.create(cm('checked'));
    const fence = handFence();
    await runFenced(fence, async () => {
      expect(currentFence()).toBe(fence);
      await client.patch(ConfigMap, { namespace: ns, name: 'checked' }, mergePatch({ data: { v: '1' } }));
      fence.revoke('bucket 3 was handed on', true);
      const err: unknown = await client.patch(ConfigMap, { namespace: ns, name: 'checked' }, mergePatch({ data: { v: '2' } })).catch((e: unknown) => e);
      expect(isFenced(err)).toBe(true);
      expect((err as Error).message).toMatch(/not sent: bucket 3 was handed on/);
      // Every write verb; reads go on.
      await expect(client.create(cm('never'))).rejects.toSatisfy(isFenced);
      await expect(client.delete(ConfigMap, { namespace: ns, name: 'checked' })).rejects.toSatisfy(isFenced);
      expect((await client.get(ConfigMap, { namespace: ns, name: 'checked' })).data?.['v']).toBe('1');
    });
    expect(currentFence()).toBeUndefined();
    expect(await value('checked')).toBe('1');
    await expect(admin.get(ConfigMap, { namespace: ns, name: 'never' })).rejects.toThrow(/not found/i);
    client.transport.close();
  });

  it('cuts a write in flight when the fence is revoked: it never lands, even once the slow link would have delivered it', async () => {
    const proxy: ApiProxy = await startApiProxy(f.env.kubeConfig);
    try {
      const slow = createClient({ kubeConfig: proxy.kubeConfig, fieldOwner: 'fence-test' });
      await admin.create(cm('in-flight'));
      await slow.get(ConfigMap, { namespace: ns, name: 'in-flight' }); // discovery done before the link slows
      proxy.delay(1500);
      const fence = handFence();
      const write = runFenced(fence, () => slow.patch(ConfigMap, { namespace: ns, name: 'in-flight' }, mergePatch({ data: { v: 'late' } }))).catch((e: unknown) => e);
      // The write is held in the proxy (on the wire) when the fence is revoked.
      for (let i = 0; i < 100 && proxy.count((r) => r.method === 'PATCH') === 0; i++) await sleep(20);
      expect(proxy.count((r) => r.method === 'PATCH')).toBe(1);
      fence.revoke('this member missed its renew deadline');
      const err = await write;
      expect(isFenced(err)).toBe(true);
      // Past the proxy's delay: nothing landed.
      await sleep(2500);
      expect(await value('in-flight')).toBe('0');
      slow.transport.close();
    } finally {
      await proxy.close();
    }
  });

  it('follows the work the scope starts (a timer), and not work run outsideFence', async () => {
    const client = createClient({ kubeConfig: f.env.kubeConfig, fieldOwner: 'fence-test' });
    await admin.create(cm('timers'));
    await admin.create(cm('outside'));
    const fence = handFence();
    fence.revoke('revoked from the start');
    const later = runFenced(fence, () => new Promise<unknown>((resolve) => setTimeout(() => resolve(client.patch(ConfigMap, { namespace: ns, name: 'timers' }, mergePatch({ data: { v: 'timer' } })).catch((e: unknown) => e)), 10)));
    expect(isFenced(await later)).toBe(true);
    await runFenced(fence, () => outsideFence(() => client.patch(ConfigMap, { namespace: ns, name: 'outside' }, mergePatch({ data: { v: 'outside' } }))));
    expect(await value('timers')).toBe('0');
    expect(await value('outside')).toBe('outside');
    client.transport.close();
  });
});
