/**
 * Subresources beyond status (which the write path handles with its
 * scope): `scale` as an autoscaling/v1 Scale read from and written to the
 * replicas paths of the kind (built-in workloads, CRDs that declare one);
 * a Pod's `eviction`, a ServiceAccount's `token` and a Namespace's
 * `finalize`.
 */
import { canonical, isObject, show } from './json.js';
import type { Json } from './json.js';
import { existing } from './list.js';
import { jsonPatch, mergePatch } from './patch-formats.js';
import { buffered, dryRun, fieldManager, goBool, parseJsonBody } from './request-info.js';
import type { BufferedResponse, CoreRequest, Target } from './request-info.js';
import { ApiError, badRequest, conflict, internalError, invalid, MODIFIED, statusOf } from './status.js';
import { apiVersionOf, gr } from './storage.js';
import type { Storage } from './storage.js';
import { commit } from './write.js';
import { apply, conflictMessage, conflictWith, parseManaged, recordUpdate, renderManaged, SEP, sortConflicts } from './fields.js';
import type { ManagedEntry, WriteContext } from './fields.js';
import { deleteObject } from './delete.js';
import { decodeBuiltin, DecodeError } from './openapi/decode.js';
import { createHash, randomUUID } from 'node:crypto';

/** The value at a replicas or selector path of `obj` (undefined where the path stops). */
function readPath(obj: Json, path: readonly string[]): unknown {
  return path.reduce<unknown>((cur, k) => (isObject(cur) ? cur[k] : undefined), obj);
}

function scaleOf(t: Target, obj: Json): Json {
  const spec = t.st.type.scale!;
  const read = (p: readonly string[]): unknown => readPath(obj, p);
  const selector = spec.labelSelectorPath ? read(spec.labelSelectorPath) : undefined;
  const m = obj['metadata'] as Json;
  let selectorText: string | undefined;
  if (typeof selector === 'string') selectorText = selector;
  else if (isObject(selector) && isObject(selector['matchLabels'])) {
    selectorText = Object.entries(selector['matchLabels']).map(([k, v]) => `${k}=${String(v)}`).join(',');
  }
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: { name: m['name'], ...(m['namespace'] ? { namespace: m['namespace'] } : {}), uid: m['uid'], resourceVersion: m['resourceVersion'], creationTimestamp: m['creationTimestamp'] },
    // ScaleSpec.replicas is an omitempty int32: 0 is not written (found by the fuzzer)
    spec: ((read(spec.specReplicasPath) as number | undefined) ?? 0) === 0 ? {} : { replicas: read(spec.specReplicasPath) },
    status: { replicas: (read(spec.statusReplicasPath) as number | undefined) ?? 0, ...(selectorText ? { selector: selectorText } : {}) },
  };
}

export function getScale(t: Target): BufferedResponse {
  const obj = existing(t);
  // A custom resource's Scale is read only when its spec replicas field is there: apiextensions' ScaleREST.Get
  // answers a 500 otherwise (its writes take a missing one as 0; found by a 2,000-sequence random run of the
  // differential fuzzer, seed 16416312)
  const path = t.st.type.scale!.specReplicasPath;
  if (!t.st.type.builtin && readPath(obj, path) === undefined) {
    throw internalError(`the spec replicas field "${path.map((k) => `.${k}`).join('')}" does not exist`);
  }
  return buffered(200, scaleOf(t, obj));
}

/**
 * A Scale as the server reads it: decoded into its Go type, so a missing or
 * null `spec.replicas` is 0, and a value of the wrong type is the decoder's
 * error. A patch is decoded after it is applied, and its error quotes what it
 * left, as for any patch of a built-in kind; a body is decoded before any
 * handler sees it, and the server answers 400 with its scheme's message
 * (both found by the differential fuzzer, random seed 2080145716, and
 * checked against envtest in conformance/subresources.test.ts).
 */
function decodeScale(scale: Json, patched: { readonly original: Json; readonly touched: ReadonlySet<string> | 'all' } | undefined): Json {
  try {
    return decodeBuiltin(scale, 'autoscaling/v1', 'Scale', 'Ignore')?.object ?? scale;
  } catch (err) {
    if (!(err instanceof DecodeError)) throw err;
    if (patched) throw invalid('', '', '', [{ type: 'FieldValueInvalid', field: 'patch', value: quotePatched(scale, patched.original, patched.touched), detail: err.message }]);
    throw badRequest('no kind is registered for the type v1.Scale in scheme "pkg/runtime/scheme.go:111"');
  }
}

/**
 * A patched Scale as kube-apiserver quotes it: its patch library decodes the object into a map, so
 * the top level and every member a patch went into are encoded again with their keys sorted (Go
 * sorts map keys), while a member it did not touch keeps the bytes the Scale was encoded with, in
 * its Go type's field order (what scaleOf builds). Found by the differential fuzzer.
 */
function quotePatched(scale: Json, original: Json, touched: ReadonlySet<string> | 'all'): string {
  const members = Object.keys(scale)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${touched !== 'all' && !touched.has(k) && k in original ? JSON.stringify(original[k]) : canonical(scale[k])}`);
  return `{${members.join(',')}}`;
}

/** The top-level members of a Scale a patch goes into: a merge patch's keys, a JSON patch's first path segments; for anything else all. */
function touchedBy(body: unknown, contentType: string): ReadonlySet<string> | 'all' {
  const first = (pointer: unknown): string | undefined => (typeof pointer === 'string' ? pointer.split('/')[1]?.replaceAll('~1', '/').replaceAll('~0', '~') : undefined);
  if (contentType === 'application/json-patch+json' && Array.isArray(body)) {
    const ops = body as unknown[];
    return new Set(ops.flatMap((op) => (isObject(op) ? [first(op['path']), first(op['from'])].filter((k): k is string => k !== undefined) : [])));
  }
  if (contentType === 'application/merge-patch+json' && isObject(body)) return new Set(Object.keys(body));
  return 'all';
}

function setReplicas(s: Storage, t: Target, req: CoreRequest, given: Json, patched?: { readonly original: Json; readonly touched: ReadonlySet<string> | 'all' }, applied?: { readonly manager: string; readonly entries: ManagedEntry[] }): BufferedResponse {
  const old = existing(t);
  const scale = decodeScale(given, patched);
  const sm = isObject(scale['metadata']) ? scale['metadata'] : {};
  if (sm['resourceVersion'] !== undefined && sm['resourceVersion'] !== '' && sm['resourceVersion'] !== (old['metadata'] as Json)['resourceVersion']) {
    throw conflict(gr(t.st), t.name!, MODIFIED);
  }
  const replicas = (isObject(scale['spec']) ? scale['spec']['replicas'] : undefined) ?? 0;
  // a custom resource's scale names the resource and its specReplicasPath (found by the differential fuzzer, random seed 598263986)
  if (!t.st.type.builtin && typeof replicas === 'number' && Number.isInteger(replicas) && replicas < 0) {
    throw invalid(t.st.type.group, t.st.type.kind, t.name!, [{ type: 'FieldValueInvalid', field: `.${t.st.type.scale!.specReplicasPath.join('.')}`, value: replicas, detail: 'should be a non-negative integer' }]);
  }
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
    throw invalid('autoscaling', 'Scale', t.name!, [{ type: 'FieldValueInvalid', field: 'spec.replicas', value: replicas, detail: 'must be greater than or equal to 0' }]);
  }
  const next = structuredClone(old);
  const path = t.st.type.scale!.specReplicasPath;
  let cur = next;
  for (const k of path.slice(0, -1)) {
    if (!isObject(cur[k])) cur[k] = {};
    cur = cur[k] as Json;
  }
  cur[path[path.length - 1]!] = replicas;
  const manager = applied?.manager ?? fieldManager(req, false);
  const res = commit(s, t, old, next, 'main', applied?.entries ?? updatedThroughScale(s, t, old, next, manager), manager, dryRun(req), undefined);
  // the parent's strategy warnings (a Deployment's pod template) come with the Scale
  const warning = res.headers['warning'];
  const out = buffered(res.status, scaleOf(t, JSON.parse(res.body) as Json));
  return typeof warning === 'string' ? { ...out, headers: { ...out.headers, warning } } : out;
}

/**
 * The parent's managed fields after an update (not an apply) of its Scale: recorded on the Scale's view
 * (its managers of `spec.replicas`, the writer in autoscaling/v1 with subresource `scale`), then mapped
 * back as `toParent` does. Undefined for an object without managed fields, whose updates are not tracked.
 */
function updatedThroughScale(s: Storage, t: Target, old: Json, next: Json, manager: string): ManagedEntry[] | undefined {
  if (parseManaged((old['metadata'] as Json)['managedFields']).length === 0) return undefined;
  const ctx: WriteContext = { manager, apiVersion: 'autoscaling/v1', time: s.now(), scope: 'main', hasStatus: false, shape: t.st.shape, subresource: 'scale' };
  const view = (o: Json): Json => ({ spec: scaleOf(t, o)['spec'] });
  return toParent(t, old, recordUpdate(scaleEntries(t, old), view(old), view(next), ctx));
}

export function updateScale(s: Storage, t: Target, req: CoreRequest): BufferedResponse {
  return setReplicas(s, t, req, parseJsonBody(req.body, req.contentType));
}

/**
 * The managed fields a Scale is patched with: kube-apiserver's scale handler gives the Scale an entry for each of
 * the parent's managers whose fields hold the replicas path, in autoscaling/v1 and owning `spec.replicas` alone,
 * ordered as the server orders managed fields (Apply before Update, then by time, manager, apiVersion). A GET of
 * the Scale shows none; a patch that fails to decode quotes them (found by the conformance suite).
 */
function scaleManagedFields(t: Target, parent: Json): Json[] {
  return renderManaged(scaleEntries(t, parent));
}

const SCALE_REPLICAS = `f:spec${SEP}f:replicas`;

function parentReplicas(t: Target): string {
  return t.st.type.scale!.specReplicasPath.map((k) => `f:${k}`).join(SEP);
}

function scaleEntries(t: Target, parent: Json): ManagedEntry[] {
  const replicas = parentReplicas(t);
  const known = new Set(t.st.type.versions.map((v) => (t.st.type.group ? `${t.st.type.group}/${v}` : v)));
  return parseManaged((parent['metadata'] as Json)['managedFields'])
    .filter((e) => known.has(e.apiVersion) && e.set.has(replicas))
    .map((e) => ({ ...e, apiVersion: 'autoscaling/v1', set: new Set([SCALE_REPLICAS]) }));
}

/**
 * The parent's managed fields after a write to its Scale, as the server's
 * scale handler maps them back: the replicas path leaves every parent entry
 * (an entry left empty goes, the others keep their times), then each Scale
 * entry owning `spec.replicas` owns the parent's replicas path again. The
 * server keys managers by name, operation and subresource, and an Update's
 * by its apiVersion too: an Apply's replicas join the applier's entry, but
 * a Scale's Update entry (in autoscaling/v1) never meets its parent entry,
 * so its replicas come back in an entry of their own, in the parent's
 * apiVersion and without a time (an `Update` owner of replicas and other
 * fields is split in two by any write to the Scale; found by the
 * 2,000-sequence random run, seed 2026, and probed on envtest).
 */
function toParent(t: Target, parent: Json, scaleResult: readonly ManagedEntry[]): ManagedEntry[] {
  const replicas = parentReplicas(t);
  const apiVersion = apiVersionOf(t.st.type, t.version);
  const out = parseManaged((parent['metadata'] as Json)['managedFields']).map((e) => ({ ...e, set: new Set([...e.set].filter((p) => p !== replicas)) }));
  for (const e of scaleResult) {
    if (!e.set.has(SCALE_REPLICAS)) continue;
    const same = e.operation === 'Apply' ? out.find((o) => o.manager === e.manager && o.operation === 'Apply' && o.subresource === e.subresource) : undefined;
    if (same) same.set.add(replicas);
    else out.push({ manager: e.manager, operation: e.operation, apiVersion, time: '', subresource: e.subresource, set: new Set([replicas]) });
  }
  return out.filter((e) => e.set.size > 0);
}

/**
 * Server-side apply of a Scale: conflicts are checked against the parent's
 * owners of its replicas path, seen as owners of the Scale's
 * `spec.replicas` in autoscaling/v1 (`conflict with "x" using
 * autoscaling/v1`); the applier then owns the replicas path of the parent
 * with subresource `scale`. A custom resource's Scale cannot be converted
 * back once the apply succeeds: the server answers 500 (found by the
 * 2,000-sequence random fuzzer run, seed 2026).
 */
export function applyScale(s: Storage, t: Target, req: CoreRequest, config: Json): BufferedResponse {
  const parent = existing(t);
  const manager = fieldManager(req, true);
  const force = goBool(req.query.get('force'));
  const cm = isObject(config['metadata']) ? config['metadata'] : {};
  if (cm['name'] !== undefined && cm['name'] !== t.name) throw badRequest(`the name of the object (${show(cm['name'])}) does not match the name on the URL (${t.name!})`);
  if (!t.st.type.builtin && scaleEntries(t, parent).length === 0) {
    // the Scale's view has no managed fields (no entry of the parent owns its replicas, or it has none at all): the server first
    // records what the Scale holds as before-first-apply, through a Scale it cannot convert (found by the differential fuzzer)
    throw new ApiError(statusOf(500, undefined, 'failed to create manager for existing fields: failed to convert live object (/; autoscaling/v1, Kind=Scale) to proper version: request to convert CR to an invalid group/version: autoscaling/v1'));
  }
  const current = scaleOf(t, parent);
  const spec = isObject(config['spec']) ? config['spec'] : {};
  const wanted: Json = 'replicas' in spec ? { spec: { replicas: spec['replicas'] } } : {};
  const ctx: WriteContext = { manager, apiVersion: 'autoscaling/v1', time: s.now(), scope: 'main', hasStatus: false, shape: t.st.shape, subresource: 'scale' };
  const result = apply(scaleEntries(t, parent), current, wanted, ctx, force);
  if (!result.ok) {
    throw new ApiError(
      statusOf(409, 'Conflict', conflictMessage(result.conflicts), {
        causes: sortConflicts(result.conflicts).map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with ${conflictWith(c)}`, field: c.path })),
      }),
    );
  }
  const applied = isObject(result.object['spec']) ? result.object['spec']['replicas'] : undefined;
  const before = isObject(current['spec']) ? current['spec']['replicas'] : undefined;
  // the server converts the new Scale back only when the apply changed it: one that leaves the replicas is a 200
  // (found by the 2,000-sequence random run, seed 2026)
  if (!t.st.type.builtin && applied !== before) {
    // the message names the applied Scale's own namespace: empty when its metadata leaves it out (found by the random run, seed 1512122803)
    const ns = typeof cm['namespace'] === 'string' ? cm['namespace'] : '';
    throw new ApiError(statusOf(500, undefined, `failed to convert new object (${ns}/${t.name!}; autoscaling/v1, Kind=Scale) to proper version: request to convert CR to an invalid group/version: autoscaling/v1`));
  }
  const next: Json = { ...current, spec: applied === undefined ? {} : { replicas: applied } };
  return setReplicas(s, t, req, next, undefined, { manager, entries: toParent(t, parent, result.entries) });
}

export function patchScale(s: Storage, t: Target, req: CoreRequest, contentType: string): BufferedResponse {
  const parent = existing(t);
  const current = scaleOf(t, parent);
  const managed = scaleManagedFields(t, parent);
  if (managed.length > 0) current['metadata'] = { ...(current['metadata'] as Json), managedFields: managed };
  let body: unknown;
  try {
    body = JSON.parse(req.body ?? '');
  } catch (cause) {
    throw badRequest(`error decoding patch: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
  const patched = contentType === 'application/json-patch+json' ? jsonPatch(current, body) : (mergePatch(current, body) as Json);
  return setReplicas(s, t, req, patched, { original: current, touched: touchedBy(body, contentType) });
}

/**
 * `POST pods/{name}/eviction`: the Pod is deleted with the Eviction's
 * `deleteOptions`, 201 with a success Status. PodDisruptionBudgets are not
 * consulted: kube-apiserver ignores them for a Pending Pod, and no Pod of
 * the fake runs (docs/testing-fake.md).
 */
export function evict(s: Storage, t: Target, req: CoreRequest): BufferedResponse {
  const body = parseJsonBody(req.body, req.contentType);
  if (body['kind'] !== undefined && body['kind'] !== 'Eviction') throw badRequest(`the kind in the data (${show(body['kind'])}) does not match the expected kind (Eviction)`);
  const m = isObject(body['metadata']) ? body['metadata'] : {};
  if (m['name'] !== undefined && m['name'] !== t.name) throw badRequest('name in URL does not match name in Eviction object');
  const pod: Target = { ...t, subresource: undefined };
  const obj = existing(pod);
  const opts = isObject(body['deleteOptions']) ? body['deleteOptions'] : {};
  const dry = dryRun(req) || (Array.isArray(opts['dryRun']) && (opts['dryRun'] as unknown[]).includes('All'));
  deleteObject(s, pod, obj, opts, dry);
  return buffered(201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
}

/**
 * `PUT namespaces/{name}/finalize`: only `spec.finalizers` changes; a
 * terminating Namespace left without finalizers goes, as the namespace
 * storage deletes it during that update.
 */
export function finalizeNamespace(s: Storage, t: Target, req: CoreRequest): BufferedResponse {
  const body = parseJsonBody(req.body, req.contentType);
  const m = isObject(body['metadata']) ? body['metadata'] : {};
  if (m['name'] !== undefined && m['name'] !== t.name) throw badRequest(`the name of the object (${show(m['name'])}) does not match the name on the URL (${t.name!})`);
  const ns: Target = { ...t, subresource: undefined };
  const old = existing(ns);
  const rv = m['resourceVersion'];
  if (rv !== undefined && rv !== '' && rv !== (old['metadata'] as Json)['resourceVersion']) throw conflict(gr(t.st), t.name!, MODIFIED);
  const next = structuredClone(old);
  const finalizers = isObject(body['spec']) && Array.isArray(body['spec']['finalizers']) ? (body['spec']['finalizers'] as unknown[]) : [];
  const spec = isObject(next['spec']) ? { ...next['spec'] } : {};
  if (finalizers.length > 0) spec['finalizers'] = finalizers;
  else delete spec['finalizers'];
  next['spec'] = spec;
  // the server records no field ownership for a finalize
  return commit(s, ns, old, next, 'main', parseManaged((old['metadata'] as Json)['managedFields']), fieldManager(req, false), dryRun(req), undefined);
}

/**
 * `POST serviceaccounts/{name}/token`: a TokenRequest answered with a
 * token for the account. The token is JWT-shaped with the claims a real
 * one has (issuer, subject, audiences, expiry, the account's name and
 * uid) but it is not signed: nothing verifies it against the fake.
 */
export function tokenRequest(s: Storage, t: Target, req: CoreRequest): BufferedResponse {
  const body = parseJsonBody(req.body, req.contentType);
  const account = existing({ ...t, subresource: undefined });
  const spec = isObject(body['spec']) ? body['spec'] : {};
  const expirationSeconds = spec['expirationSeconds'] === undefined || spec['expirationSeconds'] === null ? 3600 : spec['expirationSeconds'];
  if (typeof expirationSeconds !== 'number' || !Number.isInteger(expirationSeconds)) throw badRequest('TokenRequest in version "v1" cannot be handled as a TokenRequest: spec.expirationSeconds must be an integer');
  if (expirationSeconds < 600) {
    throw invalid('authentication.k8s.io', 'TokenRequest', '', [{ type: 'FieldValueInvalid', field: 'spec.expirationSeconds', value: expirationSeconds, detail: 'may not specify a duration less than 10 minutes' }]);
  }
  const audiences = Array.isArray(spec['audiences']) && spec['audiences'].length > 0 ? (spec['audiences'] as string[]) : [FAKE_ISSUER];
  const now = Date.parse(s.now());
  const expires = new Date(now + expirationSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const am = account['metadata'] as Json;
  const claims = {
    aud: audiences,
    exp: Math.floor(now / 1000) + expirationSeconds,
    iat: Math.floor(now / 1000),
    iss: FAKE_ISSUER,
    jti: randomUUID(),
    'kubernetes.io': { namespace: t.namespace, serviceaccount: { name: t.name, uid: am['uid'] } },
    nbf: Math.floor(now / 1000),
    sub: `system:serviceaccount:${t.namespace!}:${t.name!}`,
  };
  const part = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url');
  const unsigned = `${part({ alg: 'none', kid: 'kubeloop-fake' })}.${part(claims)}`;
  const token = `${unsigned}.${createHash('sha256').update(unsigned).digest('base64url')}`;
  return buffered(201, {
    kind: 'TokenRequest',
    apiVersion: 'authentication.k8s.io/v1',
    metadata: { name: t.name, namespace: t.namespace, creationTimestamp: null },
    spec: { audiences, expirationSeconds, boundObjectRef: isObject(spec['boundObjectRef']) ? spec['boundObjectRef'] : null },
    status: { token, expirationTimestamp: expires },
  });
}

/** The issuer (and default audience) of the fake's service account tokens. */
export const FAKE_ISSUER = 'https://kubernetes.default.svc.cluster.local';
