/** client-go's `leader_election_master_status{name}` gauge over prom-client, fed by `@kubeloop/leaderelection`. */
import { Gauge } from './prom.js';
import type { Registry } from 'prom-client';
import type { LeaderElectionMetrics } from '@kubeloop/leaderelection';
import { once } from './register.js';

/** The gauge's name, as client-go spells it. */
export const LEADER_ELECTION_STATUS_METRIC = 'leader_election_master_status';

/**
 * Leader-election metrics in `registry`: 1 while this process holds lease
 * `name`, 0 while it does not. Many electors may share one registry.
 *
 * @example
 * ```ts
 * const elector = createLeaderElector({ client, namespace, name, metrics: leaderElectionMetrics(registry) });
 * ```
 */
export function leaderElectionMetrics(registry: Registry): LeaderElectionMetrics {
  const gauge = once(registry, LEADER_ELECTION_STATUS_METRIC, () => new Gauge({
    name: LEADER_ELECTION_STATUS_METRIC,
    help: '1 while this process holds the leader-election lease `name`, 0 while it does not.',
    labelNames: ['name'],
    registers: [registry],
  }));
  return { leading: (name, on) => gauge.set({ name }, on ? 1 : 0) };
}
