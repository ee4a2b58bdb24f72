/**
 * `@kubeloop/client` talks to the API server: one client for any kind, in
 * three forms (typed through the scheme, unstructured JSON, metadata-only),
 * with server-side apply, patches, subresources, paginated lists, watch
 * streams, typed errors, and a cached-read router that sends reads to a cache
 * `Reader` (the informer cache of `@kubeloop/cache`) and writes to the server.
 *
 * Paths come from the scheme (kind → group/version/kind) and the mapper
 * (group/version/kind → resource and scope). Requests go over one transport
 * per client (keep-alive connections, watches on their own uncapped pool),
 * with the kubeconfig's auth and TLS, a deadline on every request, optional
 * rate limits and Retry-After handling. Kubeconfigs are read here, without
 * loading `@kubernetes/client-node` (it is imported only for an auth
 * provider kubeloop does not implement).
 *
 * @example
 * ```ts
 * import { createClient, loadKubeConfig, isNotFound } from '@kubeloop/client';
 * import { ConfigMap } from '@kubeloop/scheme';
 *
 * const client = createClient({ kubeConfig: loadKubeConfig(), fieldOwner: 'my-operator' });
 * const cm = await client.get(ConfigMap, { namespace: 'default', name: 'settings' }).catch((e) => (isNotFound(e) ? undefined : Promise.reject(e)));
 * ```
 *
 * @packageDocumentation
 */
import './internal/node-version.js';
export { createClient } from './client.js';
export type { AnyClient, CachedClient, CachedReader, Client, ClientOptions, Reader, SubResourceClient, Writer } from './client.js';
export { metadataOnly, mutableCopy } from './kinds.js';
export type { AnyKubeObject, DeepReadonly, Fetched, KindRef, ListFor, MetadataRef, Mutable, ObjectFor, ObjectKey, PartialObjectMetadata, Stored, TypeRef, Unstructured, WithKind } from './kinds.js';
export type { ApplyOptions, CallOptions, DeleteAllOfOptions, DeleteOptions, GetOptions, ListOptions, Selector, WatchOptions, WriteOptions } from './options.js';
export { createTransport } from './transport.js';
export type { Query, RequestInfo, Transport, TransportOptions, TransportRequest, TransportResponse } from './transport.js';
export { kubeConfigFromText, loadKubeConfig } from './kubeconfig.js';
export type { AuthConfig, ExecConfig, ImpersonationConfig, KubeConfigFromTextOptions, KubeConfigLike, LoadKubeConfigOptions, RestConfig, TLSConfig } from './kubeconfig.js';
export type { KubeconfigPolicy } from './kubeconfig-policy.js';
export { transportDiscovery } from './discovery.js';
export { ClientError, isAlreadyExists, isClientError, isConflict, isFenced, isForbidden, isGone, isInvalid, isInvalidConfig, isNetworkError, isNotFound, isPolicyRefused, isResponseTooLarge, isServerError, isTLSError, isTimeout, isTooManyRequests, isUnauthorized } from './errors.js';
export type { ClientErrorReason, Status } from './errors.js';
export { isMapperError, isNoKindMatch } from '@kubeloop/mapper';
export type { WatchEvent, WatchEventType } from './watch.js';
export { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from './selectors.js';
export type { FieldRequirement, LabelRequirement } from './selectors.js';
export { fnv1a64, matchesShard, parseShardSelector, renderShardSelector } from './shard.js';
export type { ShardField, ShardRange, ShardSelector } from './shard.js';
export { parseJson, stringifyJson } from '@kubeloop/scheme';
export { jsonPatch, mergeFrom, mergePatch, strategicMergePatch } from './patch.js';
export type { JsonPatchOperation, MergeFromOptions, Patch, PatchType } from './patch.js';
export { retryOn, retryOnConflict } from './retry.js';
export { currentFence, outsideFence, runFenced } from './fence.js';
export type { WriteFence } from './fence.js';
export type { ApiWarning } from './warnings.js';
export type { RetryFn, RetryOptions } from './retry.js';
export type { ReadYourWritesOptions, ReadYourWritesOutcome, ReadYourWritesRead } from './read-your-writes.js';
