/**
 * The three forms of the same kind a client call can name: typed (a scheme
 * descriptor), unstructured (any apiVersion/kind, plain JSON) and
 * metadata-only (PartialObjectMetadata).
 */
import type { KubeObject, ObjectList, ObjectMeta, ResourceDescriptor } from '@kubeloop/scheme';

/** Any apiVersion/kind, known to the scheme or not: its objects are plain JSON. */
export interface TypeRef {
  readonly apiVersion: string;
  readonly kind: string;
}

/** An object of a kind the scheme does not type: plain JSON with apiVersion and kind. */
export interface Unstructured extends KubeObject {
  /** `group/version` (`v1` for the core group). */
  apiVersion: string;
  /** The kind's name, as `HardDisk`. */
  kind: string;
  /** Any other field, as the server sent it. */
  [field: string]: unknown;
}

/** `meta.k8s.io/v1` PartialObjectMetadata: an object's metadata only. */
export interface PartialObjectMetadata {
  apiVersion?: 'meta.k8s.io/v1';
  kind?: 'PartialObjectMetadata';
  metadata?: ObjectMeta;
}

const METADATA = Symbol.for('@kubeloop/client/MetadataRef');

/** Names a kind whose objects are read and written as metadata only. */
export interface MetadataRef {
  /** The brand `metadataOnly()` sets (`isMetadataRef` checks it). */
  readonly [METADATA]: true;
  /** The kind whose metadata is meant. */
  readonly of: ResourceDescriptor | TypeRef;
}

/**
 * The metadata-only form of a kind: reads return PartialObjectMetadata,
 * asked of the server with content negotiation, so object bodies (a Secret's
 * data, a ConfigMap's payload) never cross the wire.
 *
 * @example
 * ```ts
 * const meta = await client.get(metadataOnly(Secret), { namespace: 'default', name: 'tls' });
 * meta.metadata?.labels; // no data, just metadata
 * ```
 */
export function metadataOnly(of: ResourceDescriptor | TypeRef): MetadataRef {
  return Object.freeze({ [METADATA]: true as const, of });
}

/** True for a {@link MetadataRef}. */
export function isMetadataRef(value: unknown): value is MetadataRef {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[METADATA] === true;
}

/** Any of the three forms. */
export type KindRef = ResourceDescriptor | TypeRef | MetadataRef;

/**
 * The object type a call on `K` returns. Reads of the typed and unstructured
 * forms always carry `apiVersion` and `kind` (the client fills them in on list
 * items, where the API server leaves them out), so a read object can be
 * handed straight to `update`, `patch` or `delete`.
 */
export type ObjectFor<K> = K extends MetadataRef
  ? PartialObjectMetadata
  : K extends ResourceDescriptor<infer T>
    ? Fetched<T>
    : Unstructured;

/** An object as read from the API: `apiVersion` and `kind` always present. */
export type Fetched<T extends KubeObject> = T & { apiVersion: NonNullable<T['apiVersion']>; kind: NonNullable<T['kind']> };

/** The list a call on `K` returns. */
export type ListFor<K> = ObjectList<ObjectFor<K> extends infer O extends KubeObject ? O : never>;

/** What a write returns: the object given, with the full metadata the server filled in (uid, resourceVersion, timestamps). */
export type Stored<T> = T & { metadata: ObjectMeta };

/** An object that names its own kind: `apiVersion` and `kind` present. */
export type WithKind<T> = T & { apiVersion: string; kind: string };

/**
 * `T` with every property and array, at any depth, read-only: what reads
 * from the cache return. The informer cache shares one frozen object between
 * every reader, so mutating it would throw at run time; this type makes it a
 * compile error instead. Take a {@link mutableCopy} to change one.
 */
export type DeepReadonly<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends readonly (infer U)[]
    ? readonly DeepReadonly<U>[]
    : T extends object
      ? { readonly [P in keyof T]: DeepReadonly<T[P]> }
      : T;

/** The inverse of {@link DeepReadonly}: the type of a {@link mutableCopy}. */
export type Mutable<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends readonly (infer U)[]
    ? Mutable<U>[]
    : T extends object
      ? { -readonly [P in keyof T]: Mutable<T[P]> }
      : T;

/** An object a write accepts: a plain one, or one read from the cache (read-only). */
export type AnyKubeObject = KubeObject | DeepReadonly<KubeObject>;

/**
 * A deep, mutable copy of an object read from the cache (or of anything
 * JSON-like), typed as such: change it, then write it back.
 *
 * @example
 * ```ts
 * const disk = await manager.client.get(HardDisk, key); // DeepReadonly: disk.status = ... does not compile
 * const next = mutableCopy(disk);
 * next.status = { phase: 'Bound' };
 * await manager.client.status().update(next);
 * ```
 */
export function mutableCopy<T>(obj: T): Mutable<T> {
  return structuredClone(obj) as Mutable<T>;
}

/** Namespace and name of an object (no namespace for cluster-scoped kinds). */
export interface ObjectKey {
  readonly namespace?: string;
  readonly name: string;
}
