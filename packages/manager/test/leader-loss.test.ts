/**
 * Losing the lease: leader-only work stops at once, and the manager exits
 * with a LeaderElectionLost error (as controller-runtime's manager does), so
 * the process can restart and campaign again.
 */
import { describe, expect, it } from 'vitest';
import { startApiProxy } from '@kubeloop/envtest';
import { createLogger, createManager, isManagerError } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';
import { eventually, newNamespace, testClient } from './support.js';

describe('a manager that loses its lease', () => {
  it('stops leader-only work at once and exits with LeaderElectionLost', async () => {
    const client = testClient();
    const ns = await newNamespace(client, 'loss');
    const proxy = await startApiProxy(testKubeConfig());
    const manager = createManager({
      kubeConfig: proxy.kubeConfig,
      namespaces: [ns],
      logger: createLogger({ level: 'silent' }),
      leaderElection: { name: uniqueName('lease'), namespace: ns, identity: 'me', leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 },
      gracefulShutdownTimeoutMs: 5000,
    });
    let leaderWorkAborted = 0;
    let nonLeaderAborted = 0;
    manager.add(async (signal) => {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      leaderWorkAborted = Date.now();
    });
    manager.add(
      async (signal) => {
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        nonLeaderAborted = Date.now();
      },
      { needLeaderElection: false },
    );
    const outcome = manager.start().then(
      () => 'resolved',
      (err: unknown) => err,
    );
    await eventually(() => manager.isLeader(), (v) => v, 'leadership');
    // The network to the API server dies: renewals fail past the renew deadline.
    const cut = Date.now();
    proxy.blackhole(true);
    const err = await outcome;
    expect(isManagerError(err) && err.reason).toBe('LeaderElectionLost');
    expect(manager.isLeader()).toBe(false);
    // Leader-only work stopped no later than the rest (it is stopped first), within the renew deadline plus a retry.
    expect(leaderWorkAborted).toBeGreaterThan(0);
    expect(nonLeaderAborted).toBeGreaterThanOrEqual(leaderWorkAborted);
    expect(leaderWorkAborted - cut).toBeLessThan(1500 + 300 * 2.2 + 2000);
    proxy.blackhole(false);
    await proxy.close();
    client.transport.close();
  });
});
