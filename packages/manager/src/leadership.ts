/**
 * Leadership: when leader-only work may run. Today's one way is a
 * coordination.k8s.io Lease election (`@kubeloop/leaderelection`) on
 * connections of its own; without `leaderElection` the manager always leads.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { createClient } from '@kubeloop/client';
import { createLeaderElector } from '@kubeloop/leaderelection';
import type { LeaderElectionEnd, LeaderElector } from '@kubeloop/leaderelection';
import type { Cluster } from './cluster.js';
import { leaderElectionMetrics } from './metrics/leader-election-metrics.js';
import type { LeaderElectionConfig } from './options.js';

/** The namespace of the pod this process runs in, or `default` outside a cluster. */
export function inClusterNamespace(): string {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || 'default';
  } catch {
    return 'default';
  }
}

/** What a Lease election tells the manager. */
export interface LeaseElectionHooks {
  /** This replica leads until `signal` aborts. */
  readonly onStartedLeading: (signal: AbortSignal) => void;
  /** Leadership ended; on a graceful stop the lease is released only once this resolves. */
  readonly onStoppedLeading: () => Promise<void>;
}

/** A running Lease election. */
export interface LeaseElection {
  readonly elector: LeaderElector;
  /** Settles when the election ends: `lost`, or `cancelled` once `signal` aborted. */
  readonly ended: Promise<LeaderElectionEnd>;
  /** Close the election's own connections. */
  close(): void;
}

/**
 * Run the Lease election of `config` until `signal` aborts or the lease is
 * lost. It has its own connections and no Retry-After waits (each attempt
 * has its own deadline): renewals never queue behind reconcile traffic or
 * watches, as in controller-runtime.
 */
export function startLeaseElection(
  config: LeaderElectionConfig,
  deps: { readonly cluster: Cluster; readonly registry: Registry; readonly log: Logger; readonly signal: AbortSignal },
  hooks: LeaseElectionHooks,
): LeaseElection {
  const { cluster, log } = deps;
  const transport = cluster.transport.fork({ maxRetries: 0 });
  let elector: LeaderElector;
  try {
    elector = createLeaderElector({
      client: createClient({ transport, scheme: cluster.scheme, mapper: cluster.mapper }),
      namespace: config.namespace ?? inClusterNamespace(),
      name: config.name,
      ...(config.identity ? { identity: config.identity } : {}),
      ...(config.leaseDurationMs ? { leaseDurationMs: config.leaseDurationMs } : {}),
      ...(config.renewDeadlineMs ? { renewDeadlineMs: config.renewDeadlineMs } : {}),
      ...(config.retryPeriodMs ? { retryPeriodMs: config.retryPeriodMs } : {}),
      releaseOnCancel: config.releaseOnCancel ?? false,
      metrics: leaderElectionMetrics(deps.registry),
      onStartedLeading: (leaderSignal) => {
        log.info({ identity: elector.identity, lease: `${elector.namespace}/${elector.name}` }, 'became leader; starting leader-only runnables');
        hooks.onStartedLeading(leaderSignal);
      },
      onStoppedLeading: () => hooks.onStoppedLeading(),
      onNewLeader: (identity) => log.info({ leader: identity }, 'new leader observed'),
      onError: (err) => log.warn({ err: describe(err) }, 'leader election error; retrying'),
    });
  } catch (err) {
    transport.close();
    throw err;
  }
  return { elector, ended: elector.run(deps.signal), close: () => transport.close() };
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
