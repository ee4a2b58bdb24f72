/**
 * The Scheme: an immutable registry of kinds, and the builder that makes one.
 *
 * A built scheme never changes. It has no method that registers anything;
 * `extend(...)` returns a new scheme and leaves the old one as it was, so a
 * scheme can be shared by any number of clients, caches and controllers, and
 * read across `await`s, without anyone seeing it change. Registration happens
 * on a {@link SchemeBuilder}, which is idempotent (the same descriptor twice
 * is a no-op), refuses conflicting registrations with an error naming both
 * sides, applies a `register(...)` call entirely or not at all, and can be
 * frozen when it is shared. There is no global mutable scheme.
 */
import type { ResourceDescriptor } from './descriptor.js';
import type { GroupKind, GroupVersion, GroupVersionKind, GroupVersionResource } from './group-version.js';
import { BuilderImpl, isSchemeValue } from './internal/scheme-impl.js';
import { Registry } from './internal/registry.js';

/**
 * The deterministic JSON form of a scheme ({@link Scheme.toJSON}): every
 * registration, sorted by group, version and kind. Two schemes with the same
 * registrations serialise to the same text, whatever the order they were
 * made in.
 */
export interface SchemeJSON {
  readonly kinds: readonly {
    readonly group: string;
    readonly version: string;
    readonly kind: string;
    readonly plural?: string;
    readonly namespaced?: boolean;
    readonly listKind?: string;
  }[];
}

/**
 * An immutable registry of kinds: descriptors by group/version/kind and
 * back, and recognition of plain objects by their `apiVersion` and `kind`.
 * Every array it returns is frozen.
 *
 * @example
 * ```ts
 * import { builtinScheme, Deployment } from '@kubeloop/scheme';
 *
 * builtinScheme.recognize({ apiVersion: 'apps/v1', kind: 'Deployment' }) === Deployment; // true
 * builtinScheme.recognizeList({ apiVersion: 'v1', kind: 'PodList', items: [] });         // Pod
 * builtinScheme.lookup({ group: 'coordination.k8s.io', version: 'v1', kind: 'Lease' });   // Lease
 * ```
 */
export interface Scheme {
  /** How many kinds are registered. */
  readonly size: number;
  /**
   * The descriptor of an object's kind, from its `apiVersion` and `kind`;
   * `undefined` for an unregistered kind, a list, or anything that is not
   * an object with string `apiVersion` and `kind`. Never throws.
   */
  recognize(obj: unknown): ResourceDescriptor | undefined;
  /**
   * For a list object (`kind` is a registered list kind such as `PodList`),
   * the descriptor of its items; otherwise `undefined`. Never throws.
   */
  recognizeList(obj: unknown): ResourceDescriptor | undefined;
  /**
   * The group/version/kind of an object whose kind, or list kind, is
   * registered; `undefined` otherwise. Never throws.
   */
  gvkOf(obj: unknown): GroupVersionKind | undefined;
  /** The descriptor registered for exactly this group/version/kind. */
  lookup(gvk: GroupVersionKind): ResourceDescriptor | undefined;
  /** Every registered version of a group/kind, in registration order. */
  lookupGroupKind(gk: GroupKind): readonly ResourceDescriptor[];
  /** The descriptor whose plural is this resource at this group/version. */
  lookupResource(gvr: GroupVersionResource): ResourceDescriptor | undefined;
  /** True when this descriptor, or a structurally identical one, is registered. */
  has(descriptor: ResourceDescriptor): boolean;
  /** The registered group/version/kinds, in registration order. */
  kinds(): readonly GroupVersionKind[];
  /** The registered descriptors, in registration order. */
  descriptors(): readonly ResourceDescriptor[];
  /** The group/versions with at least one registered kind, in order of first registration. */
  groupVersions(): readonly GroupVersion[];
  /**
   * A new scheme with this scheme's registrations and the given
   * descriptors and schemes. This scheme is not changed.
   *
   * @throws {@link SchemeError} `Conflict` when a part clashes with a registration.
   */
  extend(...parts: (ResourceDescriptor | Scheme)[]): Scheme;
  /** The deterministic JSON form: every registration, sorted. */
  toJSON(): SchemeJSON;
}

/**
 * Collects registrations and builds immutable schemes from them.
 *
 * Every call validates its descriptors and applies entirely or not at all.
 * Registering the same descriptor (or a structurally identical one) again is
 * a no-op. `build()` snapshots: registering afterwards does not change schemes
 * already built. A shared builder can be frozen; registering into it then
 * throws a `Frozen` error instead of changing what others build.
 *
 * @example
 * ```ts
 * import { builtinScheme, createSchemeBuilder } from '@kubeloop/scheme';
 * import { HardDisk } from '@kubeloop/example-harddisk-operator';
 *
 * const scheme = createSchemeBuilder().include(builtinScheme).register(HardDisk).build();
 * ```
 */
export interface SchemeBuilder {
  /** True once {@link SchemeBuilder.freeze} was called. */
  readonly frozen: boolean;
  /**
   * Registers descriptors under their own group/version/kind.
   *
   * @throws {@link SchemeError} `Conflict` (nothing of the call is applied),
   * `InvalidDescriptor`, or `Frozen`.
   */
  register(...descriptors: ResourceDescriptor[]): this;
  /**
   * Registers descriptors of one group/version, checking that each belongs
   * to it: a descriptor of another group/version is a `Conflict` naming both,
   * as one descriptor cannot be known under two group/version/kinds.
   *
   * @throws {@link SchemeError} `InvalidGroupVersion`, `Conflict`, `InvalidDescriptor`, or `Frozen`.
   */
  addKnownTypes(groupVersion: GroupVersion | string, ...descriptors: ResourceDescriptor[]): this;
  /**
   * Registers everything a scheme or another builder holds now (a later
   * change to that builder is not followed).
   *
   * @throws {@link SchemeError} `Conflict` or `Frozen`.
   */
  include(...parts: (Scheme | SchemeBuilder)[]): this;
  /** The descriptors registered so far, in registration order. */
  descriptors(): readonly ResourceDescriptor[];
  /** Refuses every later registration with a `Frozen` error. Building stays possible. */
  freeze(): this;
  /** An immutable scheme with the registrations made so far. */
  build(): Scheme;
}

/**
 * Starts an empty scheme builder.
 *
 * @example
 * ```ts
 * import { builtinScheme, createSchemeBuilder } from '@kubeloop/scheme';
 *
 * const builder = createSchemeBuilder().include(builtinScheme);
 * builder.register(HardDisk);
 * builder.register(HardDisk); // no-op: already registered
 * const scheme = builder.build();
 * ```
 */
export function createSchemeBuilder(): SchemeBuilder {
  return new BuilderImpl(new Registry());
}

/**
 * Builds a scheme in one call from descriptors, schemes and builders.
 *
 * @throws {@link SchemeError} `Conflict` or `InvalidDescriptor`.
 *
 * @example
 * ```ts
 * import { builtinScheme, createScheme } from '@kubeloop/scheme';
 *
 * const scheme = createScheme(builtinScheme, HardDisk);
 * scheme.recognize({ apiVersion: 'crd-demo.io/v1', kind: 'HardDisk' }); // HardDisk
 * ```
 */
export function createScheme(...parts: (ResourceDescriptor | Scheme | SchemeBuilder)[]): Scheme {
  const builder = createSchemeBuilder();
  for (const part of parts) {
    if (isSchemeValue(part) || isBuilderLike(part)) builder.include(part);
    else builder.register(part);
  }
  return builder.build();
}

function isBuilderLike(value: ResourceDescriptor | SchemeBuilder): value is SchemeBuilder {
  return typeof (value as Partial<SchemeBuilder>).descriptors === 'function' && typeof (value as Partial<SchemeBuilder>).build === 'function';
}

/**
 * True for a {@link Scheme} built by this package, even by another copy of it.
 *
 * @example
 * ```ts
 * function schemeOf(options: { scheme?: unknown }): Scheme {
 *   if (!isScheme(options.scheme)) throw new TypeError('options.scheme must be a Scheme');
 *   return options.scheme;
 * }
 * ```
 */
export function isScheme(value: unknown): value is Scheme {
  return isSchemeValue(value);
}
