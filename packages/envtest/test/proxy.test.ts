import { CoreV1Api } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { startApiProxy } from '../src/index.js';
import type { ApiProxy } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';

let proxy: ApiProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
});

describe('the test proxy', () => {
  it('forwards with the target credentials and records each request', async () => {
    proxy = await startApiProxy(testKubeConfig());
    const core = proxy.kubeConfig.makeApiClient(CoreV1Api);
    const name = uniqueName('p');
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name } } });
    await core.readNamespacedConfigMap({ namespace: 'default', name });
    await core.deleteNamespacedConfigMap({ namespace: 'default', name });
    expect(proxy.requests.map((r) => [r.method, r.path, r.status])).toEqual([
      ['POST', '/api/v1/namespaces/default/configmaps', 201],
      ['GET', `/api/v1/namespaces/default/configmaps/${name}`, 200],
      ['DELETE', `/api/v1/namespaces/default/configmaps/${name}`, 200],
    ]);
    expect(proxy.count((r) => r.method === 'GET')).toBe(1);
    proxy.clearRequests();
    expect(proxy.count()).toBe(0);
  });

  it('refuses connections while down and serves again on the same port', async () => {
    proxy = await startApiProxy(testKubeConfig());
    const core = proxy.kubeConfig.makeApiClient(CoreV1Api);
    await proxy.refuse();
    const refused = await fetch(`${proxy.url}/version`).catch((e: unknown) => e);
    expect((refused as { cause?: { code?: string } }).cause?.code).toBe('ECONNREFUSED');
    await proxy.accept();
    expect((await core.listNamespace()).items.length).toBeGreaterThan(0);
  });

  it('black-holes requests: they are recorded but never answered', async () => {
    proxy = await startApiProxy(testKubeConfig());
    proxy.blackhole(true);
    const ac = new AbortController();
    const pending = fetch(`${proxy.url}/api/v1/namespaces`, { signal: ac.signal });
    await new Promise((r) => setTimeout(r, 300));
    expect(proxy.count()).toBe(1);
    ac.abort();
    await expect(pending).rejects.toThrow();
  });

  it('resets open streams', async () => {
    proxy = await startApiProxy(testKubeConfig());
    const res = await fetch(`${proxy.url}/api/v1/namespaces?watch=true`);
    const reader = res.body!.getReader();
    await reader.read(); // the ADDED events of existing namespaces
    proxy.resetConnections();
    await expect((async () => {
      for (;;) {
        const { done } = await reader.read();
        if (done) return 'ended';
      }
    })()).rejects.toThrow();
  });
});

describe('the test proxy black hole', () => {
  it('also stalls a stream already in flight, and lets it flow again', async () => {
    proxy = await startApiProxy(testKubeConfig());
    const kc = testKubeConfig();
    const { CoreV1Api } = await import('@kubernetes/client-node');
    const core = kc.makeApiClient(CoreV1Api);
    const name = uniqueName('bh');
    const list = await core.listNamespacedConfigMap({ namespace: 'default' });
    const res = await fetch(`${proxy.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${list.metadata?.resourceVersion}&fieldSelector=metadata.name%3D${name}`);
    const reader: ReadableStreamDefaultReader<Uint8Array> = res.body!.getReader();
    proxy.blackhole(true);
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name } } });
    const pending = reader.read();
    const stalled = await Promise.race([pending.then(() => 'data'), new Promise((r) => setTimeout(() => r('silent'), 700))]);
    expect(stalled).toBe('silent');
    proxy.blackhole(false);
    const { value } = await pending;
    expect(new TextDecoder().decode(value)).toContain(name);
    await reader.cancel();
  });
});

describe('the test proxy stalling watches', () => {
  it('holds the events of a watch while other requests are answered, then passes them on', async () => {
    proxy = await startApiProxy(testKubeConfig());
    const core = proxy.kubeConfig.makeApiClient(CoreV1Api);
    const name = uniqueName('sw');
    const list = await core.listNamespacedConfigMap({ namespace: 'default' });
    proxy.stallWatches(true);
    // Opened while stalled: its headers come, its events wait.
    const res = await fetch(`${proxy.url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${list.metadata?.resourceVersion}&fieldSelector=metadata.name%3D${name}`);
    expect(res.status).toBe(200);
    const reader: ReadableStreamDefaultReader<Uint8Array> = res.body!.getReader();
    // Requests other than watches go through: the create and a read of it.
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name } } });
    expect((await core.readNamespacedConfigMap({ namespace: 'default', name })).metadata?.name).toBe(name);
    const pending = reader.read();
    const stalled = await Promise.race([pending.then(() => 'data'), new Promise((r) => setTimeout(() => r('silent'), 700))]);
    expect(stalled).toBe('silent');
    proxy.stallWatches(false);
    const { value } = await pending;
    expect(new TextDecoder().decode(value)).toContain(name);
    await reader.cancel();
    await core.deleteNamespacedConfigMap({ namespace: 'default', name });
  });
});
