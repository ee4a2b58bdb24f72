/**
 * The options of `createManager` and `createCluster`, checked before
 * anything is built. A wrong shape (an options object where a `Transport`
 * is expected, a string where a number is) is a `ManagerError`
 * `InvalidOptions` naming the option and what it expects, at the line that
 * wrote it, instead of a manager that starts and then logs
 * `transport.request is not a function` from every informer, forever.
 */
import { ManagerError } from './errors.js';
import type { ClusterOptions } from './cluster.js';
import type { ManagerOptions } from './options.js';

/** What a value is, for a message. */
function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') {
    const keys = Object.keys(value).slice(0, 5);
    return keys.length > 0 ? `an object with keys ${keys.join(', ')}` : 'an empty object';
  }
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return typeof value === 'number' || typeof value === 'boolean' ? `a ${typeof value} (${String(value)})` : `a ${typeof value}`;
}

const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);
const methods =
  (...names: string[]) =>
  (v: unknown): boolean =>
    isObject(v) && names.every((n) => typeof (v as Record<string, unknown>)[n] === 'function');
const nonEmptyString = (v: unknown): boolean => typeof v === 'string' && v.length > 0;
const ms = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isBoolean = (v: unknown): boolean => typeof v === 'boolean';
const kindList = (v: unknown): boolean =>
  Array.isArray(v) && v.every((k) => isObject(k) && typeof (k as { apiVersion?: unknown }).apiVersion === 'string' && typeof (k as { kind?: unknown }).kind === 'string');

/** One option: its name, the test of a value, and what it expects, said to the user. */
type Check = readonly [option: string, ok: (value: unknown) => boolean, expects: string];

/** The options createCluster and createManager share. */
const CLUSTER_CHECKS: readonly Check[] = [
  ['kubeConfig', isObject, 'a RestConfig (loadKubeConfig()) or a @kubernetes/client-node KubeConfig'],
  ['transport', methods('request', 'stream'), 'a Transport (createTransport(kubeConfig, options), or a fake API server\'s transport); rate limits and timeouts such as { qps } go in transportOptions'],
  ['transportOptions', isObject, 'an object of transport tuning ({ qps, burst, timeoutMs, ... })'],
  ['scheme', methods('has', 'extend'), 'a Scheme (builtinScheme, or builtinScheme.extend(MyKind))'],
  ['fieldOwner', (v) => nonEmptyString(v) && (v as string).length <= 128, 'a non-empty string of at most 128 characters (the field manager of writes)'],
  ['namespaces', (v) => Array.isArray(v) && v.every(nonEmptyString), "an array of namespace names (['team-a'])"],
  ['cache', isObject, 'an object of informer-cache options ({ byKind, defaultLabelSelector, startInformersOnRead, ... })'],
  ['uncached', kindList, 'an array of kinds (descriptors such as Secret, or { apiVersion, kind })'],
  [
    'readYourWrites',
    (v) => v === false || (isObject(v) && ((v as { timeoutMs?: unknown }).timeoutMs === undefined || ms((v as { timeoutMs?: unknown }).timeoutMs))),
    'false, or { timeoutMs?: number of ms >= 0, onRead? }',
  ],
  ['logger', methods('info', 'warn', 'error', 'child'), 'a pino Logger (createLogger(...))'],
  ['registry', methods('getSingleMetric', 'registerMetric', 'metrics'), "a prom-client Registry (new Registry())"],
  ['eventInstance', nonEmptyString, 'a non-empty string'],
  ['eventRecorder', isObject, 'an object of event-recorder tuning'],
];

/** Options only createManager has. */
const MANAGER_CHECKS: readonly Check[] = [
  ['cluster', (v) => isObject(v) && isObject((v as { client?: unknown }).client) && methods('stop')(v), 'a Cluster (createCluster(...))'],
  ['metricsBindAddress', (v) => typeof v === 'string', "a string: 'host:port', ':port', or '0' for none"],
  ['healthProbeBindAddress', (v) => typeof v === 'string', "a string: 'host:port', ':port', or '0' for none"],
  ['secureMetrics', isObject, 'an object ({ certificates?, authorization?, minTlsVersion? })'],
  ['leaderElection', (v) => isObject(v) && nonEmptyString((v as { name?: unknown }).name), "an object with a name (the Lease's): { name: 'my-operator' }"],
  ['leadership', methods('run'), 'a LeadershipGate (leaseElection(...), alwaysLeader())'],
  ['warmStandby', isBoolean, 'true or false'],
  ['webhook', isObject, 'an object of webhook-server options'],
  ['gracefulShutdownTimeoutMs', ms, 'a number of ms >= 0'],
  ['leaseLossExitTimeoutMs', ms, 'a number of ms >= 0'],
  ['container', methods('resolve', 'createChildContainer'), 'a tsyringe DependencyContainer'],
  ['defaultMetrics', isBoolean, 'true or false'],
  ['informerStaleAfterMs', ms, 'a number of ms >= 0'],
  ['syncPeriodMs', ms, 'a number of ms >= 0'],
];

function run(fn: string, options: unknown, checks: readonly Check[]): void {
  if (options === undefined) return;
  if (!isObject(options)) throw new ManagerError('InvalidOptions', `${fn} takes one options object; got ${describeValue(options)}`);
  const record = options as Readonly<Record<string, unknown>>;
  for (const [option, ok, expects] of checks) {
    const value = record[option];
    if (value !== undefined && !ok(value)) throw new ManagerError('InvalidOptions', `${fn}: ${option} must be ${expects}; got ${describeValue(value)}`);
  }
}

/**
 * Check `createCluster`'s options.
 *
 * @throws ManagerError `InvalidOptions` naming the first wrong option and what it expects.
 */
export function validateClusterOptions(options: ClusterOptions | undefined): void {
  run('createCluster', options, CLUSTER_CHECKS);
}

/**
 * Check `createManager`'s options.
 *
 * @throws ManagerError `InvalidOptions` naming the first wrong option and what it expects.
 */
export function validateManagerOptions(options: ManagerOptions | undefined): void {
  run('createManager', options, [...CLUSTER_CHECKS, ...MANAGER_CHECKS]);
}
