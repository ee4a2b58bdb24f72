/**
 * The helpers operator authors reach for, against the real API server:
 * controller references, the finalizer protocol (conflict-safe),
 * create-or-update / create-or-patch, and status conditions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, isNotFound, mergePatch } from '@kubeloop/client';
import type { Client } from '@kubeloop/client';
import type { Stored } from '@kubeloop/client/internal';
import { ConfigMap } from '@kubeloop/scheme';
import {
  containsFinalizer,
  createOrPatch,
  createOrUpdate,
  finalize,
  findStatusCondition,
  getControllerOf,
  isManagerError,
  isStatusConditionTrue,
  setControllerReference,
  setOwnerReference,
  setStatusCondition,
} from '../../src/index.js';
import type { Condition } from '../../src/index.js';
import { jsonEqual } from '../../src/internal/json-equal.js';
import { testKubeConfig, uniqueName } from '../../../../test/support/env.js';

type CM = ConfigMap & { apiVersion: 'v1'; kind: 'ConfigMap' };

const FINALIZER = 'kubeloop.dev/test-cleanup';
let client: Client;
let other: Client;
let ns: string;

beforeAll(async () => {
  client = createClient({ kubeConfig: testKubeConfig(), fieldOwner: 'helpers-test' });
  // a second writer, as another controller or a user would be
  other = createClient({ kubeConfig: testKubeConfig(), fieldOwner: 'someone-else' });
  ns = uniqueName('helpers');
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
});
afterAll(() => {
  client.transport.close();
  other.transport.close();
});

function cm(name: string, data: Record<string, string> = {}, namespace = ns): CM {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data };
}
const read = (name: string): Promise<ConfigMap> => client.get(ConfigMap, { namespace: ns, name });
const gone = (name: string): Promise<boolean> => read(name).then(() => false, (e: unknown) => isNotFound(e));

function reasonOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return isManagerError(err) ? err.reason : `not a ManagerError: ${String(err)}`;
  }
  return undefined;
}

describe('setControllerReference', () => {
  it('makes the owner the controller; the API server accepts it and getControllerOf finds it', async () => {
    const owner = await client.create(cm(uniqueName('owner')));
    const child = setControllerReference(owner, cm(uniqueName('child')));
    const stored = await client.create(child);
    expect(stored.metadata.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'ConfigMap', name: owner.metadata.name, uid: owner.metadata.uid, controller: true, blockOwnerDeletion: true },
    ]);
    expect(getControllerOf(stored)?.uid).toBe(owner.metadata.uid);
  });

  it('is idempotent for the same owner and keeps other (non-controller) owners', async () => {
    const a = await client.create(cm(uniqueName('a')));
    const b = await client.create(cm(uniqueName('b')));
    const child = setOwnerReference(b, cm('x'));
    setControllerReference(a, child);
    setControllerReference(a, child);
    expect(child.metadata?.ownerReferences?.map((r) => [r.name, r.controller ?? false])).toEqual([
      [b.metadata.name, false],
      [a.metadata.name, true],
    ]);
  });

  it('refuses a second controller', async () => {
    const first = await client.create(cm(uniqueName('first')));
    const second = await client.create(cm(uniqueName('second')));
    const child = setControllerReference(first, cm('y'));
    expect(reasonOf(() => setControllerReference(second, child))).toBe('InvalidOptions');
    expect(child.metadata?.ownerReferences).toHaveLength(1);
    expect(getControllerOf(child)?.name).toBe(first.metadata.name);
  });

  it('refuses a cross-namespace owner, and a namespaced owner of a cluster-scoped object', async () => {
    const owner = await client.create(cm(uniqueName('owner')));
    expect(reasonOf(() => setControllerReference(owner, cm('elsewhere', {}, 'default')))).toBe('InvalidOptions');
    expect(reasonOf(() => setOwnerReference(owner, cm('elsewhere', {}, 'default')))).toBe('InvalidOptions');
    const clusterScoped = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n' } };
    expect(reasonOf(() => setControllerReference(owner, clusterScoped))).toBe('InvalidOptions');
  });

  it('accepts a cluster-scoped owner of a namespaced object', async () => {
    const namespace = await client.get({ apiVersion: 'v1', kind: 'Namespace' }, { name: ns });
    const child = setControllerReference(namespace, cm(uniqueName('in-ns')));
    expect(getControllerOf(child)).toMatchObject({ kind: 'Namespace', name: ns, uid: namespace.metadata?.uid });
  });

  it('needs an owner read from the server (with a uid)', () => {
    expect(reasonOf(() => setControllerReference(cm('no-uid'), cm('child')))).toBe('InvalidOptions');
  });
});

describe('finalize', () => {
  it('adds the finalizer to a live object without running cleanup', async () => {
    const created = await client.create(cm(uniqueName('fin')));
    let cleanups = 0;
    expect(await finalize(client, created, FINALIZER, () => void cleanups++)).toBe('present');
    expect(cleanups).toBe(0);
    const after = await read(created.metadata.name!);
    expect(after.metadata?.finalizers).toEqual([FINALIZER]);
    // already there: nothing written
    expect(await finalize(client, { ...after, apiVersion: 'v1', kind: 'ConfigMap' }, FINALIZER, () => void cleanups++)).toBe('present');
    expect((await read(created.metadata.name!)).metadata?.resourceVersion).toBe(after.metadata?.resourceVersion);
  });

  it('on delete runs cleanup while the object still exists, then removes the finalizer and the object goes away', async () => {
    const name = uniqueName('fin');
    const created = await client.create(cm(name));
    await finalize(client, created, FINALIZER, () => undefined);
    await client.delete(ConfigMap, { namespace: ns, name });
    const deleting = (await read(name)) as Stored<CM>;
    expect(deleting.metadata.deletionTimestamp).toBeDefined();
    const during: (string[] | undefined)[] = [];
    const result = await finalize(client, { ...deleting, apiVersion: 'v1', kind: 'ConfigMap' }, FINALIZER, async () => {
      during.push((await read(name)).metadata?.finalizers);
    });
    expect(result).toBe('deleting');
    expect(during).toEqual([[FINALIZER]]);
    expect(await gone(name)).toBe(true);
  });

  it('a failing cleanup keeps the finalizer (the object stays until cleanup succeeds)', async () => {
    const name = uniqueName('fin');
    await finalize(client, await client.create(cm(name)), FINALIZER, () => undefined);
    await client.delete(ConfigMap, { namespace: ns, name });
    const deleting = { ...(await read(name)), apiVersion: 'v1', kind: 'ConfigMap' } as CM;
    await expect(finalize(client, deleting, FINALIZER, () => Promise.reject(new Error('cloud API down')))).rejects.toThrow('cloud API down');
    expect((await read(name)).metadata?.finalizers).toEqual([FINALIZER]);
    await finalize(client, deleting, FINALIZER, () => undefined);
    expect(await gone(name)).toBe(true);
  });

  it('is conflict-safe when adding: the object changed between read and patch, nothing of the other write is lost', async () => {
    const name = uniqueName('fin');
    const stale = await client.create(cm(name, { v: '1' }));
    // someone else writes after our read: a label and a finalizer of their own
    await other.patch(ConfigMap, { namespace: ns, name }, mergePatch({ metadata: { labels: { touched: 'yes' }, finalizers: ['other.example.com/keep'] } }));
    expect(await finalize(client, stale, FINALIZER, () => undefined)).toBe('present');
    const now = await read(name);
    expect(now.metadata?.finalizers).toEqual(['other.example.com/keep', FINALIZER]);
    expect(now.metadata?.labels).toEqual({ touched: 'yes' });
    // let the object go
    await other.patch(ConfigMap, { namespace: ns, name }, mergePatch({ metadata: { finalizers: null } }));
  });

  it('is conflict-safe when removing: a change after our read (another finalizer removed) is not undone', async () => {
    const name = uniqueName('fin');
    await client.create({ ...cm(name), metadata: { name, namespace: ns, finalizers: [FINALIZER, 'other.example.com/first'] } });
    await client.delete(ConfigMap, { namespace: ns, name });
    const stale = { ...(await read(name)), apiVersion: 'v1', kind: 'ConfigMap' } as CM;
    expect(stale.metadata?.finalizers).toEqual([FINALIZER, 'other.example.com/first']);
    // the other controller finishes first and drops its finalizer
    await other.patch(ConfigMap, { namespace: ns, name }, mergePatch({ metadata: { finalizers: [FINALIZER] } }));
    let cleanups = 0;
    expect(await finalize(client, stale, FINALIZER, () => void cleanups++)).toBe('deleting');
    expect(cleanups).toBe(1);
    // writing the stale list minus ours would have put theirs back (or been refused); instead the object is gone
    expect(await gone(name)).toBe(true);
  });

  it('is conflict-safe when removing: another finalizer still present is kept', async () => {
    const name = uniqueName('fin');
    await client.create({ ...cm(name), metadata: { name, namespace: ns, finalizers: ['other.example.com/keep', FINALIZER] } });
    await client.delete(ConfigMap, { namespace: ns, name });
    const stale = { ...(await read(name)), apiVersion: 'v1', kind: 'ConfigMap' } as CM;
    await other.patch(ConfigMap, { namespace: ns, name }, mergePatch({ metadata: { labels: { touched: 'yes' } } }));
    expect(await finalize(client, stale, FINALIZER, () => undefined)).toBe('deleting');
    const left = await read(name);
    expect(left.metadata?.finalizers).toEqual(['other.example.com/keep']);
    expect(left.metadata?.labels).toEqual({ touched: 'yes' });
    expect(containsFinalizer(left, FINALIZER)).toBe(false);
    await other.patch(ConfigMap, { namespace: ns, name }, mergePatch({ metadata: { finalizers: null } }));
    expect(await gone(name)).toBe(true);
  });

  it('an object already gone is not an error', async () => {
    const name = uniqueName('fin');
    const created = await client.create(cm(name));
    await client.delete(ConfigMap, { namespace: ns, name });
    expect(await finalize(client, created, FINALIZER, () => undefined)).toBe('present');
  });
});

describe.each([
  ['createOrUpdate', createOrUpdate],
  ['createOrPatch', createOrPatch],
] as const)('%s', (_, createOr) => {
  it("creates a missing object after mutate ('created'), then reports 'unchanged' without writing", async () => {
    const name = uniqueName('cou');
    const mutate = (c: CM): void => {
      c.data = { size: '10Gi' };
      c.metadata = { ...c.metadata, labels: { app: 'disk' } };
    };
    expect(await createOr(client, cm(name), mutate)).toBe('created');
    const first = await read(name);
    expect(first.data).toEqual({ size: '10Gi' });
    expect(first.metadata?.labels).toEqual({ app: 'disk' });
    expect(await createOr(client, cm(name), mutate)).toBe('unchanged');
    expect((await read(name)).metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
  });

  it("reports 'updated' and writes when mutate changes something, keeping what it did not touch", async () => {
    const name = uniqueName('cou');
    await client.create(cm(name, { keep: 'me', size: '1Gi' }));
    expect(await createOr(client, cm(name), (c) => void (c.data = { ...c.data, size: '2Gi' }))).toBe('updated');
    expect((await read(name)).data).toEqual({ keep: 'me', size: '2Gi' });
  });

  it('server-sorted maps in another key order do not cause a spurious update', async () => {
    const name = uniqueName('cou');
    const owner = await client.create(cm(uniqueName('owner')));
    // keys deliberately out of order: the server stores and returns them sorted
    const mutate = (c: CM): void => {
      c.data = { zeta: '1', alpha: '2', mid: '3' };
      c.metadata = { ...c.metadata, labels: { 'z.example.com/b': 'x', a: 'y' }, annotations: { zz: '1', aa: '2' } };
      setControllerReference(owner, c);
    };
    expect(await createOr(client, cm(name), mutate)).toBe('created');
    const stored = await read(name);
    expect(Object.keys(stored.data ?? {})).toEqual(['alpha', 'mid', 'zeta']);
    expect(await createOr(client, cm(name), mutate)).toBe('unchanged');
    expect((await read(name)).metadata?.resourceVersion).toBe(stored.metadata?.resourceVersion);
  });

  it('needs a name', async () => {
    await expect(createOr(client, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: ns } }, () => undefined)).rejects.toSatisfy(
      (e: unknown) => isManagerError(e) && e.reason === 'InvalidOptions',
    );
  });
});

/** `client`, except that its first write of `method` is preceded by someone else's write to the same object. */
function racingClient(method: 'update' | 'patch', name: string): Client {
  let interfered = false;
  return new Proxy(client, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== method || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        if (!interfered) {
          interfered = true;
          await other.patch(ConfigMap, { namespace: ns, name }, mergePatch({ data: { theirs: 'x' } }));
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

describe('a write landing between the read and the write', () => {
  it('createOrUpdate: the update conflicts, the retry re-reads (sees it) and wins, keeping it', async () => {
    const name = uniqueName('cou');
    await client.create(cm(name, { n: '0' }));
    const seen: (string | undefined)[] = [];
    const result = await createOrUpdate(racingClient('update', name), cm(name), (c) => {
      seen.push(c.data?.['theirs']);
      c.data = { ...c.data, ours: 'z' };
    });
    expect(result).toBe('updated');
    expect(seen).toEqual([undefined, 'x']);
    expect((await read(name)).data).toEqual({ n: '0', ours: 'z', theirs: 'x' });
  });

  it('createOrPatch: the patch carries only what mutate changed, so the other write survives', async () => {
    const name = uniqueName('cop');
    await client.create(cm(name, { n: '0' }));
    const result = await createOrPatch(racingClient('patch', name), cm(name), (c) => {
      c.data = { ...c.data, ours: 'z' };
    });
    expect(result).toBe('updated');
    expect((await read(name)).data).toEqual({ n: '0', ours: 'z', theirs: 'x' });
  });
});

describe('status conditions', () => {
  const t0 = new Date('2025-01-01T00:00:00.123Z');
  const t1 = new Date('2025-01-01T00:05:00.000Z');
  const t2 = new Date('2025-01-01T00:10:00.000Z');

  it('adds a condition with lastTransitionTime now, in whole seconds', () => {
    const list: Condition[] = [];
    expect(setStatusCondition(list, { type: 'Ready', status: 'False', reason: 'Pending', message: 'waiting' }, t0)).toBe(true);
    expect(list).toEqual([{ type: 'Ready', status: 'False', reason: 'Pending', message: 'waiting', lastTransitionTime: '2025-01-01T00:00:00Z' }]);
  });

  it('lastTransitionTime changes only when the status does', () => {
    const list: Condition[] = [];
    setStatusCondition(list, { type: 'Ready', status: 'False', reason: 'Pending', message: 'waiting' }, t0);
    // same status, new reason and message: changed, but the transition time stays
    expect(setStatusCondition(list, { type: 'Ready', status: 'False', reason: 'StillPending', message: 'still', observedGeneration: 2 }, t1)).toBe(true);
    expect(findStatusCondition(list, 'Ready')).toEqual({ type: 'Ready', status: 'False', reason: 'StillPending', message: 'still', observedGeneration: 2, lastTransitionTime: '2025-01-01T00:00:00Z' });
    // same status and a caller-supplied time: still the old transition time
    setStatusCondition(list, { type: 'Ready', status: 'False', reason: 'StillPending', message: 'still', observedGeneration: 2, lastTransitionTime: '2030-01-01T00:00:00Z' }, t1);
    expect(findStatusCondition(list, 'Ready')?.lastTransitionTime).toBe('2025-01-01T00:00:00Z');
    // status flips: the transition time moves
    expect(setStatusCondition(list, { type: 'Ready', status: 'True', reason: 'Provisioned', message: 'ok' }, t2)).toBe(true);
    expect(findStatusCondition(list, 'Ready')?.lastTransitionTime).toBe('2025-01-01T00:10:00Z');
    expect(list).toHaveLength(1);
  });

  it('reports no change when nothing changed', () => {
    const list: Condition[] = [];
    setStatusCondition(list, { type: 'Ready', status: 'True', reason: 'Ok', message: '' }, t0);
    const before = structuredClone(list);
    expect(setStatusCondition(list, { type: 'Ready', status: 'True', reason: 'Ok', message: '' }, t2)).toBe(false);
    expect(list).toEqual(before);
  });

  it('keeps conditions of other types apart', () => {
    const list: Condition[] = [];
    setStatusCondition(list, { type: 'Ready', status: 'True', reason: 'Ok', message: '' }, t0);
    setStatusCondition(list, { type: 'Degraded', status: 'False', reason: 'Fine', message: '' }, t1);
    expect(list.map((c) => c.type)).toEqual(['Ready', 'Degraded']);
    expect(findStatusCondition(list, 'Degraded')?.lastTransitionTime).toBe('2025-01-01T00:05:00Z');
    expect(findStatusCondition(list, 'Missing')).toBeUndefined();
  });

  it('isStatusConditionTrue: True only for status True', () => {
    const list: Condition[] = [];
    setStatusCondition(list, { type: 'Ready', status: 'True', reason: 'Ok', message: '' });
    setStatusCondition(list, { type: 'Synced', status: 'Unknown', reason: 'Unknown', message: '' });
    setStatusCondition(list, { type: 'Failed', status: 'False', reason: 'No', message: '' });
    expect(isStatusConditionTrue(list, 'Ready')).toBe(true);
    expect(isStatusConditionTrue(list, 'Synced')).toBe(false);
    expect(isStatusConditionTrue(list, 'Failed')).toBe(false);
    expect(isStatusConditionTrue(list, 'Missing')).toBe(false);
    expect(isStatusConditionTrue(undefined, 'Ready')).toBe(false);
  });
});

describe('jsonEqual', () => {
  it('ignores object key order, at any depth', () => {
    expect(jsonEqual({ a: 1, b: { c: [1, { d: 2, e: 3 }] } }, { b: { c: [1, { e: 3, d: 2 }] }, a: 1 })).toBe(true);
  });
  it('keeps array order significant', () => {
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
    expect(jsonEqual([1, 2], [1, 2, 3])).toBe(false);
  });
  it('treats an undefined property as absent, but not null', () => {
    expect(jsonEqual({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(jsonEqual({ a: null }, {})).toBe(false);
    expect(jsonEqual(null, {})).toBe(false);
  });
  it('compares scalars strictly', () => {
    expect(jsonEqual('1', 1)).toBe(false);
    expect(jsonEqual({ a: '1' }, { a: 1 })).toBe(false);
    expect(jsonEqual({ a: true }, { a: true })).toBe(true);
    expect(jsonEqual([], {})).toBe(false);
    expect(jsonEqual({ a: 1 }, { b: 1 })).toBe(false);
  });
});
