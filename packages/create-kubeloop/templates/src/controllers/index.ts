/**
 * The project's controllers: `setupControllers` registers every one with a
 * manager. main.ts calls it; so does `kubeloop generate rbac` (on a manager
 * that never connects), to write config/rbac/role.yaml from what the
 * controllers watch and declare in `permissions`.
 */
import type { ControllerShard, Manager } from '@kubeloop/manager';
import { setupWebsiteController } from './website-controller.js';
// kubeloop:scaffold:imports (`kubeloop create api` adds imports above this line)

export { WebsiteReconciler, configMapNameOf, setupWebsiteController } from './website-controller.js';

/** How {@link setupControllers} registers the controllers. */
export interface SetupOptions {
  /**
   * Reconcile only this replica's share of each controller's objects (main.ts
   * passes the shard ring of --shard-ring). Default: none, every object (on
   * the leader, with --leader-elect).
   */
  readonly shard?: ControllerShard | undefined;
}

/**
 * Registers the project's controllers with a manager.
 *
 * @example
 * ```ts
 * const manager = createManager({ scheme: builtinScheme.extend(Website), fieldOwner: '{{name}}' });
 * setupControllers(manager);
 * await manager.start(signalHandler());
 * ```
 */
export function setupControllers(manager: Manager, options: SetupOptions = {}): void {
  setupWebsiteController(manager, options);
  // kubeloop:scaffold:controllers (`kubeloop create api` adds controllers above this line)
}
