/**
 * Which objects a list, a watch or a delete-collection selects: the
 * namespace of the path, the label selector, the field selector and the
 * shard selector, as the API server's SelectionPredicate. Every filter a
 * list or watch may carry goes here, so that list, watch and
 * delete-collection agree (kube-apiserver v1.37 with `ShardedListAndWatch`
 * honours `shardSelector` on a delete-collection too).
 */
import type { Json } from './json.js';
import { int64Param } from './request-info.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import type { FieldRequirement, LabelSelector } from './selectors.js';
import { shardMatch } from './shard-selection.js';
import { badRequest } from './status.js';
import type { StoredType } from './storage.js';

/** The options of a list, watch or delete-collection query as they are decoded, before they are validated. */
export interface ListQuery {
  /** Seconds; 0 when not given. A negative one is kept for the caller to refuse. */
  readonly timeoutSeconds: number;
  /** Items per page; 0 (no limit) when not given or negative, as the server takes a negative one. */
  readonly limit: number;
  readonly labels: LabelSelector;
  readonly fields: readonly FieldRequirement[];
}

/**
 * Decode the query as kube-apiserver's parameter codec decodes ListOptions,
 * each refusal its 400 and the first met first: `timeoutSeconds` and
 * `limit` as Go's ParseInt reads them, then the label selector's syntax,
 * then the field selector's (measured on kube-apiserver v1.37.2 with two
 * malformed at once). What a kind's fields support is checked later, by
 * {@link selection}, after the options are validated.
 */
export function decodeListQuery(query: URLSearchParams): ListQuery {
  const int = (name: string): bigint => {
    const text = query.get(name);
    return text === null || text === '' ? 0n : int64Param(text);
  };
  const timeout = int('timeoutSeconds');
  const limit = int('limit');
  const labels = parseLabelSelector(query.get('labelSelector') ?? undefined);
  const fields = parseFieldSelector(query.get('fieldSelector') ?? undefined);
  return { timeoutSeconds: Number(timeout), limit: limit > 0n ? Number(limit) : 0, labels, fields };
}

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
 * `field label not supported: X`, and so does a custom resource whose CRD
 * has `selectableFields` (found by the differential fuzzer), a Job `field
 * label "X" not supported for Job`, every other kind (ConfigMaps,
 * Deployments, Leases, custom resources without selectable fields...) the
 * default conversion's `"X" is not a known field selector: only ...`,
 * naming what it supports.
 */
function unsupportedField(st: StoredType, field: string): string {
  const supported = [...st.type.fieldSelectors.keys()];
  if (st.type.builtin && st.type.group === 'batch' && st.type.kind === 'Job') return `field label ${JSON.stringify(field)} not supported for Job`;
  if (supported.some((f) => f !== 'metadata.name' && f !== 'metadata.namespace')) return `field label not supported: ${field}`;
  return `"${field}" is not a known field selector: only ${supported.map((f) => `"${f}"`).join(', ')}`;
}

function fieldFilter(st: StoredType, reqs: readonly FieldRequirement[]): (obj: Json) => boolean {
  for (const r of reqs) if (!st.type.fieldSelectors.has(r.field)) throw badRequest(unsupportedField(st, r.field));
  if (reqs.length === 0) return () => true;
  return (obj) =>
    reqs.every((r) => {
      const value = st.type.fieldSelectors.get(r.field)!(obj) ?? '';
      return r.op === '=' ? value === r.value : value !== r.value;
    });
}

/**
 * The selection a request's path namespace and its decoded query ask for
 * (`verb`: a list or watch, or a delete-collection); a field selector the
 * kind does not support is 400, a malformed shard selector 500 (as
 * kube-apiserver answers, after the options are validated).
 */
export function selection(st: StoredType, namespace: string | undefined, decoded: ListQuery, query: URLSearchParams, verb: 'list' | 'deletecollection' = 'list'): Selection {
  const { labels } = decoded;
  const fields = fieldFilter(st, decoded.fields);
  const shard = shardMatch(query, verb);
  return {
    filtered: !labels.empty || decoded.fields.length > 0 || shard !== undefined,
    match: (obj) => {
      const m = obj['metadata'] as Json;
      if (namespace !== undefined && m['namespace'] !== namespace) return false;
      return labels.matches(m['labels'] as Record<string, string> | undefined) && fields(obj) && (shard?.(obj) ?? true);
    },
  };
}
