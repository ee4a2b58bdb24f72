/**
 * Cluster providers: what tells a fleet which member clusters exist. A
 * provider engages a cluster under a name (again, with a new target, to
 * re-engage it) and disengages it, at any time while the fleet runs, as
 * multicluster-runtime's providers call `Engage` on the multi-cluster
 * manager. Two ship here: a fixed list (`staticProvider`) and one driven by
 * hand (`manualProvider`, for tests: envtest control planes and fake API
 * servers); `kubeconfigSecretProvider` reads kubeconfig Secrets.
 */
import type { KubeConfigLike, Transport } from '@kubeloop/client';
import type { Logger } from 'pino';
import type { Cluster } from '../cluster.js';
import { ManagerError } from '../errors.js';
import type { PermissionRequirement } from '../rbac/permissions.js';

/**
 * How to reach a member cluster: a KubeConfig (the fleet makes the cluster's
 * own transports from it) or a ready transport (a fake API server's, say).
 */
export type ClusterTarget = { readonly kubeConfig: KubeConfigLike; readonly transport?: undefined } | { readonly transport: Transport; readonly kubeConfig?: undefined };

/** What a provider is given: the fleet's door for engaging and disengaging clusters. */
export interface FleetEngager {
  /** The manager's own cluster (where a provider finds its Secrets or cluster objects). */
  readonly host: Cluster;
  /** The fleet's logger. */
  readonly log: Logger;
  /**
   * Engage a cluster under `name`: its cache and every fleet controller's
   * workers for it start. An engaged name is re-engaged: the old cluster is
   * disengaged first (its informers stopped, its connections closed).
   * Resolves once the cluster's controllers have started (not synced: a
   * dead member never holds up its provider).
   *
   * @throws {@link ManagerError} `InvalidOptions` for an empty name or a target that is neither a KubeConfig nor a transport.
   */
  engage(name: string, target: ClusterTarget): Promise<void>;
  /** Disengage a cluster: its controllers stop (reconciles in flight finish), its informers stop and its connections close. Unknown names are ignored. */
  disengage(name: string): Promise<void>;
}

/**
 * Engages and disengages clusters while the fleet runs. `run` is called
 * once per fleet run; it engages what exists, follows changes until
 * `signal` aborts, then resolves (the fleet disengages every cluster
 * itself). A rejection stops the manager, as a failed runnable does.
 *
 * @example
 * ```ts
 * const oneCluster: ClusterProvider = {
 *   description: 'the cluster in ./member.kubeconfig',
 *   async run(fleet, signal) {
 *     await fleet.engage('member', { kubeConfig: loadKubeConfig('./member.kubeconfig') });
 *     await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
 *   },
 * };
 * ```
 */
export interface ClusterProvider {
  /** For log lines. */
  readonly description: string;
  run(fleet: FleetEngager, signal: AbortSignal): Promise<void>;
  /** What it reads or writes in the host (the kubeconfig Secrets it watches), for `manager.permissions()` and `kubeloop generate rbac`. Default: nothing. */
  permissions?(): readonly PermissionRequirement[];
}

/** Resolves when `signal` aborts. */
export function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** Throws a ManagerError `InvalidOptions` unless `name` and `target` can be engaged. */
export function checkTarget(name: unknown, target: unknown): void {
  if (typeof name !== 'string' || name === '' || name.length > 253 || name.includes('/')) {
    throw new ManagerError('InvalidOptions', `a fleet cluster's name must be a non-empty string of at most 253 characters without '/'; got ${JSON.stringify(name)}`);
  }
  const t = target as { kubeConfig?: unknown; transport?: { request?: unknown; stream?: unknown } } | null | undefined;
  const hasConfig = t !== null && typeof t === 'object' && t.kubeConfig !== null && typeof t.kubeConfig === 'object';
  const hasTransport = t !== null && typeof t === 'object' && typeof t.transport?.request === 'function' && typeof t.transport.stream === 'function';
  if (hasConfig === hasTransport) {
    throw new ManagerError('InvalidOptions', `cluster ${name}: give a target of { kubeConfig } (loadKubeConfig(path), or a client-node KubeConfig) or { transport } (a fake API server's), exactly one of them`);
  }
}

/**
 * A fixed set of clusters, engaged when the fleet starts and kept until it
 * stops (multicluster-runtime's kubeconfig-file provider).
 *
 * @throws {@link ManagerError} `InvalidOptions` for a bad name or target, at the call.
 * @example
 * ```ts
 * const provider = staticProvider({
 *   'eu-1': { kubeConfig: loadKubeConfig('./eu-1.kubeconfig') },
 *   'us-1': { kubeConfig: loadKubeConfig('./us-1.kubeconfig') },
 * });
 * ```
 */
export function staticProvider(clusters: Readonly<Record<string, ClusterTarget>>): ClusterProvider {
  if (clusters === null || typeof clusters !== 'object') throw new ManagerError('InvalidOptions', 'staticProvider takes an object of cluster name -> { kubeConfig } or { transport }');
  for (const [name, target] of Object.entries(clusters)) checkTarget(name, target);
  const entries = Object.entries(clusters);
  return {
    description: `static (${entries.map(([n]) => n).join(', ')})`,
    async run(fleet, signal) {
      for (const [name, target] of entries) {
        if (signal.aborted) return;
        await fleet.engage(name, target);
      }
      await untilAborted(signal);
    },
  };
}

/** A provider driven by hand: tests engage envtest control planes or fake API servers, and take them away, while the fleet runs. */
export interface ManualProvider extends ClusterProvider {
  /** Engage (or re-engage) `name`; before the fleet runs, it is engaged when it starts. Resolves once engaged (at once when not running). */
  engage(name: string, target: ClusterTarget): Promise<void>;
  /** Disengage `name`; resolves once its controllers and informers have stopped. */
  disengage(name: string): Promise<void>;
  /** The names engaged or to be engaged. */
  names(): readonly string[];
}

/**
 * A provider whose clusters come and go when the caller says: the test
 * provider, for a fleet of envtest control planes or of fake API servers.
 *
 * @example
 * ```ts
 * const provider = manualProvider();
 * const fleet = createFleet(manager, { provider });
 * await provider.engage('member-1', { transport: fakeApi.createTransport() });
 * await provider.disengage('member-1');
 * ```
 */
export function manualProvider(): ManualProvider {
  const wanted = new Map<string, ClusterTarget>();
  let live: FleetEngager | undefined;
  return {
    description: 'manual',
    names: () => [...wanted.keys()],
    async engage(name, target) {
      checkTarget(name, target);
      wanted.set(name, target);
      await live?.engage(name, target);
    },
    async disengage(name) {
      wanted.delete(name);
      await live?.disengage(name);
    },
    async run(fleet, signal) {
      live = fleet;
      try {
        for (const [name, target] of [...wanted]) {
          if (signal.aborted) break;
          await fleet.engage(name, target);
        }
        await untilAborted(signal);
      } finally {
        if (live === fleet) live = undefined;
      }
    },
  };
}
