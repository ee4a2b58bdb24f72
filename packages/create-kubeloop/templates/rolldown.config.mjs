/**
 * `pnpm build`'s second step: tsc's dist/main.js and everything it imports bundled into one ES module,
 * dist/operator.js, which `pnpm start` and the Dockerfile run. Node keeps a record and the source of
 * every module it loads, and main's imports are 600-odd modules: as one, about 6 MiB less RSS.
 * `pnpm run dev` runs tsc's dist/main.js, with no bundle step between a save and the restart.
 *
 * pino-pretty, which main loads only on a terminal, stays outside and comes from node_modules. What
 * @kubeloop/client loads only for some kubeconfigs is not in dist/operator.js either:
 * @kubernetes/client-node (auth-provider users) goes into a chunk of its own, read only then, and
 * js-yaml is found from @kubeloop/client in node_modules when a kubeconfig file is read.
 */
import { defineConfig } from 'rolldown';

export default defineConfig({
  input: 'dist/main.js',
  platform: 'node',
  external: ['pino-pretty'],
  logLevel: 'warn',
  output: {
    dir: 'dist',
    format: 'esm',
    entryFileNames: 'operator.js',
    chunkFileNames: 'operator-[name].js',
    // V8 keeps each script's source in memory, two bytes a character once one character is past
    // Latin-1: comments and whitespace out, the rest escaped to ASCII. Names are kept, so stack
    // traces and logs read as the source does; `node --enable-source-maps` adds file positions.
    comments: false,
    sourcemap: true,
    minify: { compress: false, mangle: false, codegen: { removeWhitespace: true, asciiOnly: true } },
  },
});
