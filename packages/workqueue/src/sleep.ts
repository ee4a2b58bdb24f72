/**
 * One way to wait: a timer that an AbortSignal cuts short. It never rejects;
 * it says whether the full time passed, so a loop can stop on `false`.
 */

/**
 * Wait `ms` milliseconds, or less if `signal` aborts first.
 *
 * @returns `true` when the time passed, `false` when `signal` aborted (at once if it already had).
 *
 * @example
 * ```ts
 * while (await sleep(retryMs, signal)) {
 *   if (await tryAgain()) break;
 * }
 * ```
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve(false);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, Math.max(0, ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
