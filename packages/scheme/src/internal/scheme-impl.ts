/**
 * The implementations behind the `Scheme` and `SchemeBuilder` interfaces.
 * Both are frozen objects whose state sits in private fields: a scheme's
 * registry is a copy nobody else holds, and a builder swaps in a new registry
 * only when a whole call succeeded (copy on write), so no caller ever sees a
 * half-applied registration.
 */
import { describeDescriptor, sameDescriptor, toDescriptor } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import { SchemeError } from '../errors.js';
import { formatGroupVersion, formatGroupVersionKind, parseGroupVersion } from '../group-version.js';
import type { GroupKind, GroupVersion, GroupVersionKind, GroupVersionResource } from '../group-version.js';
import type { Scheme, SchemeBuilder, SchemeJSON } from '../scheme.js';
import { Registry, indexKey } from './registry.js';

const SCHEME_BRAND = Symbol.for('@kubeloop/scheme/Scheme');
const EMPTY: readonly ResourceDescriptor[] = Object.freeze([]);

export function isSchemeValue(value: unknown): value is Scheme {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[SCHEME_BRAND] === true;
}

function apiVersionOf(gv: GroupVersion): string {
  return gv.group === '' ? gv.version : `${gv.group}/${gv.version}`;
}

/** `apiVersion` and `kind` of a value when both are strings, without throwing. */
function typeMeta(obj: unknown): { apiVersion: string; kind: string } | undefined {
  if (typeof obj !== 'object' || obj === null) return undefined;
  const { apiVersion, kind } = obj as { apiVersion?: unknown; kind?: unknown };
  return typeof apiVersion === 'string' && typeof kind === 'string' ? { apiVersion, kind } : undefined;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export class SchemeImpl implements Scheme {
  readonly [SCHEME_BRAND] = true;
  readonly size: number;
  readonly #registry: Registry;
  readonly #descriptors: readonly ResourceDescriptor[];
  readonly #kinds: readonly GroupVersionKind[];
  readonly #groupVersions: readonly GroupVersion[];
  readonly #byGroupKind = new Map<string, readonly ResourceDescriptor[]>();
  readonly #kindOf = new Map<ResourceDescriptor, GroupVersionKind>();
  readonly #listKindOf = new Map<ResourceDescriptor, GroupVersionKind>();

  /** Takes ownership of `registry`: the caller must not keep or change it. */
  constructor(registry: Registry) {
    this.#registry = registry;
    const descriptors = registry.descriptors();
    this.size = descriptors.length;
    this.#descriptors = Object.freeze(descriptors);
    const groupKinds = new Map<string, ResourceDescriptor[]>();
    const groupVersions = new Map<string, GroupVersion>();
    for (const d of descriptors) {
      this.#kindOf.set(d, Object.freeze({ group: d.group, version: d.version, kind: d.kind }));
      if (d.listKind !== undefined) this.#listKindOf.set(d, Object.freeze({ group: d.group, version: d.version, kind: d.listKind }));
      const gk = indexKey(d.group, d.kind);
      groupKinds.set(gk, [...(groupKinds.get(gk) ?? []), d]);
      if (!groupVersions.has(d.apiVersion)) groupVersions.set(d.apiVersion, Object.freeze({ group: d.group, version: d.version }));
    }
    for (const [key, list] of groupKinds) this.#byGroupKind.set(key, Object.freeze(list));
    this.#kinds = Object.freeze(descriptors.map((d) => this.#kindOf.get(d)!));
    this.#groupVersions = Object.freeze([...groupVersions.values()]);
    Object.freeze(this);
  }

  recognize(obj: unknown): ResourceDescriptor | undefined {
    const meta = typeMeta(obj);
    return meta === undefined ? undefined : this.#registry.kind(meta.apiVersion, meta.kind);
  }

  recognizeList(obj: unknown): ResourceDescriptor | undefined {
    const meta = typeMeta(obj);
    return meta === undefined ? undefined : this.#registry.list(meta.apiVersion, meta.kind);
  }

  gvkOf(obj: unknown): GroupVersionKind | undefined {
    const meta = typeMeta(obj);
    if (meta === undefined) return undefined;
    const item = this.#registry.kind(meta.apiVersion, meta.kind);
    if (item !== undefined) return this.#kindOf.get(item);
    const list = this.#registry.list(meta.apiVersion, meta.kind);
    return list === undefined ? undefined : this.#listKindOf.get(list);
  }

  lookup(gvk: GroupVersionKind): ResourceDescriptor | undefined {
    return this.#registry.kind(apiVersionOf(gvk), gvk.kind);
  }

  lookupGroupKind(gk: GroupKind): readonly ResourceDescriptor[] {
    return this.#byGroupKind.get(indexKey(gk.group, gk.kind)) ?? EMPTY;
  }

  lookupResource(gvr: GroupVersionResource): ResourceDescriptor | undefined {
    return this.#registry.resource(apiVersionOf(gvr), gvr.resource);
  }

  has(descriptor: ResourceDescriptor): boolean {
    const existing = this.#registry.kind(apiVersionOf(descriptor), descriptor.kind);
    return existing !== undefined && sameDescriptor(existing, descriptor);
  }

  kinds(): readonly GroupVersionKind[] {
    return this.#kinds;
  }

  descriptors(): readonly ResourceDescriptor[] {
    return this.#descriptors;
  }

  groupVersions(): readonly GroupVersion[] {
    return this.#groupVersions;
  }

  extend(...parts: (ResourceDescriptor | Scheme)[]): Scheme {
    const builder = new BuilderImpl(new Registry(this.#registry));
    for (const part of parts) {
      if (isSchemeValue(part)) builder.include(part);
      else builder.register(part);
    }
    return builder.build();
  }

  toJSON(): SchemeJSON {
    const kinds = this.#descriptors
      .map((d) => {
        const entry: { group: string; version: string; kind: string; plural?: string; namespaced?: boolean; listKind?: string } = {
          group: d.group,
          version: d.version,
          kind: d.kind,
        };
        if (d.plural !== undefined) entry.plural = d.plural;
        if (d.namespaced !== undefined) entry.namespaced = d.namespaced;
        if (d.listKind !== undefined) entry.listKind = d.listKind;
        return entry;
      })
      .sort((a, b) => compareText(a.group, b.group) || compareText(a.version, b.version) || compareText(a.kind, b.kind));
    return { kinds };
  }
}
Object.freeze(SchemeImpl.prototype);
Object.freeze(SchemeImpl);

export class BuilderImpl implements SchemeBuilder {
  #registry: Registry;
  #frozen = false;

  /** Takes ownership of `registry`. */
  constructor(registry: Registry) {
    this.#registry = registry;
    Object.freeze(this);
  }

  get frozen(): boolean {
    return this.#frozen;
  }

  register(...descriptors: ResourceDescriptor[]): this {
    this.#refuseIfFrozen(() => descriptors.map((d) => (typeof d === 'object' && d !== null ? formatName(d) : String(d))));
    this.#apply(descriptors.map((d) => toDescriptor(d)));
    return this;
  }

  addKnownTypes(groupVersion: GroupVersion | string, ...descriptors: ResourceDescriptor[]): this {
    this.#refuseIfFrozen(() => descriptors.map((d) => (typeof d === 'object' && d !== null ? formatName(d) : String(d))));
    const gv = typeof groupVersion === 'string' ? parseGroupVersion(groupVersion) : groupVersion;
    const gvText = formatGroupVersion(gv);
    const checked = descriptors.map((value) => {
      const d = toDescriptor(value);
      if (d.group !== gv.group || d.version !== gv.version) {
        throw new SchemeError(
          'Conflict',
          `cannot register ${describeDescriptor(d)} under ${gvText}: one descriptor cannot be known as both ` +
            `${formatGroupVersionKind(d)} and ${formatGroupVersionKind({ group: gv.group, version: gv.version, kind: d.kind })}; ` +
            `define a descriptor for ${gvText} with defineKind`,
          { input: formatGroupVersionKind(d) },
        );
      }
      return d;
    });
    this.#apply(checked);
    return this;
  }

  include(...parts: (Scheme | SchemeBuilder)[]): this {
    this.#refuseIfFrozen(() => [`${parts.length} scheme part(s)`]);
    this.#apply(parts.flatMap((part) => part.descriptors().map((d) => toDescriptor(d))));
    return this;
  }

  descriptors(): readonly ResourceDescriptor[] {
    return Object.freeze(this.#registry.descriptors());
  }

  freeze(): this {
    this.#frozen = true;
    return this;
  }

  build(): Scheme {
    return new SchemeImpl(new Registry(this.#registry));
  }

  #refuseIfFrozen(names: () => string[]): void {
    if (!this.#frozen) return;
    const list = names();
    throw new SchemeError(
      'Frozen',
      `cannot register ${list.join(', ') || 'nothing'}: this SchemeBuilder is frozen because it is shared. ` +
        'Build a scheme and extend(...) it, or include(...) the builder in a new one from createSchemeBuilder()',
      { input: list.join(', ') },
    );
  }

  /** All or nothing: the new registry replaces the old one only when every descriptor was accepted. */
  #apply(descriptors: ResourceDescriptor[]): void {
    const next = new Registry(this.#registry);
    for (const d of descriptors) next.add(d);
    this.#registry = next;
  }
}
Object.freeze(BuilderImpl.prototype);
Object.freeze(BuilderImpl);

/** A descriptor's name for a message, even when it is malformed. */
function formatName(d: ResourceDescriptor): string {
  try {
    return formatGroupVersionKind(d);
  } catch {
    return `${String(d.kind)}.${String(d.version)}.${String(d.group)}`;
  }
}
