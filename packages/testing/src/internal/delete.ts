/**
 * Deletes, as kube-apiserver's delete handlers and the registry's store do
 * them: delete options (preconditions, propagation policy, orphaning, dry
 * run), graceful deletion while finalizers remain (`deletionTimestamp`,
 * the `orphan` / `foregroundDeletion` finalizers), a namespace going
 * Terminating, and delete-collection over a selection.
 */
import { DELETION_PENDING, setCRDCondition } from './crd-conditions.js';
import { isObject, objKey, sameJson, show } from './json.js';
import type { Json } from './json.js';
import { encodeContinue, existing } from './list.js';
import { buffered, dryRun, goBool, int64Param, parseJsonBody, withWarnings } from './request-info.js';
import type { BufferedResponse, CoreRequest, Target } from './request-info.js';
import { decodeListQuery, selection } from './selection.js';
import { conflict, invalid, success } from './status.js';
import type { FieldError } from './status.js';
import { apiVersionOf, gr, kindGr, render } from './storage.js';
import type { Storage } from './storage.js';

/**
 * Delete options as kube-apiserver reads them: from the body when there is
 * one, else from the query string (`propagationPolicy`, `orphanDependents`,
 * `gracePeriodSeconds`, `dryRun`). Never both: beside a body, the query's
 * `dryRun=All` is ignored and the delete is real (kube-apiserver v1.37).
 */
function deleteOptions(req: CoreRequest): Json {
  if (req.body !== undefined && req.body.trim() !== '') return parseJsonBody(req.body);
  const q = req.query;
  const fromQuery: Json = {};
  const policy = q.get('propagationPolicy');
  if (policy !== null && policy !== '') fromQuery['propagationPolicy'] = policy;
  const orphan = q.get('orphanDependents');
  // a pointer in DeleteOptions: set whenever given (even empty), its value as Go reads a boolean
  if (orphan !== null) fromQuery['orphanDependents'] = goBool(orphan);
  const grace = q.get('gracePeriodSeconds');
  if (grace !== null && grace !== '') {
    // exact, as a body's int64 is (parseJson): a number while it is one, a bigint past 2^53
    const n = int64Param(grace);
    fromQuery['gracePeriodSeconds'] = n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
  }
  if (dryRun(req)) fromQuery['dryRun'] = ['All'];
  return fromQuery;
}

/** Whether delete options ask for a dry run. */
function isDry(opts: Json): boolean {
  return Array.isArray(opts['dryRun']) && (opts['dryRun'] as unknown[]).includes('All');
}

/**
 * kube-apiserver's check of DeleteOptions (apimachinery's ValidateDeleteOptions), made before it
 * looks the object up: a delete of a missing object with bad options is the 422, not a 404
 * (found by the differential fuzzer).
 */
function validateDeleteOptions(opts: Json): void {
  const policy = opts['propagationPolicy'];
  const errors: FieldError[] = [];
  if (opts['orphanDependents'] !== undefined && opts['orphanDependents'] !== null && policy !== undefined && policy !== null) {
    errors.push({ type: 'FieldValueInvalid', field: 'propagationPolicy', value: policy, detail: 'orphanDependents and deletionPropagation cannot be both set' });
  }
  if (policy !== undefined && policy !== null && policy !== 'Orphan' && policy !== 'Background' && policy !== 'Foreground') {
    errors.push({ type: 'FieldValueNotSupported', field: 'propagationPolicy', value: policy, detail: 'supported values: "Foreground", "Background", "Orphan", "nil"' });
  }
  if (errors.length > 0) throw invalid('meta.k8s.io', 'DeleteOptions', '', errors);
}

export function del(s: Storage, t: Target, req: CoreRequest): BufferedResponse {
  const opts = deleteOptions(req);
  validateDeleteOptions(opts);
  const dry = isDry(opts);
  const obj = existing(t);
  return deleteObject(s, t, obj, opts, dry);
}

/** The finalizer a CRD's deletion holds until its custom resources are gone. */
export const CRD_CLEANUP = 'customresourcecleanup.apiextensions.k8s.io';

/** Delete one stored object with these options (also the controllers' way to delete). */
export function deleteObject(s: Storage, t: Target, obj: Json, opts: Json, dry: boolean): BufferedResponse {
  const m = obj['metadata'] as Json;
  const name = m['name'] as string;
  const pre = isObject(opts['preconditions']) ? opts['preconditions'] : {};
  if (pre['uid'] !== undefined && pre['uid'] !== m['uid']) {
    throw conflict(kindGr(t.st), name, `the UID in the precondition (${show(pre['uid'])}) does not match the UID in record (${show(m['uid'])}). The object might have been deleted and then recreated`);
  }
  if (pre['resourceVersion'] !== undefined && pre['resourceVersion'] !== m['resourceVersion']) {
    throw conflict(kindGr(t.st), name, `the ResourceVersion in the precondition (${show(pre['resourceVersion'])}) does not match the ResourceVersion in record (${show(m['resourceVersion'])}). The object might have been modified`);
  }
  const policy = opts['propagationPolicy'];
  const orphanDependents = opts['orphanDependents'];
  // batch/v1 Jobs and ReplicationControllers orphan their dependents unless told otherwise (their strategies' DefaultGarbageCollectionPolicy)
  const orphansByDefault = t.st.type.builtin && ((t.st.type.group === 'batch' && t.st.type.kind === 'Job') || (t.st.type.group === '' && t.st.type.kind === 'ReplicationController'));
  const orphanByDefault = orphansByDefault && policy === undefined && orphanDependents === undefined;
  // a CRD's storage adds the cleanup finalizer on delete: it stays, Terminating, until the CRD controller has deleted its objects (controllers/crds.ts)
  const isCRD = t.st.type.builtin && t.st.type.group === 'apiextensions.k8s.io' && t.st.type.plural === 'customresourcedefinitions';
  const held = (m['finalizers'] as string[] | undefined) ?? [];
  const withCleanup = isCRD && m['deletionTimestamp'] === undefined && !held.includes(CRD_CLEANUP) ? [...held, CRD_CLEANUP] : held;
  const finalizers = gcFinalizers(withCleanup, orphanDependents, policy, orphansByDefault);
  const isNamespace = t.st.type.kind === 'Namespace' && t.st.type.group === '';
  const nsFinalizers = isNamespace && isObject(obj['spec']) && Array.isArray(obj['spec']['finalizers']) ? (obj['spec']['finalizers'] as string[]) : [];
  const key = objKey(m['namespace'] as string | undefined, name);
  if (finalizers.length > 0 || nsFinalizers.length > 0) {
    // graceful: mark, keep
    const next = structuredClone(obj);
    const nm = next['metadata'] as Json;
    const already = m['deletionTimestamp'] !== undefined;
    if (finalizers.length > 0) nm['finalizers'] = finalizers;
    if (!already) {
      nm['deletionTimestamp'] = s.now();
      // the namespace storage deletes without a grace period (found by comparing with kube-apiserver), the CRD storage too, keeping its generation
      if (!isNamespace && !isCRD) nm['deletionGracePeriodSeconds'] = 0;
      if (!isCRD && typeof nm['generation'] === 'number' && nm['generation'] > 0) nm['generation'] = nm['generation'] + 1;
      if (isNamespace) next['status'] = { ...(isObject(next['status']) ? next['status'] : {}), phase: 'Terminating' };
      // the CRD storage marks it Terminating in the same write (the finalizer controller then says InstanceDeletionInProgress; found by the schema-change fuzzer)
      if (isCRD) setCRDCondition(next, DELETION_PENDING, s.now());
    }
    // the Job strategy warns that a delete without a policy keeps the Job's Pods
    const warnings = orphanByDefault && t.st.type.kind === 'Job' ? ['child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning'] : [];
    // not deleted at once: 202 Accepted when the caller set orphanDependents=false, else 200 (the server's delete
    // handler keeps 200 for every other case for old clients; found by the differential fuzzer, seed 2066434769)
    const code = opts['orphanDependents'] === false ? 202 : 200;
    if (sameJson(next, obj)) return withWarnings(buffered(code, render(t.st, obj, t.version)), warnings);
    if (dry) return withWarnings(buffered(code, render(t.st, next, t.version)), warnings);
    s.store(t.st, key, next, obj, 'MODIFIED');
    return withWarnings(buffered(code, render(t.st, next, t.version)), warnings);
  }
  if (!dry) s.store(t.st, key, structuredClone(obj), obj, 'DELETED');
  // a dry run answers as the delete would: a Service's storage with the deleted object (ReturnDeletedObject),
  // every other kind's, custom resources' too, with a Status (found by the differential fuzzer)
  if (t.st.type.builtin && t.st.type.group === '' && t.st.type.kind === 'Service') return buffered(200, render(t.st, obj, t.version));
  return buffered(200, success(gr(t.st), name, m['uid'] as string));
}

/**
 * The finalizers a delete leaves, as the server's store sets the garbage
 * collector's two on every delete: whether to orphan dependents and whether
 * to delete them first is decided by the options (`orphanDependents`, then
 * `propagationPolicy`), else by the finalizer of the two the object already
 * has, else by the kind's default; both are taken out and put back at the
 * end, `orphan` first. A set that does not change keeps its order. So a
 * Background or Orphan delete of an object a Foreground delete marked
 * replaces `foregroundDeletion` (found by the differential fuzzer, random
 * seed 2080145716).
 */
function gcFinalizers(current: readonly string[], orphanDependents: unknown, policy: unknown, orphansByDefault: boolean): string[] {
  const first = current.find((f) => f === 'orphan' || f === 'foregroundDeletion');
  const orphan = typeof orphanDependents === 'boolean' ? orphanDependents : policy !== undefined ? policy === 'Orphan' : first !== undefined ? first === 'orphan' : orphansByDefault;
  const foreground = typeof orphanDependents === 'boolean' ? false : policy !== undefined ? policy === 'Foreground' : current.includes('foregroundDeletion');
  const next = [...current.filter((f) => f !== 'orphan' && f !== 'foregroundDeletion'), ...(orphan ? ['orphan'] : []), ...(foreground ? ['foregroundDeletion'] : [])];
  const same = next.length === new Set(current).size && next.every((f) => current.includes(f));
  return same ? [...current] : next;
}

export function deleteCollection(s: Storage, t: Target, req: CoreRequest): BufferedResponse {
  const opts = deleteOptions(req);
  const dry = isDry(opts);
  // the list options are decoded first (a malformed `limit` is their 400; found by the widened fuzzer), the selectors
  // checked, then the delete options (kube-apiserver's DeleteCollection handler)
  const decoded = decodeListQuery(req.query);
  const limit = decoded.limit;
  const { match, filtered } = selection(t.st, t.namespace, decoded, req.query, 'deletecollection');
  validateDeleteOptions(opts);
  // the server lists first (with the list options, `limit` too), then deletes what the page holds: one page, with a continue token for the rest
  const listRv = s.resourceVersion;
  const matching = [...t.st.objects.keys()].sort().filter((k) => match(t.st.objects.get(k)!));
  const page = limit > 0 ? matching.slice(0, limit) : matching;
  const listMeta: Json = { resourceVersion: String(listRv) };
  if (page.length < matching.length) {
    listMeta['continue'] = encodeContinue({ rv: listRv, start: page[page.length - 1]! });
    if (!filtered) listMeta['remainingItemCount'] = matching.length - page.length;
  }
  const deleted: Json[] = [];
  for (const k of page) {
    const obj = t.st.objects.get(k);
    if (!obj) continue;
    const target: Target = { ...t, namespace: (obj['metadata'] as Json)['namespace'] as string | undefined, name: (obj['metadata'] as Json)['name'] as string };
    deleteObject(s, target, obj, opts, dry);
    const item = render(t.st, obj, t.version);
    // as in a list: built-in items without apiVersion and kind (found by the differential fuzzer)
    if (t.st.type.builtin) {
      delete item['apiVersion'];
      delete item['kind'];
    }
    deleted.push(item);
  }
  return buffered(200, { kind: t.st.type.listKind, apiVersion: apiVersionOf(t.st.type, t.version), metadata: limit > 0 ? listMeta : { resourceVersion: String(s.resourceVersion) }, items: deleted });
}
