/**
 * Losing the lease: leader-only work stops at once, and the manager exits
 * with a LeaderElectionLost error (as controller-runtime's manager does), so
 * the process can restart and campaign again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { startApiProxy } from '@kubeloop/envtest';
import { createLogger, createManager, isManagerError } from '../src/index.js';
import { testKubeConfig, uniqueName } from '../../../test/support/env.js';
import { eventually, newNamespace, testClient } from './support.js';

type Proxy = Awaited<ReturnType<typeof startApiProxy>>;

/**
 * Two managers on one Lease in `ns`: `old` talks through `proxy` and leads
 * first, its leader-only work ignoring its signal (`onAbort` is told when
 * the signal fires); `next` talks directly and records when it starts
 * leading. Returns once `old` leads, with `next` started.
 */
async function oldLeaderAndSuccessor(proxy: Proxy, ns: string, election: Record<string, unknown> & { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number }, extra: { gracefulShutdownTimeoutMs?: number } = {}, onAbort?: () => void) {
  const lease = uniqueName('lease');
  const make = (kubeConfig: Proxy['kubeConfig'], identity: string) =>
    createManager({
      kubeConfig,
      namespaces: [ns],
      logger: createLogger({ level: 'silent' }),
      leaderElection: { name: lease, namespace: ns, identity, ...election },
      leaseLossExitTimeoutMs: 500,
      ...extra,
    });
  const old = make(proxy.kubeConfig, 'old');
  old.add((signal) => {
    if (onAbort) signal.addEventListener('abort', onAbort, { once: true });
    return new Promise<void>(() => undefined);
  });
  const oldOutcome = old.start().then(
    () => ({ at: Date.now(), err: undefined as unknown }),
    (err: unknown) => ({ at: Date.now(), err }),
  );
  await eventually(() => old.isLeader(), (v) => v, 'the old leader');
  const next = make(testKubeConfig(), 'new');
  const successor = { ledAt: 0 };
  next.add(async (signal) => {
    successor.ledAt = Date.now();
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  });
  const stopNext = new AbortController();
  const nextDone = next.start(stopNext.signal).catch(() => undefined);
  const stop = async (): Promise<void> => {
    stopNext.abort();
    await nextDone;
  };
  return { oldOutcome, successor, stop };
}

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

  it('latency on the leader link only: the old leader has stopped (start() settled) before the new one leads, even when its work ignores its signal', async () => {
    const client = testClient();
    const ns = await newNamespace(client, 'slow');
    const proxy = await startApiProxy(testKubeConfig());
    const timings = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 };
    // Leader-only work that ignores its signal entirely.
    const { oldOutcome, successor, stop } = await oldLeaderAndSuccessor(proxy, ns, timings, { gracefulShutdownTimeoutMs: 30_000 });
    // 12 s of latency on the old leader's link only (its renewals time out after max(renew/2, 1 s)).
    const slowedAt = Date.now();
    proxy.delay(12_000);
    const ended = await oldOutcome;
    expect(isManagerError(ended.err) && ended.err.reason).toBe('LeaderElectionLost');
    // Lost within the renew deadline plus one attempt timeout and a retry, and exited within the lease-loss bound.
    expect(ended.at - slowedAt).toBeLessThan(timings.renewDeadlineMs + 1000 + timings.retryPeriodMs * 2.2 + 500 + 1000);
    await eventually(() => successor.ledAt, (t) => t > 0, 'the new leader', 20_000);
    expect(successor.ledAt).toBeGreaterThan(ended.at);
    await stop();
    proxy.delay(0);
    await proxy.close();
    client.transport.close();
  });
  it.each([true, false])('a partitioned leader (releaseOnCancel: %s) has settled start() before the new leader starts: no overlap', async (releaseOnCancel) => {
    const client = testClient();
    const ns = await newNamespace(client, 'part');
    const proxy = await startApiProxy(testKubeConfig());
    // A new leader waits at least leaseDuration - renewDeadline (1 s) after the old one's loss.
    const timings = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300, releaseOnCancel };
    let oldStoppedLeading = 0;
    // Leader-only work that ignores its signal: only start() settling bounds it.
    const { oldOutcome, successor, stop } = await oldLeaderAndSuccessor(proxy, ns, timings, {}, () => (oldStoppedLeading = Date.now()));
    await sleep(500);
    const cutAt = Date.now();
    proxy.blackhole(true);
    const ended = await oldOutcome;
    expect(isManagerError(ended.err) && ended.err.reason).toBe('LeaderElectionLost');
    await eventually(() => successor.ledAt, (t) => t > 0, 'the new leader', 20_000);
    const newLedAt = successor.ledAt;
    const overlapMs = Math.max(0, ended.at - newLedAt);
    process.stderr.write(
      `[partition, releaseOnCancel ${releaseOnCancel}] old stopped leading ${oldStoppedLeading - cutAt} ms after the cut, start() settled ${ended.at - oldStoppedLeading} ms later; new leader ${newLedAt - cutAt} ms after the cut; overlap ${overlapMs} ms\n`,
    );
    expect(ended.at).toBeLessThan(newLedAt);
    await stop();
    proxy.blackhole(false);
    await proxy.close();
    client.transport.close();
  });
});
