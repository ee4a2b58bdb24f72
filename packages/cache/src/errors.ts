/**
 * The error family of `@kubeloop/cache`: one class with a discriminated
 * `reason`, the cause kept, and a guard that works across two copies of the
 * package. Reads through the cache's `Reader` methods (`get`, `list`) keep
 * the client's `ClientError` contract (so `isNotFound` works on them); what
 * the reflectors and informers report is a `CacheError`, or the
 * `ClientError` the API answered with.
 */

/** Why a cache operation failed. */
export type CacheErrorReason =
  /** A list page or a watch went past its deadline (headers, body, or time between watch events). */
  | 'Timeout'
  /** The server answered a list page with a continue token it had already sent: the list would never end. */
  | 'ContinueLoop'
  /** A list that did not end within `maxListPages` pages or `maxListObjects` objects (a new continue token on every page). */
  | 'ListTooLarge'
  /** An object without a usable key (no name, a name with a `/`, a namespace or resourceVersion that is not a string); left out of the cache. */
  | 'InvalidObject'
  /** An answer that is not the shape the API promises (a list page without an items array). */
  | 'InvalidResponse'
  /** A watch closed at once with nothing in it (a server or proxy that ends every watch immediately). */
  | 'WatchClosed'
  /** An object could not be prepared for the cache (the transform or an index function threw, or freezing failed). */
  | 'Prepare'
  /** Options that cannot work (per-kind namespaces on a cluster-scoped kind, a negative period). */
  | 'InvalidOptions'
  /** An unknown index, or an index name already taken. */
  | 'InvalidIndex'
  /** The informer was stopped. */
  | 'Stopped'
  /** The caller's AbortSignal fired. */
  | 'Aborted';

const BRAND = Symbol.for('@kubeloop/cache/CacheError');

/**
 * An error raised by a reflector, an informer or the informer cache.
 *
 * @example
 * ```ts
 * const info = cache.informers().find((i) => i.kind === 'HardDisk.crd-demo.io/v1');
 * if (isCacheError(info?.lastError) && info.lastError.reason === 'Timeout') console.warn('the API server stalled a list');
 * ```
 */
export class CacheError extends Error {
  override readonly name = 'CacheError';
  readonly reason: CacheErrorReason;
  readonly [BRAND] = true;

  constructor(reason: CacheErrorReason, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = reason;
  }
}

/**
 * True for any {@link CacheError}, even one from another copy of this package.
 *
 * @example
 * ```ts
 * if (isCacheError(err) && err.reason === 'Stopped') return;
 * ```
 */
export function isCacheError(value: unknown): value is CacheError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}
