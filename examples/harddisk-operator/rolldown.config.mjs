/**
 * The operator as one ES module (dist/operator.js, what scripts/dev.sh runs), bundled from tsc's
 * output by rolldown: Node keeps a module record, its source and its loader's bookkeeping for every
 * module it loads, and the operator's graph is over 900 modules (typebox's 373 cost 5.4 MiB of
 * anonymous memory loaded one by one, 0.9 MiB as one module); one module for the whole operator is
 * about 4 MiB less RSS (docs/benchmarks.md, Memory). What main loads
 * only on some paths stays outside, loaded from node_modules as before: envtest (--envtest) and
 * @kubernetes/client-node (the client's auth-provider fallback).
 */
import { defineConfig } from 'rolldown';

export default defineConfig({
  input: 'dist/main.js',
  platform: 'node',
  external: ['@kubeloop/envtest', '@kubernetes/client-node'],
  logLevel: 'warn',
  output: {
    dir: 'dist',
    format: 'esm',
    entryFileNames: 'operator.js',
    chunkFileNames: 'operator-[name].js',
    // V8 keeps every script's source on the heap (functions compile lazily from it), two bytes a
    // character if one character is outside Latin-1 (a `…` or `→` in a comment or string is enough).
    // Comments and whitespace out, the rest escaped to ASCII: the source held is 0.7 MB instead of
    // 2.1 MB (1.05 M two-byte characters). Names are neither mangled nor compressed, so stack traces
    // and logged class names read as in the source; for file positions too, run node with
    // --enable-source-maps (dist/operator.js.map, read only then).
    comments: false,
    sourcemap: true,
    minify: { compress: false, mangle: false, codegen: { removeWhitespace: true, asciiOnly: true } },
  },
});
