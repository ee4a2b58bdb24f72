/**
 * Readiness includes informer freshness: a cache cut off from the API server
 * for longer than `informerStaleAfterMs` makes /readyz fail with the reason,
 * and it recovers once the informer is watching again.
 */
import { describe, expect, it } from 'vitest';
import { startApiProxy } from '@kubeloop/envtest';
import { ConfigMap } from '@kubeloop/scheme';
import { createLogger, createManager, Result } from '../src/index.js';
import { testKubeConfig } from '../../../test/support/env.js';
import { eventually, newNamespace, testClient } from './support.js';

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
    const readyz = async (): Promise<{ status: number; body: string }> => {
      const res = await fetch(`${manager.healthUrl}/readyz?verbose`);
      return { status: res.status, body: await res.text() };
    };
    await eventually(readyz, (r) => r.status === 200, 'ready');

    await proxy.refuse();
    const stale = await eventually(readyz, (r) => r.status === 500, 'not ready while cut off');
    expect(stale.body).toMatch(/\[-\]informers failed: stale: ConfigMap\.v1 out of contact for \d+ s/);
    expect(stale.body).toContain('ECONNREFUSED');
    // liveness is not readiness: the process is fine
    expect((await fetch(`${manager.healthUrl}/healthz`)).status).toBe(200);

    await proxy.accept();
    await eventually(readyz, (r) => r.status === 200, 'ready again once watching');
    ac.abort();
    await running;
    await proxy.close();
    client.transport.close();
  });
});
