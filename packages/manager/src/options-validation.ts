/**
 * The options of `createManager` and `createCluster`, checked before
 * anything is built. A wrong shape (an options object where a `Transport`
 * is expected, a string where a number is) is a `ManagerError`
 * `InvalidOptions` naming the option and what it expects, at the line that
 * wrote it, instead of a manager that starts and then logs
 * `transport.request is not a function` from every informer, forever.
 */
import { checkOptions, hasMethods, isKindList, isMs, isNonEmptyString, isObject } from '@kubeloop/client/internal';
import type { OptionCheck } from '@kubeloop/client/internal';
import { ManagerError } from './errors.js';
import type { ClusterOptions } from './cluster.js';
import type { ManagerOptions } from './options.js';
import type { ControllerOptions } from './controller/controller.js';

const isBoolean = (v: unknown): boolean => typeof v === 'boolean';

/** The options createCluster and createManager share. */
const CLUSTER_CHECKS: readonly OptionCheck[] = [
  ['kubeConfig', isObject, 'a RestConfig (loadKubeConfig()) or a @kubernetes/client-node KubeConfig'],
  ['transport', hasMethods('request', 'stream'), 'a Transport (createTransport(kubeConfig, options), or a fake API server\'s transport); rate limits and timeouts such as { qps } go in transportOptions'],
  ['transportOptions', isObject, 'an object of transport tuning ({ qps, burst, timeoutMs, ... })'],
  ['scheme', hasMethods('has', 'extend'), 'a Scheme (builtinScheme, or builtinScheme.extend(MyKind))'],
  ['fieldOwner', (v) => isNonEmptyString(v) && (v as string).length <= 128, 'a non-empty string of at most 128 characters (the field manager of writes)'],
  [
    'namespaces',
    (v) => (Array.isArray(v) && v.every(isNonEmptyString)) || (isObject(v) && !Array.isArray(v) && Object.values(v as object).every(isObject)),
    "an array of namespace names (['team-a']) or a map of names to settings ({ 'team-a': { labelSelector: 'app=web' } })",
  ],
  ['cache', isObject, 'an object of informer-cache options ({ byKind, defaultLabelSelector, startInformersOnRead, ... })'],
  ['uncached', isKindList, 'an array of kinds (descriptors such as Secret, or { apiVersion, kind })'],
  [
    'readYourWrites',
    (v) => v === false || (isObject(v) && ((v as { timeoutMs?: unknown }).timeoutMs === undefined || isMs((v as { timeoutMs?: unknown }).timeoutMs))),
    'false, or { timeoutMs?: number of ms >= 0, onRead? }',
  ],
  ['logger', hasMethods('info', 'warn', 'error', 'child'), 'a pino Logger (createLogger(...))'],
  ['registry', hasMethods('getSingleMetric', 'registerMetric', 'metrics'), "a prom-client Registry (new Registry())"],
  ['eventInstance', isNonEmptyString, 'a non-empty string'],
  ['eventRecorder', isObject, 'an object of event-recorder tuning'],
];

/** Options only createManager has. */
const MANAGER_CHECKS: readonly OptionCheck[] = [
  ['cluster', (v) => isObject(v) && isObject((v as { client?: unknown }).client) && hasMethods('stop')(v), 'a Cluster (createCluster(...))'],
  ['metricsBindAddress', (v) => typeof v === 'string', "a string: 'host:port', ':port', or '0' for none"],
  ['healthProbeBindAddress', (v) => typeof v === 'string', "a string: 'host:port', ':port', or '0' for none"],
  ['inspect', (v) => typeof v === 'boolean', 'true or false'],
  ['secureMetrics', isObject, 'an object ({ certificates?, authorization?, minTlsVersion? })'],
  ['leaderElection', (v) => isObject(v) && isNonEmptyString((v as { name?: unknown }).name), "an object with a name (the Lease's): { name: 'my-operator' }"],
  ['leadership', hasMethods('run'), 'a LeadershipGate (leaseElection(...), alwaysLeader())'],
  ['warmStandby', isBoolean, 'true or false'],
  ['webhook', isObject, 'an object of webhook-server options'],
  ['gracefulShutdownTimeoutMs', isMs, 'a number of ms >= 0'],
  ['leaseLossExitTimeoutMs', isMs, 'a number of ms >= 0'],
  ['container', hasMethods('resolve', 'createChildContainer'), 'a tsyringe DependencyContainer'],
  ['defaultMetrics', isBoolean, 'true or false'],
  ['releaseIdleMemory', isBoolean, 'true or false'],
  ['informerStaleAfterMs', isMs, 'a number of ms >= 0'],
  ['crdPollIntervalMs', (v) => isMs(v) && (v as number) > 0, 'a number of ms > 0'],
  ['syncPeriodMs', isMs, 'a number of ms >= 0'],
  ['profiling', (v) => isBoolean(v) || isObject(v), 'true, false or an object of profiling options ({ maxDurationMs?, maxHeapSnapshotBytes? })'],
  ['tracing', (v) => isBoolean(v) || isObject(v), 'true, false or an object of tracing options ({ endpoint?, sampleRatio?, serviceName?, exportDelayMs? })'],
];

function run(fn: string, options: unknown, checks: readonly OptionCheck[]): void {
  checkOptions(fn, options, checks, (message) => new ManagerError('InvalidOptions', message), true);
}

/**
 * Check `createCluster`'s options.
 *
 * @throws ManagerError `InvalidOptions` naming the first wrong option and what it expects.
 */
export function validateClusterOptions(options: ClusterOptions | undefined): void {
  run('createCluster', options, [...CLUSTER_CHECKS, ['name', (v) => isNonEmptyString(v) && (v as string).length <= 253, "a non-empty string of at most 253 characters (the cluster's name in a fleet)"]]);
}

/**
 * Check `createManager`'s options.
 *
 * @throws ManagerError `InvalidOptions` naming the first wrong option and what it expects.
 */
export function validateManagerOptions(options: ManagerOptions | undefined): void {
  run('createManager', options, [...CLUSTER_CHECKS, ...MANAGER_CHECKS]);
}

/** Node's longest timer, in ms: a longer reconcile timeout would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Options of one controller (`withOptions`, `options` of a definition) checked here; `maxConcurrentReconciles` by the controller. */
const CONTROLLER_CHECKS: readonly OptionCheck[] = [
  ['reconcileTimeoutMs', (v) => isMs(v) && (v as number) <= MAX_TIMER_MS, `a number of ms >= 0 and at most ${MAX_TIMER_MS} (0: no timeout)`],
  ['initialListPriority', (v) => typeof v === 'number' && Number.isFinite(v), 'a finite number (LOW_PRIORITY, -100, by default; 0: in line with changes)'],
  ['queueMaxWaitMs', (v) => typeof v === 'number' && v > 0, 'a number of ms > 0 (Infinity: no aging)'],
  ['syncPeriodMs', isMs, 'a number of ms >= 0 (0: no periodic resync)'],
];

/**
 * Check a controller's options when it is registered.
 *
 * @throws ManagerError `InvalidOptions` naming the controller, the first wrong option and what it expects.
 */
export function validateControllerOptions(name: string, options: ControllerOptions): void {
  run(`controller ${name}`, options, CONTROLLER_CHECKS);
}
