/**
 * A thread-safe-by-construction (single-threaded) object store keyed by
 * `namespace/name`, with a namespace index and any number of user indexes.
 * Objects are stored as given; the informer decides whether they are frozen.
 */
import type { KubeObject } from '@kubeloop/scheme';
import { CacheError } from './errors.js';

/** Told when an index function throws (or returns something other than an array of strings) for an object. */
export type IndexErrorHandler = (err: unknown, index: string, key: string) => void;

/** Values an index files an object under. */
export type IndexFunc<T> = (obj: T) => readonly string[];

/** The name of the built-in namespace index. */
export const NAMESPACE_INDEX = 'namespace';

/** `namespace/name`, or `name` for cluster-scoped objects. */
export function objectKey(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

/** Key of a namespace and name. */
export function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/**
 * An indexed store of objects.
 *
 * @example
 * ```ts
 * const store = new Store<Pod>({ byNode: (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []) });
 * store.upsert(pod);
 * store.byIndex('byNode', 'node-1');
 * ```
 */
export class Store<T extends KubeObject> {
  private readonly items = new Map<string, T>();
  private readonly indexers = new Map<string, IndexFunc<T>>();
  private readonly indices = new Map<string, Map<string, Set<string>>>();

  /**
   * An index function that throws, or returns anything but an array of
   * strings, files that object under no value of that index (the object is
   * still stored) and is told to `onIndexError`. Default: ignored.
   */
  constructor(
    indexers: Readonly<Record<string, IndexFunc<T>>> = {},
    private readonly onIndexError: IndexErrorHandler = () => undefined,
  ) {
    this.indexers.set(NAMESPACE_INDEX, (o) => [o.metadata?.namespace ?? '']);
    for (const [name, fn] of Object.entries(indexers)) this.indexers.set(name, fn);
    for (const name of this.indexers.keys()) this.indices.set(name, new Map());
  }

  get size(): number {
    return this.items.size;
  }

  get(key: string): T | undefined {
    return this.items.get(key);
  }

  has(key: string): boolean {
    return this.items.has(key);
  }

  keys(): IterableIterator<string> {
    return this.items.keys();
  }

  values(): IterableIterator<T> {
    return this.items.values();
  }

  /** Insert or replace; returns the object it replaced. */
  upsert(obj: T): T | undefined {
    const key = objectKey(obj);
    const old = this.items.get(key);
    if (old) this.unindex(key, old);
    this.items.set(key, obj);
    this.index(key, obj);
    return old;
  }

  /** Remove by key; returns the removed object. */
  remove(key: string): T | undefined {
    const old = this.items.get(key);
    if (!old) return undefined;
    this.unindex(key, old);
    this.items.delete(key);
    return old;
  }

  /** Replace everything at once (after a list). */
  replace(objects: Iterable<T>): void {
    this.items.clear();
    for (const map of this.indices.values()) map.clear();
    for (const obj of objects) {
      const key = objectKey(obj);
      this.items.set(key, obj);
      this.index(key, obj);
    }
  }

  /** Add an index; existing objects are indexed at once. Throws CacheError `InvalidIndex` if the name is taken. */
  addIndex(name: string, fn: IndexFunc<T>): void {
    if (this.indexers.has(name)) throw new CacheError('InvalidIndex', `index ${JSON.stringify(name)} already exists`);
    this.indexers.set(name, fn);
    this.indices.set(name, new Map());
    for (const [key, obj] of this.items) this.indexOne(name, fn, key, obj);
  }

  hasIndex(name: string): boolean {
    return this.indexers.has(name);
  }

  /** Objects filed under `value` in index `name`. Throws CacheError `InvalidIndex` for an unknown index. */
  byIndex(name: string, value: string): T[] {
    const map = this.indices.get(name);
    if (!map) throw new CacheError('InvalidIndex', `no index named ${JSON.stringify(name)}`);
    const keys = map.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) {
      const obj = this.items.get(k);
      if (obj) out.push(obj);
    }
    return out;
  }

  private index(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) this.indexOne(name, fn, key, obj);
  }

  /** The values `fn` files `obj` under; undefined (reported) when it throws or answers something else than a string array. */
  private valuesOf(name: string, fn: IndexFunc<T>, key: string, obj: T): readonly string[] | undefined {
    let values: unknown;
    try {
      values = fn(obj);
    } catch (err) {
      this.onIndexError(err, name, key);
      return undefined;
    }
    if (!Array.isArray(values) || !values.every((v) => typeof v === 'string')) {
      this.onIndexError(new TypeError(`the index function returned ${Array.isArray(values) ? 'an array with a non-string' : typeof values}, not an array of strings`), name, key);
      return undefined;
    }
    return values;
  }

  private indexOne(name: string, fn: IndexFunc<T>, key: string, obj: T): void {
    const values = this.valuesOf(name, fn, key, obj);
    if (!values) return;
    const map = this.indices.get(name)!;
    for (const value of values) {
      let set = map.get(value);
      if (!set) map.set(value, (set = new Set()));
      set.add(key);
    }
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const map = this.indices.get(name)!;
      let values: unknown;
      try {
        values = fn(obj);
      } catch {
        values = undefined; // reported when it was indexed
      }
      if (!Array.isArray(values)) {
        // Where did it go? Look everywhere (rare: only for objects an index function failed on).
        for (const [value, set] of map) if (set.delete(key) && set.size === 0) map.delete(value);
        continue;
      }
      for (const value of values as readonly unknown[]) {
        if (typeof value !== 'string') continue;
        const set = map.get(value);
        if (!set) continue;
        set.delete(key);
        if (set.size === 0) map.delete(value);
      }
    }
  }
}
