/**
 * The fleet example operator as a library: the `FleetConfig` kind (host
 * cluster) and `setupFleetOperator`, which gives a manager a fleet of member
 * clusters and the controllers that copy every FleetConfig into each member
 * as a ConfigMap and report per-member status back.
 *
 * @example
 * ```ts
 * const manager = createManager({ scheme: builtinScheme.extend(FleetConfig), fieldOwner: 'fleet-operator' });
 * const fleet = setupFleetOperator(manager);
 * fleet.onClusterChange(({ type, cluster }) => console.log(type, cluster));
 * await manager.start(signalHandler());
 * ```
 *
 * @packageDocumentation
 */
export { FLEETCONFIG_LABEL, FleetConfig, memberFieldManager } from './fleet-config.js';
export { FIELD_OWNER, setupFleetOperator } from './controller.js';
export type { FleetOperatorOptions } from './controller.js';
