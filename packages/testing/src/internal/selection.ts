/**
 * Which objects a list, a watch or a delete-collection selects: the
 * namespace of the path, the label selector, the field selector and the
 * shard selector, as the API server's SelectionPredicate. Every filter a
 * list or watch may carry goes here, so that list, watch and
 * delete-collection agree (kube-apiserver v1.37 with `ShardedListAndWatch`
 * honours `shardSelector` on a delete-collection too).
 */
import type { Json } from './json.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import { shardMatch } from './shard-selection.js';
import { badRequest } from './status.js';
import type { StoredType } from './storage.js';

/** A parsed selection; `match` tells whether an object is in it. */
export interface Selection {
  /** Whether the request filters by labels or fields at all (a paged list counts remaining items only when not). */
  readonly filtered: boolean;
  readonly match: (obj: Json) => boolean;
}

/**
 * The 400 for a field selector the kind does not support, in the words of
 * the code that refuses it (kube-apiserver v1.37.2): a kind with field label
 * conversions of its own (Pods, Secrets, Events...) says
 * `field label not supported: X`, a Job `field label "X" not supported for
 * Job`, every other kind (ConfigMaps, Deployments, Leases, custom
 * resources...) the default conversion's `"X" is not a known field
 * selector: only ...`, naming what it supports.
 */
function unsupportedField(st: StoredType, field: string): string {
  const supported = [...st.type.fieldSelectors.keys()];
  if (st.type.builtin && st.type.group === 'batch' && st.type.kind === 'Job') return `field label ${JSON.stringify(field)} not supported for Job`;
  if (st.type.builtin && supported.some((f) => f !== 'metadata.name' && f !== 'metadata.namespace')) return `field label not supported: ${field}`;
  return `"${field}" is not a known field selector: only ${supported.map((f) => `"${f}"`).join(', ')}`;
}

function fieldFilter(st: StoredType, selector: string | null): (obj: Json) => boolean {
  const reqs = parseFieldSelector(selector ?? undefined);
  for (const r of reqs) if (!st.type.fieldSelectors.has(r.field)) throw badRequest(unsupportedField(st, r.field));
  if (reqs.length === 0) return () => true;
  return (obj) =>
    reqs.every((r) => {
      const value = st.type.fieldSelectors.get(r.field)!(obj) ?? '';
      return r.op === '=' ? value === r.value : value !== r.value;
    });
}

/**
 * The selection a request's path namespace and query ask for (`verb`: a
 * list or watch, or a delete-collection); a malformed label or field
 * selector is 400, a malformed shard selector 500 (as kube-apiserver
 * answers).
 */
export function selection(st: StoredType, namespace: string | undefined, query: URLSearchParams, verb: 'list' | 'deletecollection' = 'list'): Selection {
  const labels = parseLabelSelector(query.get('labelSelector') ?? undefined);
  const fieldSelector = query.get('fieldSelector');
  const fields = fieldFilter(st, fieldSelector);
  const shard = shardMatch(query, verb);
  return {
    filtered: !labels.empty || (fieldSelector ?? '') !== '' || shard !== undefined,
    match: (obj) => {
      const m = obj['metadata'] as Json;
      if (namespace !== undefined && m['namespace'] !== namespace) return false;
      return labels.matches(m['labels'] as Record<string, string> | undefined) && fields(obj) && (shard?.(obj) ?? true);
    },
  };
}
