/**
 * Controllers converge asynchronously: a test writes an object, then waits
 * until the cluster shows what the controller should have done.
 *
 * `eventually(check)` calls `check` until it returns without throwing (so
 * vitest's `expect` works inside it) and returns its value; past the timeout
 * it throws the last failure, so the test report shows what was last seen.
 *
 * @example
 * ```ts
 * const cm = await eventually(async () => {
 *   const cm = await client.get(ConfigMap, { namespace, name: 'home-site' });
 *   expect(cm.data?.['index.html']).toContain('Home');
 *   return cm;
 * });
 * ```
 */
export async function eventually<T>(check: () => T | Promise<T>, options: { timeoutMs?: number; intervalMs?: number } = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 100;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() >= deadline) throw err;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
