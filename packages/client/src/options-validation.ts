/**
 * `createClient`'s options checked before anything is built: a JavaScript
 * caller (or an older snippet) passing the wrong shape gets a `ClientError`
 * `InvalidOptions` that names the option and says what it expects, instead
 * of a `TypeError` from deep inside, or, worse, a client that starts and
 * fails on every request.
 */
import { ClientError } from './errors.js';
import type { ClientOptions } from './client.js';

/** What a value is, for a message ("a number (0)", "null", "an object with keys qps, burst"). */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') {
    const keys = Object.keys(value).slice(0, 5);
    return keys.length > 0 ? `an object with keys ${keys.join(', ')}` : 'an empty object';
  }
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (value === undefined) return 'undefined';
  return typeof value === 'number' || typeof value === 'boolean' ? `a ${typeof value} (${String(value)})` : `a ${typeof value}`;
}

/** A plain object (not null, not an array). */
export const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);
/** A predicate: an object whose named members are all functions (a Transport has `request` and `stream`). */
export const hasMethods =
  (...names: string[]) =>
  (v: unknown): boolean =>
    isObject(v) && names.every((n) => typeof (v as Record<string, unknown>)[n] === 'function');
/** `{ apiVersion, kind }` with both strings (a descriptor or a TypeRef). */
export const isKindRef = (k: unknown): boolean => isObject(k) && typeof (k as { apiVersion?: unknown }).apiVersion === 'string' && typeof (k as { kind?: unknown }).kind === 'string';
/** An array of kind references. */
export const isKindList = (v: unknown): boolean => Array.isArray(v) && v.every(isKindRef);
/** A duration in milliseconds: a finite number >= 0. */
export const isMs = (v: unknown): boolean => typeof v === 'number' && Number.isFinite(v) && v >= 0;
/** A non-empty string. */
export const isNonEmptyString = (v: unknown): boolean => typeof v === 'string' && v.length > 0;

/** One option: its name, the test of a value, and what it expects, said to the user. */
export type OptionCheck = readonly [option: string, ok: (value: unknown) => boolean, expects: string];

/**
 * Check an options object against its table, before anything is built: the
 * one mechanism behind createClient's, createInformerCache's, createCluster's
 * and createManager's checks (each package raises its own error family
 * through `fail`). An absent (undefined) option is never checked; `options`
 * itself may be undefined only when `optional`.
 *
 * @example
 * ```ts
 * checkOptions('createThing', { timeoutMs: -1 }, [['timeoutMs', isMs, 'a number of ms >= 0']], (m) => new Error(m));
 * // throws: "createThing: timeoutMs must be a number of ms >= 0; got a number (-1)"
 * ```
 */
export function checkOptions(fn: string, options: unknown, checks: readonly OptionCheck[], fail: (message: string) => Error, optional = false): void {
  if (options === undefined && optional) return;
  if (!isObject(options)) throw fail(`${fn} takes one options object; got ${describeValue(options)}`);
  const record = options as Readonly<Record<string, unknown>>;
  for (const [option, ok, expects] of checks) {
    const value = record[option];
    if (value !== undefined && !ok(value)) throw fail(`${fn}: ${option} must be ${expects}; got ${describeValue(value)}`);
  }
}

/** The checks of `ClientOptions`; an absent (undefined) option is never checked. */
const CHECKS: readonly OptionCheck[] = [
  ['kubeConfig', isObject, 'a RestConfig (loadKubeConfig()) or a @kubernetes/client-node KubeConfig'],
  ['transport', hasMethods('request', 'stream'), 'a Transport (createTransport(kubeConfig, options)); rate limits and timeouts such as { qps } go in transportOptions'],
  ['transportOptions', isObject, 'an object of transport tuning ({ qps, burst, timeoutMs, ... })'],
  ['scheme', hasMethods('has', 'extend'), 'a Scheme (builtinScheme, or builtinScheme.extend(MyKind))'],
  ['mapper', hasMethods('restMapping'), 'a RESTMapper (createDynamicRESTMapper(...))'],
  ['fieldOwner', (v) => typeof v === 'string' && v.length > 0 && v.length <= 128, 'a non-empty string of at most 128 characters (the field manager of writes)'],
  ['cache', hasMethods('get', 'list'), 'a Reader with get and list (createInformerCache(...) of @kubeloop/cache)'],
  ['uncached', isKindList, 'an array of kinds (descriptors such as Secret, or { apiVersion, kind })'],
  ['cacheUnstructured', (v) => typeof v === 'boolean', 'true or false'],
  [
    'readYourWrites',
    (v) => v === false || (isObject(v) && ((v as { onRead?: unknown }).onRead === undefined || typeof (v as { onRead?: unknown }).onRead === 'function')),
    'false, or { timeoutMs?, onRead? }',
  ],
  ['onWrite', (v) => typeof v === 'function', 'a function (kind, key, answer) => void'],
];

/**
 * Check `createClient`'s options.
 *
 * @throws ClientError `InvalidOptions` naming the first wrong option.
 */
export function validateClientOptions(options: ClientOptions): void {
  checkOptions('createClient', options, CHECKS, (message) => new ClientError('InvalidOptions', message));
}
