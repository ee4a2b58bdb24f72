/**
 * Writes, as kube-apiserver's create and update handlers and the registry's
 * store do them: the body checked against the endpoint (kind, apiVersion,
 * name, namespace), server-owned metadata (uid, creationTimestamp,
 * generation, resourceVersion), optimistic concurrency, the strategy's
 * rules, field ownership, no-op detection and the last finalizer's removal.
 * `commit` is the one path every change of an existing object goes
 * through: update, patch, apply, scale and the controllers.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { parseManaged, recordUpdate, renderManaged } from './fields.js';
import type { ManagedEntry, Scope, WriteContext } from './fields.js';
import { isObject, meta, objKey, sameJson, show } from './json.js';
import type { Json } from './json.js';
import { withDuplicateFields } from './duplicates.js';
import { existing } from './list.js';
import { decodeBuiltin, DecodeError, objectMetaProblem } from './openapi/decode.js';
import { strategyWarnings } from './strategy-warnings.js';
import type { FieldValidation } from './openapi/decode.js';
import { buffered, dryRun, fieldManager, fieldValidation, parseJsonBody, warningsAlways, withWarnings } from './request-info.js';
import type { BufferedResponse, CoreRequest, Target } from './request-info.js';
import { alreadyExists, ApiError, badRequest, conflict, forbidden, invalid, MODIFIED, notFound, statusOf } from './status.js';
import { apiVersionOf, gr, render } from './storage.js';
import type { Storage } from './storage.js';
import { admitPod, allocateService, defaultBuiltin, overGoZero, prepareJob } from './defaults.js';
import { typeKey } from './resources.js';
import { createsOnUpdate } from './validation.js';
import { crdDefaults, liveProblem } from './crd-check.js';
import { dropEmpty, foldStringData, prepareForCreate, specChanged, unknownFieldWarnings, validate, zeroStatus } from './strategy.js';

const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** Metadata only the server writes: dropped from a create's or an apply's body. */
export const SERVER_METADATA = ['uid', 'resourceVersion', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'selfLink', 'managedFields', 'generation'];

/**
 * Check the body's kind and apiVersion against the endpoint. A create or
 * update body may leave them out (the endpoint names them); an apply may not.
 */
export function checkKind(t: Target, body: Json, apply = false): void {
  const apiVersion = apiVersionOf(t.st.type, t.version);
  const kind = body['kind'] === undefined || body['kind'] === '' ? undefined : body['kind'];
  const version = body['apiVersion'] === undefined || body['apiVersion'] === '' ? undefined : body['apiVersion'];
  if (apply) {
    if (kind !== t.st.type.kind || version !== apiVersion) {
      const gv = typeof version === 'string' ? (version.includes('/') ? version : `/${version}`) : '/';
      throw badRequest(`invalid object type: ${gv}, Kind=${typeof kind === 'string' ? kind : ''}`);
    }
    return;
  }
  if (kind !== undefined && kind !== t.st.type.kind) {
    throw badRequest(`the kind in the data (${show(kind)}) does not match the expected kind (${t.st.type.kind})`);
  }
  if (version !== undefined && version !== apiVersion) {
    throw badRequest(`the API version in the data (${show(version)}) does not match the expected API version (${apiVersion})`);
  }
}

/** The body's namespace must be the path's (or empty); cluster-scoped objects have none. */
export function checkNamespace(t: Target, m: Json): void {
  if (!t.st.type.namespaced) {
    delete m['namespace'];
    return;
  }
  const given = m['namespace'];
  if (given !== undefined && given !== '' && given !== t.namespace) {
    throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  m['namespace'] = t.namespace;
}

/**
 * A new object needs its kind's CRD not to be terminating (403, as the
 * custom-resource handler answers), its namespace to exist (404) and not
 * be terminating (403).
 */
export function requireNamespace(s: Storage, t: Target, name: string): void {
  if (s.terminating.has(typeKey(t.st.type.group, t.st.type.plural))) throw forbidden(gr(t.st), name, 'create not allowed while custom resource definition is terminating');
  if (!t.st.type.namespaced) return;
  const ns = s.namespaces.objects.get(objKey(undefined, t.namespace!));
  if (!ns) throw notFound({ group: '', resource: 'namespaces' }, t.namespace!);
  if ((ns['metadata'] as Json)['deletionTimestamp'] !== undefined) {
    throw forbidden(gr(t.st), name, `unable to create new content in namespace ${t.namespace!} because it is being terminated`, [
      { reason: 'NamespaceTerminating', message: `namespace ${t.namespace!} is being terminated`, field: 'metadata.namespace' },
    ]);
  }
}

export function writeContext(s: Storage, t: Target, manager: string, scope: Scope): WriteContext {
  return { manager, apiVersion: apiVersionOf(t.st.type, t.version), time: s.now(), scope, hasStatus: t.st.type.status, shape: t.st.shape, ...(t.subresource === 'scale' ? { subresource: 'scale' } : {}) };
}

/**
 * A built-in kind's body decoded as the server decodes it into its Go type
 * (types checked, unknown fields dropped or refused, values in normal
 * form); other kinds' bodies as they are. Decoding errors are 400, as the
 * server answers them.
 */
export function decodeBody(t: Target, body: Json, validation: FieldValidation): { body: Json; warnings: readonly string[] } {
  if (!t.st.type.builtin) {
    // a custom resource's metadata is decoded into ObjectMeta
    const problem = objectMetaProblem(body['metadata']);
    if (problem) throw badRequest(`${t.st.type.kind} in version ${JSON.stringify(t.version)} cannot be handled as a ${t.st.type.kind}: ${problem.message}`);
    return { body, warnings: [] };
  }
  const apiVersion = apiVersionOf(t.st.type, t.version);
  try {
    const decoded = decodeBuiltin(body, apiVersion, t.st.type.kind, validation);
    if (!decoded) return { body, warnings: [] };
    // defaults the kind's Go defaulters set while decoding (so the writer owns them)
    defaultBuiltin(apiVersion, t.st.type.group, t.st.type.kind, decoded.object);
    return { body: decoded.object, warnings: decoded.warnings };
  } catch (err) {
    if (err instanceof DecodeError) throw badRequest(`${t.st.type.kind} in version ${JSON.stringify(t.version)} cannot be handled as a ${t.st.type.kind}: ${err.message}`);
    throw err;
  }
}

/** The manager kube-apiserver names the owner of what an object held before its first apply. */
export const BEFORE_FIRST_APPLY = 'before-first-apply';

/**
 * The managed fields an apply starts from: the object's, or, when it has
 * none (its updates were not tracked), an Update by before-first-apply of
 * everything it holds, as the server's SkipNonAppliedManager records it
 * (found by the owner-reference conformance case).
 */
export function managedForApply(s: Storage, t: Target, live: Json, scope: Scope): ManagedEntry[] {
  const entries = parseManaged((live['metadata'] as Json)['managedFields']);
  if (entries.length > 0) return entries;
  const zero = t.st.type.builtin ? overGoZero(apiVersionOf(t.st.type, t.version), t.st.type.kind, undefined) : undefined;
  return recordUpdate([], zero, render(t.st, live, t.version), writeContext(s, t, BEFORE_FIRST_APPLY, scope));
}

/** A uid given in the body of an update or apply is a precondition. */
export function checkPreconditions(t: Target, old: Json, m: Json): void {
  const om = old['metadata'] as Json;
  if (m['uid'] !== undefined && m['uid'] !== '' && m['uid'] !== om['uid']) {
    throw conflict(gr(t.st), t.name!, `Precondition failed: UID in precondition: ${show(m['uid'])}, UID in object meta: ${show(om['uid'])}`);
  }
}

/**
 * Store a new object prepared by create or apply: strategy, validation,
 * namespace, server metadata; 201 with the object (not stored on dry run).
 */
export function finishCreate(s: Storage, t: Target, obj: Json, name: string, managed: (obj: Json) => ManagedEntry[], dry: boolean, applied?: Json): BufferedResponse {
  const m = obj['metadata'] as Json;
  prepareForCreate(s, t, obj);
  zeroStatus(t, obj);
  dropEmpty(t, obj);
  const warnings = [...validate(s, t, obj, undefined), ...(t.st.type.builtin && t.subresource === undefined ? strategyWarnings(t.st.type.group, t.st.type.kind, obj, undefined) : [])];
  if (applied) keepApplied(s, t, applied, obj, 'main');
  // the strategy's warnings come with the answer also when storing fails (AlreadyExists), as the server's do (found by the differential fuzzer)
  return warningsAlways(warnings, () => {
    requireNamespace(s, t, name);
    const key = objKey(t.namespace, name);
    const there = t.st.objects.get(key);
    // found by the differential fuzzer: a create over an object its finalizers hold
    if (there) throw alreadyExists(gr(t.st), name, (there['metadata'] as Json)['deletionTimestamp'] !== undefined);
    m['uid'] = randomUUID();
    m['creationTimestamp'] = s.now();
    if (t.st.type.generation) m['generation'] = 1;
    const entries = managed(obj);
    // a custom resource holding a value its schema cannot type (a list in a string with a format): the server drops its managed fields
    if (entries.length > 0 && (t.st.type.builtin || liveProblem(obj, t.st.schema) === undefined)) m['managedFields'] = renderManaged(entries);
    // what REST storage and admission add after field ownership is recorded (nobody owns it)
    if (t.st.type.builtin) restOnCreate(s, t, obj, m['uid'] as string, dry);
    if (!dry) s.store(t.st, key, obj, undefined, 'ADDED');
    return buffered(201, render(t.st, obj, t.version));
  });
}

/**
 * An apply to a custom resource stores the fields its schema prunes: the
 * server's apply result is never decoded, and only reading prunes (found by
 * the differential fuzzer, seed 381842293: a no-op scale of a Widget applied
 * with an undeclared field in a list item wrote, and watches saw it). So the
 * stored form keeps them: a later write that leaves the object as read still
 * writes (a new resourceVersion, an event), an apply keeping them writes every
 * time, and a schema that later declares them shows them. The same for
 * empty maps and lists in its metadata (`labels: {}`), which reading drops. `applied` is the
 * object as applied; `written` the same object pruned and defaulted; `scope`
 * which part the write wrote.
 */
function keepApplied(s: Storage, t: Target, applied: Json, written: Json, scope: Scope): void {
  if (t.st.type.builtin) return;
  const kept: Json = { ...written };
  for (const k of Object.keys(applied)) {
    if (k === 'metadata' || k === 'apiVersion' || k === 'kind' || (k === 'status') !== (scope === 'status')) continue;
    kept[k] = withPruned(applied[k], written[k]);
  }
  // so are metadata's empty maps and lists (`labels: {}`), which reading drops
  const given = isObject(applied['metadata']) ? applied['metadata'] : {};
  const empty = ['labels', 'annotations', 'finalizers', 'ownerReferences'].filter((k) => written['metadata'] !== undefined && (written['metadata'] as Json)[k] === undefined && (sameJson(given[k], {}) || sameJson(given[k], [])));
  if (scope === 'main' && empty.length > 0) kept['metadata'] = { ...(written['metadata'] as Json), ...Object.fromEntries(empty.map((k) => [k, given[k]])) };
  if (!sameJson(kept, written)) s.storedForm.set(written, kept);
}

/** `written` with the fields `given` has and it lacks (what pruning took) put back, recursively. */
function withPruned(given: unknown, written: unknown): unknown {
  if (written === undefined) return given;
  if (Array.isArray(given) && Array.isArray(written)) return written.map((w, i) => withPruned(given[i], w));
  if (!isObject(given) || !isObject(written)) return written;
  const out: Json = { ...written };
  for (const [k, v] of Object.entries(given)) out[k] = withPruned(v, written[k]);
  return out;
}

export function create(s: Storage, target: Target, req: CoreRequest): BufferedResponse {
  return withDuplicateFields(target, req, fieldValidation(req), (r) => createDecoded(s, target, r));
}

function createDecoded(s: Storage, target: Target, req: CoreRequest): BufferedResponse {
  const t: Target = { ...target, fieldValidation: fieldValidation(req) };
  const given = parseJsonBody(req.body, req.contentType);
  checkKind(t, given);
  const dry = dryRun(req);
  const manager = fieldManager(req, false);
  const { body, warnings } = decodeBody(t, given, fieldValidation(req));
  const obj = structuredClone(body);
  delete obj['apiVersion'];
  delete obj['kind'];
  const m = meta(obj);
  checkNamespace(t, m);
  if ((m['name'] === undefined || m['name'] === '') && typeof m['generateName'] === 'string' && m['generateName'] !== '') {
    // the prefix cut at 58 characters, then five random ones (apiserver's SimpleNameGenerator: 63 at most)
    m['name'] = `${m['generateName'].slice(0, 58)}${[...randomBytes(5)].map((b) => GENERATE_ALPHABET[b % GENERATE_ALPHABET.length]).join('')}`;
  }
  const name = typeof m['name'] === 'string' ? m['name'] : '';
  if (m['resourceVersion'] !== undefined && m['resourceVersion'] !== '' && m['resourceVersion'] !== '0') {
    throw new ApiError(statusOf(500, undefined, 'resourceVersion should not be set on objects to be created'));
  }
  for (const f of SERVER_METADATA) delete m[f];
  // what the writer owns: the object as decoded (defaults included), not what the strategy adds after (a Namespace's spec.finalizers)
  const owned = (o: Json): Json => {
    const r = render(t.st, o, t.version);
    if (t.st.type.group === '' && t.st.type.kind === 'Namespace' && isObject(r['spec'])) {
      const { finalizers: _f, ...spec } = r['spec'];
      if (Object.keys(spec).length > 0) r['spec'] = spec;
      else delete r['spec'];
    }
    return r;
  };
  const zero = t.st.type.builtin ? overGoZero(apiVersionOf(t.st.type, t.version), t.st.type.kind, undefined) : undefined;
  return warningsAlways(warnings, () => finishCreate(s, t, obj, name, (o) => recordUpdate([], zero, owned(o), writeContext(s, t, manager, 'main')), dry));
}

/** What a built-in kind's REST storage and admission add on create, unowned: Service IPs and ports, a Pod's priority and tolerations, a Job's selector. */
function restOnCreate(s: Storage, t: Target, obj: Json, uid: string, dry: boolean): void {
  switch (typeKey(t.st.type.group, t.st.type.plural)) {
    case '/services':
      allocateService(s.services, obj['spec'] as Json | undefined, undefined, dry);
      return;
    case '/pods':
      admitPod(obj['spec'] as Json | undefined);
      return;
    case 'batch/jobs':
      prepareJob(obj, uid);
      return;
    case '/persistentvolumeclaims':
    case '/persistentvolumes': {
      // the StorageObjectInUseProtection admission plugin
      const m = obj['metadata'] as Json;
      const f = t.st.type.kind === 'PersistentVolume' ? 'kubernetes.io/pv-protection' : 'kubernetes.io/pvc-protection';
      const finalizers = Array.isArray(m['finalizers']) ? (m['finalizers'] as string[]) : [];
      if (!finalizers.includes(f)) m['finalizers'] = [...finalizers, f];
      return;
    }
  }
}

/** Kinds whose status strategy keeps the old labels (the apps workloads). */
const STATUS_KEEPS_LABELS = new Set(['apps/deployments', 'apps/statefulsets', 'apps/daemonsets', 'apps/replicasets']);

/**
 * The metadata a built-in kind's status write keeps: what was written
 * (labels, annotations, finalizers...), except the labels of the apps
 * workloads and a Pod's owner references, which their strategies reset.
 * (A custom resource's status write keeps none.)
 */
function statusMetadata(t: Target, old: Json, written: Json): Json {
  const out = { ...written };
  const key = `${t.st.type.group}/${t.st.type.plural}`;
  const reset = STATUS_KEEPS_LABELS.has(key) ? 'labels' : key === '/pods' ? 'ownerReferences' : undefined;
  if (reset) {
    if (old[reset] === undefined) delete out[reset];
    else out[reset] = structuredClone(old[reset]);
  }
  return out;
}

/** The object with the `time` of its managed-fields entries left out (a no-op write does not count as a change by them). */
function withoutManagedTimes(obj: Json): Json {
  const m = obj['metadata'] as Json;
  if (!Array.isArray(m['managedFields'])) return obj;
  const managedFields = (m['managedFields'] as unknown[]).map((e) => {
    if (!isObject(e)) return e;
    const { time: _time, ...rest } = e;
    return rest;
  });
  return { ...obj, metadata: { ...m, managedFields } };
}

/**
 * Finish a write of `next` over `old` (update, patch, apply): server-owned
 * metadata from `old`, generation, no-op detection, finalizers, storage.
 */
export function commit(s: Storage, t: Target, old: Json, next: Json, scope: Scope, entries: ManagedEntry[] | undefined, manager: string, dry: boolean, managedGiven: unknown, applied?: Json): BufferedResponse {
  const om = old['metadata'] as Json;
  const nm = meta(next);
  // A grace period the write gives must be the stored one (an update cannot change it; one it leaves out is kept).
  const grace = nm['deletionGracePeriodSeconds'];
  const graceChanged = grace !== undefined && grace !== null && grace !== om['deletionGracePeriodSeconds'] ? grace : undefined;
  // A deletion time the write gives: on an object being deleted the stored one is kept, but the server's field manager
  // has already seen it (the writer owns `f:metadata.f:deletionTimestamp`); on one that is not, it is immutable
  // (both found by the differential fuzzer).
  const deletionGiven = typeof nm['deletionTimestamp'] === 'string' && nm['deletionTimestamp'] !== om['deletionTimestamp'] ? nm['deletionTimestamp'] : undefined;
  const deletionChanged = om['deletionTimestamp'] === undefined ? deletionGiven : undefined;
  for (const f of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation', 'name', 'namespace']) {
    if (om[f] === undefined) delete nm[f];
    else nm[f] = om[f];
  }
  delete nm['selfLink'];
  if (t.st.type.status) {
    if (scope === 'main') {
      if (old['status'] === undefined) delete next['status'];
      else next['status'] = structuredClone(old['status']);
    } else {
      // the status subresource writes status, and on built-in kinds the metadata their status strategies keep
      const status = next['status'];
      const written = next['metadata'] as Json;
      for (const k of Object.keys(next)) delete next[k];
      Object.assign(next, structuredClone(old));
      if (status === undefined) delete next['status'];
      else next['status'] = status;
      if (t.st.type.builtin) next['metadata'] = statusMetadata(t, old['metadata'] as Json, written);
    }
  }
  const nextMeta = next['metadata'] as Json;
  foldStringData(t, next);
  zeroStatus(t, next);
  dropEmpty(t, next);
  if (t.st.type.builtin && t.st.type.group === 'apiextensions.k8s.io' && t.st.type.kind === 'CustomResourceDefinition') crdDefaults(next);
  const warnings = validate(s, t, next, old, { deletionTimestamp: deletionChanged, deletionGracePeriodSeconds: graceChanged });
  // the generation moves with the spec, and a workload's strategy warns about its pod template only then
  const generationMoves = t.st.type.generation && specChanged(t, old, next);
  if (t.st.type.builtin && scope === 'main') warnings.push(...strategyWarnings(t.st.type.group, t.st.type.kind, next, old, generationMoves));
  if (applied) keepApplied(s, t, applied, next, scope);
  if (generationMoves) nextMeta['generation'] = ((om['generation'] as number | undefined) ?? 0) + 1;
  // managed fields
  let managed: ManagedEntry[];
  if (entries) managed = entries;
  else {
    const given = managedGiven !== undefined && managedGiven !== null;
    const base = given ? parseManaged(managedGiven) : parseManaged(om['managedFields']);
    const before = render(t.st, old, t.version);
    // An object without managed fields (created with nothing to own, or reset) has updates untracked until its
    // first apply (the server's SkipNonAppliedManager); that apply records them as before-first-apply.
    const written = render(t.st, next, t.version);
    const seen = deletionGiven === undefined ? written : { ...written, metadata: { ...(written['metadata'] as Json), deletionTimestamp: deletionGiven } };
    managed = !given && base.length === 0 ? [] : recordUpdate(base, t.st.type.builtin ? overGoZero(before['apiVersion'] as string, t.st.type.kind, before) : before, seen, writeContext(s, t, manager, scope));
  }
  if (t.st.type.builtin && scope === 'main' && typeKey(t.st.type.group, t.st.type.plural) === '/services') allocateService(s.services, next['spec'] as Json | undefined, old, dry);
  // a custom resource its schema cannot type (a value stored before the schema changed, let through by ratcheting):
  // the server's field manager fails on it and keeps the live object's managed fields, whoever wrote (found by the
  // schema-change fuzzer, seeds 908583713 and 965371385)
  const untypable = entries === undefined && !t.st.type.builtin && (liveProblem(render(t.st, old, t.version), t.st.schema) ?? liveProblem(render(t.st, next, t.version), t.st.schema)) !== undefined;
  const rendered = untypable ? (Array.isArray(om['managedFields']) ? structuredClone(om['managedFields'] as unknown[]) : []) : renderManaged(managed);
  if (rendered.length > 0) nextMeta['managedFields'] = rendered;
  else delete nextMeta['managedFields'];
  nextMeta['resourceVersion'] = om['resourceVersion'];
  // A write that changes nothing as the server sees it (key order and
  // managed-field times aside) is a no-op: same resourceVersion, no event,
  // no generation bump, the stored object answered; unless what is stored
  // differs from what is read (see keepApplied).
  if (!s.storedForm.has(old) && !s.storedForm.has(next) && sameJson(withoutManagedTimes(old), withoutManagedTimes(next))) return withWarnings(buffered(200, render(t.st, old, t.version)), warnings);
  if (dry) return withWarnings(buffered(200, render(t.st, next, t.version)), warnings);
  const key = objKey(t.namespace, om['name'] as string);
  const finalizers = (nextMeta['finalizers'] as string[] | undefined) ?? [];
  // a Namespace also waits for its spec.finalizers (the namespace storage's rule)
  const nsFinalizers = t.st.type.group === '' && t.st.type.kind === 'Namespace' && isObject(next['spec']) && Array.isArray(next['spec']['finalizers']) ? next['spec']['finalizers'] : [];
  if (om['deletionTimestamp'] !== undefined && finalizers.length === 0 && nsFinalizers.length === 0) {
    // The last finalizer is gone: the object goes. As on a real server, the
    // DELETED event carries the object as it was stored (finalizer included);
    // the answer is the object as written.
    s.store(t.st, key, structuredClone(old), old, 'DELETED');
    return withWarnings(buffered(200, render(t.st, next, t.version)), warnings);
  }
  s.store(t.st, key, next, old, 'MODIFIED');
  return withWarnings(buffered(200, render(t.st, next, t.version)), warnings);
}

export function update(s: Storage, target: Target, req: CoreRequest): BufferedResponse {
  return withDuplicateFields(target, req, fieldValidation(req), (r) => updateDecoded(s, target, r));
}

function updateDecoded(s: Storage, target: Target, req: CoreRequest): BufferedResponse {
  const t: Target = { ...target, fieldValidation: fieldValidation(req) };
  const given = parseJsonBody(req.body, req.contentType);
  checkKind(t, given);
  const dry = dryRun(req);
  const manager = fieldManager(req, false);
  const { body, warnings } = decodeBody(t, given, fieldValidation(req));
  const next = structuredClone(body);
  delete next['apiVersion'];
  delete next['kind'];
  const m = meta(next);
  if (m['name'] !== undefined && m['name'] !== t.name) throw badRequest(`the name of the object (${show(m['name'])}) does not match the name on the URL (${t.name!})`);
  checkNamespace(t, m);
  // a kind whose strategy allows create-on-update (Lease, Endpoints, Event, LimitRange, Service, RBAC: per-kind facts) is created by a PUT of a missing name
  if (t.subresource === undefined && t.st.type.builtin && createsOnUpdate(t.st.type.group, t.st.type.kind) && !t.st.objects.has(objKey(t.namespace, t.name!))) return createDecoded(s, target, req);
  // a missing custom resource: the decoder's unknown-field warnings (or Strict's 400) come before the 404
  if (!t.st.objects.has(objKey(t.namespace, t.name!))) return warningsAlways([...warnings, ...unknownFieldWarnings(t, given)], () => existing(t) as never);
  const old = existing(t);
  const om = old['metadata'] as Json;
  checkPreconditions(t, old, m);
  if (m['resourceVersion'] === undefined || m['resourceVersion'] === '') {
    if (!t.st.type.unconditionalUpdate) {
      // the store names the resource here, not the kind (found by the differential fuzzer)
      throw invalid(t.st.type.group, t.st.type.plural, t.name!, [{ type: 'FieldValueInvalid', field: 'metadata.resourceVersion', value: 0, detail: 'must be specified for an update' }]);
    }
  } else if (m['resourceVersion'] !== om['resourceVersion']) throw conflict(gr(t.st), t.name!, MODIFIED);
  const scope: Scope = t.subresource === 'status' ? 'status' : 'main';
  return warningsAlways(warnings, () => commit(s, t, old, next, scope, undefined, manager, dry, m['managedFields']));
}
