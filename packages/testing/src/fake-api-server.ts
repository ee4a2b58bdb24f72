/**
 * A Kubernetes API server in memory with the real server's semantics, for
 * operator authors' unit tests: the unchanged kubeloop client, mapper,
 * informers and controllers run on it through its `Transport`, and anything
 * that speaks HTTP (kubectl, a manager built from a KubeConfig) through
 * `listen()`. What it does not do is listed in docs/testing-fake.md.
 */
import { createClient } from '@kubeloop/client';
import type { Client, ClientOptions, RestConfig, Transport, TransportOptions } from '@kubeloop/client';
import type { KubeObject, ResourceDescriptor } from '@kubeloop/scheme';
import { createTestClock } from './clock.js';
import type { TestClock } from './clock.js';
import { TestingError } from './errors.js';
import { FakeApi } from './internal/api.js';
import type { RequestAttributes, Verb } from './internal/request-info.js';

export type { Verb };
import { listen } from './internal/http-server.js';
import { memoryTransport } from './internal/memory-transport.js';
import { typeFromCRD } from './internal/resources.js';
import { ApiError, alreadyExists, conflict, forbidden, invalid, MODIFIED, NetworkFault, notFound, statusOf } from './internal/status.js';
import type { ObjectValidator } from './validator.js';
import { descriptorCheck } from './internal/schema-check.js';

/**
 * One request the fake served (its request log, and what interceptors match):
 * `verb`, `group`, `version`, `resource` (the plural, e.g. `configmaps`),
 * `kind`, `subresource`, `namespace`, `name`, and when it arrived.
 *
 * @example
 * ```ts
 * const updates = fake.requests.filter((r: RequestRecord) => r.verb === 'update' && r.kind === 'ConfigMap');
 * ```
 */
export interface RequestRecord extends RequestAttributes {
  /** Reading of the fake's clock when the request arrived, ms since the epoch. */
  readonly at: number;
}

/**
 * Which requests an injection acts on. Every field given must match; an
 * empty match matches every resource request (discovery is never matched).
 *
 * @example
 * ```ts
 * const match: RequestMatch = { verb: 'update', kind: 'ConfigMap', name: 'settings', times: 1 };
 * ```
 */
export interface RequestMatch {
  readonly verb?: Verb | readonly Verb[];
  /** The kind, e.g. `ConfigMap`. */
  readonly kind?: string;
  /** The API group (`''` for core). */
  readonly group?: string;
  /** The plural resource, e.g. `configmaps`. */
  readonly resource?: string;
  /** `status`, `scale`; `''` matches only requests to the main resource. */
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** Act on this many matching requests, then stop. Default: every one. */
  readonly times?: number;
}

/** An error a fault answers with: a reason the fake shapes like the real server, or a Status of your own. */
export type FaultError =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'Forbidden'
  | 'Unauthorized'
  | 'BadRequest'
  | 'TooManyRequests'
  | 'InternalError'
  | 'ServiceUnavailable'
  | 'Timeout'
  | 'Gone'
  | { readonly code: number; readonly reason?: string; readonly message?: string; readonly retryAfterSeconds?: number };

/**
 * What an injection does to a matching request. `delayMs` alone delays it
 * (real time); with `error` the request then fails with that Status and is
 * not carried out; `network` drops it with no answer (the client sees a
 * `Network` ClientError; over HTTP the connection is destroyed).
 *
 * @example
 * ```ts
 * const slowThenConflict: Fault = { delayMs: 200, error: 'Conflict' };
 * ```
 */
export interface Fault {
  readonly delayMs?: number;
  readonly error?: FaultError;
  readonly network?: boolean;
}

/**
 * A live injection. `remove()` stops it.
 *
 * @example
 * ```ts
 * const injection: Injection = fake.inject({ verb: 'get' }, { delayMs: 50 });
 * injection.remove();
 * ```
 */
export interface Injection {
  /** Requests it has acted on. */
  readonly hits: number;
  remove(): void;
}

/**
 * How the fake serves a kind registered from a descriptor.
 *
 * @example
 * ```ts
 * fake.register(HardDisk, { status: true, selectableFields: ['spec.storageClass'] } satisfies RegisterOptions);
 * ```
 */
export interface RegisterOptions {
  /** A status subresource (status writes ignore everything else; main writes ignore status). Default: false. */
  readonly status?: boolean;
  /** A scale subresource, with JSON paths as in a CRD (`.spec.replicas`). Default: none. */
  readonly scale?: { readonly specReplicasPath: string; readonly statusReplicasPath: string; readonly labelSelectorPath?: string };
  /** Extra field-selector paths (a CRD's `selectableFields`), e.g. `spec.storageClass`. Default: none. */
  readonly selectableFields?: readonly string[];
  /** Short names for kubectl. Default: none. */
  readonly shortNames?: readonly string[];
  /** Validate objects of the kind before they are stored, besides its schema. Default: none. */
  readonly validate?: ObjectValidator;
  /**
   * For a schema-first kind (`defineKind({ schema })`): check every create
   * and update against the schema as the API server does (422 Invalid with
   * the server's field paths and messages), prune unknown fields and apply
   * defaults. CEL rules are not evaluated. Default: true.
   */
  readonly schemaValidation?: boolean;
}

/**
 * Options for {@link createFakeApiServer}.
 *
 * @example
 * ```ts
 * const fake = createFakeApiServer({ clock: createTestClock({ frozen: true }), garbageCollector: true } satisfies FakeApiServerOptions);
 * ```
 */
export interface FakeApiServerOptions {
  /** The clock for timestamps. Default: a {@link createTestClock} that follows real time. */
  readonly clock?: TestClock;
  /**
   * Run a garbage collector: dependents whose owners are all gone are
   * deleted, `Orphan` and `Foreground` deletions complete. Default: false,
   * as on envtest (no kube-controller-manager): owners deleted with
   * `Orphan`/`Foreground` keep their `orphan`/`foregroundDeletion`
   * finalizer and dependents stay.
   */
  readonly garbageCollector?: boolean;
  /**
   * Run a namespace controller: a deleted namespace's objects are deleted
   * and the namespace goes once it is empty. Default: false, as on envtest,
   * where a deleted namespace stays `Terminating`.
   */
  readonly namespaceController?: boolean;
  /** Serve aggregated discovery (apidiscovery.k8s.io/v2) when asked for it. Default: true. */
  readonly aggregatedDiscovery?: boolean;
  /** Send a BOOKMARK to watches that allow them this often, real time (0: only on `bookmark()`). Default: 60 000. */
  readonly bookmarkIntervalMs?: number;
  /** The User-Agent of in-memory requests (its first `/`-part is the default field manager). Default: `kubeloop/0.1.0 (fake)`. */
  readonly userAgent?: string;
  /** Requests kept in `requests`, oldest dropped first. Default: 10 000. */
  readonly requestLogSize?: number;
  /**
   * Changes kept for watches, exact lists and continue tokens; beyond it the
   * oldest are compacted away (as etcd compaction and the watch cache's
   * capacity do), and resourceVersions before them get 410 Expired. Default: 10 000.
   */
  readonly historyLimit?: number;
}

/**
 * What {@link FakeApiServer.listen} returns: the fake on a loopback HTTP port.
 *
 * @example
 * ```ts
 * const endpoint: FakeHttpEndpoint = await fake.listen();
 * execFileSync('kubectl', ['--kubeconfig', writeFileSyncAndReturnPath(endpoint.kubeconfig), 'get', 'configmaps']);
 * ```
 */
export interface FakeHttpEndpoint {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** A config for it (plain HTTP, no auth): `createClient({ kubeConfig })`, `createManager({ kubeConfig })`. */
  readonly kubeConfig: RestConfig;
  /** The same as a kubeconfig file's YAML, for kubectl (`--kubeconfig`) and `loadKubeConfig({ path })`. */
  readonly kubeconfig: string;
  close(): Promise<void>;
}

/**
 * The fake API server.
 *
 * @example
 * ```ts
 * const fake = createFakeApiServer();
 * const client = fake.client({ fieldOwner: 'my-operator' });
 * await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'default' } });
 * ```
 */
export interface FakeApiServer {
  /** The clock the fake stamps times from. */
  readonly clock: TestClock;
  /** The current resourceVersion (one counter for every kind). */
  readonly resourceVersion: string;
  /** Requests served so far (most recent last), for assertions. */
  readonly requests: readonly RequestRecord[];
  /**
   * A new in-memory Transport to the fake, for `createClient({ transport })`
   * or `createCluster({ transport })`. It honours `timeoutMs`, `maxRetries`
   * (Retry-After), `maxResponseBytes`, `userAgent` and `onRequest`; it does
   * no rate limiting.
   */
  createTransport(options?: TransportOptions): Transport;
  /** A client over a new in-memory transport; `options` as for `createClient` (`kubeConfig` and `transport` excepted; `transportOptions` apply). */
  client(options?: Omit<ClientOptions, 'transport' | 'kubeConfig'>): Client;
  /** Serve a custom kind from its descriptor (which must name its plural and scope). Idempotent. */
  register(kind: ResourceDescriptor, options?: RegisterOptions): void;
  /** Store CRD objects (apiextensions.k8s.io/v1) and serve their kinds, as envtest's `installCRDs`; resolves once established. */
  installCRDs(crds: readonly object[]): Promise<void>;
  /** Add a validator to a kind (registered now or later). */
  validate(kind: Pick<ResourceDescriptor, 'group' | 'plural'>, validator: ObjectValidator): void;
  /** Create objects as a client would, creating any namespace they name that does not exist yet. */
  load(objects: readonly KubeObject[]): Promise<void>;
  /** Every stored object of a kind (copies, in key order), without going through a client. */
  objects(kind: Pick<ResourceDescriptor, 'group' | 'plural'>): KubeObject[];
  /** Act on matching requests: delay them, fail them, drop them. */
  inject(match: RequestMatch, fault: Fault | ((request: RequestRecord) => Fault | undefined)): Injection;
  /** Forget the change history, as etcd compaction does: watches and exact lists from older resourceVersions get 410 Expired. Returns the resourceVersion compacted to. */
  compact(): string;
  /** Send a BOOKMARK now to every watch that allows bookmarks. */
  bookmark(): void;
  /** End every open watch normally (as an API server restart would); clients re-watch. */
  endWatches(): void;
  /** Serve the fake over HTTP on loopback. Default: 127.0.0.1, a free port. */
  listen(options?: { readonly host?: string; readonly port?: number }): Promise<FakeHttpEndpoint>;
  /** End watches, close HTTP endpoints; later requests fail. */
  close(): Promise<void>;
}

function jsonPathParts(p: string): readonly string[] {
  return p.replace(/^\./, '').split('.').filter(Boolean);
}

function matches(m: RequestMatch, r: RequestRecord): boolean {
  if (m.verb !== undefined && !(typeof m.verb === 'string' ? m.verb === r.verb : m.verb.includes(r.verb))) return false;
  if (m.kind !== undefined && m.kind !== r.kind) return false;
  if (m.group !== undefined && m.group !== r.group) return false;
  if (m.resource !== undefined && m.resource !== r.resource) return false;
  if (m.subresource !== undefined && m.subresource !== (r.subresource ?? '')) return false;
  if (m.namespace !== undefined && m.namespace !== r.namespace) return false;
  if (m.name !== undefined && m.name !== r.name) return false;
  return true;
}

function faultError(error: FaultError, r: RequestRecord): ApiError {
  const gr = { group: r.group, resource: r.resource };
  const name = r.name ?? '';
  if (typeof error === 'object') {
    return new ApiError(
      statusOf(error.code, error.reason, error.message ?? `injected by the fake API server`, error.retryAfterSeconds === undefined ? undefined : { retryAfterSeconds: error.retryAfterSeconds }),
      error.retryAfterSeconds === undefined ? {} : { 'retry-after': String(error.retryAfterSeconds) },
    );
  }
  switch (error) {
    case 'NotFound':
      return notFound(gr, name);
    case 'AlreadyExists':
      return alreadyExists(gr, name);
    case 'Conflict':
      return conflict(gr, name, MODIFIED);
    case 'Invalid':
      return invalid(r.group, r.kind, name, [{ type: 'FieldValueInvalid', field: 'metadata', value: name, detail: 'injected by the fake API server' }]);
    case 'Forbidden':
      return forbidden(gr, name, `User "system:serviceaccount:default:default" cannot ${r.verb} resource "${r.resource}" in API group "${r.group}"${r.namespace ? ` in the namespace "${r.namespace}"` : ''}`);
    case 'Unauthorized':
      return new ApiError(statusOf(401, 'Unauthorized', 'Unauthorized'));
    case 'BadRequest':
      return new ApiError(statusOf(400, 'BadRequest', 'injected by the fake API server'));
    case 'TooManyRequests':
      return new ApiError(statusOf(429, 'TooManyRequests', 'Too many requests, please try again later.', {}));
    case 'InternalError':
      return new ApiError(statusOf(500, 'InternalError', 'Internal error occurred: injected by the fake API server', { causes: [{ message: 'injected by the fake API server' }] }));
    case 'ServiceUnavailable':
      return new ApiError(statusOf(503, 'ServiceUnavailable', 'the server is currently unable to handle the request'));
    case 'Timeout':
      return new ApiError(statusOf(504, 'Timeout', 'Timeout: request did not complete within the allowed duration'));
    case 'Gone':
      return new ApiError(statusOf(410, 'Expired', 'too old resource version'));
  }
}

interface InjectionState {
  readonly match: RequestMatch;
  readonly fault: Fault | ((request: RequestRecord) => Fault | undefined);
  hits: number;
  removed: boolean;
}

/**
 * Create a fake API server in memory. It starts with the namespaces a new
 * cluster has (`default`, `kube-system`, `kube-public`, `kube-node-lease`)
 * and serves the built-in kinds of `@kubeloop/scheme`.
 *
 * @example
 * ```ts
 * import { createFakeApiServer } from '@kubeloop/testing';
 * import { ConfigMap } from '@kubeloop/scheme';
 *
 * const fake = createFakeApiServer();
 * const client = fake.client({ fieldOwner: 'test' });
 * await client.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', namespace: 'default' }, data: { a: '1' } });
 * const cm = await client.get(ConfigMap, { namespace: 'default', name: 'cfg' });
 * cm.metadata?.resourceVersion; // from the fake's one counter
 * ```
 */
export function createFakeApiServer(options: FakeApiServerOptions = {}): FakeApiServer {
  return new Fake(options);
}

class Fake implements FakeApiServer {
  readonly clock: TestClock;
  private readonly api: FakeApi;
  private readonly injections: InjectionState[] = [];
  private readonly log: RequestRecord[] = [];
  private readonly logSize: number;
  private readonly userAgent: string;
  private readonly endpoints = new Set<{ close(): Promise<void> }>();
  private readonly transports = new Set<Transport>();
  private closed = false;

  constructor(options: FakeApiServerOptions) {
    this.clock = options.clock ?? createTestClock();
    this.logSize = options.requestLogSize ?? 10_000;
    this.userAgent = options.userAgent ?? 'kubeloop/0.1.0 (fake)';
    const bookmarkIntervalMs = options.bookmarkIntervalMs ?? 60_000;
    const historyLimit = options.historyLimit ?? 10_000;
    if (!Number.isInteger(historyLimit) || historyLimit < 1) throw new TestingError('InvalidArgument', `historyLimit must be a positive integer, got ${historyLimit}`);
    if (!Number.isFinite(bookmarkIntervalMs) || bookmarkIntervalMs < 0) throw new TestingError('InvalidArgument', `bookmarkIntervalMs must be >= 0, got ${bookmarkIntervalMs}`);
    this.api = new FakeApi({
      clock: this.clock,
      garbageCollector: options.garbageCollector ?? false,
      namespaceController: options.namespaceController ?? false,
      aggregatedDiscovery: options.aggregatedDiscovery ?? true,
      bookmarkIntervalMs,
      historyLimit,
      intercept: (attrs) => this.intercept(attrs),
      record: (attrs) => this.record(attrs),
    });
  }

  get resourceVersion(): string {
    return String(this.api.resourceVersion);
  }

  get requests(): readonly RequestRecord[] {
    return this.log;
  }

  private record(attrs: RequestAttributes): void {
    this.log.push({ ...attrs, at: this.clock.now() });
    if (this.log.length > this.logSize) this.log.splice(0, this.log.length - this.logSize);
  }

  private async intercept(attrs: RequestAttributes): Promise<void> {
    const record = this.log[this.log.length - 1] ?? { ...attrs, at: this.clock.now() };
    for (const inj of this.injections) {
      if (inj.removed || !matches(inj.match, record)) continue;
      if (inj.match.times !== undefined && inj.hits >= inj.match.times) continue;
      const fault = typeof inj.fault === 'function' ? inj.fault(record) : inj.fault;
      if (!fault) continue;
      inj.hits++;
      if (fault.delayMs !== undefined && fault.delayMs > 0) await new Promise((r) => setTimeout(r, fault.delayMs));
      if (fault.network) throw new NetworkFault('connection reset by the fake API server (injected)');
      if (fault.error !== undefined) throw faultError(fault.error, record);
    }
  }

  createTransport(options: TransportOptions = {}): Transport {
    const transport = memoryTransport(this.api, { isClosed: () => this.closed }, { userAgent: this.userAgent, ...options });
    this.transports.add(transport);
    return transport;
  }

  client(options: Omit<ClientOptions, 'transport' | 'kubeConfig'> = {}): Client {
    const { transportOptions, ...rest } = options;
    return createClient({ ...rest, transport: this.createTransport(transportOptions) });
  }

  register(kind: ResourceDescriptor, options: RegisterOptions = {}): void {
    if (!kind || typeof kind.kind !== 'string' || typeof kind.group !== 'string' || typeof kind.version !== 'string') {
      throw new TestingError('InvalidArgument', 'register needs a resource descriptor (defineKind)');
    }
    if (!kind.plural || kind.namespaced === undefined) {
      throw new TestingError('InvalidArgument', `register ${kind.kind}.${kind.apiVersion}: the descriptor must name its plural and whether it is namespaced`);
    }
    this.api.registerType({
      group: kind.group,
      versions: [kind.version],
      kind: kind.kind,
      plural: kind.plural,
      ...(kind.listKind ? { listKind: kind.listKind } : {}),
      namespaced: kind.namespaced,
      ...(options.shortNames ? { shortNames: options.shortNames } : {}),
      status: options.status ?? false,
      ...(options.scale
        ? {
            scale: {
              specReplicasPath: jsonPathParts(options.scale.specReplicasPath),
              statusReplicasPath: jsonPathParts(options.scale.statusReplicasPath),
              ...(options.scale.labelSelectorPath ? { labelSelectorPath: jsonPathParts(options.scale.labelSelectorPath) } : {}),
            },
          }
        : {}),
      ...(options.selectableFields ? { selectableFields: options.selectableFields.map((f) => f.replace(/^\./, '')) } : {}),
      ...(options.validate ? { validators: [options.validate] } : {}),
    }, kind.schema?.openAPIV3Schema);
    const check = options.schemaValidation === false ? undefined : descriptorCheck(kind);
    this.api.setSchemaChecks(kind.group, kind.plural, check ? new Map([[kind.version, check]]) : new Map());
  }

  async installCRDs(crds: readonly object[]): Promise<void> {
    const client = this.client({ fieldOwner: 'kubeloop-fake' });
    for (const crd of crds) {
      const c = crd as { metadata?: { name?: unknown } };
      if (!typeFromCRD(crd as Record<string, unknown>) || typeof c.metadata?.name !== 'string') {
        throw new TestingError('InvalidArgument', `installCRDs: ${JSON.stringify(c.metadata?.name ?? '(unnamed)')} is not a CustomResourceDefinition with group, names, scope and a served version`);
      }
      await client.apply({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', ...(crd as Record<string, unknown>), metadata: { name: c.metadata.name } }, { force: true });
    }
    // established on a later tick
    await new Promise<void>((r) => setImmediate(r));
  }

  validate(kind: Pick<ResourceDescriptor, 'group' | 'plural'>, validator: ObjectValidator): void {
    if (!kind.plural) throw new TestingError('InvalidArgument', 'validate needs a descriptor that names its plural');
    this.api.addValidator(kind.group, kind.plural, validator);
  }

  async load(objects: readonly KubeObject[]): Promise<void> {
    const client = this.client();
    for (const obj of objects) {
      if (!obj.apiVersion || !obj.kind) throw new TestingError('InvalidArgument', `load: every object needs apiVersion and kind (got ${JSON.stringify(obj.metadata?.name)})`);
      const ns = obj.metadata?.namespace;
      const found = this.api.findByKind(obj.apiVersion, obj.kind);
      if (ns && found?.st.type.namespaced && this.objects({ group: '', plural: 'namespaces' }).every((n) => n.metadata?.name !== ns)) {
        await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      }
      await client.create(obj as KubeObject & { apiVersion: string; kind: string });
    }
  }

  objects(kind: Pick<ResourceDescriptor, 'group' | 'plural'>): KubeObject[] {
    if (!kind.plural) throw new TestingError('InvalidArgument', 'objects needs a descriptor that names its plural');
    return this.api.snapshot(kind.group, kind.plural);
  }

  inject(match: RequestMatch, fault: Fault | ((request: RequestRecord) => Fault | undefined)): Injection {
    if (match.times !== undefined && (!Number.isInteger(match.times) || match.times < 0)) throw new TestingError('InvalidArgument', `inject: times must be a non-negative integer, got ${match.times}`);
    if (typeof fault === 'object' && fault.delayMs !== undefined && (!Number.isFinite(fault.delayMs) || fault.delayMs < 0)) {
      throw new TestingError('InvalidArgument', `inject: delayMs must be >= 0, got ${fault.delayMs}`);
    }
    const state: InjectionState = { match, fault, hits: 0, removed: false };
    this.injections.push(state);
    return {
      get hits() {
        return state.hits;
      },
      remove: () => {
        state.removed = true;
        const i = this.injections.indexOf(state);
        if (i !== -1) this.injections.splice(i, 1);
      },
    };
  }

  compact(): string {
    return String(this.api.compact());
  }

  bookmark(): void {
    this.api.bookmark();
  }

  endWatches(): void {
    this.api.endWatches();
  }

  async listen(options: { readonly host?: string; readonly port?: number } = {}): Promise<FakeHttpEndpoint> {
    if (this.closed) throw new TestingError('Closed', 'listen: the fake API server is closed');
    const endpoint = await listen(this.api, options.host ?? '127.0.0.1', options.port ?? 0);
    this.endpoints.add(endpoint);
    const kubeConfig: RestConfig = { server: endpoint.url, source: `the kubeloop fake API server at ${endpoint.url}`, context: 'kubeloop-fake', namespace: 'default' };
    const kubeconfig = [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: kubeloop-fake',
      '  cluster:',
      `    server: ${endpoint.url}`,
      'users:',
      '- name: kubeloop-fake',
      '  user: {}',
      'contexts:',
      '- name: kubeloop-fake',
      '  context:',
      '    cluster: kubeloop-fake',
      '    user: kubeloop-fake',
      '    namespace: default',
      'current-context: kubeloop-fake',
      '',
    ].join('\n');
    return {
      url: endpoint.url,
      kubeConfig,
      kubeconfig,
      close: async () => {
        this.endpoints.delete(endpoint);
        await endpoint.close();
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.api.close();
    for (const t of this.transports) t.close();
    await Promise.all([...this.endpoints].map((e) => e.close()));
    this.endpoints.clear();
  }
}
