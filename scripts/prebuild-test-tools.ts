/**
 * Build the Go tools some tests use (helm for the chart test, Jaeger for the
 * tracing tests) into their caches when absent, one after the other, so that
 * scripts/test.sh can start this in the background before typecheck and lint
 * and a cold machine's builds overlap the checks instead of holding up one
 * test file each. A test that needs a tool still being built waits for this
 * build (test/support/tool-cache.ts). Exits 0 when both are cached.
 *
 *   node scripts/prebuild-test-tools.ts
 */
import { helmBinary } from '../test/support/helm.ts';
import { jaegerBinary } from '../test/support/jaeger.ts';

for (const [name, get] of [['helm', helmBinary], ['jaeger', jaegerBinary]] as const) {
  const started = Date.now();
  try {
    const path = await get();
    process.stderr.write(`prebuild-test-tools: ${name} at ${path} (${Math.round((Date.now() - started) / 1000)} s)\n`);
  } catch (err) {
    process.stderr.write(`prebuild-test-tools: ${name} could not be built (the tests that need it will try again and say why): ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
