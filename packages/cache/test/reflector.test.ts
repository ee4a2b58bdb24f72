/**
 * The reflector: its deadlines, its answers to malformed and stalled bytes
 * (a loopback server that writes them on purpose), and, against the real API
 * server, a LIST that never answers and the bookmarks its idle deadline is
 * sized for.
 */
import { createClient, isClientError } from '@kubeloop/client';
import { startApiProxy } from '@kubeloop/envtest';
import type { ApiProxy } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import type { KubeObject } from '@kubeloop/scheme';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CacheError, Reflector, clientListWatcher, isCacheError } from '../src/index.js';
import type { ListWatcher, ReflectorOptions, ReflectorSink, WatchFromOptions } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';
import { cm, eventually, openWatch, quietWatch, sendList, startLoopbackApi, watchLine } from './loopback-api.js';
import type { LoopbackApi } from './loopback-api.js';

/** What a sink was told. */
interface Seen {
  readonly replaced: { readonly names: string[]; readonly rv: string }[];
  readonly applied: { readonly type: string; readonly name: string; readonly rv: string }[];
  readonly errors: { readonly err: unknown; readonly phase: string }[];
}

function recorder(): { sink: ReflectorSink<KubeObject>; seen: Seen } {
  const seen: Seen = { replaced: [], applied: [], errors: [] };
  return {
    seen,
    sink: {
      replace: (objects, rv) => seen.replaced.push({ names: objects.map((o) => o.metadata?.name ?? ''), rv }),
      apply: (type, o) => seen.applied.push({ type, name: o.metadata?.name ?? '', rv: o.metadata?.resourceVersion ?? '' }),
    },
  };
}

// The loopback API answers LISTs and plain watches: these tests take the LIST path (WatchList has its own file).
const FAST: ReflectorOptions = { backoffInitialMs: 10, backoffMaxMs: 50, useWatchList: false };

/** Registers what to stop when a test ends, passed or not (tests here run concurrently: each has its own). */
type Finally = (fn: () => Promise<void>) => void;

async function loopback(onTestFinished: Finally): Promise<LoopbackApi> {
  const api = await startLoopbackApi();
  onTestFinished(() => api.close());
  return api;
}

function reflect(api: LoopbackApi, options: ReflectorOptions, onTestFinished: Finally): { reflector: Reflector<KubeObject>; seen: Seen } {
  const { sink, seen } = recorder();
  const reflector = new Reflector<KubeObject>(clientListWatcher(api.client, ConfigMap, { namespace: 'default' }), sink, {
    ...FAST,
    ...options,
    onError: (err, phase) => seen.errors.push({ err, phase }),
  });
  void reflector.run();
  onTestFinished(() => reflector.stop());
  return { reflector, seen };
}

const reasonOf = (err: unknown): string => (isCacheError(err) || isClientError(err) ? `${err.name}/${err.reason}` : String(err));

describe.concurrent('reflector against a loopback server', () => {
  it('a LIST whose headers and first bytes arrive and then nothing times out, is counted, and is retried until it succeeds', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res, req) => {
      if (req.n === 1) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"5"},"items":[');
        return; // and nothing more, ever
      }
      sendList(res, [cm('a', '5')], '5');
    });
    // 1 s: the stalled LIST ends there; the answered one needs far less, unless this file's concurrent tests and a
    // loaded machine hold the event loop that long, which costs one more counted timeout and retry, not the test.
    const { reflector, seen } = reflect(api, { listTimeoutMs: 1_000 }, onTestFinished);
    await eventually(() => seen.replaced.length === 1, () => `no list got through; errors: ${seen.errors.map((e) => reasonOf(e.err)).join(', ')}`);
    expect(seen.replaced[0]).toEqual({ names: ['a'], rv: '5' });
    const errors = seen.errors.map((e) => `${e.phase}:${reasonOf(e.err)}`);
    expect(errors.length).toBeGreaterThanOrEqual(1);
    expect(errors).toEqual(errors.map(() => 'list:CacheError/Timeout'));
    expect(reflector.stats.timeouts).toBe(errors.length);
    expect(reflector.stats.errors).toBe(errors.length);
    expect(reflector.stats.lastErrorAt).toBeGreaterThan(0);
    // The stalled LIST and at least the one that got through (at load ~25 one run counted two timeouts for two
    // LISTs: the answered LIST's deadline fired while its result was still on its way to the sink).
    expect(api.count('list')).toBeGreaterThanOrEqual(2);
    expect(api.count('list')).toBeLessThanOrEqual(errors.length + 1);
    // In contact again once the watch is open (state is 'watching' from the moment it is asked for).
    await eventually(() => reflector.stats.state === 'watching' && reflector.stats.disconnectedSince === 0, () => `state ${reflector.stats.state}, disconnected since ${reflector.stats.disconnectedSince}`);
  });

  it('a re-watch answered 500 with headers and no body gives up on the body within the idle deadline, is counted, backs off and watches again', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [cm('a', '5')], '5'));
    api.onWatch((res, req) => {
      if (req.n === 1) {
        openWatch(res);
        res.end(watchLine('ADDED', cm('b', '6'))); // a normal close after one event: re-watch from 6
      } else if (req.n === 2) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.flushHeaders(); // and no body, ever
      } else {
        openWatch(res);
        res.write(watchLine('ADDED', cm('c', '7')));
      }
    });
    // 2 s: the body that never comes is given up at this deadline; shorter, a loaded machine (this file's tests run
    // concurrently) lets the other watches' deadlines pass before their events are read.
    const { reflector, seen } = reflect(api, { watchIdleTimeoutMs: 2_000 }, onTestFinished);
    await eventually(() => seen.applied.some((a) => a.name === 'c'), () => `no third watch; errors: ${seen.errors.map((e) => reasonOf(e.err)).join(', ')}`);
    // The third watch goes silent after its event: its idle deadline may pass, and it is re-opened, before these lines run.
    const watches = api.requests.filter((r) => r.kind === 'watch').map((r) => r.query.get('resourceVersion'));
    expect(watches.slice(0, 3)).toEqual(['5', '6', '6']);
    expect(watches.slice(3).filter((rv) => rv !== '6' && rv !== '7')).toEqual([]);
    // The client gives up on the body within the watch's idle deadline and reports the 500 itself.
    const errors = seen.errors.map((e) => `${e.phase}:${reasonOf(e.err)}`);
    expect(errors[0]).toBe('watch:ClientError/InternalError');
    expect(errors.slice(1).filter((e) => !/^watch:(ClientError\/ClientTimeout|CacheError\/Timeout)$/.test(e))).toEqual([]);
    expect(reflector.stats.relists).toBe(0);
    expect(reflector.stats.disconnectedSince).toBe(0); // in contact again
  });

  it('a re-watch answered 500 with an empty body is counted and retried after a backoff', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [], '5'));
    api.onWatch((res, req) => {
      if (req.n === 1) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end();
      } else {
        openWatch(res);
        res.write(watchLine('ADDED', cm('c', '7')));
      }
    });
    const { reflector, seen } = reflect(api, {}, onTestFinished);
    await eventually(() => seen.applied.length === 1, () => 'no second watch');
    expect(seen.errors.map((e) => reasonOf(e.err))).toEqual(['ClientError/InternalError']);
    expect(reflector.stats.errors).toBe(1);
  });

  it('a watch kept alive with blank lines and no event or bookmark is abandoned at the idle deadline', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [], '5'));
    api.onWatch((res, req) => {
      openWatch(res);
      if (req.n === 1) {
        const tick = setInterval(() => res.write('\n'), 50);
        res.on('close', () => clearInterval(tick));
      } else {
        res.write(watchLine('ADDED', cm('x', '9')));
      }
    });
    const { reflector, seen } = reflect(api, { watchIdleTimeoutMs: 300 }, onTestFinished);
    await eventually(() => seen.applied.length === 1, () => `no second watch; errors: ${seen.errors.map((e) => reasonOf(e.err)).join(', ')}`);
    // The kept-alive watch ends at the reflector's idle deadline (its socket was never idle). The second watch goes
    // silent after its event: on a loaded machine its own idle deadline may pass before this line runs.
    expect(reasonOf(seen.errors[0]?.err)).toBe('CacheError/Timeout');
    expect(api.requests.filter((r) => r.kind === 'watch').map((r) => r.query.get('resourceVersion')).slice(0, 2)).toEqual(['5', '5']);
    expect(reflector.stats.relists).toBe(0);
  });

  it('a silent watch ends at watchIdleTimeoutMs, independent of the server timeout, and is re-opened from the same resourceVersion', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [], '5'));
    api.onWatch(quietWatch);
    const { reflector, seen } = reflect(api, { watchIdleTimeoutMs: 200, watchTimeoutSeconds: [300, 600] }, onTestFinished);
    await eventually(() => api.count('watch') >= 2, () => 'the silent watch was never abandoned');
    expect(reasonOf(seen.errors[0]?.err)).toBe('ClientError/ClientTimeout');
    const watches = api.requests.filter((r) => r.kind === 'watch');
    expect(watches.map((r) => r.query.get('resourceVersion'))).toEqual(watches.map(() => '5'));
    expect(Number(watches[0]!.query.get('timeoutSeconds'))).toBeGreaterThanOrEqual(300);
    expect(watches[0]!.query.get('allowWatchBookmarks')).toBe('true');
    expect(reflector.stats.relists).toBe(0);
  });

  it('a list whose continue token comes back a second time is a ContinueLoop error, backed off, not followed forever', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res, req) => {
      // The first 6 requests: a server stuck on one token. Then a sane one.
      if (req.n <= 6) sendList(res, [cm(`p${req.n}`, '5')], '5', 'the-same-token');
      else sendList(res, [cm('a', '5')], '5');
    });
    const { reflector, seen } = reflect(api, {}, onTestFinished);
    await eventually(() => seen.replaced.length === 1, () => `never synced after ${api.count('list')} LISTs`);
    // Each attempt: page 1, then page 2 repeats the token: two requests, one error.
    expect(seen.errors.map((e) => `${e.phase}:${reasonOf(e.err)}`)).toEqual(['list:CacheError/ContinueLoop', 'list:CacheError/ContinueLoop', 'list:CacheError/ContinueLoop']);
    expect(api.count('list')).toBe(7);
    expect(seen.replaced[0]!.names).toEqual(['a']);
    expect(reflector.stats.errors).toBe(3);
  });

  it('a watch answered 429 with Retry-After waits that long before watching again', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [], '5'));
    api.onWatch((res, req) => {
      if (req.n === 1) {
        res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': '2' });
        res.end('Too many requests, please try again later.\n'); // what API Priority and Fairness answers
      } else {
        quietWatch(res, req);
      }
    });
    const { seen } = reflect(api, { backoffInitialMs: 10, backoffMaxMs: 20 }, onTestFinished);
    await eventually(() => api.count('watch') >= 2, () => 'no second watch');
    const [first, second] = api.requests.filter((r) => r.kind === 'watch');
    const err = seen.errors[0]?.err;
    expect(reasonOf(err)).toBe('ClientError/TooManyRequests');
    expect((err as { retryAfterSeconds?: number }).retryAfterSeconds).toBe(2);
    // The backoff alone would have waited 10–20 ms.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1900);
  });

  it('a sink that throws is reported and costs a relist, never the loop', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res, req) => sendList(res, [cm('a', String(req.n))], String(req.n)));
    api.onWatch(quietWatch);
    const errors: unknown[] = [];
    let replaces = 0;
    const reflector = new Reflector<KubeObject>(
      clientListWatcher(api.client, ConfigMap, { namespace: 'default' }),
      {
        replace: () => {
          if (++replaces === 1) throw new TypeError('a sink bug');
        },
        apply: () => undefined,
      },
      { ...FAST, onError: (err) => errors.push(err) },
    );
    void reflector.run();
    onTestFinished(() => reflector.stop());
    await eventually(() => replaces === 2 && reflector.stats.state === 'watching', () => `replaces ${replaces}, state ${reflector.stats.state}`);
    expect(errors.map((e) => String(e))).toEqual(['TypeError: a sink bug']);
  });

  it('the idle deadline defaults to two and a half bookmark intervals (150 s), not the server timeout', async ({ onTestFinished }) => {
    let seenOptions: WatchFromOptions | undefined;
    const lw: ListWatcher<KubeObject> = {
      list: () => Promise.resolve({ apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: '1' }, items: [] }),
      watch: (o) => {
        seenOptions = o;
        return Promise.resolve(
          (async function* () {
            await new Promise((resolve) => o.signal.addEventListener('abort', resolve, { once: true }));
            yield* [];
          })(),
        );
      },
    };
    const reflector = new Reflector(lw, recorder().sink);
    void reflector.run();
    onTestFinished(() => reflector.stop());
    await eventually(() => seenOptions !== undefined, () => 'no watch');
    expect(seenOptions!.idleTimeoutMs).toBe(150_000);
    expect(seenOptions!.timeoutSeconds).toBeGreaterThanOrEqual(300);
    expect(seenOptions!.timeoutSeconds).toBeLessThanOrEqual(600);
  });

  it('a re-watch whose 500 body never comes is out of contact from the moment it was asked for, not from the body deadline', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [cm('a', '5')], '5'));
    api.onWatch((res, req) => {
      if (req.n === 1) {
        openWatch(res);
        res.end(watchLine('ADDED', cm('b', '6')));
      } else {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.flushHeaders(); // and no body, ever
      }
    });
    const { reflector, seen } = reflect(api, { watchIdleTimeoutMs: 60_000 }, onTestFinished);
    await eventually(() => api.count('watch') === 2, () => 'no re-watch');
    const asked = api.requests.filter((r) => r.kind === 'watch')[1]!.at;
    await new Promise((r) => setTimeout(r, 200));
    // Still waiting for the body (the client gives it at most 30 s): not delivering, and readiness can tell.
    expect(seen.errors).toEqual([]);
    expect(reflector.stats.disconnectedSince).toBeGreaterThan(0);
    expect(reflector.stats.disconnectedSince).toBeLessThanOrEqual(asked + 50);
  });

  it('a watch abandoned at its idle deadline is out of contact since it last delivered', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onList((res) => sendList(res, [], '5'));
    api.onWatch((res, req) => {
      if (req.n === 1) {
        openWatch(res);
        res.write(watchLine('ADDED', cm('b', '6'))); // then silence
      } // later watches: no answer at all
    });
    const { reflector, seen } = reflect(api, { watchIdleTimeoutMs: 400 }, onTestFinished);
    await eventually(() => seen.errors.length === 1, () => 'the silent watch was never abandoned');
    const lastDelivered = reflector.stats.lastEventAt;
    expect(reflector.stats.disconnectedSince).toBe(lastDelivered);
  });

  it('a streaming list that never reaches its initial-events-end bookmark: ListTooLarge at maxListObjects, backed off, reported', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    api.onWatch((res, req) => {
      openWatch(res);
      for (let i = 0; i < 40; i++) res.write(watchLine('ADDED', cm(`s${req.n}-${i}`, '5')));
    });
    const { reflector, seen } = reflect(api, { useWatchList: true, maxListObjects: 25 }, onTestFinished);
    await eventually(() => seen.errors.length >= 2, () => `errors ${seen.errors.length} after ${api.count('watch')} watches`);
    expect(seen.errors.slice(0, 2).map((e) => `${e.phase}:${reasonOf(e.err)}`)).toEqual(['list:CacheError/ListTooLarge', 'list:CacheError/ListTooLarge']);
    expect(String(seen.errors[0]!.err)).toMatch(/no initial-events-end bookmark after 26 objects/);
    expect(api.requests.filter((r) => r.kind === 'watch').every((r) => r.query.get('sendInitialEvents') === 'true')).toBe(true);
    expect(seen.replaced).toEqual([]);
    expect(reflector.stats.lists).toBe(0);
  });

  it('a server that hands out a new continue token on every page: ListTooLarge at maxListPages or maxListObjects, backed off, reported', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    let endless = true;
    api.onList((res, req) => {
      if (!endless) return sendList(res, [cm('a', '5')], '5');
      sendList(res, [cm(`p${req.n}`, '5'), cm(`q${req.n}`, '5')], '5', `token-${req.n}`);
    });
    const { seen } = reflect(api, { maxListPages: 20, maxListObjects: 1_000_000 }, onTestFinished);
    await eventually(() => seen.errors.length >= 2, () => `errors ${seen.errors.length} after ${api.count('list')} LISTs`);
    expect(seen.errors.slice(0, 2).map((e) => `${e.phase}:${reasonOf(e.err)}`)).toEqual(['list:CacheError/ListTooLarge', 'list:CacheError/ListTooLarge']);
    expect(String(seen.errors[0]!.err)).toMatch(/has not ended after 20 pages/);
    endless = false;
    await eventually(() => seen.replaced.length === 1, () => 'never synced once the server was sane');
    expect(seen.replaced[0]!.names).toEqual(['a']);
    // Each abandoned attempt took 20 pages, no more.
    expect(api.count('list') % 20).toBe(1);

    const api2 = await loopback(onTestFinished);
    api2.onList((res, req) => sendList(res, Array.from({ length: 10 }, (_, i) => cm(`o${req.n}-${i}`, '5')), '5', `token-${req.n}`));
    const second = reflect(api2, { maxListObjects: 25 }, onTestFinished);
    await eventually(() => second.seen.errors.length >= 1, () => 'no error');
    expect(String(second.seen.errors[0]!.err)).toMatch(/ListTooLarge|has not ended after 30 objects/);
    expect(api2.requests.filter((r) => r.kind === 'list').length).toBeGreaterThanOrEqual(3);
    expect(second.reflector.stats.lists).toBe(0);
  });

  it('malformed objects (no name, a "/" in it, a number for a resourceVersion...) never reach the sink: counted InvalidObject errors, the rest goes on', async ({ onTestFinished }) => {
    const api = await loopback(onTestFinished);
    const bad: unknown[] = [
      null,
      'a string',
      { kind: 'ConfigMap' },
      { metadata: { namespace: 'default' } },
      { metadata: { name: '', namespace: 'default' } },
      { metadata: { name: 'x/y', namespace: 'default' } },
      { metadata: { name: 'n', namespace: 7 } },
      cm('numeric-rv', '5', { metadata: { name: 'numeric-rv', namespace: 'default', resourceVersion: 5 } }),
    ];
    api.onList((res) => sendList(res, [...bad, cm('good', '5')], '5'));
    api.onWatch((res, req) => {
      openWatch(res);
      if (req.n === 1) {
        res.write(watchLine('MODIFIED', { ...cm('good', '6'), metadata: { name: 'good', namespace: 'default', resourceVersion: 6 } }));
        res.write(watchLine('ADDED', { metadata: { name: '' } }));
        res.write(watchLine('ADDED', cm('later', '7')));
      }
    });
    const { reflector, seen } = reflect(api, {}, onTestFinished);
    await eventually(() => seen.applied.length === 1, () => `applied ${seen.applied.length}; errors ${seen.errors.slice(0, 12).map((e) => String(e.err)).join("\n")}`, 3000);
    expect(seen.replaced).toEqual([{ names: ['good'], rv: '5' }]);
    expect(seen.applied).toEqual([{ type: 'ADDED', name: 'later', rv: '7' }]);
    expect(seen.errors.map((e) => `${e.phase}:${reasonOf(e.err)}`)).toEqual([...bad.map(() => 'list:CacheError/InvalidObject'), 'watch:CacheError/InvalidObject', 'watch:CacheError/InvalidObject']);
    expect(String(seen.errors[7]!.err)).toMatch(/resourceVersion is 5, not a string/);
    expect(reflector.stats.invalidObjects).toBe(10);
    expect(reflector.stats.resourceVersion).toBe('7');
    // Malformed objects are not a loss of contact.
    expect(reflector.stats.disconnectedSince).toBe(0);
    expect(reflector.stats.errors).toBe(0);
  });

  it('rejects options that cannot work with CacheError InvalidOptions', () => {
    const lw = clientListWatcher(createClient({ kubeConfig: testKubeConfig() }), ConfigMap);
    for (const bad of [{ listTimeoutMs: 0 }, { watchIdleTimeoutMs: -1 }, { pageSize: Number.NaN }, { watchTimeoutSeconds: [10, 5] as const }, { maxListPages: 0 }, { maxListObjects: -5 }]) {
      let thrown: unknown;
      try {
        new Reflector(lw, recorder().sink, bad);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(CacheError);
      expect((thrown as CacheError).reason).toBe('InvalidOptions');
    }
  });
});

describe.concurrent('reflector against the real API server', () => {
  let proxy: ApiProxy;
  beforeAll(async () => {
    proxy = await startApiProxy(testKubeConfig());
  });
  afterAll(async () => {
    await proxy.close();
  });

  it('a LIST the network swallows (no headers, ever) times out at listTimeoutMs and syncs once the network is back', async ({ onTestFinished }) => {
    const writer = createClient({ kubeConfig: testKubeConfig(), fieldOwner: 'reflector-test' });
    const namespace = uniqueName('reflector');
    await writer.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    await writer.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'one', namespace } });
    const client = createClient({ kubeConfig: proxy.kubeConfig });
    await client.mapper.restMapping({ group: '', kind: 'ConfigMap' }, 'v1'); // discovery before the black hole
    proxy.blackhole(true);
    const { sink, seen } = recorder();
    const reflector = new Reflector<KubeObject>(clientListWatcher(client, ConfigMap, { namespace }), sink, {
      ...FAST,
      listTimeoutMs: 400,
      onError: (err, phase) => seen.errors.push({ err, phase }),
    });
    void reflector.run();
    onTestFinished(() => reflector.stop());
    try {
      await eventually(() => reflector.stats.timeouts >= 2, () => `timeouts ${reflector.stats.timeouts}`);
      expect(reflector.stats.lists).toBe(0);
      expect(reflector.stats.disconnectedSince).toBeGreaterThan(0);
    } finally {
      proxy.blackhole(false);
    }
    await eventually(() => seen.replaced.length === 1, () => 'no list after the network came back');
    expect(seen.replaced[0]!.names).toEqual(['one']);
    expect(seen.errors.every((e) => e.phase === 'list' && reasonOf(e.err) === 'CacheError/Timeout')).toBe(true);
  });

  it(
    'the API server sends a bookmark on a quiet watch within the default idle deadline, so a healthy quiet watch is never cut (once a ConfigMap elsewhere has changed)',
    async ({ onTestFinished }) => {
      const client = createClient({ kubeConfig: testKubeConfig(), fieldOwner: 'reflector-test' });
      const namespace = uniqueName('reflector-quiet');
      const elsewhere = uniqueName('reflector-busy');
      for (const name of [namespace, elsewhere]) await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      const { sink, seen } = recorder();
      const reflector = new Reflector<KubeObject>(clientListWatcher(client, ConfigMap, { namespace }), sink, {
        onError: (err, phase) => seen.errors.push({ err, phase }),
      });
      void reflector.run();
      onTestFinished(() => reflector.stop());
      await eventually(() => reflector.stats.lists === 1 && reflector.stats.state === 'watching', () => 'no watch');
      const listedAt = reflector.stats.lastEventAt;
      // kube-apiserver's periodic bookmark (about every minute) carries the kind's latest resourceVersion and
      // reaches a watch only once that is past the one the watch started from: on a control plane where no
      // ConfigMap changes at all, the first bookmark waits for whatever next moves it (120 s in a run where
      // nothing else ran). A cluster is rarely that still; one ConfigMap written in another namespace stands
      // for the rest of it. Nothing happens in the watched namespace, so only a bookmark can move these.
      await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: elsewhere, name: 'elsewhere' }, data: { at: new Date().toISOString() } });
      await eventually(() => reflector.stats.lastEventAt > listedAt, () => 'no bookmark', 150_000);
      const gap = reflector.stats.lastEventAt - listedAt;
      process.stderr.write(`[reflector] first bookmark on a quiet watch after ${(gap / 1000).toFixed(1)} s (idle deadline 150 s)\n`);
      expect(gap).toBeLessThan(150_000);
      expect(seen.applied).toEqual([]);
      expect(seen.errors).toEqual([]);
      expect(reflector.stats.watchRestarts).toBe(0);
    },
    180_000,
  );
});
