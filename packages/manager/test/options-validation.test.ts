/**
 * createManager and createCluster check their options before building
 * anything: each wrong shape is a ManagerError InvalidOptions naming the
 * option and what it expects (the case first: a transport that is
 * an options object, which used to start and then fail every 30 s).
 */
import { describe, expect, it } from 'vitest';
import { loadKubeConfig } from '@kubeloop/client';
import { Namespace } from '@kubeloop/scheme';
import { createCluster, createManager, isManagerError } from '../src/index.js';
import type { ManagerOptions } from '../src/index.js';
import { startApiProxy } from '@kubeloop/envtest';
import { testKubeConfig, testKubeconfigPath } from '../../../test/support/env.js';

const SHARED: readonly [option: string, value: unknown, expects: RegExp][] = [
  ['transport', { qps: 0 }, /a Transport \(createTransport.*transportOptions/],
  ['kubeConfig', '~/.kube/config', /RestConfig/],
  ['transportOptions', 'fast', /transport tuning/],
  ['scheme', [], /a Scheme/],
  ['fieldOwner', 7, /non-empty string/],
  ['namespaces', 'team-a', /an array of namespace names/],
  ['namespaces', [''], /an array of namespace names/],
  ['cache', () => undefined, /informer-cache options/],
  ['uncached', [{ kind: 'Secret' }], /an array of kinds/],
  ['readYourWrites', { timeoutMs: '2s' }, /timeoutMs\?: number of ms/],
  ['logger', console, /a pino Logger/],
  ['registry', {}, /a prom-client Registry/],
  ['eventInstance', '', /a non-empty string/],
  ['eventRecorder', 3, /event-recorder tuning/],
];

const MANAGER_ONLY: readonly [option: string, value: unknown, expects: RegExp][] = [
  ['cluster', { client: {} }, /a Cluster \(createCluster/],
  ['metricsBindAddress', 8080, /'host:port'/],
  ['healthProbeBindAddress', 8081, /'host:port'/],
  ['secureMetrics', true, /certificates\?/],
  ['leaderElection', { namespace: 'default' }, /with a name/],
  ['leadership', 'lease', /a LeadershipGate/],
  ['warmStandby', 'yes', /true or false/],
  ['webhook', 9443, /webhook-server options/],
  ['gracefulShutdownTimeoutMs', -1, /number of ms >= 0/],
  ['leaseLossExitTimeoutMs', Number.NaN, /number of ms >= 0/],
  ['container', {}, /DependencyContainer/],
  ['defaultMetrics', 1, /true or false/],
  ['releaseIdleMemory', 'yes', /true or false/],
  ['informerStaleAfterMs', '60s', /number of ms >= 0/],
  ['syncPeriodMs', Number.POSITIVE_INFINITY, /number of ms >= 0/],
];

function refusal(make: () => unknown): unknown {
  try {
    make();
  } catch (e) {
    return e;
  }
  return undefined;
}

function expectRefused(err: unknown, fn: string, option: string, expects: RegExp): void {
  expect(isManagerError(err) && err.reason).toBe('InvalidOptions');
  expect((err as Error).message).toContain(`${fn}: ${option} must be`);
  expect((err as Error).message).toMatch(expects);
}

describe('createManager checks its options', () => {
  it.each([...SHARED, ...MANAGER_ONLY])('%s: %j', (option, value, expects) => {
    expectRefused(refusal(() => createManager({ [option]: value })), 'createManager', option, expects);
  });

  it('not an object', () => {
    const err = refusal(() => createManager('kubeconfig' as unknown as ManagerOptions));
    expect(isManagerError(err) && err.reason).toBe('InvalidOptions');
    expect((err as Error).message).toMatch(/createManager takes one options object; got the string "kubeconfig"/);
  });
});

describe('createCluster checks its options', () => {
  it.each([...SHARED, ['name', '', /cluster's name in a fleet/], ['name', 3, /cluster's name in a fleet/]] as const)('%s: %j', (option, value, expects) => {
    expectRefused(refusal(() => createCluster({ [option]: value })), 'createCluster', option, expects);
  });

  it('right shapes pass, and nothing is sent until used', async () => {
    const plain = createCluster({ kubeConfig: loadKubeConfig({ path: testKubeconfigPath() }), fieldOwner: 'me', namespaces: ['a'], readYourWrites: { timeoutMs: 100 } });
    await plain.stop();
    // The same shapes in front of a recording proxy: creating the cluster sends nothing; its first read does.
    const proxy = await startApiProxy(testKubeConfig());
    const cluster = createCluster({ kubeConfig: proxy.kubeConfig, fieldOwner: 'me', namespaces: ['a'], readYourWrites: { timeoutMs: 100 } });
    try {
      await new Promise((r) => setTimeout(r, 500));
      expect(proxy.requests.map((r) => `${r.method} ${r.url}`)).toEqual([]);
      await cluster.apiReader.get(Namespace, { name: 'default' });
      expect(proxy.count((r) => r.method === 'GET' && r.path === '/api/v1/namespaces/default')).toBe(1);
    } finally {
      await cluster.stop();
      cluster.transport.close();
      await proxy.close();
    }
  });
});
