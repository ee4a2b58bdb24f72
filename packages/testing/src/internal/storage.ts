/**
 * Storage and history, as etcd and the registry's generic store keep them
 * for kube-apiserver: the served types and their objects, one
 * resourceVersion counter for every kind (etcd's revision), the change
 * history that watches from a resourceVersion, exact lists and continue
 * tokens read (compacted past a limit, or on demand), and the listeners told
 * of each change in order (watches, then the controllers).
 */
import type { TestClock } from '../clock.js';
import { newServiceAllocator, releaseService } from './defaults.js';
import type { ServiceAllocator } from './defaults.js';
import { objKey } from './json.js';
import type { Json } from './json.js';
import { customType, typeKey } from './resources.js';
import type { CustomTypeSpec, ResourceType } from './resources.js';
import type { SchemaCheck } from './schema-check.js';
import { builtinShape, schemaShape } from './schema.js';
import type { Shape } from './schema.js';

/** A served type and its objects, keyed `namespace/name`. */
export interface StoredType {
  type: ResourceType;
  shape: Shape;
  /** A custom kind's OpenAPI schema (its storage version's), if it has one. */
  schema: Json | undefined;
  objects: Map<string, Json>;
}

/** One change, as kept in the history and sent to listeners. */
export interface Change {
  readonly rv: number;
  readonly typeKey: string;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** The object after the change (for DELETED: the last state, with the deletion's resourceVersion). */
  readonly object: Json;
  /** The object before (undefined for ADDED). */
  readonly prev: Json | undefined;
}

export type Validator = NonNullable<CustomTypeSpec['validators']>[number];

export class Storage {
  readonly types = new Map<string, StoredType>();
  /** Which object each uid names (for owner references). */
  readonly uids = new Map<string, { typeKey: string; key: string }>();
  /** Schema validation per kind (type key) and version. */
  readonly schemaChecks = new Map<string, ReadonlyMap<string, SchemaCheck>>();
  /**
   * Custom resources read through a newer schema (defaults applied, fields
   * pruned), each to the form still stored, as the server's storage holds
   * the old bytes: the next schema change reads that form, not the one read
   * before, and a write that leaves the object as read still writes it (a
   * new resourceVersion). Found by the schema-change fuzzer.
   */
  readonly storedForm = new WeakMap<object, Record<string, unknown>>();
  /** Cluster IPs and node ports of the Services stored. */
  readonly services: ServiceAllocator = newServiceAllocator();
  private readonly customValidators = new Map<string, readonly Validator[]>();
  private readonly listeners: ((change: Change, st: StoredType) => void)[] = [];
  private readonly typeListeners: ((key: string) => void)[] = [];
  /** Kinds whose CRD is being deleted: creates are refused until it goes. */
  readonly terminating = new Set<string>();
  private rv = 0;
  private compactedRv = 0;
  private history: Change[] = [];
  /** Per kind (type key), the resourceVersion its watch cache has reached: see {@link cacheResourceVersion}. */
  private readonly cacheRvs = new Map<string, number>();

  constructor(
    private readonly clock: TestClock,
    /** Changes kept for watches and exact lists; older ones are compacted away. */
    private readonly historyLimit: number,
  ) {}

  /** A timestamp as the server writes it (from the test's clock). */
  now(): string {
    return this.clock.timestamp();
  }

  /** The newest resourceVersion. */
  get resourceVersion(): number {
    return this.rv;
  }

  /** The resourceVersion up to which history is gone (older ones are 410). */
  get compacted(): number {
    return this.compactedRv;
  }

  /**
   * The resourceVersion a kind's watch cache has reached, first brought up to
   * `atLeast` if it is behind it. kube-apiserver serves a list at "any"
   * resourceVersion (`0`), one "not older than" N, and a watch's initial
   * events from that cache, and answers at the cache's resourceVersion: it
   * moves with the kind's own writes only, so writes of other kinds leave it
   * behind etcd's revision, until a read asks for a newer one and the cache
   * catches up to the newest (etcd's progress notification). Measured on
   * kube-apiserver v1.37.2: three ConfigMaps written (the last at 214), then
   * two Secrets (216): ConfigMaps listed at `0` or not older than 214 answer
   * 214, not older than 216 answer 216. One difference, on purpose: a cache
   * left behind the fake's compaction catches up (the server's own cache keeps
   * its history apart from etcd's, so a watch from it is never too old).
   */
  cacheResourceVersion(st: StoredType, atLeast = 0): number {
    const key = typeKey(st.type.group, st.type.plural);
    let rv = this.cacheRvs.get(key) ?? this.rv;
    if (atLeast > rv || rv < this.compactedRv || rv === 0) {
      rv = this.rv;
      this.cacheRvs.set(key, rv);
    }
    return rv;
  }

  // --- types ------------------------------------------------------------------

  addType(type: ResourceType, schema?: Json): void {
    const key = typeKey(type.group, type.plural);
    const existing = this.types.get(key);
    const shape = type.builtin ? builtinShape(apiVersionOf(type, type.versions[0]!), type.kind) : schemaShape(schema);
    const extra = this.customValidators.get(key) ?? [];
    const withValidators: ResourceType = extra.length > 0 ? { ...type, validators: [...type.validators, ...extra] } : type;
    this.types.set(key, { type: withValidators, shape, schema: type.builtin ? undefined : schema, objects: existing?.objects ?? new Map<string, Json>() });
    // a kind served anew (a CRD made or changed) gets a new watch cache, which starts from a list at the newest resourceVersion
    this.cacheRvs.set(key, this.rv);
  }

  /** Serve a custom kind (no CRD object is stored). */
  registerType(spec: CustomTypeSpec, schema?: Json): void {
    this.addType(customType(spec), schema);
  }

  /** Stop serving a kind: its open watches end (the server tears its storage down with the CRD). */
  removeType(key: string): void {
    this.types.delete(key);
    this.terminating.delete(key);
    for (const listener of this.typeListeners) listener(key);
  }

  /** Listen to kinds no longer served. */
  onTypeRemoved(listener: (key: string) => void): void {
    this.typeListeners.push(listener);
  }

  /** Validate (and prune and default) objects of a kind against its schema, per version; an empty map turns it off. */
  setSchemaChecks(group: string, plural: string, checks: ReadonlyMap<string, SchemaCheck>): void {
    const key = typeKey(group, plural);
    if (checks.size === 0) this.schemaChecks.delete(key);
    else this.schemaChecks.set(key, checks);
  }

  /** Add a validator to a kind (now or when it is registered later). */
  addValidator(group: string, plural: string, validator: Validator): void {
    const key = typeKey(group, plural);
    this.customValidators.set(key, [...(this.customValidators.get(key) ?? []), validator]);
    const st = this.types.get(key);
    if (st) st.type = { ...st.type, validators: [...st.type.validators, validator] };
  }

  allTypes(): ResourceType[] {
    return [...this.types.values()].map((s) => s.type);
  }

  /** The type served at `group/version/plural`. */
  findType(group: string, version: string, plural: string): StoredType | undefined {
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

  /** The Namespace store (always served). */
  get namespaces(): StoredType {
    return this.types.get('/namespaces')!;
  }

  // --- writes and history -----------------------------------------------------------

  /** Listen to every change, in order, after it is stored. */
  onChange(listener: (change: Change, st: StoredType) => void): void {
    this.listeners.push(listener);
  }

  /** Store a change of one object at the next resourceVersion (written into `obj`), keep it in the history, tell the listeners. */
  store(st: StoredType, key: string, obj: Json, prev: Json | undefined, type: Change['type']): Json {
    const rv = ++this.rv;
    const m = obj['metadata'] as Json;
    m['resourceVersion'] = String(rv);
    const tk = typeKey(st.type.group, st.type.plural);
    if (type === 'DELETED') {
      st.objects.delete(key);
      this.uids.delete(m['uid'] as string);
      if (st.type.builtin && tk === '/services') releaseService(this.services, obj['spec'] as Json | undefined);
    } else {
      st.objects.set(key, obj);
      this.uids.set(m['uid'] as string, { typeKey: tk, key });
    }
    this.cacheRvs.set(tk, rv);
    const change: Change = { rv, typeKey: tk, type, object: obj, prev };
    this.history.push(change);
    if (this.history.length > this.historyLimit) {
      // compact the oldest tenth at once, so the array is not shifted on every write
      const drop = Math.max(1, Math.ceil(this.historyLimit / 10));
      this.compactedRv = this.history[drop - 1]!.rv;
      this.history = this.history.slice(drop);
    }
    for (const listener of this.listeners) listener(change, st);
    return obj;
  }

  /** The changes of a type after `rv`, oldest first. */
  changesSince(rv: number, key: string): Change[] {
    return this.history.filter((c) => c.rv > rv && c.typeKey === key);
  }

  /** The objects of a type as they were at `rv` (from the history since the last compaction). */
  stateAt(st: StoredType, rv: number): Map<string, Json> {
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

  /** Forget history up to now: watches and exact lists from older resourceVersions get 410. */
  compact(): number {
    this.compactedRv = this.rv;
    this.history = [];
    return this.rv;
  }
}

/** `group/version`, or `version` for the core group. */
export function apiVersionOf(type: ResourceType, version: string): string {
  return type.group ? `${type.group}/${version}` : version;
}

/** The stored object as served at `version` (a copy). */
export function render(st: StoredType, obj: Json, version: string): Json {
  const out = structuredClone(obj);
  return { apiVersion: apiVersionOf(st.type, version), kind: st.type.kind, ...out };
}

/** The metadata-only form of an object. */
export function partial(obj: Json): Json {
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: structuredClone(obj['metadata']) };
}

/** The resource, for messages that name it. */
export function gr(st: StoredType): { group: string; resource: string } {
  return { group: st.type.group, resource: st.type.plural };
}

/** Storage-level errors name the kind, not the resource. */
export function kindGr(st: StoredType): { group: string; resource: string } {
  return { group: st.type.group, resource: st.type.kind };
}
