/**
 * Leadership: a gate that says when leader-only work may run. The manager
 * runs its gate for its whole life; the gate opens a term (`lead`) when this
 * replica may do leader-only work and aborts it when it may not. Two gates
 * ship here: a coordination.k8s.io Lease election (`leaseElection`, what
 * `ManagerOptions.leaderElection` is shorthand for) and `alwaysLeader` (no
 * election: every replica leads); `ringLeadership` (ring-leadership.ts)
 * makes a shard ring one. Other gates (an external lock) implement the
 * same interface.
 */
import type { Logger } from 'pino';
import { Gauge } from './metrics/prom.js';
import type { Registry } from 'prom-client';
import { createClient } from '@kubeloop/client';
import type { WriteFence } from '@kubeloop/client';
import { createLeaderElector } from '@kubeloop/leaderelection';
import type { LeaderElector } from '@kubeloop/leaderelection';
import type { Cluster } from './cluster.js';
import { describeError } from './errors.js';
import { leaderElectionMetrics } from './metrics/leader-election-metrics.js';
import { once } from './metrics/register.js';
import type { LeaderElectionConfig } from './options.js';
import { leasePermission } from './rbac/permissions.js';
import type { PermissionRequirement } from './rbac/permissions.js';

// Builtins through getBuiltinModule, not ES imports: those load each builtin's lazy parts too (docs/architecture.md).
const { readFileSync } = process.getBuiltinModule('node:fs');

/** What the manager gives its gate. */
export interface LeadershipContext {
  /** Aborts when the manager stops: end the current term, hand leadership on as the gate does, and resolve `run`. */
  readonly signal: AbortSignal;
  /** The manager's cluster: a gate that talks to the API server takes its own connections with `cluster.transport.fork()`. */
  readonly cluster: Cluster;
  readonly registry: Registry;
  readonly logger: Logger;
  /**
   * This replica leads from now until `term` aborts: the manager starts its
   * leader-only runnables under `term`, and under `fence` when given (their
   * writes, through any kubeloop client, are refused once it is revoked: a
   * gate revokes it when it may no longer lead, by the clock as well as by
   * its loop, see `runFenced` of `@kubeloop/client`).
   */
  lead(term: AbortSignal, fence?: WriteFence): void;
  /**
   * Call once a term has been aborted. Resolves when that term's leader-only
   * work has stopped (or after the manager's graceful shutdown timeout, when
   * some of it ignores its signal). Hand leadership to another replica only
   * after it resolves, so two replicas never do leader-only work at once.
   */
  stepDown(): Promise<void>;
}

/** How a gate's `run` ended: `stopped` (the manager stopped it) or `lost` (leadership is gone for good: the manager exits with `LeaderElectionLost`). */
export type LeadershipEnd = 'stopped' | 'lost';

/**
 * When leader-only work may run. `run` opens a term with `context.lead`
 * whenever this replica may do leader-only work and aborts that term when
 * it may not; a gate may open any number of terms, one at a time.
 *
 * @example
 * ```ts
 * // Leads while a file exists (an external lock, say); checked every second.
 * const fileGate: LeadershipGate = {
 *   description: 'file /run/lead',
 *   async run(ctx) {
 *     let term: AbortController | undefined;
 *     while (!ctx.signal.aborted) {
 *       const may = existsSync('/run/lead');
 *       if (may && !term) ctx.lead((term = new AbortController()).signal);
 *       if (!may && term) { term.abort(); term = undefined; await ctx.stepDown(); }
 *       await new Promise((r) => setTimeout(r, 1000));
 *     }
 *     return 'stopped';
 *   },
 * };
 * createManager({ leadership: fileGate });
 * ```
 */
export interface LeadershipGate {
  /** For logs and readiness: `lease default/harddisk-operator`, `always`. */
  readonly description: string;
  /** Run until `context.signal` aborts (resolve `stopped`) or leadership is lost for good (resolve `lost`). */
  run(context: LeadershipContext): Promise<LeadershipEnd>;
  /** Why the gate cannot do its job right now (the Lease cannot be read, say), for `/readyz`. Default: nothing wrong. */
  check?(): Error | undefined;
  /** Who leads, when the gate knows (the Lease's holder), for `/readyz`. */
  leader?(): string | undefined;
  /** One line on the gate's own state for `/readyz` (a shard ring's buckets held here). Default: nothing. */
  status?(): string | undefined;
  /** What the gate needs of the API server (a Lease's verbs), for `manager.permissions()`. Default: nothing. */
  permissions?(): readonly PermissionRequirement[];
}

/**
 * No election: every replica leads from start to stop (the manager's
 * default without `leaderElection` or `leadership`).
 *
 * @example
 * ```ts
 * createManager({ leadership: alwaysLeader() });
 * ```
 */
export function alwaysLeader(): LeadershipGate {
  return {
    description: 'always',
    async run(context) {
      context.lead(context.signal);
      await new Promise<void>((resolve) => {
        if (context.signal.aborted) resolve();
        else context.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      return 'stopped';
    },
  };
}

/** The namespace of the pod this process runs in, or `default` outside a cluster. */
export function inClusterNamespace(): string {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || 'default';
  } catch {
    return 'default';
  }
}

/**
 * Leadership by a coordination.k8s.io Lease (`@kubeloop/leaderelection`,
 * client-go's algorithm): one term, from acquiring the lease to losing it
 * or stopping. Losing it is for good: leader-only work is aborted at once
 * and the manager exits (graceful shutdown is skipped, as controller-runtime
 * does). On a stop, the lease is released (`releaseOnCancel`) only after
 * leader-only work has drained. The election has its own connections and no
 * Retry-After waits (each attempt has its own deadline), so renewals never
 * queue behind reconcile traffic or watches.
 *
 * @example
 * ```ts
 * createManager({ leadership: leaseElection({ name: 'harddisk-operator', namespace: 'harddisk-system', releaseOnCancel: true }) });
 * ```
 */
export function leaseElection(config: LeaderElectionConfig): LeadershipGate {
  const namespace = config.namespace ?? inClusterNamespace();
  let elector: LeaderElector | undefined;
  return {
    description: `lease ${namespace}/${config.name}`,
    check: () => elector?.check(),
    leader: () => elector?.getLeader(),
    permissions: () => [leasePermission(namespace)],
    async run(context) {
      const { cluster, logger: log } = context;
      const transport = cluster.transport.fork({ maxRetries: 0 });
      try {
        const e: LeaderElector = createLeaderElector({
          client: createClient({ transport, scheme: cluster.scheme, mapper: cluster.mapper }),
          namespace,
          name: config.name,
          ...(config.identity ? { identity: config.identity } : {}),
          ...(config.leaseDurationMs ? { leaseDurationMs: config.leaseDurationMs } : {}),
          ...(config.renewDeadlineMs ? { renewDeadlineMs: config.renewDeadlineMs } : {}),
          ...(config.retryPeriodMs ? { retryPeriodMs: config.retryPeriodMs } : {}),
          releaseOnCancel: config.releaseOnCancel ?? false,
          metrics: leaderElectionMetrics(context.registry),
          onStartedLeading: (term, fence) => {
            log.info({ identity: e.identity, lease: `${e.namespace}/${e.name}` }, 'became leader; starting leader-only runnables');
            context.lead(term, fence);
          },
          // On a stop the lease is released (releaseOnCancel) only after leader-only work has drained (bounded by
          // the graceful timeout), so two leaders never overlap. On a lost lease nothing is awaited: the term's
          // signal has aborted leader-only work and the manager exits at once.
          onStoppedLeading: () => (context.signal.aborted ? context.stepDown() : undefined),
          onNewLeader: (identity) => log.info({ leader: identity }, 'new leader observed'),
          onError: (err) => log.warn({ err: describeError(err) }, 'leader election error; retrying'),
        });
        elector = e;
        const end = await e.run(context.signal);
        return end === 'lost' ? 'lost' : 'stopped';
      } finally {
        transport.close();
      }
    },
  };
}

/** What `/readyz` and the `kubeloop_leadership_state` gauge say of this replica. */
export type LeadershipState = 'leading' | 'warm standby' | 'standby';

/**
 * `kubeloop_leadership_state{state}`: 1 for the state this replica is in
 * (`leading`, `warm_standby`, `standby`), 0 for the others, read at scrape time.
 */
export function registerLeadershipMetric(registry: Registry, state: () => LeadershipState | undefined): void {
  const name = 'kubeloop_leadership_state';
  once(registry, name, () => new Gauge({
    name,
    help: '1 for the leadership state this replica is in (leading, warm_standby, standby), 0 for the others',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const now = state();
      for (const s of ['leading', 'warm standby', 'standby'] as const) this.set({ state: s.replace(' ', '_') }, now === s ? 1 : 0);
    },
  }));
}
