/**
 * The fake API server's core: REST paths to verbs, one store with one
 * resourceVersion counter and a change history (for watches from a
 * resourceVersion, exact lists and continue tokens), the write pipeline
 * (metadata, generation, finalizers, status subresource, field ownership),
 * watches, discovery, and the optional garbage collector and namespace
 * controller. Transport-agnostic: requests in, responses or watch sessions
 * out.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import type { TestClock } from '../clock.js';
import { aggregatedDocument, AGGREGATED_CONTENT_TYPE, apiGroupDocument, apiGroupListDocument, apiVersionsDocument, resourceListDocument, wantsAggregated } from './discovery.js';
import { apply, conflictMessage, parseManaged, recordUpdate, renderManaged } from './fields.js';
import type { ManagedEntry, Scope } from './fields.js';
import { isObject, jsonPatch, mergePatch, strategicMerge } from './patch.js';
import { builtinTypes, customType, typeFromCRD, typeKey } from './resources.js';
import type { CustomTypeSpec, ResourceType } from './resources.js';
import { builtinShape, schemaShape } from './schema.js';
import { crdCheck } from './schema-check.js';
import type { SchemaCheck } from './schema-check.js';
import type { Shape } from './schema.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import type { LabelSelector } from './selectors.js';
import {
  alreadyExists,
  ApiError,
  badRequest,
  conflict,
  expired,
  forbidden,
  invalid,
  methodNotAllowed,
  MODIFIED,
  NetworkFault,
  notFound,
  resourceNotFound,
  statusOf,
  success,
  unsupportedMediaType,
} from './status.js';
import type { FieldError, StatusBody } from './status.js';
import { validateMetadata } from './validation.js';

type Json = Record<string, unknown>;

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

/** What an interceptor decides about one request. */
export interface RequestAttributes {
  readonly verb: 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly kind: string;
  readonly subresource: string | undefined;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
}

export interface CoreOptions {
  readonly clock: TestClock;
  readonly garbageCollector: boolean;
  readonly namespaceController: boolean;
  readonly aggregatedDiscovery: boolean;
  readonly bookmarkIntervalMs: number;
  /** Changes kept for watches and exact lists; older ones are compacted away. */
  readonly historyLimit: number;
  /** Runs before each resource request; may delay, or throw an ApiError. */
  readonly intercept: (attrs: RequestAttributes) => Promise<void>;
  /** Told of every resource request (for the request log). */
  readonly record: (attrs: RequestAttributes) => void;
}

interface StoredType {
  type: ResourceType;
  shape: Shape;
  objects: Map<string, Json>;
}

interface Change {
  readonly rv: number;
  readonly typeKey: string;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** The object after the change (for DELETED: the last state, with the deletion's resourceVersion). */
  readonly object: Json;
  /** The object before (undefined for ADDED). */
  readonly prev: Json | undefined;
}

interface Watcher {
  readonly typeKey: string;
  readonly namespace: string | undefined;
  readonly labels: LabelSelector;
  readonly fields: (obj: Json) => boolean;
  readonly bookmarks: boolean;
  readonly render: (obj: Json) => Json;
  readonly bookmarkObject: (rv: number, annotations?: Record<string, string>) => Json;
  send(line: string): void;
  end(): void;
}

const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

/** Status a built-in kind's strategy sets on create (beyond the zero fields below). */
const STATUS_ON_CREATE: Readonly<Record<string, (now: string) => Json>> = {
  'apps/deployments': () => ({}),
  'batch/jobs': () => ({}),
  'batch/cronjobs': () => ({}),
  '/resourcequotas': () => ({}),
  '/persistentvolumeclaims': () => ({ phase: 'Pending' }),
  '/persistentvolumes': (now) => ({ phase: 'Pending', lastPhaseTransitionTime: now }),
};

/** Status fields serialized even when zero (no omitempty in the Go types). */
const STATUS_ZERO: Readonly<Record<string, Json>> = {
  '/services': { loadBalancer: {} },
  'networking.k8s.io/ingresses': { loadBalancer: {} },
  'policy/poddisruptionbudgets': { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 },
  'autoscaling/horizontalpodautoscalers': { desiredReplicas: 0, currentMetrics: null },
  'apps/statefulsets': { replicas: 0, availableReplicas: 0 },
  'apps/daemonsets': { currentNumberScheduled: 0, numberMisscheduled: 0, desiredNumberScheduled: 0, numberReady: 0 },
  'apps/replicasets': { replicas: 0 },
  '/replicationcontrollers': { replicas: 0 },
  '/nodes': {
    daemonEndpoints: { kubeletEndpoint: { Port: 0 } },
    nodeInfo: { machineID: '', systemUUID: '', bootID: '', kernelVersion: '', osImage: '', containerRuntimeVersion: '', kubeletVersion: '', kubeProxyVersion: '', operatingSystem: '', architecture: '' },
  },
};

/** A Pod's QoS class: Guaranteed when every container limits cpu and memory with requests equal to limits; BestEffort when none asks for anything. */
function qosClass(pod: Json): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const spec = isObject(pod['spec']) ? pod['spec'] : {};
  const containers = [...(Array.isArray(spec['containers']) ? (spec['containers'] as Json[]) : []), ...(Array.isArray(spec['initContainers']) ? (spec['initContainers'] as Json[]) : [])];
  let any = false;
  let guaranteed = containers.length > 0;
  for (const c of containers) {
    const res = isObject(c['resources']) ? c['resources'] : {};
    const limits = isObject(res['limits']) ? res['limits'] : {};
    const requests = isObject(res['requests']) ? res['requests'] : {};
    if (Object.keys(limits).length > 0 || Object.keys(requests).length > 0) any = true;
    for (const r of ['cpu', 'memory']) {
      if (limits[r] === undefined || (requests[r] !== undefined && JSON.stringify(requests[r]) !== JSON.stringify(limits[r]))) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}
const PATCH_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json', 'application/apply-patch+yaml', 'application/apply-patch+cbor'];
const CR_PATCH_TYPES = ['application/json-patch+json', 'application/merge-patch+json', 'application/apply-patch+yaml', 'application/apply-patch+cbor'];
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);
const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

function buffered(status: number, body: unknown, headers: Record<string, string> = {}): BufferedResponse {
  return { kind: 'buffered', status, headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) };
}

const BODY_TYPES = ['application/json', 'application/yaml'];

/** The body of a create or update: JSON, or YAML when the Content-Type says so; anything else (protobuf, CBOR) is 415. */
function parseJsonBody(body: string | undefined, contentType?: string): Json {
  const type = (contentType ?? 'application/json').split(';')[0]!.trim().toLowerCase();
  if (type !== '' && !BODY_TYPES.includes(type) && type !== '*/*') throw unsupportedMediaType(BODY_TYPES);
  if (body === undefined || body.trim() === '') throw badRequest('the body of the request is empty');
  let value: unknown;
  try {
    value = type === 'application/yaml' ? parseYaml(body) : JSON.parse(body);
  } catch (cause) {
    throw badRequest(`the body of the request is not valid ${type === 'application/yaml' ? 'YAML' : 'JSON'}: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
  if (!isObject(value)) throw badRequest('the body of the request must be a JSON object');
  return value;
}

function meta(obj: Json): Json {
  if (!isObject(obj['metadata'])) obj['metadata'] = {};
  return obj['metadata'] as Json;
}

function objKey(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

/** A value as shown in a message. */
function show(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Parse a resourceVersion given by a client; malformed → 400. */
function parseRv(value: string, what: string, watch = false): number {
  if (!/^\d+$/.test(value)) {
    const detail = `${what}: Invalid value: ${JSON.stringify(value)}: strconv.ParseUint: parsing ${JSON.stringify(value)}: invalid syntax`;
    // the API server answers a watch's malformed resourceVersion with a 500
    if (watch) throw new ApiError(statusOf(500, undefined, detail));
    throw badRequest(`invalid resource version: ${detail}`);
  }
  return Number(value);
}

function acceptAs(accept: string | undefined): 'PartialObjectMetadata' | 'Table' | undefined {
  if (!accept) return undefined;
  for (const part of accept.split(',')) {
    const p = part.trim();
    if (/as=PartialObjectMetadata(List)?(;|$)/.test(p) && /g=meta\.k8s\.io/.test(p)) return 'PartialObjectMetadata';
    if (/as=Table(;|$)/.test(p) && /g=meta\.k8s\.io/.test(p) && /v=v1(;|$)/.test(p)) return 'Table';
    if (/^(application\/json|\*\/\*)\s*(;|$)/.test(p) && !/as=/.test(p)) return undefined;
  }
  return undefined;
}

interface Target {
  readonly st: StoredType;
  readonly version: string;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly subresource: string | undefined;
}

interface ContinueToken {
  readonly rv: number;
  readonly start: string;
}

export class FakeApi {
  private readonly types = new Map<string, StoredType>();
  private rv = 0;
  private compactedRv = 0;
  private history: Change[] = [];
  private readonly watchers = new Set<Watcher>();
  private readonly uids = new Map<string, { typeKey: string; key: string }>();
  private controllersScheduled = false;
  private bookmarkTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly customValidators = new Map<string, NonNullable<CustomTypeSpec['validators']>>();
  /** Schema validation per kind (type key) and version. */
  private readonly schemaChecks = new Map<string, ReadonlyMap<string, SchemaCheck>>();

  constructor(private readonly options: CoreOptions) {
    for (const t of builtinTypes()) this.addType(t);
    for (const ns of SYSTEM_NAMESPACES) this.seedNamespace(ns);
    if (options.bookmarkIntervalMs > 0) {
      this.bookmarkTimer = setInterval(() => this.bookmark(), options.bookmarkIntervalMs);
      this.bookmarkTimer.unref();
    }
  }

  // --- types ------------------------------------------------------------------

  private addType(type: ResourceType, schema?: Json): void {
    const key = typeKey(type.group, type.plural);
    const existing = this.types.get(key);
    const shape = type.builtin ? builtinShape(type.kind) : schemaShape(schema);
    const extra = this.customValidators.get(key) ?? [];
    const withValidators: ResourceType = extra.length > 0 ? { ...type, validators: [...type.validators, ...extra] } : type;
    this.types.set(key, { type: withValidators, shape, objects: existing?.objects ?? new Map<string, Json>() });
  }

  /** Serve a custom kind (no CRD object is stored). */
  registerType(spec: CustomTypeSpec, schema?: Json): void {
    this.addType(customType(spec), schema);
  }

  /** Validate (and prune and default) objects of a kind against its schema, per version; an empty map turns it off. */
  setSchemaChecks(group: string, plural: string, checks: ReadonlyMap<string, SchemaCheck>): void {
    const key = typeKey(group, plural);
    if (checks.size === 0) this.schemaChecks.delete(key);
    else this.schemaChecks.set(key, checks);
  }

  /** Add a validator to a kind (now or when it is registered later). */
  addValidator(group: string, plural: string, validator: NonNullable<CustomTypeSpec['validators']>[number]): void {
    const key = typeKey(group, plural);
    this.customValidators.set(key, [...(this.customValidators.get(key) ?? []), validator]);
    const st = this.types.get(key);
    if (st) st.type = { ...st.type, validators: [...st.type.validators, validator] };
  }

  allTypes(): ResourceType[] {
    return [...this.types.values()].map((s) => s.type);
  }

  private findType(group: string, version: string, plural: string): StoredType | undefined {
    const st = this.types.get(typeKey(group, plural));
    return st && st.type.versions.includes(version) ? st : undefined;
  }

  findByKind(apiVersion: string, kind: string): { st: StoredType; version: string } | undefined {
    const slash = apiVersion.indexOf('/');
    const group = slash === -1 ? '' : apiVersion.slice(0, slash);
    const version = slash === -1 ? apiVersion : apiVersion.slice(slash + 1);
    for (const st of this.types.values()) if (st.type.group === group && st.type.kind === kind && st.type.versions.includes(version)) return { st, version };
    return undefined;
  }

  // --- time and ids -------------------------------------------------------------

  private now(): string {
    return this.options.clock.timestamp();
  }

  private nextRv(): number {
    return ++this.rv;
  }

  get resourceVersion(): number {
    return this.rv;
  }

  // --- rendering --------------------------------------------------------------------

  private apiVersionOf(type: ResourceType, version: string): string {
    return type.group ? `${type.group}/${version}` : version;
  }

  /** The stored object as served at `version` (a copy). */
  private render(st: StoredType, obj: Json, version: string): Json {
    const out = structuredClone(obj);
    return { apiVersion: this.apiVersionOf(st.type, version), kind: st.type.kind, ...out };
  }

  private partial(obj: Json): Json {
    return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: structuredClone(obj['metadata']) };
  }

  // --- entry --------------------------------------------------------------------------

  async handle(req: CoreRequest): Promise<CoreResponse> {
    try {
      if (this.closed) throw new ApiError(statusOf(503, 'ServiceUnavailable', 'the fake API server is closed'));
      return await this.route(req);
    } catch (err) {
      if (err instanceof NetworkFault) throw err;
      if (err instanceof ApiError) return buffered(err.code, err.body, err.headers);
      const message = err instanceof Error ? err.message : String(err);
      return buffered(500, statusOf(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] }));
    }
  }

  private async route(req: CoreRequest): Promise<CoreResponse> {
    const segments = req.path.split('/').filter((s) => s.length > 0).map((s) => decodeURIComponent(s));
    const method = req.method.toUpperCase();
    const [first] = segments;
    if (segments.length === 0) return buffered(200, { paths: ['/api', '/api/v1', '/apis', '/healthz', '/livez', '/readyz', '/version'] });
    if (segments.length === 1 && (first === 'healthz' || first === 'livez' || first === 'readyz')) return { kind: 'buffered', status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: 'ok' };
    if (segments.length === 1 && first === 'version') {
      return buffered(200, { major: '1', minor: '37', gitVersion: 'v1.37.2-kubeloop-fake', gitCommit: '', gitTreeState: 'clean', buildDate: '', goVersion: '', compiler: 'kubeloop', platform: `${process.platform}/${process.arch}` });
    }
    let group: string;
    let version: string | undefined;
    let rest: string[];
    if (first === 'api') {
      group = '';
      version = segments[1];
      rest = segments.slice(2);
    } else if (first === 'apis') {
      group = segments[1] ?? '';
      version = segments[2];
      rest = segments.slice(3);
      if (segments.length === 1) return this.discovery(req, '/apis');
      if (segments.length === 2) {
        const doc = apiGroupDocument(this.allTypes(), group);
        if (!doc) throw resourceNotFound();
        return buffered(200, doc);
      }
    } else throw resourceNotFound();
    if (first === 'api' && segments.length === 1) return this.discovery(req, '/api');
    if (version === undefined) throw resourceNotFound();
    if (rest.length === 0) {
      if (method !== 'GET') throw methodNotAllowed();
      const doc = resourceListDocument(this.allTypes(), group, version);
      if (!doc) throw resourceNotFound();
      return buffered(200, doc);
    }
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3 && !(rest.length === 3 && NAMESPACE_SUBRESOURCES.has(rest[2]!))) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    if (rest.length > 3) throw resourceNotFound();
    const [resource, name, subresource] = rest as [string, string | undefined, string | undefined];
    const st = this.findType(group, version, resource);
    if (!st) throw resourceNotFound();
    if (namespace !== undefined && !st.type.namespaced) throw resourceNotFound();
    if (st.type.namespaced && name !== undefined && namespace === undefined) throw resourceNotFound();
    if (subresource !== undefined && !(subresource === 'status' && st.type.status) && !(subresource === 'scale' && st.type.scale)) throw resourceNotFound();
    const target: Target = { st, version, namespace, name, subresource };
    const verb = this.verbOf(method, target, req.query);
    const attrs: RequestAttributes = { verb, group, version, resource, kind: st.type.kind, subresource, namespace, name };
    this.options.record(attrs);
    await this.options.intercept(attrs);
    switch (verb) {
      case 'get':
        return subresource === 'scale' ? this.getScale(target) : this.get(target, req);
      case 'list':
        return this.list(target, req);
      case 'watch':
        return this.watch(target, req);
      case 'create':
        if (st.type.namespaced && namespace === undefined) throw methodNotAllowed();
        return this.create(target, req);
      case 'update':
        return subresource === 'scale' ? this.updateScale(target, req) : this.update(target, req);
      case 'patch':
        return this.patch(target, req);
      case 'delete':
        return this.delete(target, req);
      case 'deletecollection':
        return this.deleteCollection(target, req);
    }
  }

  private verbOf(method: string, t: Target, query: URLSearchParams): RequestAttributes['verb'] {
    const watch = query.get('watch');
    const isWatch = watch === 'true' || watch === '1';
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

  private discovery(req: CoreRequest, path: '/api' | '/apis'): BufferedResponse {
    if (this.options.aggregatedDiscovery && wantsAggregated(req.accept)) {
      return buffered(200, aggregatedDocument(this.allTypes(), path === '/api'), { 'content-type': AGGREGATED_CONTENT_TYPE });
    }
    return buffered(200, path === '/api' ? apiVersionsDocument() : apiGroupListDocument(this.allTypes()));
  }

  // --- reads ------------------------------------------------------------------------

  private gr(st: StoredType): { group: string; resource: string } {
    return { group: st.type.group, resource: st.type.plural };
  }

  /** Storage-level errors name the kind, not the resource. */
  private kindGr(st: StoredType): { group: string; resource: string } {
    return { group: st.type.group, resource: st.type.kind };
  }

  private existing(t: Target): Json {
    const obj = t.st.objects.get(objKey(t.namespace, t.name!));
    if (!obj) throw notFound(this.gr(t.st), t.name!);
    return obj;
  }

  private get(t: Target, req: CoreRequest): BufferedResponse {
    const obj = this.existing(t);
    const rendered = this.render(t.st, obj, t.version);
    if (t.subresource === undefined && acceptAs(req.accept) === 'PartialObjectMetadata') return buffered(200, this.partial(rendered));
    return buffered(200, rendered);
  }

  /** The objects of a type as they were at `rv` (from the history since the last compaction). */
  private stateAt(st: StoredType, rv: number): Map<string, Json> {
    if (rv >= this.rv) return st.objects;
    const key = typeKey(st.type.group, st.type.plural);
    const state = new Map<string, Json>(st.objects);
    for (let i = this.history.length - 1; i >= 0; i--) {
      const c = this.history[i]!;
      if (c.rv <= rv) break;
      if (c.typeKey !== key) continue;
      const m = c.object['metadata'] as Json;
      const k = objKey(m['namespace'] as string | undefined, m['name'] as string);
      if (c.prev) state.set(k, c.prev);
      else state.delete(k);
    }
    return state;
  }

  private fieldFilter(st: StoredType, selector: string | null): (obj: Json) => boolean {
    const reqs = parseFieldSelector(selector ?? undefined);
    for (const r of reqs) {
      if (!st.type.fieldSelectors.has(r.field)) {
        throw badRequest(
          st.type.builtin
            ? `field label not supported: ${r.field}`
            : `"${r.field}" is not a known field selector: only ${[...st.type.fieldSelectors.keys()].map((f) => `"${f}"`).join(', ')}`,
        );
      }
    }
    if (reqs.length === 0) return () => true;
    return (obj) =>
      reqs.every((r) => {
        const value = st.type.fieldSelectors.get(r.field)!(obj) ?? '';
        return r.op === '=' ? value === r.value : value !== r.value;
      });
  }

  private matcher(st: StoredType, namespace: string | undefined, query: URLSearchParams): { labels: LabelSelector; fields: (obj: Json) => boolean; match: (obj: Json) => boolean } {
    const labels = parseLabelSelector(query.get('labelSelector') ?? undefined);
    const fields = this.fieldFilter(st, query.get('fieldSelector'));
    return {
      labels,
      fields,
      match: (obj) => {
        const m = obj['metadata'] as Json;
        if (namespace !== undefined && m['namespace'] !== namespace) return false;
        return labels.matches(m['labels'] as Record<string, string> | undefined) && fields(obj);
      },
    };
  }

  private list(t: Target, req: CoreRequest): BufferedResponse {
    const q = req.query;
    const cont = q.get('continue') ?? '';
    const rvParam = q.get('resourceVersion') ?? '';
    const rvMatch = q.get('resourceVersionMatch') ?? '';
    const limitParam = q.get('limit');
    const limit = limitParam === null || limitParam === '' ? 0 : Number(limitParam);
    if (!Number.isInteger(limit) || limit < 0) throw badRequest(`invalid limit: ${JSON.stringify(limitParam)}`);
    const { labels, match } = this.matcher(t.st, t.namespace, q);
    const fieldSelector = q.get('fieldSelector') ?? '';

    let atRv = this.rv;
    let start = '';
    if (cont) {
      if (rvParam !== '' && rvParam !== '0') throw badRequest('specifying resource version is not allowed when using continue');
      const token = this.decodeContinue(cont);
      if (token.rv < this.compactedRv) {
        throw expired(
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
        );
      }
      atRv = token.rv;
      start = token.start;
    } else if (rvMatch !== '' && rvParam === '') {
      throw this.listOptionsInvalid([{ type: 'FieldValueForbidden', field: 'resourceVersionMatch', detail: 'resourceVersionMatch is forbidden unless resourceVersion is provided' }]);
    } else if (rvMatch === 'Exact') {
      const rv = parseRv(rvParam, 'resourceVersion');
      if (rv === 0) throw this.listOptionsInvalid([{ type: 'FieldValueForbidden', field: 'resourceVersionMatch', detail: 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"' }]);
      if (rv > this.rv) throw this.tooLarge();
      if (rv < this.compactedRv) throw expired(`The resourceVersion for the provided list is too old.`);
      atRv = rv;
    } else if (rvMatch !== '' && rvMatch !== 'NotOlderThan') {
      throw this.listOptionsInvalid([{ type: 'FieldValueNotSupported', field: 'resourceVersionMatch', value: rvMatch, detail: 'supported values: "Exact", "NotOlderThan", ""' }]);
    } else if (rvParam !== '' && rvParam !== '0') {
      const rv = parseRv(rvParam, 'resourceVersion');
      if (rv > this.rv) throw this.tooLarge();
    }

    const state = atRv === this.rv ? t.st.objects : this.stateAt(t.st, atRv);
    const matching: [string, Json][] = [];
    for (const k of [...state.keys()].sort()) {
      if (start !== '' && k <= start) continue;
      const obj = state.get(k)!;
      if (match(obj)) matching.push([k, obj]);
    }
    const page = limit > 0 ? matching.slice(0, limit) : matching;
    const items = page.map(([, obj]) => this.render(t.st, obj, t.version));
    const listMeta: Json = { resourceVersion: String(atRv) };
    if (page.length < matching.length) {
      listMeta['continue'] = this.encodeContinue({ rv: atRv, start: page[page.length - 1]![0] });
      if (labels.empty && fieldSelector === '') listMeta['remainingItemCount'] = matching.length - page.length;
    }
    const as = acceptAs(req.accept);
    if (as === 'PartialObjectMetadata') {
      return buffered(200, { kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1', metadata: listMeta, items: items.map((i) => this.partial(i)) });
    }
    if (as === 'Table') return buffered(200, this.table(items, listMeta));
    const apiVersion = this.apiVersionOf(t.st.type, t.version);
    if (t.st.type.builtin) {
      for (const item of items) {
        delete item['apiVersion'];
        delete item['kind'];
      }
    }
    return buffered(200, { kind: t.st.type.listKind, apiVersion, metadata: listMeta, items });
  }

  private table(items: Json[], listMeta: Json): Json {
    return {
      kind: 'Table',
      apiVersion: 'meta.k8s.io/v1',
      metadata: listMeta,
      columnDefinitions: [
        { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
        { name: 'Created At', type: 'date', format: '', description: 'CreationTimestamp is a timestamp representing the server time when this object was created.', priority: 0 },
      ],
      rows: items.map((i) => {
        const m = i['metadata'] as Json;
        return { cells: [m['name'], m['creationTimestamp']], object: this.partial(i) };
      }),
    };
  }

  private listOptionsInvalid(errors: FieldError[]): ApiError {
    return invalid('meta.k8s.io', 'ListOptions', '', errors);
  }

  private tooLarge(): ApiError {
    return new ApiError(
      statusOf(504, 'Timeout', 'Timeout: Too large resource version', { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 }),
    );
  }

  private encodeContinue(token: ContinueToken): string {
    return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: token.rv, start: token.start })).toString('base64url');
  }

  private decodeContinue(text: string): ContinueToken {
    try {
      const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as { v?: unknown; rv?: unknown; start?: unknown };
      if (value.v === 'meta.k8s.io/v1' && typeof value.rv === 'number' && typeof value.start === 'string') return { rv: value.rv, start: value.start };
    } catch {
      /* fall through */
    }
    throw badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  }

  // --- watch -------------------------------------------------------------------------

  private watch(t: Target, req: CoreRequest): WatchSession {
    const q = req.query;
    const rvParam = q.get('resourceVersion') ?? '';
    const rvMatch = q.get('resourceVersionMatch') ?? '';
    const sie = q.get('sendInitialEvents');
    const bookmarks = q.get('allowWatchBookmarks') === 'true' || q.get('allowWatchBookmarks') === '1';
    const timeoutParam = q.get('timeoutSeconds');
    const timeoutSeconds = timeoutParam === null || timeoutParam === '' ? 0 : Number(timeoutParam);
    if (!Number.isFinite(timeoutSeconds) || timeoutSeconds < 0) throw badRequest(`invalid timeoutSeconds: ${JSON.stringify(timeoutParam)}`);
    const { labels, fields, match } = this.matcher(t.st, t.namespace, q);
    const sendInitial = sie === 'true' || sie === '1';
    if (sie !== null) {
      const errors: FieldError[] = [];
      if (rvMatch !== 'NotOlderThan') errors.push({ type: 'FieldValueForbidden', field: 'resourceVersionMatch', detail: "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan" });
      if (!bookmarks) errors.push({ type: 'FieldValueForbidden', field: 'allowWatchBookmarks', detail: 'sendInitialEvents requires setting allowWatchBookmarks to true' });
      if (errors.length > 0) throw this.listOptionsInvalid(errors);
    } else if (rvMatch !== '') {
      throw this.listOptionsInvalid([{ type: 'FieldValueForbidden', field: 'resourceVersionMatch', detail: 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided' }]);
    }
    const metadataOnly = acceptAs(req.accept) === 'PartialObjectMetadata';
    const apiVersion = this.apiVersionOf(t.st.type, t.version);
    const render = (obj: Json): Json => {
      const r = this.render(t.st, obj, t.version);
      return metadataOnly ? this.partial(r) : r;
    };
    const bookmarkObject = (rv: number, annotations?: Record<string, string>): Json =>
      metadataOnly
        ? { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { resourceVersion: String(rv), ...(annotations ? { annotations } : {}) } }
        : { kind: t.st.type.kind, apiVersion, metadata: { resourceVersion: String(rv), ...(annotations ? { annotations } : {}) } };

    // What to send first.
    const initial: string[] = [];
    let ended = false;
    const event = (type: string, object: Json): string => JSON.stringify({ type, object });
    const key = typeKey(t.st.type.group, t.st.type.plural);
    if (sendInitial || rvParam === '' || rvParam === '0') {
      if (sendInitial && rvParam !== '' && rvParam !== '0') {
        const rv = parseRv(rvParam, 'resourceVersion', true);
        if (rv > this.rv) throw this.tooLarge();
      }
      for (const k of [...t.st.objects.keys()].sort()) {
        const obj = t.st.objects.get(k)!;
        if (match(obj)) initial.push(event('ADDED', render(obj)));
      }
      if (sendInitial) initial.push(event('BOOKMARK', bookmarkObject(this.rv, { 'k8s.io/initial-events-end': 'true' })));
    } else {
      const from = parseRv(rvParam, 'resourceVersion', true);
      if (from < this.compactedRv) {
        initial.push(event('ERROR', statusOf(410, 'Expired', `too old resource version: ${from} (${this.compactedRv})`) as unknown as Json));
        ended = true;
      } else {
        for (const c of this.history) {
          if (c.rv <= from || c.typeKey !== key) continue;
          const line = this.eventFor(c, match, render);
          if (line) initial.push(line);
        }
      }
    }

    let watcher: Watcher | undefined;
    let timer: NodeJS.Timeout | undefined;
    const close = (): void => {
      if (watcher) this.watchers.delete(watcher);
      watcher = undefined;
      if (timer) clearTimeout(timer);
      timer = undefined;
    };
    return {
      kind: 'watch',
      status: 200,
      headers: { 'content-type': metadataOnly ? 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1' : 'application/json', 'transfer-encoding': 'chunked' },
      start: (onLine, onEnd) => {
        for (const line of initial) onLine(line);
        if (ended) {
          onEnd();
          return;
        }
        watcher = {
          typeKey: key,
          namespace: t.namespace,
          labels,
          fields,
          bookmarks,
          render,
          bookmarkObject,
          send: onLine,
          end: () => {
            close();
            onEnd();
          },
        };
        this.watchers.add(watcher);
        if (timeoutSeconds > 0) {
          timer = setTimeout(() => watcher?.end(), timeoutSeconds * 1000);
          timer.unref();
        }
      },
      close,
    };
  }

  /** The watch line a change gives a watcher with this filter (undefined: not for it). */
  private eventFor(c: Change, match: (obj: Json) => boolean, render: (obj: Json) => Json): string | undefined {
    const now = match(c.object);
    const before = c.prev !== undefined && match(c.prev);
    let type: string;
    if (c.type === 'ADDED') {
      if (!now) return undefined;
      type = 'ADDED';
    } else if (c.type === 'DELETED') {
      if (!now && !before) return undefined;
      type = 'DELETED';
    } else if (now && before) type = 'MODIFIED';
    else if (now) type = 'ADDED';
    else if (before) type = 'DELETED';
    else return undefined;
    return JSON.stringify({ type, object: render(c.object) });
  }

  private emit(c: Change): void {
    this.history.push(c);
    if (this.history.length > this.options.historyLimit) {
      // compact the oldest tenth at once, so the array is not shifted on every write
      const drop = Math.max(1, Math.ceil(this.options.historyLimit / 10));
      this.compactedRv = this.history[drop - 1]!.rv;
      this.history = this.history.slice(drop);
    }
    for (const w of this.watchers) {
      if (w.typeKey !== c.typeKey) continue;
      const match = (obj: Json): boolean => {
        const m = obj['metadata'] as Json;
        if (w.namespace !== undefined && m['namespace'] !== w.namespace) return false;
        return w.labels.matches(m['labels'] as Record<string, string> | undefined) && w.fields(obj);
      };
      const line = this.eventFor(c, match, w.render);
      if (line) w.send(line);
    }
  }

  /** Send a BOOKMARK with the current resourceVersion to every watch that asked for bookmarks. */
  bookmark(): void {
    for (const w of this.watchers) if (w.bookmarks) w.send(JSON.stringify({ type: 'BOOKMARK', object: w.bookmarkObject(this.rv) }));
  }

  /** Forget history up to now: watches and exact lists from older resourceVersions get 410. */
  compact(): number {
    this.compactedRv = this.rv;
    this.history = [];
    return this.rv;
  }

  /** End every open watch (as an API server restart would). */
  endWatches(): void {
    for (const w of [...this.watchers]) w.end();
  }

  close(): void {
    this.closed = true;
    if (this.bookmarkTimer) clearInterval(this.bookmarkTimer);
    this.endWatches();
  }

  // --- the write pipeline ------------------------------------------------------------

  private fieldManager(req: CoreRequest, required: boolean): string {
    const given = req.query.get('fieldManager');
    if (given !== null && given !== '') {
      if (given.length > 128) throw invalid('meta.k8s.io', 'PatchOptions', '', [{ type: 'FieldValueTooLong', field: 'fieldManager', value: given, detail: 'must have at most 128 characters' }]);
      return given;
    }
    if (required) throw invalid('meta.k8s.io', 'PatchOptions', '', [{ type: 'FieldValueRequired', field: 'fieldManager', detail: 'is required for apply patch' }]);
    const agent = req.userAgent ?? 'kubeloop';
    return agent.split('/')[0]!.slice(0, 128) || 'unknown';
  }

  private dryRun(req: CoreRequest): boolean {
    const v = req.query.getAll('dryRun');
    if (v.some((x) => x !== 'All' && x !== '')) {
      const options = { POST: 'CreateOptions', PUT: 'UpdateOptions', PATCH: 'PatchOptions', DELETE: 'DeleteOptions' }[req.method.toUpperCase()] ?? 'CreateOptions';
      throw invalid('meta.k8s.io', options, '', [{ type: 'FieldValueNotSupported', field: 'dryRun', value: v, detail: 'supported values: "All"' }]);
    }
    return v.includes('All');
  }

  /** Check the body's kind and apiVersion against the endpoint. */
  /**
   * Check the body's kind and apiVersion against the endpoint. A create or
   * update body may leave them out (the endpoint names them); an apply may not.
   */
  private checkKind(t: Target, body: Json, apply = false): void {
    const apiVersion = this.apiVersionOf(t.st.type, t.version);
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

  private checkNamespace(t: Target, m: Json): void {
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

  private requireNamespace(t: Target, name: string): void {
    if (!t.st.type.namespaced) return;
    const ns = this.types.get('/namespaces')!.objects.get(objKey(undefined, t.namespace!));
    if (!ns) throw notFound({ group: '', resource: 'namespaces' }, t.namespace!);
    if ((ns['metadata'] as Json)['deletionTimestamp'] !== undefined) {
      throw forbidden(this.gr(t.st), name, `unable to create new content in namespace ${t.namespace!} because it is being terminated`, [
        { reason: 'NamespaceTerminating', message: `namespace ${t.namespace!} is being terminated`, field: 'metadata.namespace' },
      ]);
    }
  }

  private validate(t: Target, obj: Json, old: Json | undefined): void {
    const m = obj['metadata'] as Json;
    const name = typeof m['name'] === 'string' ? m['name'] : '';
    const errors = validateMetadata(t.st.type.kind, m, t.st.type.namespaced);
    if (old) {
      const om = old['metadata'] as Json;
      const oldFinalizers = (om['finalizers'] as string[] | undefined) ?? [];
      const newFinalizers = (m['finalizers'] as string[] | undefined) ?? [];
      if (om['deletionTimestamp'] !== undefined && newFinalizers.some((f) => !oldFinalizers.includes(f))) {
        errors.push({ type: 'FieldValueForbidden', field: 'metadata.finalizers', detail: 'no new finalizers can be added if the object is being deleted' });
      }
      if ((t.st.type.kind === 'ConfigMap' || t.st.type.kind === 'Secret') && old['immutable'] === true) {
        for (const field of ['data', 'binaryData', 'stringData']) {
          if (!sameJson(old[field], obj[field])) errors.push({ type: 'FieldValueForbidden', field, detail: 'field is immutable when `immutable` is set' });
        }
        if (obj['immutable'] !== true) errors.push({ type: 'FieldValueForbidden', field: 'immutable', detail: 'field is immutable when `immutable` is set' });
      }
    }
    // The schema first, as the API server validates a custom resource against it before anything else looks at it.
    const check = t.st.type.builtin ? undefined : this.schemaChecks.get(typeKey(t.st.type.group, t.st.type.plural))?.get(t.version);
    if (check) {
      const result = check.check(this.render(t.st, obj, t.version));
      if (result.errors) {
        errors.push(...result.errors);
      } else if (errors.length === 0) {
        // stored as the server would: unknown fields pruned, defaults applied
        // metadata is the fake's to keep (ObjectMeta is never pruned by a CRD's schema)
        const stored: Json = { ...result.stored, metadata: obj['metadata'] };
        delete stored['apiVersion'];
        delete stored['kind'];
        for (const k of Object.keys(obj)) delete obj[k];
        Object.assign(obj, stored);
      }
    }
    for (const validator of t.st.type.validators) {
      for (const p of validator(this.render(t.st, obj, t.version), old ? this.render(t.st, old, t.version) : undefined)) {
        errors.push({ type: p.type ?? 'FieldValueInvalid', field: p.field, ...(p.value === undefined ? {} : { value: p.value }), detail: p.message });
      }
    }
    if (errors.length > 0) throw invalid(t.st.type.group, t.st.type.kind, name, errors);
  }

  private writeContext(t: Target, manager: string, scope: Scope): Parameters<typeof recordUpdate>[3] {
    return { manager, apiVersion: this.apiVersionOf(t.st.type, t.version), time: this.now(), scope, hasStatus: t.st.type.status, shape: t.st.shape };
  }

  /** Secrets: `stringData` is written into `data` (base64), as the API server does on every write. */
  private foldStringData(t: Target, obj: Json): void {
    if (t.st.type.kind !== 'Secret' || t.st.type.group !== '' || !isObject(obj['stringData'])) return;
    const data = isObject(obj['data']) ? { ...obj['data'] } : {};
    for (const [k, v] of Object.entries(obj['stringData'])) if (typeof v === 'string') data[k] = Buffer.from(v, 'utf8').toString('base64');
    obj['data'] = data;
    delete obj['stringData'];
  }

  /**
   * Empty maps and lists the real server drops on the way to storage (Go
   * `omitempty`): metadata's labels, annotations, finalizers, owner
   * references for every kind; a ConfigMap's or Secret's data.
   */
  private dropEmpty(t: Target, obj: Json): void {
    const empty = (v: unknown): boolean => (Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0) || v === null;
    const m = obj['metadata'] as Json;
    for (const f of ['labels', 'annotations', 'finalizers', 'ownerReferences', 'managedFields']) if (empty(m[f])) delete m[f];
    if (t.st.type.builtin && t.st.type.group === '' && (t.st.type.kind === 'ConfigMap' || t.st.type.kind === 'Secret')) {
      for (const f of ['data', 'binaryData', 'stringData']) if (empty(obj[f])) delete obj[f];
    }
  }

  /** Kind-specific defaults and status on create (what the built-in strategies do). */
  private prepareForCreate(t: Target, obj: Json): void {
    const kind = t.st.type.kind;
    if (t.st.type.status) delete obj['status'];
    this.foldStringData(t, obj);
    if (!t.st.type.builtin) return;
    const m = obj['metadata'] as Json;
    if (kind === 'Namespace' && t.st.type.group === '') {
      const spec = isObject(obj['spec']) ? obj['spec'] : {};
      spec['finalizers'] = ['kubernetes'];
      obj['spec'] = spec;
      obj['status'] = { phase: 'Active' };
      m['labels'] = { ...(m['labels'] as Json | undefined), 'kubernetes.io/metadata.name': m['name'] };
    } else if (kind === 'Pod' && t.st.type.group === '') {
      obj['status'] = { phase: 'Pending', qosClass: qosClass(obj) };
    } else if (kind === 'CustomResourceDefinition') {
      obj['status'] = {};
    } else {
      const initial = STATUS_ON_CREATE[typeKey(t.st.type.group, t.st.type.plural)];
      if (initial) obj['status'] = initial(this.now());
    }
  }

  /** Status fields the API server always serializes (Go fields without omitempty) for some built-in kinds. */
  private zeroStatus(t: Target, obj: Json): void {
    if (!t.st.type.builtin) return;
    const zero = STATUS_ZERO[typeKey(t.st.type.group, t.st.type.plural)];
    if (!zero) return;
    obj['status'] = { ...structuredClone(zero), ...(isObject(obj['status']) ? obj['status'] : {}) };
  }

  /** Whether a change from `old` to `next` bumps metadata.generation. */
  private specChanged(t: Target, old: Json, next: Json): boolean {
    if (t.st.type.group === 'discovery.k8s.io' && t.st.type.kind === 'EndpointSlice') {
      // its strategy counts every change, labels included
      const bare = (o: Json): Json => {
        const { resourceVersion: _r, managedFields: _f, generation: _g, ...m } = o['metadata'] as Json;
        return { ...o, metadata: m };
      };
      return !sameJson(bare(old), bare(next));
    }
    const strip = (o: Json): Json => {
      const { metadata: _m, status, ...rest } = o;
      return t.st.type.status ? rest : { ...rest, status };
    };
    return !sameJson(strip(old), strip(next));
  }

  private store(t: Target, key: string, obj: Json, prev: Json | undefined, type: Change['type']): Json {
    const rv = this.nextRv();
    const m = obj['metadata'] as Json;
    m['resourceVersion'] = String(rv);
    const tk = typeKey(t.st.type.group, t.st.type.plural);
    if (type === 'DELETED') {
      t.st.objects.delete(key);
      this.uids.delete(m['uid'] as string);
    } else {
      t.st.objects.set(key, obj);
      this.uids.set(m['uid'] as string, { typeKey: tk, key });
    }
    this.emit({ rv, typeKey: tk, type, object: obj, prev });
    this.afterWrite(t, obj, type);
    return obj;
  }

  private afterWrite(t: Target, obj: Json, type: Change['type']): void {
    if (t.st.type.kind === 'CustomResourceDefinition' && t.st.type.group === 'apiextensions.k8s.io') {
      if (type === 'DELETED') this.removeCRD(obj);
      else this.establishCRD(obj);
    }
    this.scheduleControllers();
  }

  private create(t: Target, req: CoreRequest): BufferedResponse {
    const body = parseJsonBody(req.body, req.contentType);
    this.checkKind(t, body);
    const dryRun = this.dryRun(req);
    const manager = this.fieldManager(req, false);
    const obj = structuredClone(body);
    delete obj['apiVersion'];
    delete obj['kind'];
    const m = meta(obj);
    this.checkNamespace(t, m);
    if ((m['name'] === undefined || m['name'] === '') && typeof m['generateName'] === 'string' && m['generateName'] !== '') {
      m['name'] = `${m['generateName']}${[...randomBytes(5)].map((b) => GENERATE_ALPHABET[b % GENERATE_ALPHABET.length]).join('')}`;
    }
    const name = typeof m['name'] === 'string' ? m['name'] : '';
    if (m['resourceVersion'] !== undefined && m['resourceVersion'] !== '' && m['resourceVersion'] !== '0') {
      throw new ApiError(statusOf(500, undefined, 'resourceVersion should not be set on objects to be created'));
    }
    for (const f of ['uid', 'resourceVersion', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'selfLink', 'managedFields', 'generation']) delete m[f];
    this.prepareForCreate(t, obj);
    this.zeroStatus(t, obj);
    this.dropEmpty(t, obj);
    this.validate(t, obj, undefined);
    this.requireNamespace(t, name);
    const key = objKey(t.namespace, name);
    if (t.st.objects.has(key)) throw alreadyExists(this.gr(t.st), name);
    m['uid'] = randomUUID();
    m['creationTimestamp'] = this.now();
    if (t.st.type.generation) m['generation'] = 1;
    const rendered = this.render(t.st, obj, t.version);
    const entries = recordUpdate([], undefined, rendered, this.writeContext(t, manager, 'main'));
    if (entries.length > 0) m['managedFields'] = renderManaged(entries);
    if (dryRun) return buffered(201, this.render(t.st, obj, t.version));
    this.store(t, key, obj, undefined, 'ADDED');
    return buffered(201, this.render(t.st, obj, t.version));
  }

  /**
   * Finish a write of `next` over `old` (update, patch, apply): server-owned
   * metadata from `old`, generation, no-op detection, finalizers, storage.
   */
  private commit(t: Target, old: Json, next: Json, scope: Scope, entries: ManagedEntry[] | undefined, manager: string, dryRun: boolean, managedGiven: unknown): BufferedResponse {
    const om = old['metadata'] as Json;
    const nm = meta(next);
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
        // the status subresource writes status only
        const status = next['status'];
        for (const k of Object.keys(next)) delete next[k];
        Object.assign(next, structuredClone(old));
        if (status === undefined) delete next['status'];
        else next['status'] = status;
      }
    }
    const nextMeta = next['metadata'] as Json;
    this.foldStringData(t, next);
    this.zeroStatus(t, next);
    this.dropEmpty(t, next);
    this.validate(t, next, old);
    if (t.st.type.generation && this.specChanged(t, old, next)) nextMeta['generation'] = ((om['generation'] as number | undefined) ?? 0) + 1;
    // managed fields
    let managed: ManagedEntry[];
    if (entries) managed = entries;
    else {
      const base = managedGiven === undefined || managedGiven === null ? parseManaged(om['managedFields']) : parseManaged(managedGiven);
      managed = recordUpdate(base, this.render(t.st, old, t.version), this.render(t.st, next, t.version), this.writeContext(t, manager, scope));
    }
    const rendered = renderManaged(managed);
    if (rendered.length > 0) nextMeta['managedFields'] = rendered;
    else delete nextMeta['managedFields'];
    nextMeta['resourceVersion'] = om['resourceVersion'];
    // A write that changes nothing (managed-field times aside) is a no-op: same resourceVersion, no event.
    const withoutTimes = (o: Json): string =>
      JSON.stringify(o, (k, v: unknown) => (k === 'time' ? undefined : v));
    if (withoutTimes(old) === withoutTimes(next)) return buffered(200, this.render(t.st, old, t.version));
    if (dryRun) return buffered(200, this.render(t.st, next, t.version));
    const key = objKey(t.namespace, om['name'] as string);
    const finalizers = (nextMeta['finalizers'] as string[] | undefined) ?? [];
    if (om['deletionTimestamp'] !== undefined && finalizers.length === 0) {
      // The last finalizer is gone: the object goes. As on a real server, the
      // DELETED event carries the object as it was stored (finalizer included);
      // the answer is the object as written.
      this.store(t, key, structuredClone(old), old, 'DELETED');
      return buffered(200, this.render(t.st, next, t.version));
    }
    this.store(t, key, next, old, 'MODIFIED');
    return buffered(200, this.render(t.st, next, t.version));
  }

  private update(t: Target, req: CoreRequest): BufferedResponse {
    const body = parseJsonBody(req.body, req.contentType);
    this.checkKind(t, body);
    const dryRun = this.dryRun(req);
    const manager = this.fieldManager(req, false);
    const next = structuredClone(body);
    delete next['apiVersion'];
    delete next['kind'];
    const m = meta(next);
    if (m['name'] !== undefined && m['name'] !== t.name) throw badRequest(`the name of the object (${show(m['name'])}) does not match the name on the URL (${t.name!})`);
    this.checkNamespace(t, m);
    const old = this.existing(t);
    const om = old['metadata'] as Json;
    this.checkPreconditions(t, old, m);
    if (m['resourceVersion'] === undefined || m['resourceVersion'] === '') {
      if (!t.st.type.unconditionalUpdate) {
        throw invalid(t.st.type.group, t.st.type.kind, t.name!, [{ type: 'FieldValueInvalid', field: 'metadata.resourceVersion', value: 0, detail: 'must be specified for an update' }]);
      }
    } else if (m['resourceVersion'] !== om['resourceVersion']) throw conflict(this.gr(t.st), t.name!, MODIFIED);
    const scope: Scope = t.subresource === 'status' ? 'status' : 'main';
    return this.commit(t, old, next, scope, undefined, manager, dryRun, m['managedFields']);
  }

  private checkPreconditions(t: Target, old: Json, m: Json): void {
    const om = old['metadata'] as Json;
    if (m['uid'] !== undefined && m['uid'] !== '' && m['uid'] !== om['uid']) {
      throw conflict(this.gr(t.st), t.name!, `Precondition failed: UID in precondition: ${show(m['uid'])}, UID in object meta: ${show(om['uid'])}`);
    }
  }

  private patch(t: Target, req: CoreRequest): BufferedResponse {
    const contentType = (req.contentType ?? '').split(';')[0]!.trim().toLowerCase();
    const accepted = t.st.type.builtin ? PATCH_TYPES : CR_PATCH_TYPES;
    if (!accepted.includes(contentType) || contentType === 'application/apply-patch+cbor') throw unsupportedMediaType(accepted);
    if (t.subresource === 'scale') return this.patchScale(t, req, contentType);
    if (contentType === 'application/apply-patch+yaml') return this.applyPatch(t, req);
    const dryRun = this.dryRun(req);
    const manager = this.fieldManager(req, false);
    let patchBody: unknown;
    try {
      patchBody = JSON.parse(req.body ?? '');
    } catch (cause) {
      throw badRequest(`error decoding patch: ${cause instanceof Error ? cause.message : String(cause)}`);
    }
    const old = this.existing(t);
    const current = this.render(t.st, old, t.version);
    let patched: Json;
    if (contentType === 'application/json-patch+json') patched = jsonPatch(current, patchBody);
    else {
      if (!isObject(patchBody)) throw badRequest('error decoding patch: a merge patch must be a JSON object');
      patched = (contentType === 'application/merge-patch+json' ? mergePatch(current, patchBody) : strategicMerge(current, patchBody, t.st.shape)) as Json;
    }
    if (!isObject(patched)) throw badRequest('the patch does not leave an object');
    if (patched['kind'] !== t.st.type.kind || patched['apiVersion'] !== current['apiVersion']) {
      throw badRequest(`the patch changes the kind or apiVersion of the object`);
    }
    delete patched['apiVersion'];
    delete patched['kind'];
    const m = meta(patched);
    if (m['name'] !== t.name) throw badRequest(`the name of the object (${show(m['name'])}) does not match the name on the URL (${t.name!})`);
    if (t.st.type.namespaced && m['namespace'] !== t.namespace) throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    const oldUid = (old['metadata'] as Json)['uid'];
    if (m['uid'] !== oldUid) {
      throw invalid(t.st.type.group, t.st.type.kind, t.name!, [{ type: 'FieldValueInvalid', field: 'metadata.uid', value: m['uid'] ?? '', detail: 'field is immutable' }]);
    }
    if (m['resourceVersion'] !== undefined && m['resourceVersion'] !== (old['metadata'] as Json)['resourceVersion']) throw conflict(this.gr(t.st), t.name!, MODIFIED);
    const scope: Scope = t.subresource === 'status' ? 'status' : 'main';
    const managedGiven = sameJson(m['managedFields'], (old['metadata'] as Json)['managedFields']) ? undefined : m['managedFields'];
    return this.commit(t, old, patched, scope, undefined, manager, dryRun, managedGiven);
  }

  private parseApplyBody(body: string | undefined): Json {
    if (body === undefined || body.trim() === '') throw badRequest('the body of the request is empty');
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      try {
        value = parseYaml(body);
      } catch (cause) {
        throw badRequest(`error decoding YAML: ${cause instanceof Error ? cause.message : String(cause)}`);
      }
    }
    if (!isObject(value)) throw badRequest('the apply configuration must be an object');
    return value;
  }

  private applyPatch(t: Target, req: CoreRequest): BufferedResponse {
    const manager = this.fieldManager(req, true);
    const force = req.query.get('force') === 'true';
    const dryRun = this.dryRun(req);
    const config = this.parseApplyBody(req.body);
    this.checkKind(t, config, true);
    const cm = meta(config);
    if (cm['name'] !== undefined && cm['name'] !== t.name) throw badRequest(`the name of the object (${show(cm['name'])}) does not match the name on the URL (${t.name!})`);
    cm['name'] = t.name;
    this.checkNamespace(t, cm);
    const scope: Scope = t.subresource === 'status' ? 'status' : 'main';
    const existing = t.st.objects.get(objKey(t.namespace, t.name!));
    if (existing && cm['resourceVersion'] !== undefined && cm['resourceVersion'] !== (existing['metadata'] as Json)['resourceVersion']) {
      throw conflict(this.gr(t.st), t.name!, MODIFIED);
    }
    if (existing) this.checkPreconditions(t, existing, cm);
    for (const f of ['uid', 'resourceVersion', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'selfLink', 'managedFields', 'generation']) delete cm[f];
    const ctx = this.writeContext(t, manager, scope);
    if (!existing) {
      if (scope === 'status') throw notFound(this.gr(t.st), t.name!);
      // apply creates
      const result = apply([], undefined, config, ctx, force);
      if (!result.ok) throw new Error('apply to a new object cannot conflict');
      const obj = result.object;
      delete obj['apiVersion'];
      delete obj['kind'];
      const m = meta(obj);
      this.prepareForCreate(t, obj);
      this.zeroStatus(t, obj);
      this.dropEmpty(t, obj);
      this.validate(t, obj, undefined);
      this.requireNamespace(t, t.name!);
      m['uid'] = randomUUID();
      m['creationTimestamp'] = this.now();
      if (t.st.type.generation) m['generation'] = 1;
      const rendered = renderManaged(result.entries);
      if (rendered.length > 0) m['managedFields'] = rendered;
      if (dryRun) return buffered(201, this.render(t.st, obj, t.version));
      this.store(t, objKey(t.namespace, t.name!), obj, undefined, 'ADDED');
      return buffered(201, this.render(t.st, obj, t.version));
    }
    const live = this.render(t.st, existing, t.version);
    const result = apply(parseManaged((existing['metadata'] as Json)['managedFields']), live, config, ctx, force);
    if (!result.ok) {
      throw new ApiError(
        statusOf(409, 'Conflict', conflictMessage(result.conflicts), {
          causes: result.conflicts.map((c) => ({
            reason: 'FieldManagerConflict',
            message: `conflict with "${c.manager}"${c.subresource ? ` with subresource "${c.subresource}"` : ''}`,
            field: c.path,
          })),
        }),
      );
    }
    const next = result.object;
    delete next['apiVersion'];
    delete next['kind'];
    return this.commit(t, existing, next, scope, result.entries, manager, dryRun, undefined);
  }

  // --- scale ---------------------------------------------------------------------------

  private scaleOf(t: Target, obj: Json): Json {
    const spec = t.st.type.scale!;
    const read = (p: readonly string[]): unknown => p.reduce<unknown>((cur, k) => (isObject(cur) ? cur[k] : undefined), obj);
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
      spec: { replicas: (read(spec.specReplicasPath) as number | undefined) ?? 0 },
      status: { replicas: (read(spec.statusReplicasPath) as number | undefined) ?? 0, ...(selectorText ? { selector: selectorText } : {}) },
    };
  }

  private getScale(t: Target): BufferedResponse {
    return buffered(200, this.scaleOf(t, this.existing(t)));
  }

  private setReplicas(t: Target, req: CoreRequest, scale: Json): BufferedResponse {
    const old = this.existing(t);
    const sm = isObject(scale['metadata']) ? scale['metadata'] : {};
    if (sm['resourceVersion'] !== undefined && sm['resourceVersion'] !== '' && sm['resourceVersion'] !== (old['metadata'] as Json)['resourceVersion']) {
      throw conflict(this.gr(t.st), t.name!, MODIFIED);
    }
    const replicas = isObject(scale['spec']) ? scale['spec']['replicas'] : undefined;
    if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
      throw invalid('autoscaling', 'Scale', t.name!, [{ type: 'FieldValueInvalid', field: 'spec.replicas', value: replicas ?? null, detail: 'must be greater than or equal to 0' }]);
    }
    const next = structuredClone(old);
    const path = t.st.type.scale!.specReplicasPath;
    let cur = next;
    for (const k of path.slice(0, -1)) {
      if (!isObject(cur[k])) cur[k] = {};
      cur = cur[k] as Json;
    }
    cur[path[path.length - 1]!] = replicas;
    const res = this.commit(t, old, next, 'main', undefined, this.fieldManager(req, false), this.dryRun(req), undefined);
    return buffered(res.status, this.scaleOf(t, JSON.parse(res.body) as Json));
  }

  private updateScale(t: Target, req: CoreRequest): BufferedResponse {
    return this.setReplicas(t, req, parseJsonBody(req.body, req.contentType));
  }

  private patchScale(t: Target, req: CoreRequest, contentType: string): BufferedResponse {
    const current = this.scaleOf(t, this.existing(t));
    let patch: unknown;
    try {
      patch = JSON.parse(req.body ?? '');
    } catch (cause) {
      throw badRequest(`error decoding patch: ${cause instanceof Error ? cause.message : String(cause)}`);
    }
    const patched = contentType === 'application/json-patch+json' ? jsonPatch(current, patch) : (mergePatch(current, patch) as Json);
    return this.setReplicas(t, req, patched);
  }

  // --- delete ---------------------------------------------------------------------------

  private deleteOptions(body: string | undefined): Json {
    if (body === undefined || body.trim() === '') return {};
    return parseJsonBody(body);
  }

  private delete(t: Target, req: CoreRequest): BufferedResponse {
    const opts = this.deleteOptions(req.body);
    const dryRun = this.dryRun(req) || (Array.isArray(opts['dryRun']) && (opts['dryRun'] as unknown[]).includes('All'));
    const obj = this.existing(t);
    return this.deleteObject(t, obj, opts, dryRun);
  }

  private deleteObject(t: Target, obj: Json, opts: Json, dryRun: boolean): BufferedResponse {
    const m = obj['metadata'] as Json;
    const name = m['name'] as string;
    const pre = isObject(opts['preconditions']) ? opts['preconditions'] : {};
    if (pre['uid'] !== undefined && pre['uid'] !== m['uid']) {
      throw conflict(this.kindGr(t.st), name, `the UID in the precondition (${show(pre['uid'])}) does not match the UID in record (${show(m['uid'])}). The object might have been deleted and then recreated`);
    }
    if (pre['resourceVersion'] !== undefined && pre['resourceVersion'] !== m['resourceVersion']) {
      throw conflict(this.kindGr(t.st), name, `the ResourceVersion in the precondition (${show(pre['resourceVersion'])}) does not match the ResourceVersion in record (${show(m['resourceVersion'])}). The object might have been modified`);
    }
    const policy = opts['propagationPolicy'];
    if (policy !== undefined && policy !== 'Orphan' && policy !== 'Background' && policy !== 'Foreground') {
      throw invalid('meta.k8s.io', 'DeleteOptions', '', [{ type: 'FieldValueNotSupported', field: 'propagationPolicy', value: policy, detail: 'supported values: "Foreground", "Background", "Orphan", "nil"' }]);
    }
    const orphanDependents = opts['orphanDependents'];
    const finalizers = [...((m['finalizers'] as string[] | undefined) ?? [])];
    const addFinalizer = policy === 'Orphan' || orphanDependents === true ? 'orphan' : policy === 'Foreground' ? 'foregroundDeletion' : undefined;
    if (addFinalizer && !finalizers.includes(addFinalizer)) finalizers.push(addFinalizer);
    const isNamespace = t.st.type.kind === 'Namespace' && t.st.type.group === '';
    const nsFinalizers = isNamespace && isObject(obj['spec']) && Array.isArray(obj['spec']['finalizers']) ? (obj['spec']['finalizers'] as string[]) : [];
    if (finalizers.length > 0 || nsFinalizers.length > 0) {
      // graceful: mark, keep
      const next = structuredClone(obj);
      const nm = next['metadata'] as Json;
      const already = m['deletionTimestamp'] !== undefined;
      if (finalizers.length > 0) nm['finalizers'] = finalizers;
      if (!already) {
        nm['deletionTimestamp'] = this.now();
        nm['deletionGracePeriodSeconds'] = 0;
        if (typeof nm['generation'] === 'number' && nm['generation'] > 0) nm['generation'] = nm['generation'] + 1;
        if (isNamespace) next['status'] = { ...(isObject(next['status']) ? next['status'] : {}), phase: 'Terminating' };
      }
      if (sameJson(next, obj)) return buffered(200, this.render(t.st, obj, t.version));
      if (dryRun) return buffered(200, this.render(t.st, next, t.version));
      this.store(t, objKey(m['namespace'] as string | undefined, name), next, obj, 'MODIFIED');
      return buffered(200, this.render(t.st, next, t.version));
    }
    if (dryRun) return buffered(200, this.render(t.st, obj, t.version));
    const last = structuredClone(obj);
    this.store(t, objKey(m['namespace'] as string | undefined, name), last, obj, 'DELETED');
    if (t.st.type.builtin) return buffered(200, success(this.gr(t.st), name, m['uid'] as string));
    return buffered(200, this.render(t.st, last, t.version));
  }

  private deleteCollection(t: Target, req: CoreRequest): BufferedResponse {
    const opts = this.deleteOptions(req.body);
    const dryRun = this.dryRun(req);
    const { match } = this.matcher(t.st, t.namespace, req.query);
    const deleted: Json[] = [];
    for (const k of [...t.st.objects.keys()].sort()) {
      const obj = t.st.objects.get(k);
      if (!obj || !match(obj)) continue;
      const target: Target = { ...t, namespace: (obj['metadata'] as Json)['namespace'] as string | undefined, name: (obj['metadata'] as Json)['name'] as string };
      this.deleteObject(target, obj, opts, dryRun);
      deleted.push(this.render(t.st, obj, t.version));
    }
    return buffered(200, { kind: t.st.type.listKind, apiVersion: this.apiVersionOf(t.st.type, t.version), metadata: { resourceVersion: String(this.rv) }, items: deleted });
  }

  // --- CRDs ------------------------------------------------------------------------------

  private establishCRD(crd: Json): void {
    const type = typeFromCRD(crd);
    if (!type) return;
    const existing = this.types.get(typeKey(type.group, type.plural));
    if (existing && existing.type.builtin) return;
    const spec = crd['spec'] as Json;
    const versions = Array.isArray(spec['versions']) ? (spec['versions'] as Json[]) : [];
    const storage = versions.find((v) => v['storage'] === true) ?? versions[0];
    const schema = isObject(storage?.['schema']) && isObject(storage['schema']['openAPIV3Schema']) ? storage['schema']['openAPIV3Schema'] : undefined;
    this.addType(type, schema);
    const checks = new Map<string, SchemaCheck>();
    for (const v of versions) {
      const openAPIV3Schema = isObject(v['schema']) && isObject(v['schema']['openAPIV3Schema']) ? v['schema']['openAPIV3Schema'] : undefined;
      const check = typeof v['name'] === 'string' ? crdCheck(type.group, v['name'], type.kind, type.plural, type.namespaced, openAPIV3Schema) : undefined;
      if (check) checks.set(v['name'] as string, check);
    }
    this.setSchemaChecks(type.group, type.plural, checks);
    // Established and NamesAccepted, as the apiextensions controllers set them.
    const status = isObject(crd['status']) ? crd['status'] : {};
    if (Array.isArray(status['conditions']) && (status['conditions'] as Json[]).some((c) => c['type'] === 'Established')) return;
    const m = crd['metadata'] as Json;
    const st = this.types.get('apiextensions.k8s.io/customresourcedefinitions')!;
    const next = structuredClone(crd);
    const time = this.now();
    next['status'] = {
      conditions: [
        { type: 'NamesAccepted', status: 'True', lastTransitionTime: time, reason: 'NoConflicts', message: 'no conflicts found' },
        { type: 'Established', status: 'True', lastTransitionTime: time, reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' },
      ],
      acceptedNames: spec['names'],
      storedVersions: storage ? [storage['name']] : [],
    };
    queueMicrotask(() => {
      const current = st.objects.get(objKey(undefined, m['name'] as string));
      if (current !== crd) return;
      this.store({ st, version: 'v1', namespace: undefined, name: m['name'] as string, subresource: 'status' }, objKey(undefined, m['name'] as string), next, crd, 'MODIFIED');
    });
  }

  private removeCRD(crd: Json): void {
    const type = typeFromCRD(crd);
    if (!type) return;
    const key = typeKey(type.group, type.plural);
    const st = this.types.get(key);
    if (!st || st.type.builtin) return;
    for (const [k, obj] of [...st.objects.entries()]) {
      const m = obj['metadata'] as Json;
      this.store({ st, version: st.type.versions[0]!, namespace: m['namespace'] as string | undefined, name: m['name'] as string, subresource: undefined }, k, structuredClone(obj), obj, 'DELETED');
    }
    this.types.delete(key);
  }

  // --- controllers: garbage collector, namespace controller -----------------------------------

  private scheduleControllers(): void {
    if (this.controllersScheduled || (!this.options.garbageCollector && !this.options.namespaceController)) return;
    this.controllersScheduled = true;
    setImmediate(() => {
      this.controllersScheduled = false;
      if (this.closed) return;
      try {
        if (this.options.garbageCollector) this.runGarbageCollector();
        if (this.options.namespaceController) this.runNamespaceController();
      } catch {
        // a controller pass that fails is retried on the next write
      }
    });
  }

  private targetOf(st: StoredType, obj: Json): Target {
    const m = obj['metadata'] as Json;
    return { st, version: st.type.versions[0]!, namespace: m['namespace'] as string | undefined, name: m['name'] as string, subresource: undefined };
  }

  private controllerWrite(st: StoredType, obj: Json, change: (next: Json) => void): void {
    const next = structuredClone(obj);
    change(next);
    this.commit(this.targetOf(st, obj), obj, next, 'main', undefined, 'kubeloop-fake-controller', false, undefined);
  }

  private runGarbageCollector(): void {
    for (const st of this.types.values()) {
      for (const obj of [...st.objects.values()]) {
        const m = obj['metadata'] as Json;
        const refs = Array.isArray(m['ownerReferences']) ? (m['ownerReferences'] as Json[]) : [];
        // owners being deleted with orphan / foreground
        const finalizers = (m['finalizers'] as string[] | undefined) ?? [];
        if (m['deletionTimestamp'] !== undefined && finalizers.includes('orphan')) {
          for (const dep of this.dependents(m['uid'] as string)) {
            this.controllerWrite(dep.st, dep.obj, (n) => {
              const nm = n['metadata'] as Json;
              nm['ownerReferences'] = ((nm['ownerReferences'] as Json[]) ?? []).filter((r) => r['uid'] !== m['uid']);
              if ((nm['ownerReferences'] as Json[]).length === 0) delete nm['ownerReferences'];
            });
          }
          this.controllerWrite(st, st.objects.get(objKey(m['namespace'] as string | undefined, m['name'] as string))!, (n) => {
            const nm = n['metadata'] as Json;
            nm['finalizers'] = ((nm['finalizers'] as string[]) ?? []).filter((f) => f !== 'orphan');
            if ((nm['finalizers'] as string[]).length === 0) delete nm['finalizers'];
          });
          continue;
        }
        if (m['deletionTimestamp'] !== undefined && finalizers.includes('foregroundDeletion')) {
          const deps = this.dependents(m['uid'] as string);
          for (const dep of deps) {
            const dm = dep.obj['metadata'] as Json;
            if (dm['deletionTimestamp'] === undefined) this.deleteObject(this.targetOf(dep.st, dep.obj), dep.obj, { propagationPolicy: 'Foreground' }, false);
          }
          const blocking = this.dependents(m['uid'] as string).filter((d) => ((d.obj['metadata'] as Json)['ownerReferences'] as Json[]).some((r) => r['uid'] === m['uid'] && r['blockOwnerDeletion'] === true));
          if (blocking.length === 0) {
            this.controllerWrite(st, st.objects.get(objKey(m['namespace'] as string | undefined, m['name'] as string))!, (n) => {
              const nm = n['metadata'] as Json;
              nm['finalizers'] = ((nm['finalizers'] as string[]) ?? []).filter((f) => f !== 'foregroundDeletion');
              if ((nm['finalizers'] as string[]).length === 0) delete nm['finalizers'];
            });
          }
          continue;
        }
        if (refs.length === 0) continue;
        const live = refs.filter((r) => this.uids.has(r['uid'] as string));
        const current = st.objects.get(objKey(m['namespace'] as string | undefined, m['name'] as string));
        if (!current || current !== obj) continue;
        if (live.length === 0) {
          if (m['deletionTimestamp'] === undefined) this.deleteObject(this.targetOf(st, obj), obj, {}, false);
        } else if (live.length < refs.length) {
          this.controllerWrite(st, obj, (n) => {
            (n['metadata'] as Json)['ownerReferences'] = live;
          });
        }
      }
    }
  }

  private dependents(uid: string): { st: StoredType; obj: Json }[] {
    const out: { st: StoredType; obj: Json }[] = [];
    for (const st of this.types.values()) {
      for (const obj of st.objects.values()) {
        const refs = (obj['metadata'] as Json)['ownerReferences'];
        if (Array.isArray(refs) && (refs as Json[]).some((r) => r['uid'] === uid)) out.push({ st, obj });
      }
    }
    return out;
  }

  private runNamespaceController(): void {
    const nsType = this.types.get('/namespaces')!;
    for (const ns of [...nsType.objects.values()]) {
      const m = ns['metadata'] as Json;
      if (m['deletionTimestamp'] === undefined) continue;
      const name = m['name'] as string;
      let remaining = 0;
      for (const st of this.types.values()) {
        if (!st.type.namespaced) continue;
        for (const obj of [...st.objects.values()]) {
          const om = obj['metadata'] as Json;
          if (om['namespace'] !== name) continue;
          remaining++;
          if (om['deletionTimestamp'] === undefined) this.deleteObject(this.targetOf(st, obj), obj, {}, false);
        }
      }
      if (remaining > 0) continue;
      // finalize: drop the "kubernetes" finalizer, the namespace goes
      const last = structuredClone(ns);
      this.store({ st: nsType, version: 'v1', namespace: undefined, name, subresource: undefined }, objKey(undefined, name), last, ns, 'DELETED');
    }
  }

  // --- seeding and direct access -------------------------------------------------------------

  private seedNamespace(name: string): void {
    const st = this.types.get('/namespaces')!;
    const obj: Json = {
      metadata: { name, uid: randomUUID(), creationTimestamp: this.now(), labels: { 'kubernetes.io/metadata.name': name } },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    };
    this.store({ st, version: 'v1', namespace: undefined, name, subresource: undefined }, objKey(undefined, name), obj, undefined, 'ADDED');
  }

  /** Every stored object of a kind (copies), for assertions. */
  snapshot(group: string, plural: string, version?: string): Json[] {
    const st = this.types.get(typeKey(group, plural));
    if (!st) return [];
    return [...st.objects.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, o]) => this.render(st, o, version ?? st.type.versions[0]!));
  }
}

export type { StatusBody };
