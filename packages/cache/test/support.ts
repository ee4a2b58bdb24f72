/** Small helpers the cache's tests share. */

/** What `fn` throws (undefined when it returns). */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}
