/**
 * `eventually` and `consistently`: poll a condition until it holds, or check
 * that it keeps holding, with failure messages that show the last value the
 * condition produced (or the last error it threw), not just "timed out".
 */
import { inspect } from 'node:util';
import { TestingError } from './errors.js';

/**
 * A condition: passes when it returns anything but `false` (or a promise of
 * it) without throwing, so assertion libraries' `expect(...)` work inside.
 */
export type Condition<T> = () => T | Promise<T>;

/**
 * Options for {@link eventually}.
 *
 * @example
 * ```ts
 * await eventually(() => cache.get(ConfigMap, key), { timeoutMs: 5_000, intervalMs: 20, message: 'config map in the cache' } satisfies EventuallyOptions);
 * ```
 */
export interface EventuallyOptions {
  /** Give up after this long. Default: 10 000 ms. */
  readonly timeoutMs?: number;
  /** Wait this long between attempts. Default: 50 ms. */
  readonly intervalMs?: number;
  /** Says what was awaited, in the failure message. Default: none. */
  readonly message?: string;
  /** Stops waiting (rejects with the signal's reason). Default: none. */
  readonly signal?: AbortSignal;
}

/**
 * Options for {@link consistently}.
 *
 * @example
 * ```ts
 * await consistently(() => fake.requests.filter((r) => r.verb === 'update').length === 0, { durationMs: 500 } satisfies ConsistentlyOptions);
 * ```
 */
export interface ConsistentlyOptions {
  /** Keep checking this long. Default: 1 000 ms. */
  readonly durationMs?: number;
  /** Wait this long between checks. Default: 50 ms. */
  readonly intervalMs?: number;
  /** Says what should hold, in the failure message. Default: none. */
  readonly message?: string;
  /** Stops checking (rejects with the signal's reason). Default: none. */
  readonly signal?: AbortSignal;
}

type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly value: unknown; readonly error: unknown };

async function attempt<T>(condition: Condition<T>): Promise<Outcome<T>> {
  try {
    const value = await condition();
    return value === false ? { ok: false, value, error: undefined } : { ok: true, value };
  } catch (error) {
    return { ok: false, value: undefined, error };
  }
}

function show(value: unknown): string {
  return inspect(value, { depth: 6, breakLength: 120, maxArrayLength: 20, maxStringLength: 2000 });
}

function describeOutcome(outcome: Outcome<unknown>): string {
  if (outcome.ok) return `value: ${show(outcome.value)}`;
  if (outcome.error !== undefined) {
    const e = outcome.error;
    return `error: ${e instanceof Error ? `${e.name}: ${e.message}` : show(e)}`;
  }
  return `value: ${show(outcome.value)}`;
}

function checkDuration(what: string, ms: number): void {
  if (!Number.isFinite(ms) || ms < 0) throw new TestingError('InvalidArgument', `${what} must be a non-negative number of milliseconds, got ${ms}`);
}

function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Run `condition` until it passes, and return its value. Rejects with
 * TestingError `ConditionNotMet` after `timeoutMs`, whose message shows the
 * last value or error, and whose `lastValue` holds it.
 *
 * @example
 * ```ts
 * const cm = await eventually(async () => {
 *   const got = await client.get(ConfigMap, { namespace, name: 'owned' });
 *   expect(got.data?.['size']).toBe('10Gi');
 *   return got;
 * });
 * ```
 */
export async function eventually<T>(condition: Condition<T>, options: EventuallyOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 50;
  checkDuration('eventually: timeoutMs', timeoutMs);
  checkDuration('eventually: intervalMs', intervalMs);
  const deadline = performance.now() + timeoutMs;
  let attempts = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    attempts++;
    const outcome = await attempt(condition);
    if (outcome.ok) return outcome.value;
    if (performance.now() >= deadline) {
      const what = options.message ? ` (${options.message})` : '';
      throw new TestingError('ConditionNotMet', `eventually${what}: the condition did not pass within ${timeoutMs} ms (${attempts} attempts); last ${describeOutcome(outcome)}`, {
        lastValue: outcome.error ?? outcome.value,
        attempts,
        ...(outcome.error !== undefined ? { cause: outcome.error } : {}),
      });
    }
    await wait(Math.min(intervalMs, Math.max(0, deadline - performance.now())), options.signal);
  }
}

/**
 * Check that `condition` passes every `intervalMs` for `durationMs`.
 * Rejects with TestingError `ConditionNotMet` at the first check that
 * fails, showing the value or error it saw.
 *
 * @example
 * ```ts
 * // the reconciler must not touch an object it does not own
 * await consistently(async () => (await client.get(ConfigMap, key)).metadata?.resourceVersion === before, { durationMs: 500 });
 * ```
 */
export async function consistently<T>(condition: Condition<T>, options: ConsistentlyOptions = {}): Promise<T> {
  const durationMs = options.durationMs ?? 1_000;
  const intervalMs = options.intervalMs ?? 50;
  checkDuration('consistently: durationMs', durationMs);
  checkDuration('consistently: intervalMs', intervalMs);
  const end = performance.now() + durationMs;
  let attempts = 0;
  for (;;) {
    options.signal?.throwIfAborted();
    attempts++;
    const outcome = await attempt(condition);
    if (!outcome.ok) {
      const what = options.message ? ` (${options.message})` : '';
      throw new TestingError('ConditionNotMet', `consistently${what}: the condition failed at check ${attempts}; ${describeOutcome(outcome)}`, {
        lastValue: outcome.error ?? outcome.value,
        attempts,
        ...(outcome.error !== undefined ? { cause: outcome.error } : {}),
      });
    }
    if (performance.now() >= end) return outcome.value;
    await wait(Math.min(intervalMs, Math.max(0, end - performance.now())), options.signal);
  }
}
