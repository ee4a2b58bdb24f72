/**
 * Synchronous, on-demand loading of this package's own dependencies that most processes never
 * need (js-yaml for kubeconfig files, hpagent for a proxy-url).
 */
import { createRequire } from 'node:module';

const fromHere = createRequire(import.meta.url);
let fromClient: NodeJS.Require | undefined;

/**
 * `require(name)` of a dependency of @kubeloop/client, found from this file. Bundled into a
 * project's one module (a scaffold's dist/operator.js), this file's URL is the bundle's, where a
 * strict node_modules (pnpm's) has none of the client's dependencies: then it is found from
 * @kubeloop/client as the project has it installed.
 */
export function requireOwn(name: string): unknown {
  try {
    return fromHere(name);
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'MODULE_NOT_FOUND') throw err;
    try {
      fromClient ??= createRequire(import.meta.resolve('@kubeloop/client'));
    } catch {
      throw err;
    }
    return fromClient(name);
  }
}
