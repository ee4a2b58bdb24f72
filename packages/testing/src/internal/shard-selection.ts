/**
 * `shardSelector` on lists, watches and delete-collections (KEP-5866, kube-apiserver's
 * `ShardedListAndWatch` gate): only objects whose FNV-1a 64 hash of
 * `object.metadata.uid` or `object.metadata.namespace` falls in one of the
 * ranges are selected. The fake behaves as a server with the gate on; the
 * syntax and the hash are the client's (checked against kube-apiserver).
 */
import { matchesShard, parseShardSelector } from '@kubeloop/client';
import type { Json } from './json.js';
import { ApiError } from './status.js';

/**
 * The shard filter a request's `shardSelector` asks for; undefined without
 * one. A malformed selector is what kube-apiserver v1.37 answers: 500,
 * `invalid shard selector: ...` (the reason after the colon is the client
 * parser's words, not the server's), with reason InternalError on a list or
 * watch and no reason on a delete-collection.
 */
export function shardMatch(query: URLSearchParams, verb: 'list' | 'deletecollection' = 'list'): ((obj: Json) => boolean) | undefined {
  const text = query.get('shardSelector');
  if (text === null || text === '') return undefined;
  let selector: ReturnType<typeof parseShardSelector>;
  try {
    selector = parseShardSelector(text);
  } catch (err) {
    // The server's words, without the 'Internal error occurred: ' its other 500s carry.
    const message = `invalid shard selector: ${err instanceof Error ? err.message : String(err)}`;
    throw new ApiError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, ...(verb === 'list' ? { reason: 'InternalError' } : {}), code: 500 });
  }
  return (obj) => matchesShard(obj, selector);
}
