/**
 * Patches, as kube-apiserver's patch handler takes them: JSON patch, JSON
 * merge patch and strategic merge patch (built-in kinds only; 415 for a
 * custom resource) applied to the stored object, then written through
 * `commit`; server-side apply (YAML or JSON) with field ownership, which
 * creates when the object is missing and answers conflicts as the server
 * does.
 */
import { parseJson } from '@kubeloop/scheme';
import { apply, conflictMessage, conflictWith, sortConflicts } from './fields.js';
import type { Scope } from './fields.js';
import { canonical, isObject, meta, objKey, sameJson, show } from './json.js';
import type { Json } from './json.js';
import { goFormat } from './go-format.js';
import { inGoFieldOrder, quotePatchedObject } from './patch-quote.js';
import { existing } from './list.js';
import { jsonPatch, mergePatch, strategicMerge } from './patch-formats.js';
import { applyProblem, decodeBuiltin, DecodeError, fillAppliedNulls, objectMetaProblem } from './openapi/decode.js';
import { kindSchema } from './openapi/model.js';
import { buffered, dryRun, fieldManager, fieldValidation, goBool, warningsAlways, withWarnings } from './request-info.js';
import type { BufferedResponse, CoreRequest, Target } from './request-info.js';
import { ApiError, badRequest, conflict, internalError, invalid, MODIFIED, notFound, statusOf, unsupportedMediaType } from './status.js';
import type { FieldError } from './status.js';
import { apiVersionOf, gr, render } from './storage.js';
import type { Storage } from './storage.js';
import { applyScale, patchScale } from './subresources.js';
import { defaultBuiltin } from './defaults.js';
import { checkKind, checkNamespace, checkPreconditions, commit, decodeBody, finishCreate, managedForApply, SERVER_METADATA, writeContext } from './write.js';
import { liveProblem } from './crd-check.js';
import { safeDuplicates, yamlDuplicates } from './duplicates.js';

const PATCH_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/apply-patch+yaml', 'application/apply-patch+cbor'];
const CR_PATCH_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml', 'application/apply-patch+cbor'];


/** The error decoding `obj` gives (undefined: none, or one of another kind). */
function firstDecodeError(obj: Json, apiVersion: string, kind: string, validation: ReturnType<typeof fieldValidation>, converter: boolean): DecodeError | undefined {
  try {
    decodeBuiltin(obj, apiVersion, kind, validation, converter);
    return undefined;
  } catch (err) {
    return err instanceof DecodeError ? err : undefined;
  }
}

export function patch(s: Storage, target: Target, req: CoreRequest): BufferedResponse {
  const contentType = (req.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const accepted = target.st.type.builtin ? PATCH_TYPES : CR_PATCH_TYPES;
  if (!accepted.includes(contentType) || contentType === 'application/apply-patch+cbor') throw unsupportedMediaType(accepted);
  // PatchOptions' `force` is a pointer: given at all (even `false`) on a non-apply patch, it is refused before the object is read
  if (contentType !== 'application/apply-patch+yaml' && req.query.has('force')) {
    throw invalid('meta.k8s.io', 'PatchOptions', '', [{ type: 'FieldValueForbidden', field: 'force', detail: 'may not be specified for non-apply patch' }]);
  }
  if (target.subresource === 'scale') return contentType === 'application/apply-patch+yaml' ? applyScale(s, target, req, parseApplyBody(req.body).value) : patchScale(s, target, req, contentType);
  if (contentType === 'application/apply-patch+yaml') return applyPatch(s, target, req);
  const t: Target = { ...target, fieldValidation: fieldValidation(req) };
  const dry = dryRun(req);
  const manager = fieldManager(req, false);
  let patchBody: unknown;
  try {
    patchBody = parseJson(req.body ?? '');
  } catch (cause) {
    throw badRequest(`error decoding patch: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
  // a key the patch repeats: the decoder's warning, or with Strict its error once the patched object decodes (measured on
  // kube-apiserver v1.37.2; a JSON patch's are told as `json patch duplicate field "[0].value"`)
  const validation = fieldValidation(req);
  const repeats = (validation === 'Ignore' || req.body === undefined ? [] : safeDuplicates(req.body)).map((p) => `${contentType === 'application/json-patch+json' ? 'json patch ' : ''}duplicate field ${JSON.stringify(p)}`);
  const old = existing(t);
  const current = render(t.st, old, t.version);
  let patched: Json;
  if (contentType === 'application/json-patch+json') patched = jsonPatch(current, patchBody);
  else {
    if (!isObject(patchBody)) {
      // as the server decodes a patch that is not an object into a Go map (measured on kube-apiserver v1.37.2); a merge
      // patch of null is told as its JSON patch library's error
      const strategic = contentType === 'application/strategic-merge-patch+json';
      if (patchBody === null && !strategic) throw badRequest('Invalid JSON Patch');
      const what = patchBody === null ? 'null' : Array.isArray(patchBody) ? 'array' : typeof patchBody === 'string' ? 'string' : typeof patchBody === 'boolean' ? 'bool' : 'number';
      const words = `json: cannot unmarshal ${what} into Go value of type map[string]interface {}`;
      throw badRequest(strategic ? words : `error decoding patch: ${words}`);
    }
    patched = (contentType === 'application/merge-patch+json' ? mergePatch(current, patchBody) : strategicMerge(current, patchBody, t.st.shape)) as Json;
  }
  if (!isObject(patched)) throw badRequest('the patch does not leave an object');
  patched = typeMetaAfterPatch(s, t, current, patched, patchBody, contentType, validation);
  const beforeDecoding = patched;
  let warnings: readonly string[] = [];
  if (t.st.type.builtin) {
    // the patched object is decoded into the kind's Go type: errors are the patch's, 422
    try {
      const decoded = decodeBuiltin(patched, current['apiVersion'] as string, t.st.type.kind, fieldValidation(req), contentType === 'application/strategic-merge-patch+json');
      if (decoded) {
        defaultBuiltin(current['apiVersion'] as string, t.st.type.group, t.st.type.kind, decoded.object);
        patched = { ...decoded.object, apiVersion: patched['apiVersion'], kind: patched['kind'] };
        warnings = decoded.warnings;
      }
    } catch (caught) {
      if (!(caught instanceof DecodeError)) throw caught;
      // the server's decoder meets the members in the order of the bytes it decodes, and reports the first bad one: a
      // strategic merge patch's result in its Go types' field order (the unstructured converter walks the structs), the
      // other patches' results as their library encoded them (the quote); decoded again in that order for its error
      const strategic = contentType === 'application/strategic-merge-patch+json';
      const quote = strategic ? undefined : quotePatchedObject(patched, current, patchBody, contentType);
      const err = firstDecodeError(parseJson(quote ?? inGoFieldOrder(patched)) as Json, current['apiVersion'] as string, t.st.type.kind, fieldValidation(req), strategic) ?? caught;
      // a strategic merge patch's result goes to the Go type through the unstructured converter, and the server quotes
      // the patch itself in Go's notation (`map[data:map[x:...]]`); the other patches' results are decoded as JSON
      if (strategic && !err.message.startsWith('strict decoding error')) {
        throw invalid('', '', '', [{ type: 'FieldValueInvalid', field: 'patch', value: goFormat(patchBody), detail: err.converter ?? err.message }]);
      }
      throw invalid('', '', '', [{ type: 'FieldValueInvalid', field: 'patch', value: quote ?? quotePatchedObject(patched, current, patchBody, contentType), detail: err.message }]);
    }
  }
  if (validation === 'Strict' && repeats.length > 0) {
    const strategic = contentType === 'application/strategic-merge-patch+json';
    // a custom resource's result quoted with its managed fields (found by the differential fuzzer, random seed 1195077979)
    const quote = strategic ? goFormat(patchBody) : quotePatchedObject(beforeDecoding, current, patchBody, contentType, !t.st.type.builtin);
    throw invalid('', '', '', [{ type: 'FieldValueInvalid', field: 'patch', value: quote, detail: `strict decoding error: ${repeats.join(', ')}` }]);
  }
  if (validation === 'Warn') warnings = [...repeats, ...warnings];
  if (!t.st.type.builtin) {
    // a custom resource's patched metadata is decoded into ObjectMeta: a value of the wrong type is the patch's 422,
    // quoting the result as the unstructured encoder wrote it, managed fields included (measured on kube-apiserver v1.37.2)
    const problem = objectMetaProblem(patched['metadata']);
    if (problem) throw invalid('', '', '', [{ type: 'FieldValueInvalid', field: 'patch', value: quotePatchedObject(patched, current, patchBody, contentType, true), detail: problem.message }]);
  }
  // what the decoder warned about comes with the answer, also when the write then fails (found by the differential
  // fuzzer, seed 176792298: a repeated key in a merge patch that an immutable field then refused)
  return warningsAlways(warnings, () => {
    delete patched['apiVersion'];
    delete patched['kind'];
    const m = meta(patched);
    // a patch that takes the name away (`replace /metadata/name` without a value) leaves none to compare: the server's
    // namer says so (measured on kube-apiserver v1.37.2)
    if (m['name'] === undefined || m['name'] === null || m['name'] === '') throw badRequest(`the name of the object (${t.name!} based on URL) was undeterminable: name must be provided`);
    if (m['name'] !== t.name) throw badRequest(`the name of the object (${show(m['name'])}) does not match the name on the URL (${t.name!})`);
    if (t.st.type.namespaced && m['namespace'] !== t.namespace) throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    const oldUid = (old['metadata'] as Json)['uid'];
    if (m['uid'] !== oldUid) {
      throw invalid(t.st.type.group, t.st.type.kind, t.name, [{ type: 'FieldValueInvalid', field: 'metadata.uid', value: m['uid'] ?? '', detail: 'field is immutable' }]);
    }
    if (m['resourceVersion'] !== undefined && m['resourceVersion'] !== (old['metadata'] as Json)['resourceVersion']) throw conflict(gr(t.st), t.name, MODIFIED);
    const scope: Scope = t.subresource === 'status' ? 'status' : 'main';
    const managedGiven = sameJson(m['managedFields'], (old['metadata'] as Json)['managedFields']) ? undefined : m['managedFields'];
    return commit(s, t, old, patched, scope, undefined, manager, dry, managedGiven);
  });
}

/**
 * What the server makes of a patch that changes, removes or nulls `kind` or `apiVersion` (measured on kube-apiserver
 * v1.37.2). A built-in kind's result is decoded by the kind it names: none is the URL's kind, a kind its version does
 * not have is the patch's 422 quoting the result, another kind it has the same 422 with that kind's decoding error
 * or the missing conversion, and a strategic merge patch's result is the URL's kind whatever it names. A custom
 * resource's is checked by its validator: another kind or apiVersion is a 422 naming each, a removed kind the
 * decoder's 422 and a removed apiVersion its 500.
 */
function typeMetaAfterPatch(s: Storage, t: Target, current: Json, patched: Json, patchBody: unknown, contentType: string, validation: ReturnType<typeof fieldValidation>): Json {
  const apiVersion = current['apiVersion'] as string;
  const kind = patched['kind'];
  const version = patched['apiVersion'];
  const given = (v: unknown): v is string => typeof v === 'string' && v !== '';
  if (kind === t.st.type.kind && version === apiVersion) return patched;
  if (t.st.type.builtin) {
    if (contentType === 'application/strategic-merge-patch+json') return { ...patched, apiVersion, kind: t.st.type.kind };
    if (!given(version)) {
      // decoded without a type, every member but the kind is unknown to it: the decoder's warnings with the 400, or with
      // Strict its error as the patch's 422 (measured on kube-apiserver v1.37.2; found by the differential fuzzer,
      // random seed 1195077979)
      const unknown = Object.keys(patched).filter((k) => k !== 'kind' && k !== 'apiVersion' && patched[k] !== undefined).sort().map((k) => `unknown field ${JSON.stringify(k)}`);
      if (validation === 'Strict' && unknown.length > 0) {
        throw invalid('', '', '', [{ type: 'FieldValueInvalid', field: 'patch', value: quotePatchedObject(patched, current, patchBody, contentType), detail: `strict decoding error: ${unknown.join(', ')}` }]);
      }
      const err = badRequest(`the name of the object (${t.name!} based on URL) was undeterminable: name must be provided`);
      throw validation === 'Warn' && unknown.length > 0 ? new ApiError(err.body, withWarnings(buffered(err.code, err.body, err.headers), unknown).headers) : err;
    }
    if (!given(kind)) return { ...patched, kind: t.st.type.kind };
    // decoded as the kind it names (its own decoding errors first), which then has no conversion to the URL's kind
    const quote = quotePatchedObject(patched, current, patchBody, contentType);
    const goType = registeredGoType(s, version, kind);
    const detail = goType
      ? (firstDecodeError(parseJson(quote) as Json, version, kind, validation, false)?.message ?? `converting (${goType}) to (${internalPackage(t.st.type.group)}.${t.st.type.kind}): unknown conversion`)
      : `no kind ${JSON.stringify(kind)} is registered for version ${JSON.stringify(version)} in scheme "pkg/runtime/scheme.go:111"`;
    throw invalid('', '', '', [{ type: 'FieldValueInvalid', field: 'patch', value: quote, detail }]);
  }
  if (!given(version)) throw internalError("Object 'apiVersion' is missing in 'object has no apiVersion field'");
  if (!given(kind)) {
    const quote = unstructuredQuote(patched);
    throw invalid('', '', '', [{ type: 'FieldValueInvalid', field: 'patch', value: quote, detail: `Object 'Kind' is missing in '${quote}'` }]);
  }
  const errors: FieldError[] = [];
  if (kind !== t.st.type.kind) errors.push({ type: 'FieldValueInvalid', field: 'kind', value: kind, detail: `must be ${t.st.type.kind}` });
  if (version !== apiVersion) errors.push({ type: 'FieldValueInvalid', field: 'apiVersion', value: version, detail: `must be ${apiVersion}` });
  const name = meta(patched)['name'];
  throw invalid(version.includes('/') ? version.slice(0, version.indexOf('/')) : '', kind, typeof name === 'string' ? name : t.name!, errors);
}

/** A custom resource's patched object as the server quotes it: Go's encoding of the unstructured map (keys sorted), without its managed fields. */
function unstructuredQuote(patched: Json): string {
  const { managedFields: _m, ...metadata } = isObject(patched['metadata']) ? patched['metadata'] : {};
  return canonical({ ...patched, metadata });
}

/** Kinds apimachinery registers in every group version it serves (AddToGroupVersion), and those registered unversioned. */
const OPTION_KINDS = new Set(['ListOptions', 'GetOptions', 'DeleteOptions', 'CreateOptions', 'UpdateOptions', 'PatchOptions', 'WatchEvent']);
const UNVERSIONED_KINDS = new Set(['Status', 'APIVersions', 'APIGroupList', 'APIGroup', 'APIResourceList']);

/** The Go type the server's scheme decodes `kind` at `apiVersion` into (`v1.Secret`), if it has one. */
function registeredGoType(s: Storage, apiVersion: string, kind: string): string | undefined {
  if (UNVERSIONED_KINDS.has(kind)) return `v1.${kind}`;
  const pkg = `${apiVersion.slice(apiVersion.lastIndexOf('/') + 1)}.${kind}`;
  const served = [...s.types.values()].filter((st) => st.type.builtin && st.type.versions.some((v) => apiVersionOf(st.type, v) === apiVersion));
  if (served.some((st) => st.type.kind === kind || st.type.listKind === kind)) return pkg;
  if (served.length > 0 && OPTION_KINDS.has(kind)) return pkg;
  return kindSchema(apiVersion, kind) ? pkg : undefined;
}

/** The package of a group's internal types, as a conversion error names them (`core.ConfigMap`, `apps.Deployment`). */
function internalPackage(group: string): string {
  return group === '' || group === 'events.k8s.io' ? 'core' : group.slice(0, group.includes('.') ? group.indexOf('.') : group.length);
}

/**
 * An apply body, JSON or YAML, and the keys it repeats in go-yaml's words (the server reads either as YAML): with
 * `Strict` the decoder's 400, else warnings the caller sends unless `Ignore` (measured on kube-apiserver v1.37.2).
 */
function parseApplyBody(body: string | undefined, validation: 'Ignore' | 'Warn' | 'Strict' = 'Ignore'): { readonly value: Json; readonly repeats: readonly string[] } {
  if (body === undefined || body.trim() === '') throw badRequest('the body of the request is empty');
  let value: unknown;
  let repeats: readonly string[] = [];
  try {
    value = parseJson(body);
    if (validation !== 'Ignore' && safeDuplicates(body).length > 0) repeats = yamlDuplicates(body).problems;
  } catch {
    try {
      // go-yaml v2 reads YAML 1.1 (yes, on, no, off, y are booleans); a repeated key keeps its last value
      ({ value, problems: repeats } = yamlDuplicates(body));
    } catch (cause) {
      throw badRequest(`error decoding YAML: ${cause instanceof Error ? cause.message : String(cause)}`);
    }
  }
  if (validation === 'Strict' && repeats.length > 0) throw badRequest(`error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  ${repeats.join('\n  ')}`);
  if (!isObject(value)) throw badRequest('the apply configuration must be an object');
  return { value, repeats: validation === 'Warn' ? repeats : [] };
}

/**
 * The applied object decoded into the kind's Go type; a value it cannot hold is the server's 500 from that
 * conversion, in the unstructured converter's words: a type that decodes itself in its own (a time:
 * `json: cannot unmarshal number into Go value of type string`; a quantity: its regular expression), base64
 * data as `error decoding from json: ...` (measured on kube-apiserver v1.37.2).
 */
function decodeApplied(t: Target, obj: Json): Json {
  try {
    return decodeBody(t, obj, 'Ignore').body;
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const gv = apiVersionOf(t.st.type, t.version);
    const decodeError = firstDecodeError(obj, gv, t.st.type.kind, 'Ignore', true);
    const why = decodeError ? (decodeError.converter ?? decodeError.message) : String(err.body.message ?? '').replace(/^.* cannot be handled as a [^:]*: /, '');
    const gvk = `${gv.includes('/') ? gv : `/${gv}`}, Kind=${t.st.type.kind}`;
    throw new ApiError(statusOf(500, undefined, `failed to convert new object (/${t.name!}; ${gvk}) to proper version: unable to convert unstructured object to ${gvk}: ${why}`));
  }
}

function applyPatch(s: Storage, t: Target, req: CoreRequest): BufferedResponse {
  const manager = fieldManager(req, true);
  const force = goBool(req.query.get('force'));
  const dry = dryRun(req);
  const { value: parsed, repeats } = parseApplyBody(req.body, fieldValidation(req));
  checkKind(t, parsed, true);
  // a built-in kind's map value given as null is kept, as its Go type's zero value
  const config = t.st.type.builtin ? fillAppliedNulls(parsed, apiVersionOf(t.st.type, t.version), t.st.type.kind) : parsed;
  fieldValidation(req);
  if (t.st.type.builtin || t.st.schema) {
    // server-side apply's typed converter refuses values of the wrong type, and on built-in kinds what the schema does not declare (whatever fieldValidation says)
    const problem = applyProblem(config, apiVersionOf(t.st.type, t.version), t.st.type.kind, t.st.schema);
    if (problem) {
      throw new ApiError(statusOf(500, undefined, `failed to create typed patch object (/${t.name!}; ${apiVersionOf(t.st.type, t.version).includes('/') ? apiVersionOf(t.st.type, t.version) : `/${t.version}`}, Kind=${t.st.type.kind}): ${problem}`));
    }
  }
  const cm = meta(config);
  if (cm['name'] !== undefined && cm['name'] !== t.name) throw badRequest(`the name of the object (${show(cm['name'])}) does not match the name on the URL (${t.name!})`);
  cm['name'] = t.name;
  checkNamespace(t, cm);
  const scope: Scope = t.subresource === 'status' ? 'status' : 'main';
  const live = t.st.objects.get(objKey(t.namespace, t.name!));
  if (live && cm['resourceVersion'] !== undefined && cm['resourceVersion'] !== (live['metadata'] as Json)['resourceVersion']) {
    throw conflict(gr(t.st), t.name!, MODIFIED);
  }
  if (live) checkPreconditions(t, live, cm);
  for (const f of SERVER_METADATA) delete cm[f];
  const ctx = writeContext(s, t, manager, scope);
  if (!live) {
    if (scope === 'status') throw notFound(gr(t.st), t.name!);
    // apply creates
    const result = apply([], undefined, config, ctx, force);
    if (!result.ok) throw new Error('apply to a new object cannot conflict');
    const obj = decodeApplied(t, result.object);
    delete obj['apiVersion'];
    delete obj['kind'];
    meta(obj);
    return withWarnings(finishCreate(s, t, obj, t.name!, () => result.entries, dry, structuredClone(obj)), repeats);
  }
  // a stored object its schema (changed since) cannot type: the apply's live object cannot be built (found by the schema-change fuzzer)
  const untyped = t.st.type.builtin ? undefined : liveProblem(render(t.st, live, t.version), t.st.schema);
  if (untyped) {
    const gv = apiVersionOf(t.st.type, t.version);
    throw new ApiError(statusOf(500, undefined, `failed to create typed live object (${t.namespace ?? ''}/${t.name!}; ${gv.includes('/') ? gv : `/${gv}`}, Kind=${t.st.type.kind}): ${untyped}`));
  }
  const result = apply(managedForApply(s, t, live, scope), render(t.st, live, t.version), config, ctx, force);
  if (!result.ok) {
    throw new ApiError(
      statusOf(409, 'Conflict', conflictMessage(result.conflicts), {
        causes: sortConflicts(result.conflicts).map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with ${conflictWith(c)}`, field: c.path })),
      }),
    );
  }
  const next = decodeApplied(t, result.object);
  delete next['apiVersion'];
  delete next['kind'];
  return withWarnings(commit(s, t, live, next, scope, result.entries, manager, dry, undefined, structuredClone(next)), repeats);
}
