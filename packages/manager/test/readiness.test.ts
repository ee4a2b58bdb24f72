/**
 * Readiness includes informer freshness: a cache cut off from the API server
 * for longer than `informerStaleAfterMs` makes /readyz fail with the reason,
 * and it recovers once the informer is watching again.
 */
import { describe, expect, it } from 'vitest';
import { startApiProxy } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { createLogger, createManager, Result } from '../src/index.js';
import { loadKubeConfig } from '@kubeloop/client';
import { testKubeConfig, testKubeconfigPath, uniqueName } from '../../../test/support/env.js';
import { eventually, newNamespace, readyz, testClient } from './support.js';
import { cm, openWatch, sendList, startLoopbackApi, watchLine } from '../../cache/test/loopback-api.js';

describe('readiness and informer freshness', () => {
  it('goes not-ready when an informer is out of contact too long, and ready again after', async () => {
    const client = testClient();
    const ns = await newNamespace(client, 'fresh');
    const proxy = await startApiProxy(testKubeConfig());
    const manager = createManager({
      kubeConfig: proxy.kubeConfig,
      namespaces: [ns],
      logger: createLogger({ level: 'silent' }),
      healthProbeBindAddress: '127.0.0.1:0',
      informerStaleAfterMs: 500,
      cache: { reflector: { backoffInitialMs: 100, backoffMaxMs: 300 } },
    });
    manager.controller().for(ConfigMap).complete(() => Result.done());
    const ac = new AbortController();
    const running = manager.start(ac.signal);
    await eventually(() => readyz(manager), (r) => r.status === 200, 'ready');

    await proxy.refuse();
    const stale = await eventually(() => readyz(manager), (r) => r.status === 500, 'not ready while cut off');
    expect(stale.body).toMatch(/\[-\]informers failed: stale: ConfigMap\.v1 out of contact for \d+ s/);
    expect(stale.body).toContain('ECONNREFUSED');
    // liveness is not readiness: the process is fine
    expect((await fetch(`${manager.healthUrl}/healthz`)).status).toBe(200);

    await proxy.accept();
    await eventually(() => readyz(manager), (r) => r.status === 200, 'ready again once watching');
    ac.abort();
    await running;
    await proxy.close();
    client.transport.close();
  });
  it.each(['a 500 whose body never comes', 'a 200 stream that goes silent'] as const)(
    'a re-watch answered with %s is not "ok": /readyz fails once it has not delivered for informerStaleAfterMs, and says why',
    async (stall) => {
      const api = await startLoopbackApi();
      api.onList((res) => sendList(res, [cm('a', '5')], '5'));
      api.onWatch((res, req) => {
        if (req.n === 1) {
          openWatch(res);
          res.end(watchLine('ADDED', cm('b', '6'))); // a normal close: re-watch from 6
        } else if (stall === 'a 500 whose body never comes') {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.flushHeaders();
        } else {
          openWatch(res); // and silence
        }
      });
      const staleAfterMs = 1000;
      // A 500's body gets min(idle deadline, 30 s): before, readiness waited for that deadline plus informerStaleAfterMs.
      const watchIdleTimeoutMs = stall === 'a 500 whose body never comes' ? 60_000 : 3000;
      const manager = createManager({
        kubeConfig: api.kubeConfig,
        namespaces: ['default'],
        logger: createLogger({ level: 'silent' }),
        healthProbeBindAddress: '127.0.0.1:0',
        informerStaleAfterMs: staleAfterMs,
        // The loopback server answers LIST and plain watches, not streaming lists.
        cache: { reflector: { watchIdleTimeoutMs, useWatchList: false } },
      });
      manager.controller().for(ConfigMap).complete(() => Result.done());
      const ac = new AbortController();
      const running = manager.start(ac.signal);
      await eventually(() => api.count('watch'), (n) => n >= 2, 'the re-watch');
      const asked = api.requests.filter((r) => r.kind === 'watch')[1]!.at;
      const failing = await eventually(() => readyz(manager), (r) => r.status === 500, 'not ready while the re-watch delivers nothing', 10_000);
      const after = Date.now() - asked;
      expect(failing.body).toMatch(/\[-\]informers failed: stale: ConfigMap\.v1 out of contact for \d+ s/);
      process.stderr.write(`[readiness] ${stall}: /readyz failing ${after} ms after the re-watch was asked for (informerStaleAfterMs ${staleAfterMs}, watchIdleTimeoutMs ${watchIdleTimeoutMs})\n`);
      ac.abort();
      await running;
      await api.close();
    },
  );
  it('a standby whose Lease is refused (403) is not ready, and /readyz says why', async () => {
    const ns = uniqueName('lease-403');
    const manager = createManager({
      kubeConfig: { ...loadKubeConfig(testKubeconfigPath()), impersonate: { user: 'kubeloop-test-no-lease' } },
      namespaces: [ns],
      logger: createLogger({ level: 'silent' }),
      healthProbeBindAddress: '127.0.0.1:0',
      leaderElection: { name: 'refused', namespace: ns, leaseDurationMs: 1000, renewDeadlineMs: 800, retryPeriodMs: 200 },
    });
    const ac = new AbortController();
    const running = manager.start(ac.signal).catch((err: unknown) => err);
    const failing = await eventually(() => readyz(manager), (r) => r.status === 500, 'not ready while the Lease is refused', 10_000);
    expect(failing.body).toMatch(/\[-\]leader-election failed: .*could not be read or written .*forbidden/);
    expect(manager.isLeader()).toBe(false);
    ac.abort();
    expect(await running).toBeUndefined();
  });
});
