/**
 * Reads, as kube-apiserver's get and list handlers serve them: one object,
 * or a list filtered by the selection, at a resourceVersion (the newest, not
 * older than one, or exactly one from the history), in pages with continue
 * tokens over one consistent snapshot; as objects, metadata only, or a
 * Table.
 */
import type { Json } from './json.js';
import { objKey } from './json.js';
import { formMismatch } from './negotiation.js';
import type { AsForm, Negotiated } from './negotiation.js';
import { buffered, parseRv } from './request-info.js';
import type { BufferedResponse, CoreRequest, Target } from './request-info.js';
import { decodeListQuery, selection } from './selection.js';
import type { Selection } from './selection.js';
import { ApiError, badRequest, expired, invalid, notFound, statusOf } from './status.js';
import type { FieldError } from './status.js';
import { apiVersionOf, gr, partial, render } from './storage.js';
import { table } from './table.js';
import type { Storage } from './storage.js';

/** A read with no Accept header: JSON, the objects themselves. */
const NOT_NEGOTIATED: Negotiated = { yaml: false, as: undefined };

export interface ContinueToken {
  readonly rv: number;
  readonly start: string;
}

/** The stored object a request names; 404 when there is none. */
export function existing(t: Target): Json {
  const obj = t.st.objects.get(objKey(t.namespace, t.name!));
  if (!obj) throw notFound(gr(t.st), t.name!);
  return obj;
}

/** A Table or metadata in the `meta.k8s.io` version the Accept header asked for. */
function inVersion(body: Json, as: AsForm): Json {
  return as.version === 'v1' ? body : { ...body, apiVersion: `meta.k8s.io/${as.version}` };
}

export function get(s: Storage, t: Target, req: CoreRequest, form: Negotiated = NOT_NEGOTIATED): BufferedResponse {
  const obj = existing(t);
  const rendered = render(t.st, obj, t.version);
  if (t.subresource !== undefined || form.as === undefined) return buffered(200, rendered);
  const mismatch = formMismatch(form, t.st, false);
  if (mismatch) throw mismatch;
  if (form.as.kind === 'PartialObjectMetadata') return buffered(200, inVersion(partial(rendered), form.as));
  // a single object asked for as a Table is a Table of one row, as `kubectl get <kind> <name>` reads it, carrying the
  // object's resourceVersion (the table convertors read it through the list or object accessor; found by a
  // 2,000-sequence random run of the differential fuzzer, seed 16416312)
  const resourceVersion = (rendered['metadata'] as Json)['resourceVersion'];
  return buffered(200, inVersion(table([rendered], resourceVersion === undefined ? {} : { resourceVersion }, req, s.now()), form.as));
}

export function listOptionsInvalid(errors: FieldError[]): ApiError {
  return invalid('meta.k8s.io', 'ListOptions', '', errors);
}

/** A resourceVersion newer than the newest: the watch cache's answer after it gave up waiting. */
export function tooLarge(): ApiError {
  return new ApiError(
    statusOf(504, 'Timeout', 'Timeout: Too large resource version', { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 }),
  );
}

export function encodeContinue(token: ContinueToken): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: token.rv, start: token.start })).toString('base64url');
}

function decodeContinue(text: string): ContinueToken {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as { v?: unknown; rv?: unknown; start?: unknown };
    if (value.v === 'meta.k8s.io/v1' && typeof value.rv === 'number' && typeof value.start === 'string') return { rv: value.rv, start: value.start };
  } catch {
    /* fall through */
  }
  throw badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
}

export function list(s: Storage, t: Target, req: CoreRequest, form: Negotiated = NOT_NEGOTIATED): BufferedResponse {
  const q = req.query;
  const cont = q.get('continue') ?? '';
  const rvParam = q.get('resourceVersion') ?? '';
  const rvMatch = q.get('resourceVersionMatch') ?? '';
  // the query decoded first (malformed integers and selectors are 400s); a field the kind does not support is refused
  // after the options are validated (a ListOptions 422 before it; found by the widened fuzzer)
  const decoded = decodeListQuery(q);
  // a list at "any" resourceVersion is the watch cache's whole answer: the server ignores its limit (the cacher's
  // computeListLimit; measured on kube-apiserver v1.37.2: three ConfigMaps at `resourceVersion=0&limit=1`, no continue)
  const limit = rvParam === '0' ? 0 : decoded.limit;
  let selected: Selection;

  let atRv = s.resourceVersion;
  let start = '';
  if (cont) {
    if (rvParam !== '' && rvParam !== '0') throw badRequest('specifying resource version is not allowed when using continue');
    selected = selection(t.st, t.namespace, decoded, q);
    const token = decodeContinue(cont);
    if (token.rv < s.compacted) {
      throw expired(
        'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
      );
    }
    atRv = token.rv;
    start = token.start;
  } else {
    // the options checked as the API server's ListOptions validation checks them: every problem at once
    const errors: FieldError[] = [];
    if (rvMatch !== '') {
      if (rvParam === '') errors.push({ type: 'FieldValueForbidden', field: 'resourceVersionMatch', detail: 'resourceVersionMatch is forbidden unless resourceVersion is provided' });
      if (rvMatch !== 'Exact' && rvMatch !== 'NotOlderThan') errors.push({ type: 'FieldValueNotSupported', field: 'resourceVersionMatch', value: rvMatch, detail: 'supported values: "Exact", "NotOlderThan", ""' });
      if (rvMatch === 'Exact' && rvParam === '0') errors.push({ type: 'FieldValueForbidden', field: 'resourceVersionMatch', detail: 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"' });
    }
    if (errors.length > 0) throw listOptionsInvalid(errors);
    // the field selector's conversion, in the handler: before the storage's 410s and 504s
    selected = selection(t.st, t.namespace, decoded, q);
    if (rvMatch === 'Exact') {
      const rv = parseRv(rvParam, 'resourceVersion');
      if (rv > s.resourceVersion) throw tooLarge();
      if (rv < s.compacted) throw expired(`The resourceVersion for the provided list is too old.`);
      atRv = rv;
    } else if (rvParam === '') {
      // a consistent read: the watch cache catches up to the newest resourceVersion first
      atRv = s.cacheResourceVersion(t.st, s.resourceVersion);
    } else if (rvParam === '0') {
      atRv = s.cacheResourceVersion(t.st);
    } else {
      const rv = parseRv(rvParam, 'resourceVersion');
      if (rv > s.resourceVersion) throw tooLarge();
      // a limited list at a resourceVersion, with no match given, is exact: the legacy paging rule (found by the
      // differential fuzzer); but not when its field selector names one object in one namespace (`metadata.name=a`):
      // the store then reads that key from its watch cache, not older than the resourceVersion (random run, seed
      // 1731617632; probed on kube-apiserver v1.37.2)
      const oneKey = decoded.fields.some((f) => f.field === 'metadata.name' && f.op === '=') && (t.namespace !== undefined || !t.st.type.namespaced);
      if (limit > 0 && rvMatch === '' && !oneKey) {
        if (rv < s.compacted) throw expired(`The resourceVersion for the provided list is too old.`);
        atRv = rv;
      } else {
        // not older than `rv`: the watch cache's own resourceVersion once it has reached `rv` (found by a random
        // run of the differential fuzzer, seed 16416312: a Table listed so answered the cache's, not the newest)
        atRv = s.cacheResourceVersion(t.st, rv);
      }
    }
  }

  const state = atRv === s.resourceVersion ? t.st.objects : s.stateAt(t.st, atRv);
  const matching: [string, Json][] = [];
  for (const k of [...state.keys()].sort()) {
    if (start !== '' && k <= start) continue;
    const obj = state.get(k)!;
    if (selected.match(obj)) matching.push([k, obj]);
  }
  const page = limit > 0 ? matching.slice(0, limit) : matching;
  const items = page.map(([, obj]) => render(t.st, obj, t.version));
  const listMeta: Json = { resourceVersion: String(atRv) };
  if (page.length < matching.length) {
    listMeta['continue'] = encodeContinue({ rv: atRv, start: page[page.length - 1]![0] });
    if (!selected.filtered) listMeta['remainingItemCount'] = matching.length - page.length;
  }
  const mismatch = formMismatch(form, t.st, true);
  if (mismatch) throw mismatch;
  if (form.as?.kind === 'PartialObjectMetadataList') {
    // An empty one says `items: null`, as the API server's (Go's nil slice, no omitempty).
    return buffered(200, inVersion({ kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: listMeta, items: items.length === 0 ? null : items.map((i) => inVersion(partial(i), form.as!)) }, form.as));
  }
  if (form.as?.kind === 'Table') return buffered(200, inVersion(table(items, listMeta, req, s.now()), form.as));
  const apiVersion = apiVersionOf(t.st.type, t.version);
  if (t.st.type.builtin) {
    for (const item of items) {
      delete item['apiVersion'];
      delete item['kind'];
    }
  }
  // a custom resource's list is unstructured, whose metadata setters write an empty continue and sort their keys;
  // a built-in kind's list metadata leaves it out (omitempty). Measured on kube-apiserver v1.37.2.
  const metadata = t.st.type.builtin ? listMeta : Object.fromEntries(Object.entries({ continue: '', ...listMeta }).sort(([a], [b]) => (a < b ? -1 : 1)));
  return buffered(200, { kind: t.st.type.listKind, apiVersion, metadata, items });
}
