/**
 * `@kubeloop/testing/manager`: a manager for tests on the fake or on a real
 * API server, and waiting for the reconcile of an object. A subpath of its
 * own, so that tests of the fake alone never load the manager (and its
 * tsyringe and reflect-metadata peers).
 *
 * @example
 * ```ts
 * import { startTestManager } from '@kubeloop/testing/manager';
 *
 * await using tm = await startTestManager({ backend: fake, scheme, setup: (m) => setupHardDiskController(m) });
 * ```
 *
 * @packageDocumentation
 */
export { startTestManager, waitForReconcile } from './test-manager.js';
export type { ReconcileTarget, TestManager, TestManagerOptions, WaitForReconcileOptions } from './test-manager.js';
export type { ManagerRequest } from './recording.js';
