/**
 * `@kubeloop/cache` keeps local copies of cluster state: reflectors that
 * list and watch with client-go's semantics (bookmarks, re-watch without
 * relist on a normal close, relist on 410, backoff on failures, streaming
 * lists where the server offers them), indexed stores, shared informers with per-handler
 * queues and rxjs Observables, and an informer cache that implements the
 * client's `Reader`, so the client's cached-read router can serve reads from
 * it.
 *
 * @example
 * ```ts
 * import { createClient } from '@kubeloop/client';
 * import { createInformerCache } from '@kubeloop/cache';
 * import { ConfigMap } from '@kubeloop/scheme';
 *
 * const live = createClient({ kubeConfig });
 * const cache = createInformerCache({ client: live });
 * const client = createClient({ kubeConfig, cache });
 * await client.get(ConfigMap, { namespace: 'default', name: 'x' }); // starts the ConfigMap informer, then reads from it
 * ```
 *
 * @packageDocumentation
 */
export { createInformerCache } from './informer-cache.js';
export type { ByKindOptions, InformerCache, InformerCacheOptions, InformerInfo } from './informer-cache.js';
export { namespaceNames } from './cache-scope.js';
export type { NamespaceOptions, Namespaces } from './cache-scope.js';
export { Informer, stripManagedFields } from './informer.js';
export type {
  HandlerOptions,
  HandlerRegistration,
  InformerErrorPhase,
  InformerEvent,
  InformerEventListener,
  InformerOptions,
  InformerSource,
  InformerSources,
  ResourceEventHandler,
  Transform,
} from './informer.js';
export { Reflector, isNotServed } from './reflector.js';
export type { ReflectorOptions, ReflectorSink, ReflectorState, ReflectorStats } from './reflector.js';
export { inShard, shardHash, shardValue, staticShard } from './shard-filter.js';
export type { ShardBy, ShardFilter } from './shard-filter.js';
export { CacheError, isCacheError } from './errors.js';
export type { CacheErrorReason } from './errors.js';
export { clientListWatcher, passThrough, withStages } from './list-watch.js';
export type { ListPageOptions, ListWatchScope, ListWatchStage, ListWatcher, WatchFromOptions } from './list-watch.js';
export { filterStage } from './stages/filter.js';
export { shardStage } from './stages/shard.js';
export { NAMESPACE_INDEX, Store, keyOf, objectKey } from './store.js';
export type { IndexErrorHandler, IndexFunc } from './store.js';
