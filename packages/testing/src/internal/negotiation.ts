/**
 * Content negotiation of reads, as kube-apiserver does it: the Accept
 * header's clauses in order of preference (`q`), the first the server can
 * answer wins: JSON or YAML, the object itself or, with `as=`, its metadata
 * (`PartialObjectMetadata[List]`) or a `Table`, in `meta.k8s.io` v1 or
 * v1beta1. A clause the server cannot answer is passed over; when none is
 * left the answer is 406, in the words the server uses (the built-in
 * handlers and the custom-resource handler say it differently). Whether the
 * form fits the answer (a list asked for as one object's metadata) is known
 * only after the read: `formMismatch`.
 */
import { parseJson } from '@kubeloop/scheme';
import { stringify as stringifyYaml } from 'yaml';
import type { StoredType } from './storage.js';
import type { BufferedResponse } from './request-info.js';
import { ApiError, statusOf } from './status.js';

/** The form asked for with `as=`. */
export interface AsForm {
  readonly kind: 'PartialObjectMetadata' | 'PartialObjectMetadataList' | 'Table';
  readonly version: 'v1' | 'v1beta1';
}

export interface Negotiated {
  readonly yaml: boolean;
  readonly as: AsForm | undefined;
}

const JSON_FORM: Negotiated = { yaml: false, as: undefined };
const REPRESENTATIONS = 'application/json, application/yaml, application/vnd.kubernetes.protobuf';

interface Clause {
  readonly type: string;
  readonly params: ReadonlyMap<string, string>;
  readonly q: number;
}

function clauses(accept: string): Clause[] {
  const out: Clause[] = [];
  for (const part of accept.split(',')) {
    const [type = '', ...rest] = part.split(';').map((s) => s.trim());
    if (type === '') continue;
    const params = new Map<string, string>();
    for (const p of rest) {
      const eq = p.indexOf('=');
      if (eq > 0) params.set(p.slice(0, eq).trim().toLowerCase(), p.slice(eq + 1).trim());
    }
    const qText = params.get('q');
    const q = qText === undefined ? 1 : Number(qText);
    if (!Number.isFinite(q) || q <= 0) continue;
    out.push({ type: type.toLowerCase(), params, q });
  }
  // stable: equal preferences keep the order they were given in
  return out.map((c, i) => [c, i] as const).sort(([a, i], [b, j]) => b.q - a.q || i - j).map(([c]) => c);
}

/**
 * What a GET of `st` (a collection when `collection`) answers in, from its
 * Accept header; 406 when nothing in it can be answered. Protobuf is not
 * spoken by the fake: a clause asking for it is passed over.
 */
export function negotiate(accept: string | undefined, st: StoredType, collection: boolean): Negotiated {
  if (accept === undefined || accept.trim() === '') return JSON_FORM;
  let asRefused = false;
  for (const c of clauses(accept)) {
    const yaml = c.type === 'application/yaml';
    if (!yaml && c.type !== 'application/json' && c.type !== '*/*' && c.type !== 'application/*') continue;
    const as = c.params.get('as');
    if (as === undefined) return yaml ? { yaml, as: undefined } : JSON_FORM;
    const v = c.params.get('v');
    if (c.params.get('g') === 'meta.k8s.io' && (v === 'v1' || v === 'v1beta1') && (as === 'Table' || as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList')) return { yaml, as: { kind: as, version: v } };
    asRefused = true;
  }
  if (st.type.builtin && !asRefused) {
    const streams = collection ? ', application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch' : '';
    throw new ApiError(statusOf(406, 'NotAcceptable', `406: Not Acceptable\n\nAvailable representations: ${REPRESENTATIONS}${streams}`, {}));
  }
  throw new ApiError(statusOf(406, 'NotAcceptable', `only the following media types are accepted: ${REPRESENTATIONS}`));
}

/** The Go type the server names when a form does not fit: `*core.ConfigMapList`, `*unstructured.Unstructured`. */
function goType(st: StoredType, list: boolean): string {
  if (!st.type.builtin) return list ? '*unstructured.UnstructuredList' : '*unstructured.Unstructured';
  const group = st.type.group;
  const pkg = group === '' || group === 'events.k8s.io' ? 'core' : group.split('.')[0]!;
  return `*${pkg}.${st.type.kind}${list ? 'List' : ''}`;
}

/**
 * The error for a form that does not fit what was read: one object's
 * metadata asked of a list (406), a list's asked of one object (406 for a
 * built-in kind; the custom-resource handler's 500 "content is not a list").
 */
export function formMismatch(form: Negotiated, st: StoredType, collection: boolean): ApiError | undefined {
  const kind = form.as?.kind;
  if (collection && kind === 'PartialObjectMetadata') return new ApiError(statusOf(406, 'NotAcceptable', `you requested PartialObjectMetadata, but the requested object is a list (${goType(st, true)})`));
  if (!collection && kind === 'PartialObjectMetadataList') {
    if (!st.type.builtin) return new ApiError(statusOf(500, undefined, 'content is not a list'));
    return new ApiError(statusOf(406, 'NotAcceptable', `you requested PartialObjectMetadataList, but the requested object is not a list (${goType(st, false)})`));
  }
  return undefined;
}

/** Keys sorted at every level, as sigs.k8s.io/yaml writes a JSON document as YAML. */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortedKeys((value as Record<string, unknown>)[k])]),
  );
}

/** A buffered JSON answer in the negotiated encoding (YAML when asked). */
export function encoded(res: BufferedResponse, form: Negotiated): BufferedResponse {
  if (!form.yaml || !(res.headers['content-type'] ?? '').startsWith('application/json')) return res;
  return { ...res, headers: { ...res.headers, 'content-type': 'application/yaml' }, body: stringifyYaml(sortedKeys(parseJson(res.body)), { version: '1.1' }) };
}
