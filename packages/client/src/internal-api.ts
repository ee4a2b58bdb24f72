/**
 * `@kubeloop/client/internal`: what kubeloop's own packages (and extensions built like
 * them) share with this package, kept out of the root so that the root holds
 * what an operator author uses every day. No stability promise beyond the
 * package's version: these names may move or change with any release.
 *
 * @packageDocumentation
 */
export type { AnyClient, CachedReader, SubResourceClient } from './client.js';
export { isMetadataRef } from './kinds.js';
export type { AnyKubeObject, ListFor, MetadataRef, Mutable, ObjectFor, Stored } from './kinds.js';
export type { Selector } from './options.js';
export type { Query, RequestInfo, TransportRequest, TransportResponse } from './transport.js';
export { loadInClusterConfig, SERVICE_ACCOUNT_DIR } from './kubeconfig.js';
export { checkKubeconfigPolicy } from './kubeconfig-policy.js';
export type { AuthConfig, ExecConfig, ImpersonationConfig, LoadKubeConfigOptions, TLSConfig } from './kubeconfig.js';
export { watchEvents, watchEventError, parseWatchLine } from './watch.js';
export type { WatchEventType, WatchEventsOptions } from './watch.js';
export { fieldValue, labelKeyProblem, labelKeyProblems, labelValueProblem, labelValueProblems } from './selectors.js';
export type { FieldRequirement, LabelRequirement } from './selectors.js';
export { HASH_SPACE_END, inShardRanges, shardKey } from './shard.js';
export { applyPatch, jsonPointer, patchContentType } from './patch.js';
export type { JsonPatchOperation, MergeFromOptions, PatchType } from './patch.js';
export { DEFAULT_RETRY } from './retry.js';
export { checkOptions, describeValue, hasMethods, isKindList, isKindRef, isMs, isNonEmptyString, isObject } from './options-validation.js';
export type { OptionCheck } from './options-validation.js';
export { compareResourceVersions } from './resource-version.js';
export type { ReadYourWritesOptions, ReadYourWritesOutcome, ReadYourWritesRead, ResourceVersionTracker } from './read-your-writes.js';
export type { RetryFn } from './retry.js';
export type { Unstructured } from './kinds.js';
export { currentTracer, parseTraceparent, setTracer, stampObject, stampPatchBody, traced, TRACEPARENT_ANNOTATION, untraced } from './tracing.js';
export type { InSpanOptions, KubeloopTracer, RequestSpan, SpanAttributes, SpanHandle, TracedRequest } from './tracing.js';
