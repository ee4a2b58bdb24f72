/**
 * What a request asks for, as kube-apiserver's RequestInfo says it: the
 * path cut into group, version, namespace, resource, name and subresource,
 * the verb (from the method, the name and `watch`), and the request-wide
 * options every handler reads (bodies, Accept forms, dry run, field
 * manager, resourceVersions). Also the shapes of requests and responses
 * between a transport and the core.
 */
import { parseJson, stringifyJson } from '@kubeloop/scheme';
import { parse as parseYaml } from 'yaml';
import { isObject } from './json.js';
import type { Json } from './json.js';
import type { StoredType } from './storage.js';
import { ApiError, badRequest, invalid, methodNotAllowed, statusOf, unsupportedMediaType } from './status.js';

/** A request as the core sees it, from any transport. */
export interface CoreRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly accept?: string | undefined;
  readonly contentType?: string | undefined;
  readonly userAgent?: string | undefined;
  readonly body?: string | undefined;
}

export interface BufferedResponse {
  readonly kind: 'buffered';
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** An open watch: lines arrive through `onLine`, `onEnd` when the server ends it; `close()` when the client goes. */
export interface WatchSession {
  readonly kind: 'watch';
  readonly status: 200;
  readonly headers: Record<string, string>;
  /** Start delivering: lines already due are sent at once. */
  start(onLine: (line: string) => void, onEnd: () => void): void;
  close(): void;
}

export type CoreResponse = BufferedResponse | WatchSession;

/** The API verbs, as RBAC names them. */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

/** What an interceptor decides about one request. */
export interface RequestAttributes {
  /** The API verb, as RBAC names it (`list` and `watch` for collection GETs). */
  readonly verb: Verb;
  /** The API group (`''` for the core group). */
  readonly group: string;
  /** The API version, as `v1`. */
  readonly version: string;
  /** The resource (plural), as `configmaps`. */
  readonly resource: string;
  /** The kind the resource serves, as `ConfigMap`. */
  readonly kind: string;
  /** The subresource (`status`, `scale`...), if any. */
  readonly subresource: string | undefined;
  /** The namespace in the path, if any. */
  readonly namespace: string | undefined;
  /** The object's name in the path, if any (none for collections and creates). */
  readonly name: string | undefined;
}

/** The resource a request is for, once its type is known. */
export interface Target {
  readonly st: StoredType;
  /** The write's `fieldValidation` (Warn when not given): what becomes of a custom resource's unknown fields. */
  readonly fieldValidation?: 'Ignore' | 'Warn' | 'Strict';
  readonly version: string;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly subresource: string | undefined;
}

/** A path cut as the API server cuts it. */
export type RequestInfo =
  | { readonly kind: 'root' }
  | { readonly kind: 'health' }
  | { readonly kind: 'version' }
  | { readonly kind: 'discovery'; readonly path: '/api' | '/apis' }
  | { readonly kind: 'group'; readonly group: string }
  | { readonly kind: 'resources'; readonly group: string; readonly version: string }
  | {
      readonly kind: 'resource';
      readonly group: string;
      readonly version: string;
      readonly namespace: string | undefined;
      readonly resource: string;
      readonly name: string | undefined;
      readonly subresource: string | undefined;
    }
  | { readonly kind: 'unknown' };

/** Namespace subresources: `/api/v1/namespaces/<name>/<sub>` names a namespace, not a namespaced resource. */
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

/** Cut a request path (percent-decoded segments). */
export function requestInfo(path: string): RequestInfo {
  const segments = path
    .split('/')
    .filter((s) => s.length > 0)
    .map((s) => decodeURIComponent(s));
  const [first] = segments;
  if (segments.length === 0) return { kind: 'root' };
  if (segments.length === 1 && (first === 'healthz' || first === 'livez' || first === 'readyz')) return { kind: 'health' };
  if (segments.length === 1 && first === 'version') return { kind: 'version' };
  let group: string;
  let version: string | undefined;
  let rest: string[];
  if (first === 'api') {
    if (segments.length === 1) return { kind: 'discovery', path: '/api' };
    group = '';
    version = segments[1];
    rest = segments.slice(2);
  } else if (first === 'apis') {
    if (segments.length === 1) return { kind: 'discovery', path: '/apis' };
    group = segments[1]!;
    if (segments.length === 2) return { kind: 'group', group };
    version = segments[2];
    rest = segments.slice(3);
  } else return { kind: 'unknown' };
  if (version === undefined) return { kind: 'unknown' };
  if (rest.length === 0) return { kind: 'resources', group, version };
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3 && !(rest.length === 3 && NAMESPACE_SUBRESOURCES.has(rest[2]!))) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  if (rest.length > 3) return { kind: 'unknown' };
  const [resource, name, subresource] = rest as [string, string | undefined, string | undefined];
  return { kind: 'resource', group, version, namespace, resource, name, subresource };
}

/**
 * An integer query parameter as the server's parameter codec reads it (Go's
 * `strconv.ParseInt(text, 10, 64)`), exactly (a bigint: an int64 may be past
 * 2^53); a malformed or out-of-range one is its 400, in its words (measured
 * on kube-apiserver v1.37.2: `limit`, `timeoutSeconds`, `gracePeriodSeconds`).
 */
export function int64Param(text: string): bigint {
  if (!/^[+-]?[0-9]+$/.test(text)) throw badRequest(`strconv.ParseInt: parsing ${JSON.stringify(text)}: invalid syntax`);
  const n = BigInt(text);
  if (n > 9223372036854775807n || n < -9223372036854775808n) throw badRequest(`strconv.ParseInt: parsing ${JSON.stringify(text)}: value out of range`);
  return n;
}

/**
 * A boolean query value as the API server's parameter codec reads it
 * (apimachinery's string-to-bool conversion): absent is false, `false` in
 * any case and `0` are false, anything else (`True`, `yes`, `no`, empty) is
 * true.
 */
export function goBool(value: string | null): boolean {
  if (value === null) return false;
  return value !== '0' && value.toLowerCase() !== 'false';
}

/** The verb of a resource request. */
export function verbOf(method: string, t: Target, query: URLSearchParams): Verb {
  const isWatch = goBool(query.get('watch'));
  if (t.name === undefined) {
    if (method === 'GET') return isWatch ? 'watch' : 'list';
    if (method === 'POST') return 'create';
    if (method === 'DELETE') return 'deletecollection';
    throw methodNotAllowed();
  }
  if (method === 'GET') return 'get';
  if (method === 'PUT') return 'update';
  if (method === 'PATCH') return 'patch';
  if (method === 'DELETE' && t.subresource === undefined) return 'delete';
  throw methodNotAllowed();
}

export function buffered(status: number, body: unknown, headers: Record<string, string> = {}): BufferedResponse {
  return { kind: 'buffered', status, headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : stringifyJson(body) };
}

const BODY_TYPES = ['application/json', 'application/yaml'];

/** The body of a create or update: JSON, or YAML when the Content-Type says so; anything else (protobuf, CBOR) is 415. */
export function parseJsonBody(body: string | undefined, contentType?: string): Json {
  const type = (contentType ?? 'application/json').split(';')[0]!.trim().toLowerCase();
  if (type !== '' && !BODY_TYPES.includes(type) && type !== '*/*') throw unsupportedMediaType(BODY_TYPES);
  if (body === undefined || body.trim() === '') throw badRequest('the body of the request is empty');
  let value: unknown;
  try {
    value = type === 'application/yaml' ? parseYaml(body, { version: '1.1' }) : parseJson(body); // YAML 1.1, as go-yaml v2 reads it
  } catch (cause) {
    throw badRequest(`the body of the request is not valid ${type === 'application/yaml' ? 'YAML' : 'JSON'}: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
  if (!isObject(value)) throw badRequest('the body of the request must be a JSON object');
  return value;
}

/** Parse a resourceVersion given by a client; malformed → 400 (500 for a watch, as the server answers). */
export function parseRv(value: string, what: string, watch = false): number {
  if (!/^\d+$/.test(value)) {
    const detail = `${what}: Invalid value: ${JSON.stringify(value)}: strconv.ParseUint: parsing ${JSON.stringify(value)}: invalid syntax`;
    if (watch) throw new ApiError(statusOf(500, undefined, detail));
    throw badRequest(`invalid resource version: ${detail}`);
  }
  return Number(value);
}

/** The form an Accept header asks for: the object itself, its metadata only, or a Table. */
export function acceptAs(accept: string | undefined): 'PartialObjectMetadata' | 'Table' | undefined {
  if (!accept) return undefined;
  for (const part of accept.split(',')) {
    const p = part.trim();
    if (/as=PartialObjectMetadata(List)?(;|$)/.test(p) && /g=meta\.k8s\.io/.test(p)) return 'PartialObjectMetadata';
    if (/as=Table(;|$)/.test(p) && /g=meta\.k8s\.io/.test(p) && /v=v1(;|$)/.test(p)) return 'Table';
    if (/^(application\/json|\*\/\*)\s*(;|$)/.test(p) && !/as=/.test(p)) return undefined;
  }
  return undefined;
}

/** The field manager of a write: `fieldManager`, else the user agent's first word (required for apply). */
export function fieldManager(req: CoreRequest, required: boolean): string {
  const given = req.query.get('fieldManager');
  if (given !== null && given !== '') {
    if (given.length > 128) throw invalid('meta.k8s.io', 'PatchOptions', '', [{ type: 'FieldValueTooLong', field: 'fieldManager', value: given, detail: 'must have at most 128 characters' }]);
    return given;
  }
  if (required) throw invalid('meta.k8s.io', 'PatchOptions', '', [{ type: 'FieldValueRequired', field: 'fieldManager', detail: 'is required for apply patch' }]);
  const agent = req.userAgent ?? 'kubeloop';
  return agent.split('/')[0]!.slice(0, 128) || 'unknown';
}

/** The `fieldValidation` of a write: Warn unless asked; anything else than the three is 422. */
export function fieldValidation(req: CoreRequest): 'Ignore' | 'Warn' | 'Strict' {
  const v = req.query.get('fieldValidation') ?? '';
  if (v === '' || v === 'Warn') return 'Warn';
  if (v === 'Ignore' || v === 'Strict') return v;
  const options = { POST: 'CreateOptions', PUT: 'UpdateOptions', PATCH: 'PatchOptions' }[req.method.toUpperCase()] ?? 'CreateOptions';
  throw invalid('meta.k8s.io', options, '', [{ type: 'FieldValueNotSupported', field: 'fieldValidation', value: v, detail: 'supported values: "", "Ignore", "Strict", "Warn"' }]);
}

/** A response with the server's `Warning` header (one `299 - "..."` per warning). */
export function withWarnings(res: BufferedResponse, warnings: readonly string[]): BufferedResponse {
  if (warnings.length === 0) return res;
  const added = warnings.map((w) => `299 - ${JSON.stringify(w)}`).join(', ');
  const existing = res.headers['warning'];
  // before the answer's own: what `warnings` holds was said earlier in the server's handling (the decoder's warnings
  // come before the strategy's; found by probing a Deployment with unknown fields and a duplicate container port)
  return { ...res, headers: { ...res.headers, warning: existing ? `${added}, ${existing}` : added } };
}

/** Run a write, sending `warnings` with its answer, also when it fails (the server warns about what it decoded either way). */
export function warningsAlways<T extends BufferedResponse>(warnings: readonly string[], write: () => T): BufferedResponse {
  try {
    return withWarnings(write(), warnings);
  } catch (err) {
    if (err instanceof ApiError && warnings.length > 0) {
      const res = withWarnings(buffered(err.code, err.body, err.headers), warnings);
      throw new ApiError(err.body, res.headers);
    }
    throw err;
  }
}

/** Whether the request is a dry run (`dryRun=All`); other values are 422. */
export function dryRun(req: CoreRequest): boolean {
  const v = req.query.getAll('dryRun');
  if (v.some((x) => x !== 'All' && x !== '')) {
    const options = { POST: 'CreateOptions', PUT: 'UpdateOptions', PATCH: 'PatchOptions', DELETE: 'DeleteOptions' }[req.method.toUpperCase()] ?? 'CreateOptions';
    throw invalid('meta.k8s.io', options, '', [{ type: 'FieldValueNotSupported', field: 'dryRun', value: v, detail: 'supported values: "All"' }]);
  }
  return v.includes('All');
}
