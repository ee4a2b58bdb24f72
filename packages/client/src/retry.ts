/**
 * Retrying a read-modify-write: `retryOnConflict` runs a function again when
 * the API server answers 409 Conflict (someone else changed the object),
 * with client-go's `retry.DefaultRetry` backoff; `retryOn` does the same for
 * any error a predicate picks.
 */
import { sleep } from '@kubeloop/workqueue';
import { ClientError, isConflict } from './errors.js';

/**
 * How often and how far apart to retry (client-go's `wait.Backoff`). The
 * defaults are client-go's `retry.DefaultRetry`.
 *
 * @example
 * ```ts
 * // client-go's retry.DefaultBackoff: 4 attempts, 10 ms then ×5 each time
 * const options: RetryOptions = { steps: 4, durationMs: 10, factor: 5, jitter: 0.1, signal };
 * await retryOnConflict(update, options);
 * ```
 */
export interface RetryOptions {
  /** Attempts in all, the first included. Default: 5. */
  readonly steps?: number;
  /** Wait before the second attempt, ms. Default: 10. */
  readonly durationMs?: number;
  /** Each wait is the previous one times this. Default: 1.0 (constant). */
  readonly factor?: number;
  /** Each wait is lengthened by a random amount up to `jitter` times itself. Default: 0.1. */
  readonly jitter?: number;
  /** Upper bound of the wait before jitter, ms. Default: none. */
  readonly capMs?: number;
  /** Aborting stops retrying: a pending wait ends and the call rejects with ClientError `Aborted`. Default: none. */
  readonly signal?: AbortSignal;
}

/**
 * client-go's `retry.DefaultRetry`: 5 attempts, 10 ms apart, plus up to 10 % jitter.
 *
 * @example
 * ```ts
 * await retryOnConflict(update, { ...DEFAULT_RETRY, steps: 10 });
 * ```
 */
export const DEFAULT_RETRY = { steps: 5, durationMs: 10, factor: 1.0, jitter: 0.1 } as const satisfies RetryOptions;

/**
 * The function retried: gets the attempt number, 1 for the first.
 *
 * @example
 * ```ts
 * const fn: RetryFn<void> = async (attempt) => {
 *   log.debug({ attempt }, 'updating settings');
 *   await client.update({ ...(await modify(await client.get(ConfigMap, key))), apiVersion: 'v1', kind: 'ConfigMap' });
 * };
 * ```
 */
export type RetryFn<R> = (attempt: number) => R | Promise<R>;

function check(name: string, value: number, min: number, integer = false): number {
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    throw new ClientError('InvalidRequest', `retry: ${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got ${value}`);
  }
  return value;
}

/**
 * Run `fn`; while it fails with an error `predicate` accepts, wait and run it
 * again, up to `steps` attempts. Success and errors the predicate rejects
 * return at once; when the attempts run out, the last error is rethrown. The
 * waits follow client-go's `wait.Backoff`: `durationMs`, multiplied by
 * `factor` after each wait (capped at `capMs`), each lengthened by up to
 * `jitter` times itself.
 *
 * @example
 * ```ts
 * const pod = await retryOn(isTooManyRequests, () => client.get(Pod, { namespace, name }), {
 *   steps: 4, durationMs: 100, factor: 2,
 * });
 * ```
 */
export async function retryOn<R>(predicate: (err: unknown) => boolean, fn: RetryFn<R>, options: RetryOptions = {}): Promise<R> {
  const steps = check('steps', options.steps ?? DEFAULT_RETRY.steps, 1, true);
  let duration = check('durationMs', options.durationMs ?? DEFAULT_RETRY.durationMs, 0);
  const factor = check('factor', options.factor ?? DEFAULT_RETRY.factor, 0);
  const jitter = check('jitter', options.jitter ?? DEFAULT_RETRY.jitter, 0);
  const cap = options.capMs === undefined ? Infinity : check('capMs', options.capMs, 0);
  const signal = options.signal;
  duration = Math.min(duration, cap);
  for (let attempt = 1; ; attempt++) {
    if (signal?.aborted) throw new ClientError('Aborted', 'retry: aborted', { cause: signal.reason });
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= steps || !predicate(err)) throw err;
    }
    const wait = jitter > 0 ? duration + Math.random() * jitter * duration : duration;
    if (!(await sleep(wait, signal))) throw new ClientError('Aborted', 'retry: aborted while waiting to retry', { cause: signal?.reason });
    if (factor > 0) duration = Math.min(duration * factor, cap);
  }
}

/**
 * Run a read-modify-write `fn` and run it again when it fails with 409
 * Conflict (a stale resourceVersion: someone changed the object since it was
 * read), with client-go's `retry.DefaultRetry` (5 attempts, 10 ms, jitter
 * 0.1) unless `options` says otherwise. `fn` must re-read the object each
 * time. Other errors and success return at once; after the last attempt the
 * last Conflict is rethrown.
 *
 * @example
 * ```ts
 * await retryOnConflict(async () => {
 *   const cm = await client.get(ConfigMap, { namespace: 'default', name: 'settings' });
 *   cm.data = { ...cm.data, mode: 'on' };
 *   return client.update(cm);
 * });
 * ```
 */
export function retryOnConflict<R>(fn: RetryFn<R>, options: RetryOptions = {}): Promise<R> {
  return retryOn(isConflict, fn, options);
}
