/**
 * The registrations behind a scheme or a builder: descriptors indexed by
 * kind, list kind and resource, with the conflict rules. A registry is only
 * ever changed by the builder that owns it, on a private copy that replaces
 * the old one when a whole `register(...)` call succeeded.
 */
import { describeDescriptor, sameDescriptor } from '../descriptor.js';
import type { ResourceDescriptor } from '../descriptor.js';
import { SchemeError } from '../errors.js';
import { formatGroupVersionKind, formatGroupVersionResource } from '../group-version.js';

/** Index key: apiVersion and a name. Neither part of a valid key contains a space. */
export function indexKey(apiVersion: string, name: string): string {
  return `${apiVersion} ${name}`;
}

function conflict(attempted: ResourceDescriptor, problem: string): SchemeError {
  return new SchemeError('Conflict', `conflicting registration of ${describeDescriptor(attempted)}: ${problem}`, {
    input: formatGroupVersionKind(attempted),
  });
}

export class Registry {
  /** Object kinds, in registration order. */
  readonly #byKind: Map<string, ResourceDescriptor>;
  /** List kinds, to the descriptor of their items. */
  readonly #byList: Map<string, ResourceDescriptor>;
  /** Resources (plurals), to the descriptor that serves them. */
  readonly #byResource: Map<string, ResourceDescriptor>;

  constructor(from?: Registry) {
    this.#byKind = new Map(from === undefined ? undefined : from.#byKind);
    this.#byList = new Map(from === undefined ? undefined : from.#byList);
    this.#byResource = new Map(from === undefined ? undefined : from.#byResource);
  }

  get size(): number {
    return this.#byKind.size;
  }

  /** Registered descriptors, in registration order. */
  descriptors(): ResourceDescriptor[] {
    return [...this.#byKind.values()];
  }

  kind(apiVersion: string, kind: string): ResourceDescriptor | undefined {
    return this.#byKind.get(indexKey(apiVersion, kind));
  }

  list(apiVersion: string, listKind: string): ResourceDescriptor | undefined {
    return this.#byList.get(indexKey(apiVersion, listKind));
  }

  resource(apiVersion: string, resource: string): ResourceDescriptor | undefined {
    return this.#byResource.get(indexKey(apiVersion, resource));
  }

  /**
   * Adds a validated, frozen descriptor. Returns false when the same
   * descriptor (or a structurally identical one) is already registered.
   * Throws a `Conflict` SchemeError, leaving this registry unchanged, when
   * the descriptor clashes with a registration.
   */
  add(d: ResourceDescriptor): boolean {
    const key = indexKey(d.apiVersion, d.kind);
    const existing = this.#byKind.get(key);
    if (existing !== undefined) {
      if (sameDescriptor(existing, d)) return false;
      const schemaOnly = describeDescriptor(existing) === describeDescriptor(d);
      const why = schemaOnly ? (existing.schema === undefined || d.schema === undefined ? ' (one has a schema, the other not)' : ' (with a different schema)') : '';
      throw conflict(d, `${formatGroupVersionKind(d)} is already registered as ${describeDescriptor(existing)}${why}`);
    }
    const listOwner = this.#byList.get(key);
    if (listOwner !== undefined) {
      throw conflict(d, `${formatGroupVersionKind(d)} is already the list kind of ${describeDescriptor(listOwner)}`);
    }
    let listKey: string | undefined;
    if (d.listKind !== undefined) {
      listKey = indexKey(d.apiVersion, d.listKind);
      const asKind = this.#byKind.get(listKey);
      if (asKind !== undefined) {
        throw conflict(d, `its list kind ${d.listKind} is already registered as ${describeDescriptor(asKind)}`);
      }
      const otherOwner = this.#byList.get(listKey);
      if (otherOwner !== undefined) {
        throw conflict(d, `its list kind ${d.listKind} is already the list kind of ${describeDescriptor(otherOwner)}`);
      }
    }
    let resourceKey: string | undefined;
    if (d.plural !== undefined) {
      resourceKey = indexKey(d.apiVersion, d.plural);
      const server = this.#byResource.get(resourceKey);
      if (server !== undefined) {
        const gvr = formatGroupVersionResource({ group: d.group, version: d.version, resource: d.plural });
        throw conflict(d, `resource ${gvr} is already served by ${describeDescriptor(server)}`);
      }
    }
    this.#byKind.set(key, d);
    if (listKey !== undefined) this.#byList.set(listKey, d);
    if (resourceKey !== undefined) this.#byResource.set(resourceKey, d);
    return true;
  }
}
