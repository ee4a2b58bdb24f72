/**
 * The fake API server's entry: a request is cut into its RequestInfo,
 * routed to discovery or to the handler of its verb (list.ts, watch.ts,
 * write.ts, patch.ts, delete.ts, subresources.ts) over one Storage; the
 * controllers (controllers/) run after changes. Transport-agnostic:
 * requests in, responses or watch sessions out.
 */
import { randomUUID } from 'node:crypto';
import type { TestClock } from '../clock.js';
import { runCRDController } from './controllers/crds.js';
import { collectGarbage } from './controllers/garbage-collector.js';
import { finalizeNamespaces } from './controllers/namespaces.js';
import { runAfterChanges } from './controllers/run.js';
import { deleteCollection, del } from './delete.js';
import { aggregatedDocument, AGGREGATED_CONTENT_TYPE, apiGroupDocument, apiGroupListDocument, apiVersionsDocument, OTHER_SUBRESOURCES, resourceListDocument, wantsAggregated } from './discovery.js';
import { objKey } from './json.js';
import type { Json } from './json.js';
import { get, list } from './list.js';
import { encoded, negotiate } from './negotiation.js';
import type { Negotiated } from './negotiation.js';
import { patch } from './patch.js';
import { buffered, requestInfo, verbOf } from './request-info.js';
import type { BufferedResponse, CoreRequest, CoreResponse, RequestAttributes, Target } from './request-info.js';
import { builtinTypes, typeKey } from './resources.js';
import type { CustomTypeSpec, ResourceType } from './resources.js';
import type { SchemaCheck } from './schema-check.js';
import { ApiError, methodNotAllowed, NetworkFault, resourceNotFound, statusOf } from './status.js';
import type { StatusBody } from './status.js';
import { render, Storage } from './storage.js';
import type { Validator } from './storage.js';
import { evict, finalizeNamespace, getScale, tokenRequest, updateScale } from './subresources.js';
import { Watches } from './watch.js';
import { create, update } from './write.js';

export type { BufferedResponse, CoreRequest, CoreResponse, RequestAttributes, WatchSession } from './request-info.js';

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

/** The warning kube-apiserver gives on every request to a deprecated built-in resource. */
const DEPRECATED: Readonly<Record<string, string>> = {
  '/endpoints': 'v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice',
};

const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

export class FakeApi {
  private readonly storage: Storage;
  private readonly watches: Watches;
  private bookmarkTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: CoreOptions) {
    this.storage = new Storage(options.clock, options.historyLimit);
    this.watches = new Watches(this.storage);
    runCRDController(this.storage);
    runAfterChanges(this.storage, [...(options.garbageCollector ? [collectGarbage] : []), ...(options.namespaceController ? [finalizeNamespaces] : [])], () => this.closed);
    for (const t of builtinTypes()) this.storage.addType(t);
    for (const ns of SYSTEM_NAMESPACES) this.seedNamespace(ns);
    if (options.bookmarkIntervalMs > 0) {
      this.bookmarkTimer = setInterval(() => this.bookmark(), options.bookmarkIntervalMs);
      this.bookmarkTimer.unref();
    }
  }

  // --- types ------------------------------------------------------------------

  /** Serve a custom kind (no CRD object is stored). */
  registerType(spec: CustomTypeSpec, schema?: Json): void {
    this.storage.registerType(spec, schema);
  }

  /** Validate (and prune and default) objects of a kind against its schema, per version; an empty map turns it off. */
  setSchemaChecks(group: string, plural: string, checks: ReadonlyMap<string, SchemaCheck>): void {
    this.storage.setSchemaChecks(group, plural, checks);
  }

  /** Add a validator to a kind (now or when it is registered later). */
  addValidator(group: string, plural: string, validator: Validator): void {
    this.storage.addValidator(group, plural, validator);
  }

  allTypes(): ResourceType[] {
    return this.storage.allTypes();
  }

  findByKind(apiVersion: string, kind: string): ReturnType<Storage['findByKind']> {
    return this.storage.findByKind(apiVersion, kind);
  }

  get resourceVersion(): number {
    return this.storage.resourceVersion;
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
    const method = req.method.toUpperCase();
    const info = requestInfo(req.path);
    switch (info.kind) {
      case 'root':
        return buffered(200, { paths: ['/api', '/api/v1', '/apis', '/healthz', '/livez', '/readyz', '/version'] });
      case 'health':
        return { kind: 'buffered', status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' }, body: 'ok' };
      case 'version':
        return buffered(200, { major: '1', minor: '37', gitVersion: 'v1.37.2-kubeloop-fake', gitCommit: '', gitTreeState: 'clean', buildDate: '', goVersion: '', compiler: 'kubeloop', platform: `${process.platform}/${process.arch}` });
      case 'discovery':
        return this.discovery(req, info.path);
      case 'group': {
        const doc = apiGroupDocument(this.allTypes(), info.group);
        if (!doc) throw resourceNotFound();
        return buffered(200, doc);
      }
      case 'resources': {
        if (method !== 'GET') throw methodNotAllowed();
        const doc = resourceListDocument(this.allTypes(), info.group, info.version);
        if (!doc) throw resourceNotFound();
        return buffered(200, doc);
      }
      case 'unknown':
        throw resourceNotFound();
      case 'resource':
        break;
    }
    const { group, version, namespace, resource, name, subresource } = info;
    const st = this.storage.findType(group, version, resource);
    // a group version nothing serves (a CRD's, once it is gone) is the mux's plain-text 404, not a Status (found by the schema-change fuzzer)
    if (!st && !this.allTypes().some((t) => t.group === group && t.versions.includes(version))) {
      return { kind: 'buffered', status: 404, headers: { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' }, body: '404 page not found\n' };
    }
    if (!st) throw resourceNotFound();
    if (namespace !== undefined && !st.type.namespaced) throw resourceNotFound();
    if (st.type.namespaced && name !== undefined && namespace === undefined) throw resourceNotFound();
    const other = st.type.builtin ? OTHER_SUBRESOURCES[typeKey(st.type.group, st.type.plural)] : undefined;
    if (subresource !== undefined && !(subresource === 'status' && st.type.status) && !(subresource === 'scale' && st.type.scale) && other?.name !== subresource) throw resourceNotFound();
    const target: Target = { st, version, namespace, name, subresource };
    const deprecation = st.type.builtin ? DEPRECATED[typeKey(st.type.group, st.type.plural)] : undefined;
    if (deprecation === undefined) return this.serve(req, target, other);
    // a deprecated API warns on every answer, errors too, before anything else the request warns about
    let res: CoreResponse;
    try {
      res = await this.serve(req, target, other);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      res = buffered(err.code, err.body, err.headers);
    }
    const warning = `299 - ${JSON.stringify(deprecation)}`;
    const existing = res.headers['warning'];
    const headers = { ...res.headers, warning: existing ? `${warning}, ${existing}` : warning };
    return res.kind === 'buffered' ? { ...res, headers } : { ...res, headers, start: res.start.bind(res), close: res.close.bind(res) };
  }

  private async serve(req: CoreRequest, target: Target, other: (typeof OTHER_SUBRESOURCES)[string] | undefined): Promise<CoreResponse> {
    const method = req.method.toUpperCase();
    const { st, version, namespace, name, subresource } = target;
    const { group, plural: resource } = st.type;
    if (other !== undefined && subresource === other.name) {
      // eviction and token take a POST (create), finalize a PUT (update)
      const verb = other.verbs[0] === 'create' ? 'create' : 'update';
      if (method !== (verb === 'create' ? 'POST' : 'PUT')) throw methodNotAllowed();
      const attrs: RequestAttributes = { verb, group, version, resource, kind: st.type.kind, subresource, namespace, name };
      this.options.record(attrs);
      await this.options.intercept(attrs);
      if (subresource === 'eviction') return evict(this.storage, target, req);
      if (subresource === 'token') return tokenRequest(this.storage, target, req);
      return finalizeNamespace(this.storage, target, req);
    }
    const verb = verbOf(method, target, req.query);
    const attrs: RequestAttributes = { verb, group, version, resource, kind: st.type.kind, subresource, namespace, name };
    this.options.record(attrs);
    await this.options.intercept(attrs);
    const s = this.storage;
    switch (verb) {
      case 'get':
        if (subresource !== undefined) return subresource === 'scale' ? getScale(target) : get(s, target, req);
        return this.read(target, req, false, (form) => get(s, target, req, form));
      case 'list':
        return this.read(target, req, true, (form) => list(s, target, req, form));
      case 'watch':
        return this.watches.watch(target, req);
      case 'create':
        if (st.type.namespaced && namespace === undefined) throw methodNotAllowed();
        return create(s, target, req);
      case 'update':
        return subresource === 'scale' ? updateScale(s, target, req) : update(s, target, req);
      case 'patch':
        return patch(s, target, req);
      case 'delete':
        return del(s, target, req);
      case 'deletecollection':
        // a namespaced kind is deleted per namespace: across all namespaces the server answers 405
        if (st.type.namespaced && namespace === undefined) throw methodNotAllowed();
        return deleteCollection(s, target, req);
    }
  }

  /** A get or list in the form and encoding its Accept header negotiates (a 406 first when it names none the server has); errors in that encoding too. */
  private read(t: Target, req: CoreRequest, collection: boolean, answer: (form: Negotiated) => BufferedResponse): BufferedResponse {
    const form = negotiate(req.accept, t.st, collection);
    try {
      return encoded(answer(form), form);
    } catch (err) {
      if (err instanceof ApiError) return encoded(buffered(err.code, err.body, err.headers), form);
      throw err;
    }
  }

  private discovery(req: CoreRequest, path: '/api' | '/apis'): BufferedResponse {
    if (this.options.aggregatedDiscovery && wantsAggregated(req.accept)) {
      return buffered(200, aggregatedDocument(this.allTypes(), path === '/api'), { 'content-type': AGGREGATED_CONTENT_TYPE });
    }
    return buffered(200, path === '/api' ? apiVersionsDocument() : apiGroupListDocument(this.allTypes()));
  }

  // --- watches and history --------------------------------------------------------------

  /** Send a BOOKMARK with the current resourceVersion to every watch that asked for bookmarks. */
  bookmark(): void {
    this.watches.bookmark();
  }

  /** Forget history up to now: watches and exact lists from older resourceVersions get 410. */
  compact(): number {
    return this.storage.compact();
  }

  /** End every open watch (as an API server restart would). */
  endWatches(): void {
    this.watches.endAll();
  }

  close(): void {
    this.closed = true;
    if (this.bookmarkTimer) clearInterval(this.bookmarkTimer);
    this.endWatches();
  }

  // --- seeding and direct access -------------------------------------------------------------

  private seedNamespace(name: string): void {
    const obj: Json = {
      metadata: { name, uid: randomUUID(), creationTimestamp: this.storage.now(), labels: { 'kubernetes.io/metadata.name': name } },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    };
    this.storage.store(this.storage.namespaces, objKey(undefined, name), obj, undefined, 'ADDED');
  }

  /** Every stored object of a kind (copies), for assertions. */
  snapshot(group: string, plural: string, version?: string): Json[] {
    const st = this.storage.types.get(typeKey(group, plural));
    if (!st) return [];
    return [...st.objects.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, o]) => render(st, o, version ?? st.type.versions[0]!));
  }
}

export type { StatusBody };
