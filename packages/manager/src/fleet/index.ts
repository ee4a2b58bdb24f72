/**
 * `@kubeloop/manager/fleet`: one manager reconciling across many clusters
 * (kubernetes-sigs/multicluster-runtime's idea). A provider engages and
 * disengages member clusters while the manager runs (`staticProvider`,
 * `kubeconfigSecretProvider`, `manualProvider` for tests, or your own
 * `ClusterProvider`); each member gets its own cluster (transports, cache,
 * mapper) and, per fleet controller, its own queue and workers; requests
 * carry the cluster's name and the reconcile context that cluster's client.
 * A fleet controller is one of the manager's controllers (listed, checked,
 * inspected, paused by name). A coordinator decides which members this
 * replica reconciles: every member on the leader (`engageAll`, the
 * default), or members spread over a shard ring's replicas
 * (`ringCoordinator`), the others kept warm.
 * A subpath of the manager rather than a package of its own: it is made of
 * the manager's controllers, clusters and readiness, and costs nothing to a
 * program that does not import it.
 *
 * @example
 * ```ts
 * import { createManager, Result, signalHandler } from '@kubeloop/manager';
 * import { createFleet, everyCluster, kubeconfigSecretProvider } from '@kubeloop/manager/fleet';
 * import { ConfigMap } from '@kubeloop/scheme';
 *
 * const manager = createManager({ fieldOwner: 'fleet-demo' });
 * const fleet = createFleet(manager, { provider: kubeconfigSecretProvider({ namespace: 'fleet-system' }) });
 * fleet.controller().for(ConfigMap).complete(async (req, ctx) => {
 *   ctx.log.info({ cluster: req.cluster }, 'seen');
 *   return Result.done();
 * });
 * await manager.start(signalHandler());
 * ```
 *
 * @packageDocumentation
 */
export { createFleet, memberPermissions } from './fleet.js';
export type { Fleet, FleetClusterChange, FleetClusterStatus, FleetOptions, FleetReconcileReport, MemberClusterOptions } from './fleet.js';
export { everyCluster, FleetControllerBuilder } from './builder.js';
export type { EventOrigin, FleetControllerDefinition, FleetEventHandler, FleetReconcileContext, FleetReconcileFn, FleetReconciler, FleetRequest, FleetWatch } from './builder.js';
export { engageAll, memberHash, ringCoordinator } from './coordinator.js';
export type { CoordinatorContext, FleetCoordinator, RingCoordinatorOptions } from './coordinator.js';
export { manualProvider, staticProvider } from './provider.js';
export { KUBECONFIG_SECRET_LABEL, kubeconfigSecretProvider } from './secret-provider.js';
export type { KubeconfigSecretProviderOptions } from './secret-provider.js';
export type { ClusterProvider, ClusterTarget, FleetEngager, ManualProvider } from './provider.js';
