/**
 * kubeloop's cache alone, for `pnpm bench:memory`: the client and an
 * informer cache holding every ConfigMap of the cluster, with the default
 * reflector options except `useWatchList` (argv: true or false), so the
 * initial sync's time and peak RSS can be compared both ways, and
 * `internStrings` (argv: true, the default, or false).
 *
 *   node support/memory-cache.ts KUBECONFIG true|false [true|false]
 *
 * Prints one JSON line once synced (`synced`), one per relist (`relisted`),
 * and its memory on SIGUSR2 (`memory`).
 */
import { createClient, loadKubeConfig } from '@kubeloop/client';
import { createInformerCache } from '@kubeloop/cache';
import { ConfigMap } from '@kubeloop/scheme';
import { getHeapSpaceStatistics } from 'node:v8';

const [kubeconfig, watchList, intern] = process.argv.slice(2);
const say = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
const cache = createInformerCache({
  client: createClient({ kubeConfig: loadKubeConfig(kubeconfig), fieldOwner: 'bench-memory' }),
  reflector: { useWatchList: watchList !== 'false' },
  internStrings: intern !== 'false',
});
const started = performance.now();
const informer = await cache.getInformer(ConfigMap);
const stats = (): { relists: number; usedWatchList: boolean; lastListMs: number } => informer.stats()[0]!;
say({ synced: performance.now() - started, objects: informer.store.size, usedWatchList: stats().usedWatchList });
let relists = 0;
setInterval(() => {
  if (stats().relists > relists) {
    relists = stats().relists;
    say({ relisted: stats().lastListMs, objects: informer.store.size, usedWatchList: stats().usedWatchList });
  }
}, 50);
process.on('SIGUSR2', () => {
  const m = process.memoryUsage();
  const newSpace = getHeapSpaceStatistics().find((sp) => sp.space_name === 'new_space')?.space_size ?? 0;
  say({ memory: { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, newSpace, external: m.external, arrayBuffers: m.arrayBuffers }, objects: informer.store.size });
});
process.on('SIGTERM', () => void cache.stop().then(() => process.exit(0)));
