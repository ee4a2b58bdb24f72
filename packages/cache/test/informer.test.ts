/**
 * The informer: when a handler counts as synced, resync, objects it cannot
 * prepare (a transform that throws, an index that throws, nesting deeper
 * than any recursion survives), and sources worked out at start. Loopback
 * servers give exact control of what arrives when; the deep custom resource
 * is also checked end to end against the real API server, which accepts it.
 */
import type { ServerResponse } from 'node:http';
import { createClient } from '@kubeloop/client';
import { installCRDs } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { describe, expect, it } from 'vitest';
import { CacheError, Informer, clientListWatcher, createInformerCache, isCacheError } from '../src/index.js';
import type { InformerOptions, InformerSource, ResourceEventHandler as EventHandler } from '../src/index.js';
import { testCRD } from '../../../test/support/crds.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';
import { cm, eventually, openWatch, quietWatch, sendList, startLoopbackApi, watchLine } from './loopback-api.js';
import type { LoopbackApi } from './loopback-api.js';

type Finally = (fn: () => Promise<void>) => void;

async function loopback(onTestFinished: Finally): Promise<LoopbackApi> {
  const api = await startLoopbackApi();
  onTestFinished(() => api.close());
  return api;
}

function informerOn(api: LoopbackApi, options: InformerOptions<KubeObject>, onTestFinished: Finally): Informer<KubeObject> {
  const informer = new Informer<KubeObject>([{ lw: clientListWatcher(api.client, ConfigMap, { namespace: 'default' }), namespace: 'default' }], {
    ...options,
    // The loopback API answers LISTs and plain watches, not streaming lists (test/watch-list.test.ts has those).
    reflector: { backoffInitialMs: 10, backoffMaxMs: 50, useWatchList: false, ...options.reflector },
  });
  onTestFinished(() => informer.stop());
  return informer;
}

/** A promise and its resolve. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** `{"a":{"a":...{"leaf":true}...}}`, `depth` objects deep, as JSON text (JSON.stringify cannot go that deep). */
function nestedJson(depth: number): string {
  return `${'{"a":'.repeat(depth - 1)}{"leaf":true}${'}'.repeat(depth - 1)}`;
}

/** How deep an object goes (iteratively). */
function depthOf(value: unknown): number {
  let depth = 0;
  let cur = value;
  while (cur !== null && typeof cur === 'object') {
    depth++;
    cur = (cur as Record<string, unknown>)['a'] ?? (cur as Record<string, unknown>)['spec'];
  }
  return depth;
}

/** True if every object along the `a` chain is frozen. */
function frozenAllTheWay(value: unknown): boolean {
  let cur = value;
  while (cur !== null && typeof cur === 'object') {
    if (!Object.isFrozen(cur)) return false;
    cur = (cur as Record<string, unknown>)['a'] ?? (cur as Record<string, unknown>)['spec'];
  }
  return true;
}

/** A raw list page holding one ConfigMap-shaped object with a `spec` nested `depth` levels deep. */
function deepListBody(depth: number, rv: string): string {
  return `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"${rv}"},"items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep-listed","namespace":"default","uid":"u1","resourceVersion":"${rv}"},"spec":${nestedJson(depth)}}]}`;
}

describe.concurrent('informer', () => {
  it('a handler added before the first list is not synced until the list has arrived and been handled', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    const listed = gate();
    const pending: ServerResponse[] = [];
    api.onList((res) => {
      pending.push(res);
      listed.open();
    });
    api.onWatch(quietWatch);
    const informer = informerOn(api, {}, onTestFinished);
    const handled = gate();
    const adds: string[] = [];
    const reg = informer.addEventHandler({
      onAdd: async (o) => {
        adds.push(o.metadata!.name!);
        await handled.promise; // a slow handler
      },
    });
    expect(reg.hasSynced()).toBe(false); // nothing listed yet: not synced
    informer.start();
    await listed.promise;
    expect(reg.hasSynced()).toBe(false);
    sendList(pending[0]!, [cm('a', '5'), cm('b', '5')], '5');
    await informer.waitForSync();
    expect(informer.hasSynced()).toBe(true);
    expect(reg.hasSynced()).toBe(false); // the informer is, but the handler has not taken the list yet
    handled.open();
    await eventually(() => reg.hasSynced(), () => `handler not synced; adds ${adds.join(',')}`);
    expect(adds).toEqual(['a', 'b']);
  });

  it('a handler added after sync is synced once it has been given every stored object', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [cm('a', '5'), cm('b', '5'), cm('c', '5')], '5'));
    api.onWatch(quietWatch);
    const informer = informerOn(api, {}, onTestFinished);
    informer.start();
    await informer.waitForSync();
    const handled = gate();
    let seen = 0;
    const reg = informer.addEventHandler({
      onAdd: async () => {
        seen++;
        await handled.promise;
      },
    });
    expect(reg.hasSynced()).toBe(false);
    handled.open();
    await eventually(() => reg.hasSynced(), () => `seen ${seen}`);
    expect(seen).toBe(3);
  });

  it('resync: handlers that asked for it get onUpdate(obj, obj) for every object, periodically; others get nothing', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [cm('a', '5'), cm('b', '5')], '5'));
    api.onWatch(quietWatch);
    const informer = informerOn(api, { resyncPeriodMs: 100 }, onTestFinished);
    const resynced: string[] = [];
    let sameObject = true;
    const off: string[] = [];
    informer.addEventHandler({
      onUpdate: (old, o) => {
        if (old !== o) sameObject = false;
        resynced.push(o.metadata!.name!);
      },
    });
    informer.addEventHandler({ onUpdate: (_old, o) => void off.push(o.metadata!.name!) }, { resyncPeriodMs: 0 });
    informer.start();
    await eventually(() => resynced.length >= 6, () => `only ${resynced.length} resync updates`);
    expect(sameObject).toBe(true);
    expect(new Set(resynced)).toEqual(new Set(['a', 'b']));
    expect(off).toEqual([]);
  });

  it('resync never piles up on a handler that has not taken the last round', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [cm('a', '5'), cm('b', '5'), cm('c', '5')], '5'));
    api.onWatch(quietWatch);
    const informer = informerOn(api, {}, onTestFinished);
    const stuck = gate();
    let updates = 0;
    informer.addEventHandler(
      {
        onUpdate: async () => {
          updates++;
          await stuck.promise;
        },
      },
      { resyncPeriodMs: 30 },
    );
    informer.start();
    await eventually(() => updates === 1, () => 'no resync');
    await new Promise((r) => setTimeout(r, 400)); // a dozen periods with the handler stuck
    expect(updates).toBe(1);
    stuck.open();
    const openedAt = performance.now();
    await new Promise((r) => setTimeout(r, 10));
    // The stuck round (3 objects) is delivered, then at most one round per period: never the dozen missed ones at once.
    // Measured, not bounded tightly: the periods that passed since the handler was freed (however long this slow machine took) each allow one round, plus one.
    const rounds = Math.ceil((performance.now() - openedAt) / 30) + 1;
    expect(updates, `${updates} updates ${(performance.now() - openedAt).toFixed(0)} ms after the handler was freed`).toBeLessThanOrEqual(3 + 3 * rounds);
  });

  it('an object nested 9,990 levels deep, listed or watched, reaches the cache deep-frozen', async ({ onTestFinished }) => {
    const depth = 9_990;
    const api = await loopback(onTestFinished);
    api.onList((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(deepListBody(depth, '5'));
    });
    api.onWatch((res, req) => {
      openWatch(res);
      if (req.n === 1) {
        res.write(
          `{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep-watched","namespace":"default","uid":"u2","resourceVersion":"6"},"spec":${nestedJson(depth)}}}\n`,
        );
      }
    });
    const errors: unknown[] = [];
    const informer = informerOn(api, { onError: (err) => errors.push(err) }, onTestFinished);
    const added: string[] = [];
    informer.addEventHandler({ onAdd: (o) => void added.push(o.metadata!.name!) });
    informer.start();
    await informer.waitForSync(AbortSignal.timeout(10_000));
    await eventually(() => informer.store.has('default/deep-watched'), () => `not cached; errors: ${errors.map(String).join('; ')}`);
    for (const name of ['deep-listed', 'deep-watched']) {
      const obj = informer.store.get(`default/${name}`) as KubeObject & { spec: unknown };
      expect(depthOf(obj.spec)).toBe(depth);
      expect(frozenAllTheWay(obj)).toBe(true);
    }
    expect(added).toEqual(['deep-listed', 'deep-watched']);
    expect(errors).toEqual([]);
    expect(informer.prepareErrors).toBe(0);
  });

  it('an object the transform throws on is reported and left out, the rest syncs, and a later good version is cached', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [cm('good', '5'), cm('bad', '5', { data: { poison: 'yes' } })], '5'));
    api.onWatch((res, req) => {
      openWatch(res);
      if (req.n === 1) res.write(watchLine('MODIFIED', cm('bad', '6', { data: { poison: 'no' } })));
    });
    const errors: { err: unknown; phase: string }[] = [];
    const informer = informerOn(
      api,
      {
        transform: (o) => {
          if ((o as { data?: Record<string, string> }).data?.['poison'] === 'yes') throw new RangeError('the transform cannot handle this one');
          return o;
        },
        onError: (err, phase) => errors.push({ err, phase }),
      },
      onTestFinished,
    );
    let unpreparedAtSync: readonly string[] = [];
    informer.addEventHandler({});
    informer.start();
    await informer.waitForSync(AbortSignal.timeout(10_000));
    unpreparedAtSync = informer.unpreparedKeys();
    expect(unpreparedAtSync).toEqual(['default/bad']);
    expect(informer.store.has('default/good')).toBe(true);
    expect(errors.map((e) => e.phase)).toEqual(['prepare']);
    const err = errors[0]!.err;
    expect(isCacheError(err) && err.reason === 'Prepare').toBe(true);
    expect((err as Error).message).toContain('default/bad');
    expect((err as Error).cause).toBeInstanceOf(RangeError);
    expect(informer.prepareErrors).toBe(1);
    // The server's next version of it is fine: cached, no longer missing.
    await eventually(() => informer.store.has('default/bad'), () => 'the good version never reached the cache');
    expect(informer.unpreparedCount).toBe(0);
  });

  it('an index function that throws leaves the object out of that index only, reported', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [cm('a', '5', { data: { team: 'x' } }), cm('b', '5')], '5'));
    api.onWatch(quietWatch);
    const errors: unknown[] = [];
    const informer = informerOn(
      api,
      {
        indexers: { team: (o) => [(o as { data: Record<string, string> }).data['team']!] },
        onError: (err) => errors.push(err),
      },
      onTestFinished,
    );
    informer.start();
    await informer.waitForSync(AbortSignal.timeout(10_000));
    expect(informer.store.size).toBe(2);
    expect(informer.store.byIndex('team', 'x').map((o) => o.metadata!.name)).toEqual(['a']);
    expect(errors).toHaveLength(1);
    expect(isCacheError(errors[0]) && errors[0].reason === 'Prepare').toBe(true);
    expect(informer.prepareErrors).toBe(1);
  });

  it('sources worked out at start: a failing resolver is retried and shown in stats; InvalidOptions fails waitForSync', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [cm('a', '5')], '5'));
    api.onWatch(quietWatch);
    let calls = 0;
    const informer = new Informer<KubeObject>(
      async (): Promise<InformerSource<KubeObject>[]> => {
        await Promise.resolve();
        if (++calls < 3) throw new Error(`discovery is down (${calls})`);
        return [{ lw: clientListWatcher(api.client, ConfigMap, { namespace: 'default' }), namespace: 'default' }];
      },
      { reflector: { backoffInitialMs: 10, backoffMaxMs: 20, useWatchList: false } },
    );
    onTestFinished(() => informer.stop());
    expect(informer.hasSynced()).toBe(false);
    informer.start();
    await eventually(() => informer.stats()[0]!.errors === 2, () => `errors ${informer.stats()[0]!.errors}`);
    await informer.waitForSync(AbortSignal.timeout(10_000));
    expect(informer.store.has('default/a')).toBe(true);

    const invalid = new Informer<KubeObject>(() => Promise.reject(new CacheError('InvalidOptions', 'no namespaces for a cluster-scoped kind')));
    onTestFinished(() => invalid.stop());
    invalid.start();
    await expect(invalid.waitForSync()).rejects.toMatchObject({ name: 'CacheError', reason: 'InvalidOptions' });
    expect(invalid.stats()[0]!.lastError).toBeInstanceOf(CacheError);
  });

  it('waitForSync rejects with CacheError Aborted when its signal fires, Stopped when the informer stops', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList(() => undefined); // never answers
    const informer = informerOn(api, {}, onTestFinished);
    informer.start();
    await expect(informer.waitForSync(AbortSignal.timeout(50))).rejects.toMatchObject({ name: 'CacheError', reason: 'Aborted' });
    const waiting = informer.waitForSync();
    await informer.stop();
    await expect(waiting).rejects.toMatchObject({ name: 'CacheError', reason: 'Stopped' });
  });

  it('a handler that throws is counted and reported; its next events still come', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [cm('a', '5'), cm('b', '5')], '5'));
    api.onWatch(quietWatch);
    const reported: unknown[] = [];
    const informer = informerOn(api, { onHandlerError: (err) => reported.push(err) }, onTestFinished);
    const names: string[] = [];
    const handler: EventHandler<KubeObject> = {
      onAdd: (o) => {
        names.push(o.metadata!.name!);
        if (o.metadata!.name === 'a') throw new Error('handler bug');
      },
    };
    informer.addEventHandler(handler);
    informer.start();
    await eventually(() => names.length === 2, () => `names ${names.join(',')}`);
    expect(informer.handlerErrors).toBe(1);
    expect(reported.map(String)).toEqual(['Error: handler bug']);
  });
});

describe('informer against the real API server', () => {
  it('a custom resource nested 9,990 levels deep (which the API server accepts) reaches the cache, present before start and created while watching', async ({
    onTestFinished,
  }) => {
    const kubeConfig = testKubeConfig();
    const group = `${uniqueName('deep')}.kubeloop.dev`;
    await installCRDs(kubeConfig, [
      testCRD(group, 'Abyss', { schema: { type: 'object', properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } } }),
    ]);
    const client = createClient({ kubeConfig, fieldOwner: 'informer-test' });
    const namespace = uniqueName('deep');
    await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    // spec itself is level 2 of the object; 9,990 levels in all.
    const depth = 9_990;
    const create = async (name: string): Promise<void> => {
      const body = `{"apiVersion":"${group}/v1","kind":"Abyss","metadata":{"name":"${name}","namespace":"${namespace}"},"spec":${nestedJson(depth - 1)}}`;
      const res = await client.transport.request({ method: 'POST', path: `/apis/${group}/v1/namespaces/${namespace}/abysss`, body });
      expect(res.status, res.body.slice(0, 300)).toBe(201);
    };
    await create('before-start');
    const errors: unknown[] = [];
    const cache = createInformerCache({ client, namespaces: [namespace], onError: (_kind, err) => errors.push(err) });
    onTestFinished(() => cache.stop());
    const kind = { apiVersion: `${group}/v1`, kind: 'Abyss' };
    const informer = await cache.getInformer(kind, { signal: AbortSignal.timeout(20_000) });
    expect(informer.store.has(`${namespace}/before-start`)).toBe(true);
    await create('while-watching');
    await eventually(() => informer.store.has(`${namespace}/while-watching`), () => `not cached; errors: ${errors.map(String).join('; ')}`);
    for (const name of ['before-start', 'while-watching']) {
      const obj = informer.store.get(`${namespace}/${name}`)!;
      expect(depthOf(obj)).toBe(depth);
      expect(frozenAllTheWay(obj)).toBe(true);
    }
    expect(errors).toEqual([]);
    const info = cache.informers().find((i) => i.kind === `Abyss.${group}/v1`)!;
    expect(info.prepareErrors).toBe(0);
    expect(info.unprepared).toBe(0);
  }, 60_000);
});
