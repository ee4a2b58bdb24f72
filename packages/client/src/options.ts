/** Options of client calls. Every field is optional unless it says otherwise. */
import { renderShardSelector } from './shard.js';
import type { ShardSelector } from './shard.js';
import type { Query } from './transport.js';

/** Label or field selector: a string (`app=web,tier!=db`) or exact matches (`{ app: 'web' }`). */
export type Selector = string | Readonly<Record<string, string>>;

export interface CallOptions {
  /** Cancels the call. Default: none. */
  readonly signal?: AbortSignal;
  /**
   * Deadline of each request the call makes, ms, over every phase (connect,
   * TLS, headers, the whole body); overrides the transport's `timeoutMs`
   * (default 30 000). Leader election passes `max(renewDeadline / 2, 1 s)`.
   * For `watch`, it bounds the wait for the response headers only.
   */
  readonly timeoutMs?: number;
}

export interface GetOptions extends CallOptions {
  /** resourceVersion semantics of GET: `"0"` lets the server answer from its watch cache. Default: most recent. */
  readonly resourceVersion?: string;
}

export interface ListOptions extends CallOptions {
  /** Namespace to list; omitted lists every namespace (namespaced kinds). */
  readonly namespace?: string;
  readonly labelSelector?: Selector;
  readonly fieldSelector?: Selector;
  /**
   * Only objects whose uid or namespace hashes into these ranges (KEP-5866;
   * the API server needs the `ShardedListAndWatch` feature gate, and one
   * without it ignores the parameter: check what comes back, e.g. with
   * `matchesShard`). A string is sent as written; `''` is no selector. Default: none.
   */
  readonly shardSelector?: ShardSelector | string;
  /** Page size; with it the answer is one page, and `metadata.continue` names the next. Default: everything. */
  readonly limit?: number;
  /** The continue token of the previous page. */
  readonly continue?: string;
  /** `""` (default): most recent, consistent; `"0"`: any, from the watch cache; else per resourceVersionMatch. */
  readonly resourceVersion?: string;
  readonly resourceVersionMatch?: 'NotOlderThan' | 'Exact';
  /** Server-side timeout of the list. */
  readonly timeoutSeconds?: number;
}

export interface WatchOptions extends CallOptions {
  readonly namespace?: string;
  readonly labelSelector?: Selector;
  readonly fieldSelector?: Selector;
  /**
   * Only objects whose uid or namespace hashes into these ranges (KEP-5866;
   * the API server needs the `ShardedListAndWatch` feature gate, and one
   * without it ignores the parameter: check what comes back, e.g. with
   * `matchesShard`). A string is sent as written; `''` is no selector. Default: none.
   */
  readonly shardSelector?: ShardSelector | string;
  /** Watch from this resourceVersion (events after it). */
  readonly resourceVersion?: string;
  readonly resourceVersionMatch?: 'NotOlderThan' | 'Exact';
  /** Ask for BOOKMARK events. Default: true. */
  readonly allowWatchBookmarks?: boolean;
  /** Streaming list: initial state as ADDED events, ended by a `k8s.io/initial-events-end` bookmark. */
  readonly sendInitialEvents?: boolean;
  /** Server-side end of the watch. */
  readonly timeoutSeconds?: number;
  /** Client-side: throw if no bytes arrive for this long (a silently dead stream); also bounds the wait for the response headers. Default: none. */
  readonly idleTimeoutMs?: number;
  /** Longest watch line (one event), bytes; a longer one fails with ClientError `ResponseTooLarge`. Default: 16 MiB (see `WatchEventsOptions.maxLineBytes`). */
  readonly maxLineBytes?: number;
}

export interface WriteOptions extends CallOptions {
  /** Validate and run admission without persisting. */
  readonly dryRun?: boolean;
  /** Field manager recorded in managedFields. Default: the client's `fieldOwner`, if any. */
  readonly fieldManager?: string;
  /** How the server treats unknown or duplicate fields. Default: the server's (Warn on 1.27+). */
  readonly fieldValidation?: 'Ignore' | 'Warn' | 'Strict';
}

export interface ApplyOptions extends WriteOptions {
  /** Take fields owned by other managers instead of failing with a conflict. Default: false. */
  readonly force?: boolean;
}

export interface DeleteOptions extends CallOptions {
  readonly dryRun?: boolean;
  readonly gracePeriodSeconds?: number;
  /** Default: the kind's default (Background for most). */
  readonly propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  /** Delete only if the object still has this UID / resourceVersion. */
  readonly preconditions?: { readonly uid?: string; readonly resourceVersion?: string };
}

export interface DeleteAllOfOptions extends DeleteOptions {
  /** Namespace to delete in; required for namespaced kinds. */
  readonly namespace?: string;
  readonly labelSelector?: Selector;
  readonly fieldSelector?: Selector;
  /**
   * Only objects whose uid or namespace hashes into these ranges (KEP-5866),
   * as for a list. kube-apiserver with `ShardedListAndWatch` deletes exactly
   * those; one without the gate ignores the parameter and would delete every
   * object the other selectors match, so the client lists with the same
   * selectors first: when the list holds an object out of range, it deletes
   * the listed objects in range one by one (each with its uid as
   * precondition) instead of sending the collection delete. A string is
   * parsed here (a malformed one: ClientError `InvalidRequest`, nothing
   * sent); `''` is no selector, as for a list. The one-by-one deletes run
   * 8 at a time. Default: none.
   */
  readonly shardSelector?: ShardSelector | string;
}

/** Render a selector for the query string. */
export function renderSelector(selector: Selector | undefined): string | undefined {
  if (selector === undefined) return undefined;
  if (typeof selector === 'string') return selector || undefined;
  const parts = Object.entries(selector).map(([k, v]) => `${k}=${v}`);
  return parts.length > 0 ? parts.join(',') : undefined;
}

/**
 * The `shardSelector` option as list, watch and deleteAllOf read it:
 * `undefined` and `''` are no selector (the server reads an empty
 * parameter as none too); a string as written, a parsed selector as given.
 */
export function shardOption(selector: ShardSelector | string | undefined): ShardSelector | string | undefined {
  return selector === '' ? undefined : selector;
}

/** The `shardSelector` query parameter of a list or watch: none, a string as written, a parsed selector rendered. */
export function renderShard(selector: ShardSelector | string | undefined): string | undefined {
  const given = shardOption(selector);
  return given === undefined || typeof given === 'string' ? given : renderShardSelector(given);
}

export function writeQuery(options: WriteOptions | undefined, fieldOwner: string | undefined): Query {
  return {
    dryRun: options?.dryRun ? 'All' : undefined,
    fieldManager: options?.fieldManager ?? fieldOwner,
    fieldValidation: options?.fieldValidation,
  };
}
