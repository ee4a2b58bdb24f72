/**
 * Run a task over a list with a bounded number in flight (the client's
 * one-by-one fallbacks, such as `deleteAllOf` on a server that ignored a
 * shard selector).
 */

/**
 * Run `task` on each item, at most `limit` at once, starting them in the
 * items' order. Resolves when every task has. On the first failure no
 * further task starts; the ones running are awaited (none is left
 * unobserved), then it rejects with that first failure.
 */
export async function forEachBounded<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { readonly error: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < items.length) {
      const item = items[next++]!;
      try {
        await task(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failure) throw failure.error;
}
