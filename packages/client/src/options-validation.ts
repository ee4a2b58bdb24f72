/**
 * `createClient`'s options checked before anything is built: a JavaScript
 * caller (or an older snippet) passing the wrong shape gets a `ClientError`
 * `InvalidOptions` that names the option and says what it expects, instead
 * of a `TypeError` from deep inside, or, worse, a client that starts and
 * fails on every request.
 */
import { ClientError } from './errors.js';
import type { ClientOptions } from './client.js';

/** What a value is, for a message ("a number", "null", "an object with keys qps, burst"). */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') {
    const keys = Object.keys(value).slice(0, 5);
    return keys.length > 0 ? `an object with keys ${keys.join(', ')}` : 'an empty object';
  }
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `${typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`}${typeof value === 'number' || typeof value === 'boolean' ? ` (${String(value)})` : ''}`;
}

/** Whether `value` is an object whose named members are all functions. */
export function hasMethods(value: unknown, ...names: string[]): boolean {
  return typeof value === 'object' && value !== null && names.every((n) => typeof (value as Record<string, unknown>)[n] === 'function');
}

/** Whether `value` is an array of `{ apiVersion, kind }` strings. */
export function isKindList(value: unknown): boolean {
  return Array.isArray(value) && value.every((k) => typeof k === 'object' && k !== null && typeof (k as { apiVersion?: unknown }).apiVersion === 'string' && typeof (k as { kind?: unknown }).kind === 'string');
}

type Check = readonly [option: string, ok: (value: unknown) => boolean, expects: string];

const isObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The checks of `ClientOptions`; an absent (undefined) option is never checked. */
const CHECKS: readonly Check[] = [
  ['kubeConfig', isObject, 'a RestConfig (loadKubeConfig()) or a @kubernetes/client-node KubeConfig'],
  ['transport', (v) => hasMethods(v, 'request', 'stream'), 'a Transport (createTransport(kubeConfig, options)); rate limits and timeouts such as { qps } go in transportOptions'],
  ['transportOptions', isObject, 'an object of transport tuning ({ qps, burst, timeoutMs, ... })'],
  ['scheme', (v) => hasMethods(v, 'has', 'extend'), 'a Scheme (builtinScheme, or builtinScheme.extend(MyKind))'],
  ['mapper', (v) => hasMethods(v, 'restMapping'), 'a RESTMapper (createDynamicRESTMapper(...))'],
  ['fieldOwner', (v) => typeof v === 'string' && v.length > 0 && v.length <= 128, 'a non-empty string of at most 128 characters (the field manager of writes)'],
  ['cache', (v) => hasMethods(v, 'get', 'list'), 'a Reader with get and list (createInformerCache(...) of @kubeloop/cache)'],
  ['uncached', isKindList, 'an array of kinds (descriptors such as Secret, or { apiVersion, kind })'],
  ['cacheUnstructured', (v) => typeof v === 'boolean', 'true or false'],
  [
    'readYourWrites',
    (v) => v === false || (isObject(v) && ((v as { onRead?: unknown }).onRead === undefined || typeof (v as { onRead?: unknown }).onRead === 'function')),
    'false, or { timeoutMs?, onRead? }',
  ],
];

/**
 * Check `createClient`'s options.
 *
 * @throws ClientError `InvalidOptions` naming the first wrong option.
 */
export function validateClientOptions(options: ClientOptions): void {
  if (!isObject(options)) throw new ClientError('InvalidOptions', `createClient takes one options object; got ${describeValue(options)}`);
  const record = options as Readonly<Record<string, unknown>>;
  for (const [option, ok, expects] of CHECKS) {
    const value = record[option];
    if (value !== undefined && !ok(value)) throw new ClientError('InvalidOptions', `createClient: ${option} must be ${expects}; got ${describeValue(value)}`);
  }
}
